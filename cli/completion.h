/* completion: the table of ptygate's commands (main dispatches through
   it) and `ptygate completion bash|zsh`, a shell completion script
   generated from the same option tables the commands parse with, so the
   two cannot drift apart. */
#ifndef PTG_CLI_COMPLETION_H
#define PTG_CLI_COMPLETION_H

#include <getopt.h>
#include <stdio.h>

#include "cli.h"

/* One `ptygate COMMAND`. */
struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv); /* argv[0] is the command */
	const char *const *verbs;	   /* NULL-terminated, or NULL: none */
	const struct option *opts;	   /* NULL: ask `COMMAND VERB --help` */
	const char *shortopts;		   /* as getopt reads them, "" for none */
};

/* `ptygate completion`'s own options, as the manual page describes them. */
extern const struct cli_optdoc completion_optdocs[];

/* Every command, ending with a zeroed entry. */
extern const struct cli_command completion_commands[];

#endif
