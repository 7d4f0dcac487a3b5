/* token: `ptygate token keygen` (an Ed25519 key pair in PEM files) and
   `ptygate token mint` (a signed JWT with the claims of docs/protocol.md,
   "6. Authentication"). */
#ifndef PTG_CLI_TOKEN_H
#define PTG_CLI_TOKEN_H

#include <getopt.h>
#include <stdint.h>

#include "cli.h"

/* Runs `ptygate token ...`; argv[0] is "token". Returns the exit code. */
int token_main(int argc, char **argv);

/* The options of `token mint` and `token keygen` as their parsers take
   them, and as the manual page describes them. */
extern const struct option token_mint_opts[], token_keygen_opts[];
extern const struct cli_optdoc token_mint_optdocs[], token_keygen_optdocs[];

/* The claims `mint` builds, apart from the command line and the clock so
   a test can check the claim set the gateway verifies. */
#define TOKEN_SCOPE_MAX 128 /* every known scope once, with spaces */

/* What `mint` puts in the token, before the clock is read. */
struct token_spec {
	const char *sub, *instance, *session, *audience, *issuer;
	char scope[TOKEN_SCOPE_MAX];
	unsigned scope_seen; /* bit i: known scope i is in scope */
	int64_t ttl;
	int64_t nbf_in; /* -1: no nbf claim */
};

#endif
