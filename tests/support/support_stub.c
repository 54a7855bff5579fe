/* Placeholder until the integration-test support library lands. */
int support_stub_unused(void);
int support_stub_unused(void)
{
    return 0;
}
