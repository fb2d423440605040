/* The memfix command: see tools/memfix_cli.c and `memfix --help`. */
#include "memfix_cli.h"

int main(int argc, char **argv)
{
    /* under ctest --resource-spec-file: the GPU ctest gave this run (memfix verify's tests), for
     * memfix and the workers it starts, before any CUDA call */
    if (mf_use_ctest_gpu() < 0) {
        fprintf(stderr, "memfix: %s\n", mf_last_error());
        return MF_CLI_UNAVAILABLE;
    }
    return mf_cli_main(argc, argv, stdout, stderr);
}
