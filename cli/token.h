/* token: `ptygate token keygen` (an Ed25519 key pair in PEM files) and
   `ptygate token mint` (a signed JWT with the claims of SPEC 7). */
#ifndef PTG_CLI_TOKEN_H
#define PTG_CLI_TOKEN_H

/* Runs `ptygate token ...`; argv[0] is "token". Returns the exit code. */
int token_main(int argc, char **argv);

#endif
