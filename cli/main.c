/* main: the `ptygate` command-line client. Dispatches the first argument
   to its command module through a table; each module parses its own
   options and returns the exit code (0 ok, 1 failure, 2 usage). */
#include <stdio.h>
#include <string.h>

#include "attach.h"
#include "cli.h"
#include "run.h"
#include "sessions.h"
#include "token.h"

struct main_command {
	const char *name;
	int (*run)(int argc, char **argv);
};

static const struct main_command main_commands[] = {
    {"token", token_main},
    {"sessions", sessions_main},
    {"attach", attach_main},
    {"run", run_main},
};

static const char main_usage[] =
    "Usage: ptygate COMMAND [options]\n"
    "\n"
    "The ptygate client: mint tokens, manage sessions, attach to a terminal.\n"
    "\n"
    "Commands:\n"
    "  token keygen    generate an Ed25519 key pair for signing tokens\n"
    "  token mint      mint a bearer token (JWT)\n"
    "  sessions        create, list, get or kill sessions (REST)\n"
    "  attach          attach this terminal to a session (WebSocket)\n"
    "  run             run a command in a session as a task, exit with its code\n"
    "\n"
    "Run 'ptygate COMMAND --help' for a command's options.\n"
    "  -h, --help      show this help\n"
    "  --version       show the version\n";

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		fputs(main_usage, stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(main_usage, stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ptygate %s\n", PTG_VERSION);
		return CLI_OK;
	}
	for (i = 0; i < sizeof(main_commands) / sizeof(main_commands[0]); i++)
		if (!strcmp(argv[1], main_commands[i].name))
			return main_commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "ptygate: unknown command '%s' (see 'ptygate --help')\n",
		argv[1]);
	return CLI_USAGE;
}
