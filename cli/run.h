/* run: `ptygate run`, one command as an A2A task of a session
   (docs/protocol.md, "7. Around the WebSocket"):
   streams its status (stderr) and output (stdout, stderr) and exits with
   the command's exit code; Ctrl-C cancels the task. */
#ifndef PTG_CLI_RUN_H
#define PTG_CLI_RUN_H

#include <getopt.h>
#include <stdint.h>

#include <jansson.h>

#include "buf.h"
#include "cli.h"

/* Runs `ptygate run ...`; argv[0] is "run". Returns the exit code. */
int run_main(int argc, char **argv);

/* The options run_main parses; `ptygate completion` reads them too. */
extern const struct option run_opts[];
/* The same options as the manual page describes them. */
extern const struct cli_optdoc run_optdocs[];

#endif
