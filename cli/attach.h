/* attach: `ptygate attach`, an interactive terminal client of a session
   over the pty-ws/v1 WebSocket binding (docs/protocol.md, sections 1 to
   5). */
#ifndef PTG_CLI_ATTACH_H
#define PTG_CLI_ATTACH_H

#include <getopt.h>

#include "cli.h"

/* Runs `ptygate attach ...`; argv[0] is "attach". Returns the exit code. */
int attach_main(int argc, char **argv);

/* The options attach_main parses; `ptygate completion` reads them too. */
extern const struct option attach_opts[];
/* The same options as the manual page describes them. */
extern const struct cli_optdoc attach_optdocs[];

#endif
