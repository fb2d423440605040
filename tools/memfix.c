/* The memfix command: see tools/memfix_cli.c and `memfix --help`. */
#include "memfix_cli.h"

int main(int argc, char **argv) { return mf_cli_main(argc, argv, stdout, stderr); }
