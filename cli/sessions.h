/* sessions: `ptygate sessions create|list|get|kill`, the session REST API
   of SPEC 9 from the command line. */
#ifndef PTG_CLI_SESSIONS_H
#define PTG_CLI_SESSIONS_H

/* Runs `ptygate sessions ...`; argv[0] is "sessions". Returns the exit
   code. */
int sessions_main(int argc, char **argv);

#endif
