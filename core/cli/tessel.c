/* core/cli/tessel.c — the `tessel` program. */
#include "tessel/tessel.h"

int main(int argc, char **argv) { return tessel_main(argc, argv); }
