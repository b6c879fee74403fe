/* core/cli/tessel.c — the `tessel` program. */
#include "cli/cli.h"

int main(int argc, char **argv) { return tsl_cli_main(argc, argv); }
