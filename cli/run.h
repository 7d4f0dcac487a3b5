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

/* The command line for /bin/sh -c from the words after "--": one word is
   taken as shell text; several are each quoted, so they run as given. */
void run_command_text(char *const *words, int n, struct buf *out);

/* The exit code a finished task (its A2A Task object, in its final state)
   stands for: the command's own code, 128 + a signal's number, or the
   CLI's codes for a canceled or failed task. Public for its unit test:
   scripts depend on this mapping. */
int run_exit_code(json_t *task, const char *state);

/* How long the wait loop may poll at now (monotonic ms): until close_by
   once the close handshake started, else until the deadline (0: none,
   then -1, no bound), at most a minute. Public for its unit test. */
int run_wait_ms(int64_t now, int64_t deadline, int64_t close_by);

#endif
