/* memfix-verify-worker: the process `memfix verify` runs a candidate in
 * (docs/verify.md "Isolation"). Started by mf_verify_lib with fork +
 * exec, its own process group and a socket on file descriptor 3; it dlopens the
 * candidate's library and serves one guarded call per request. It exports its
 * symbols (ENABLE_EXPORTS): the candidate's cudahost_* and mf_* resolve here. */
#include "memfix/verify.h"

int main(int argc, char **argv) { return mf_verify_worker_main(argc, argv); }
