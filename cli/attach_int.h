/* attach_int: what the files of `ptygate attach` share and nothing else
   sees: attach.c (the client's loop) and attach_args.c (its command line,
   which never calls attach.c). */
#ifndef PTG_CLI_ATTACH_INT_H
#define PTG_CLI_ATTACH_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "cli.h"
#include "ptg_limits.h"
#include "ptyc.h"
#include "tlsio.h"
#include "wsclient.h"

/* One `ptygate attach`: its options and the client's state. */
struct attach {
	struct cli_target target;
	const char *session;
	struct ptyc_join join;
	char label[PTG_LABEL_MAX_BYTES + 1];
	bool fixed_size;	/* --cols/--rows given: do not follow the terminal */
	struct tlsio_opts tls;	/* --ca-file, --insecure */
	char url_gateway[1024]; /* --url split: its base, instance and session */
	char url_instance[PTG_ID_MAX + 1];
	char url_session[PTG_ID_MAX + 1];
	bool tty; /* stdin is a terminal: raw mode, resizes, detach key */
	bool raw; /* raw mode is on: notices end in "\r\n" */
	struct wsclient *ws;
	struct ptyc *pc;
	int sigfd;
	bool stdin_open;
	bool leaving;	  /* leave sent, or goodbye received: closing */
	bool detached;	  /* the user asked to leave */
	bool input_ended; /* piped stdin ended and we left for it */
	bool close_sent;  /* the leave timed out and we closed ourselves */
	bool quit;	  /* stop now */
	bool told_observer;
	bool deciding;	   /* Ctrl-] with a control request waiting: y, n or detach */
	bool left;	   /* this client sent pty.leave_session */
	unsigned attempt;  /* reconnect attempts since the last join */
	struct buf early;  /* keys typed before RoleAssigned, sent after it */
	int64_t deadline;  /* while leaving: the next step is due at */
	int64_t eof_ms;	   /* piped input ended (0: not yet) */
	int64_t output_ms; /* the last screen output arrived */
	unsigned sent_cols, sent_rows;
	int64_t resize_ms; /* a SIGWINCH is waiting to be sent then (0: none) */
};

/* Options into a; CLI_OK, CLI_USAGE, or -1 after --help. */
int attach__parse(struct attach *a, int argc, char **argv);
/* The label other clients see when --label is not given. */
void attach__default_label(char *out, size_t n);

#endif
