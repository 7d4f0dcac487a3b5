/* sessions: `ptygate sessions create|list|get|kill`, the session REST API
   of docs/protocol.md, "7. Around the WebSocket", from the command
   line. */
#ifndef PTG_CLI_SESSIONS_H
#define PTG_CLI_SESSIONS_H

#include <getopt.h>

#include "cli.h"

/* Runs `ptygate sessions ...`; argv[0] is "sessions". Returns the exit
   code. */
int sessions_main(int argc, char **argv);

/* The verbs (NULL-terminated) and the options sessions_main parses;
   `ptygate completion` reads the same tables. */
extern const char *const sessions_verbs[];
extern const struct option sessions_opts[];
/* The same options as the manual page describes them. */
extern const struct cli_optdoc sessions_optdocs[];

#endif
