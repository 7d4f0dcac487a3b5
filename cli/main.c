/* main: the `ptygate` command-line client. Dispatches the first argument
   to its command module through completion_commands (completion.c); each module parses
   its own options and returns the exit code (0 ok, 1 failure, 2 usage). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "completion.h"
#include "manpage.h"

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
    "  completion      print a bash or zsh completion script\n"
    "\n"
    "Run 'ptygate COMMAND --help' for a command's options. Options may come\n"
    "before or after the arguments; '--' ends them.\n"
    "  -h, --help      show this help\n"
    "  --version       show the version\n"
    "  --help-man      print the manual page ptygate(1) (roff)\n";

int main(int argc, char **argv)
{
	const struct cli_command *c;

	if (argc < 2) {
		fputs(main_usage, stderr);
		return CLI_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") ||
	    !strcmp(argv[1], "help")) {
		fputs(main_usage, stdout);
		return CLI_OK;
	}
	if (!strcmp(argv[1], "--help-man")) {
		manpage_print(stdout);
		return fflush(stdout) ? CLI_FAIL : CLI_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("ptygate %s\n", PTG_VERSION);
		return CLI_OK;
	}
	for (c = completion_commands; c->name; c++)
		if (!strcmp(argv[1], c->name))
			return c->run(argc - 1, argv + 1);
	fprintf(stderr, "ptygate: unknown command '%s' (see 'ptygate --help')\n",
		argv[1]);
	return CLI_USAGE;
}
