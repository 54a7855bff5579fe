/* Placeholder so the kwp_sim library has a source until sim/ lands. */
int sim_stub_unused(void);
int sim_stub_unused(void)
{
    return 0;
}
