/* main.c - placeholder until subcommand dispatch lands. */
#include <stdio.h>

int main(void)
{
    fputs("kwp: not built yet\n", stderr);
    return 1;
}
