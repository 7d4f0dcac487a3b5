/* cli: what every ptygate subcommand shares: exit codes, one-line error
   messages, getopt plumbing, and the gateway target
   options (--gateway, --instance, --token, --token-file) with their
   environment fallbacks (PTYGATE_GATEWAY, PTYGATE_INSTANCE,
   PTYGATE_TOKEN). */
#ifndef PTG_CLI_H
#define PTG_CLI_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"

/* Exit codes: usage errors are 2, everything else that fails is 1. */
enum cli_exit { CLI_OK = 0, CLI_FAIL = 1, CLI_USAGE = 2 };

#define CLI_DEFAULT_GATEWAY "http://127.0.0.1:8080"
#define CLI_DURATION_MAX    (10LL * 366 * 86400) /* ten years, in seconds */

/* getopt_long values of the target options, above any short option. */
enum cli_target_opt {
	CLI_OPT_GATEWAY = 0x1000,
	CLI_OPT_INSTANCE,
	CLI_OPT_TOKEN,
	CLI_OPT_TOKEN_FILE,
	CLI_OPT_FIRST_FREE, /* the next free value for a command's own options */
};

/* The room for one error message a command prints on one line (a
   gateway's refusal, a TLS failure, a file it could not read). */
#define CLI_ERR_LEN 512

/* One option of a command as its manual page and checks see it. */
struct cli_optdoc {
	const char *name; /* the long name, without "--" */
	int val;	 /* getopt_long's value: a short option's letter, or above 0xff */
	const char *arg; /* the value's name ("FILE"); NULL: takes none */
	const char *help; /* plain text, one paragraph */
};

/* Each command writes its options once, as a list of
   X(name, has_arg, val, arg, help), and makes from that one list both its
   getopt_long table (which the parser and `ptygate completion` read) and
   its cli_optdoc table (which `ptygate --help-man` reads), so an option
   the parser takes cannot be missing from the manual. */
#define CLI_GETOPT(nm, has, v, ar, hl) {nm, has, NULL, v},
#define CLI_OPTDOC(nm, has, v, ar, hl) {nm, v, ar, hl},
#define CLI_GETOPT_END                                                                   \
	{                                                                                \
		NULL, 0, NULL, 0                                                         \
	}
#define CLI_OPTDOC_END                                                                   \
	{                                                                                \
		NULL, 0, NULL, NULL                                                      \
	}

/* The target options, in every command that talks to a gateway. */
#define CLI_TARGET_OPTS(X)                                                               \
	X("gateway", required_argument, CLI_OPT_GATEWAY, "URL",                          \
	  "the gateway's base URL, http:// or https:// (attach and run also take "       \
	  "ws:// and wss://); default: $PTYGATE_GATEWAY, else " CLI_DEFAULT_GATEWAY)     \
	X("instance", required_argument, CLI_OPT_INSTANCE, "ID",                         \
	  "the sandbox instance; default: $PTYGATE_INSTANCE")                            \
	X("token", required_argument, CLI_OPT_TOKEN, "TOKEN",                            \
	  "the bearer token itself; a command line is visible to every user in ps, so "  \
	  "this warns: prefer --token-file or $PTYGATE_TOKEN")                           \
	X("token-file", required_argument, CLI_OPT_TOKEN_FILE, "FILE",                   \
	  "read the bearer token from FILE; without it or --token, $PTYGATE_TOKEN")

/* Where a command talks to and as whom. The const strings point into
   argv or the environment; gateway and token are owned (cli_target_clear). */
struct cli_target {
	const char *gateway_arg; /* --gateway */
	const char *instance;
	const char *token_arg;	/* --token */
	const char *token_file; /* --token-file */
	char *gateway;		/* base URL without trailing '/', after _finish */
	char *token;		/* the token to send, after _finish */
};

/* The one sanitiser of text from the network (a gateway's error bodies,
   headers, frames, session fields) before it reaches a terminal, so a
   server cannot retitle the window, clear the screen or move the cursor:
   appends s[0, n) to out with every C0 control (newline and tab too: a
   message is one line), DEL and invalid UTF-8 byte as "\xHH", and every
   C1 control (U+0080 to U+009F) as "\u00HH"; other UTF-8 is kept. */
void cli_clean(const char *s, size_t n, struct buf *out);
/* Formats, cleans the result with cli_clean and writes it to f, then end
   (ours, not cleaned: "\n", or "\r\n" in raw mode). What every CLI path
   that prints network text goes through. */
void cli_print(FILE *f, const char *end, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes JSON text made by json_dumps with JSON_ENSURE_ASCII (so its only
   raw controls are DEL and the indentation's newlines) with DEL escaped
   as \u007f: valid JSON, no control reaching the terminal. */
void cli_print_json(FILE *f, const char *json);
/* Prints "ptygate: <message>" and a newline on stderr, the message
   cleaned with cli_clean (it often quotes the gateway). */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "ptygate <cmd>: <message> (see 'ptygate <cmd> --help')" on stderr
   and returns CLI_USAGE. */
int cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Reports what getopt_long returned as '?' or ':' (optstring must start
   with "+:") for argv; returns CLI_USAGE. */
int cli_getopt_error(const char *cmd, char *const argv[], int c);
/* Resets getopt so a fresh argument vector can be parsed. */
void cli_getopt_reset(void);

/* The operands (positional arguments) cli_getopt collects, in order. */
struct cli_operands {
	char **v; /* n of them, after cli_getopt returned -1 */
	int n;
	int dashdash; /* index in v of the first operand after "--", or -1 */
};
/* getopt_long with options anywhere, as people expect: an operand does
   not end the options ("sessions get ID -o json"), "--" does (everything
   after it is an operand, "-x" included). spec is the short options
   without the leading "+:" (added here). Returns what getopt_long
   returns, '?' and ':' as cli_getopt_error reads them, and -1 at the end,
   with ops filled. Free ops with cli_operands_free. Call
   cli_getopt_reset before the first call. */
int cli_getopt(int argc, char **argv, const char *spec, const struct option *longopts,
	       struct cli_operands *ops);
void cli_operands_free(struct cli_operands *ops);

/* Appends word quoted for a POSIX shell when it needs it: bare when it
   holds only [A-Za-z0-9,._+:@%/=-] (and is not empty), else in single
   quotes with each ' written as '\''. */
void cli_shell_quote(const char *word, struct buf *out);

/* Takes one target option (c is its getopt value). Returns true when c
   was one. */
bool cli_target_option(struct cli_target *t, int c, const char *arg);
/* Applies defaults and environment fallbacks and loads the token (from
   --token, --token-file, then PTYGATE_TOKEN). Returns CLI_OK, or prints
   one line and returns CLI_USAGE (missing instance or token, a bad
   gateway URL) or CLI_FAIL (unreadable token file). */
int cli_target_finish(struct cli_target *t, const char *cmd);
/* Frees gateway, wipes and frees token. NULL is a no-op. */
void cli_target_clear(struct cli_target *t);

/* Appends s percent-encoded as one URL path segment (RFC 3986: every
   byte but the unreserved ones becomes %XX). */
void cli_path_escape(const char *s, struct buf *out);

#endif
