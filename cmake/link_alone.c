/*
 * link_alone.c - the empty program of the per-library link checks (CMakeLists.txt,
 * kwp_link_alone): each library is linked into it whole with only the libraries it declares,
 * so an undeclared dependency fails the build.
 */
int main(void)
{
    return 0;
}
