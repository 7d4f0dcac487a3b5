/* manpage: `ptygate --help-man`, the manual page ptygate(1) in roff,
   made from every command's option list (the same lists the parsers and
   the completion scripts read), so the page names every option the
   binary takes. */
#ifndef PTG_CLI_MANPAGE_H
#define PTG_CLI_MANPAGE_H

#include <stdio.h>

#include "cli.h"

/* One command's part of the page: `ptygate NAME`. */
struct manpage_cmd {
	const char *name;	       /* "token mint", "sessions" */
	const char *synopsis;	       /* lines after "ptygate ", "\n" between them */
	const char *text;	       /* plain text; paragraphs split by "\n\n" */
	const char *shortopts;	       /* the letters that are short options too */
	const struct cli_optdoc *docs; /* its options, ending with a zeroed entry */
};

/* Every command the page describes, ending with a zeroed entry. */
extern const struct manpage_cmd manpage_cmds[];

/* Writes the whole page to out. */
void manpage_print(FILE *out);

#endif
