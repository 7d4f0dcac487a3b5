/* attach_args: the command line of `ptygate attach`: its help text, its
   options (also read by `ptygate completion`) and their checks: the
   label, --url split into gateway, instance and session, the target. */
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "attach_int.h"
#include "cli.h"
#include "num.h"
#include "ptg_limits.h"
#include "ptyc.h"
#include "tlsio.h"
#include "utf8.h"
#include "wsclient.h"

static const char attach_usage[] =
    "Usage: ptygate attach --session ID [options]   (or: ptygate attach [options] ID)\n"
    "       ptygate attach --url ws[s]://HOST:PORT/agents/I/sessions/S/attach [options]\n"
    "\n"
    "Attach this terminal to a session over the gateway's WebSocket. Ctrl-]\n"
    "detaches: the session keeps running (unless its policy ends it with its\n"
    "last controller). When the connection drops, the client reconnects by\n"
    "itself with backoff (0.5 s doubling to 30 s) and replays what it missed\n"
    "(replay_from = the last sequence shown); keys typed while away are\n"
    "dropped, never sent late. When stdin is not a terminal, its bytes are\n"
    "sent until end of file, then the client leaves once the screen has been\n"
    "quiet for half a second (5 s at most); the screen still goes to stdout.\n"
    "Without a terminal the join asks for no size: a script never resizes the\n"
    "session.\n"
    "In a session whose control policy is approve, requests for control are\n"
    "shown as they come; a controller answers the oldest with Ctrl-] then y\n"
    "(approve) or n (deny); Ctrl-] twice detaches, any other key goes on.\n"
    "\n"
    "  --url URL            the attach URL, "
    "ws[s]://HOST:PORT/agents/I/sessions/S/attach\n"
    "                       (in place of --gateway, --instance and --session)\n"
    "  --gateway URL        gateway base URL, http(s):// or ws(s):// (env\n"
    "                       PTYGATE_GATEWAY, default " CLI_DEFAULT_GATEWAY ")\n"
    "  --instance ID        instance id (env PTYGATE_INSTANCE)\n"
    "  --session ID         the session to attach to (required)\n"
    "  --token-file FILE    read the bearer token (pty:observe or pty:control)\n"
    "                       from FILE; else the env PTYGATE_TOKEN\n"
    "  --token TOKEN        the token itself: visible to every user in ps, so\n"
    "                       prefer the two above\n"
    "  --observer           join as an observer (default: controller)\n"
    "  --replay-from N      replay the frames after sequence N before going live\n"
    "  --label LABEL        how other clients see this one (default: $USER@host)\n"
    "  --cols N, --rows N   the size to ask for (default: this terminal's; none\n"
    "                       when stdin is not a terminal: a script never\n"
    "                       resizes the session)\n"
    "  --ca-file FILE       wss://: trust the CAs in FILE (PEM), not the system's\n"
    "  --insecure           wss://: do not check the certificate (tests only)\n"
    "  -h, --help           show this help\n"
    "\n"
    "Exit status: the program's exit code when the session ends while\n"
    "attached; 0 after a detach or a normal close (1000); 1 on any other end\n"
    "(refused, token expired, reconnect given up); 2 for a usage error.\n";

enum {
	ATTACH_OPT_SESSION = CLI_OPT_FIRST_FREE,
	ATTACH_OPT_OBSERVER,
	ATTACH_OPT_REPLAY,
	ATTACH_OPT_LABEL,
	ATTACH_OPT_COLS,
	ATTACH_OPT_ROWS,
	ATTACH_OPT_URL,
	ATTACH_OPT_CA_FILE,
	ATTACH_OPT_INSECURE,
};

/* Every option of `ptygate attach`, once (see CLI_GETOPT in cli.h). */
#define ATTACH_OPTS(X)                                                                   \
	CLI_TARGET_OPTS(X)                                                               \
	X("session", required_argument, ATTACH_OPT_SESSION, "ID",                        \
	  "the session to attach to (or give it as the operand)")                        \
	X("observer", no_argument, ATTACH_OPT_OBSERVER, NULL,                            \
	  "join as an observer (default: as a controller)")                              \
	X("replay-from", required_argument, ATTACH_OPT_REPLAY, "N",                      \
	  "replay the frames after sequence N before going live")                        \
	X("label", required_argument, ATTACH_OPT_LABEL, "LABEL",                         \
	  "how other clients see this one (default: $USER@host)")                        \
	X("cols", required_argument, ATTACH_OPT_COLS, "N",                               \
	  "the width to ask for (default: this terminal's; none when stdin is not a "    \
	  "terminal: a script never resizes the session)")                               \
	X("rows", required_argument, ATTACH_OPT_ROWS, "N",                               \
	  "the height to ask for (default: this terminal's)")                            \
	X("url", required_argument, ATTACH_OPT_URL, "URL",                               \
	  "the attach URL, ws[s]://HOST:PORT/agents/I/sessions/S/attach, in place of "   \
	  "--gateway, --instance and --session")                                         \
	X("ca-file", required_argument, ATTACH_OPT_CA_FILE, "FILE",                      \
	  "wss://: trust the certificate authorities in FILE (PEM) alone, not the "      \
	  "system's")                                                                    \
	X("insecure", no_argument, ATTACH_OPT_INSECURE, NULL,                            \
	  "wss://: do not check the gateway's certificate (with a warning; for tests)")  \
	X("help", no_argument, 'h', NULL, "show the help")

const struct option attach_opts[] = {ATTACH_OPTS(CLI_GETOPT) CLI_GETOPT_END};
const struct cli_optdoc attach_optdocs[] = {ATTACH_OPTS(CLI_OPTDOC) CLI_OPTDOC_END};

/* Whether s is UTF-8 of at most PTG_LABEL_MAX_CHARS characters, the
   bound the protocol sets on client_label (characters, not bytes; see
   docs/protocol.md, "Client ops"). */
static bool label_ok(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n = strlen(s), chars = 0, len;

	for (size_t i = 0; i < n; i += len, chars++)
		if ((len = utf8_seq_len(p + i, n - i)) == 0)
			return false;
	return chars <= PTG_LABEL_MAX_CHARS;
}

/* Copies the path segment at *p (up to '/' or the end) into out: an id
   of 1..PTG_ID_MAX characters of [A-Za-z0-9._~:@-], which need no
   percent-decoding. */
static int url_id(const char **p, char *out)
{
	size_t n = strcspn(*p, "/");

	if (n == 0 || n > PTG_ID_MAX ||
	    strspn(*p, "abcdefghijklmnopqrstuvwxyz"
		       "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		       "0123456789._~:@-") < n)
		return -1;
	memcpy(out, *p, n);
	out[n] = '\0';
	*p += n;
	return 0;
}

/* --url ws://HOST:PORT[/prefix]/agents/I/sessions/S[/attach] */
static int parse_url(struct attach *a, const char *url)
{
	const char *ag = strstr(url, "/agents/"), *p;
	size_t base;

	if (!ag || (base = (size_t)(ag - url)) >= sizeof(a->url_gateway))
		goto bad;
	p = ag + strlen("/agents/");
	if (url_id(&p, a->url_instance) < 0 || strncmp(p, "/sessions/", 10) != 0)
		goto bad;
	p += 10;
	if (url_id(&p, a->url_session) < 0)
		goto bad;
	if (*p && strcmp(p, "/attach") != 0 && strcmp(p, "/attach/") != 0 &&
	    strcmp(p, "/"))
		goto bad;
	memcpy(a->url_gateway, url, base);
	a->url_gateway[base] = '\0';
	a->target.gateway_arg = a->url_gateway;
	a->target.instance = a->url_instance;
	a->session = a->url_session;
	return CLI_OK;
bad:
	return cli_usage_error("attach",
			       "bad --url '%s': expected "
			       "ws://HOST:PORT/agents/INSTANCE/sessions/SESSION/attach",
			       url);
}

static int option(struct attach *a, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case ATTACH_OPT_URL:
		return parse_url(a, arg);
	case ATTACH_OPT_CA_FILE:
		a->tls.ca_file = arg;
		break;
	case ATTACH_OPT_INSECURE:
		a->tls.insecure = true;
		break;
	case ATTACH_OPT_SESSION:
		a->session = arg;
		break;
	case ATTACH_OPT_OBSERVER:
		a->join.observer = true;
		break;
	case ATTACH_OPT_REPLAY:
		if (num_parse_u64(arg, 0, INT64_MAX, &v) < 0)
			return cli_usage_error("attach", "bad --replay-from '%s'", arg);
		a->join.replay = true;
		a->join.replay_from = v;
		break;
	case ATTACH_OPT_LABEL:
		if (!label_ok(arg))
			return cli_usage_error("attach",
					       "--label must be UTF-8 of at "
					       "most %d characters",
					       PTG_LABEL_MAX_CHARS);
		snprintf(a->label, sizeof(a->label), "%s", arg);
		break;
	case ATTACH_OPT_COLS:
	case ATTACH_OPT_ROWS:
		if (num_parse_u64(arg, PTG_DIM_MIN, PTG_DIM_MAX, &v) < 0)
			return cli_usage_error("attach", "bad --%s '%s' (1..%d)",
					       c == ATTACH_OPT_COLS ? "cols" : "rows",
					       arg, PTG_DIM_MAX);
		*(c == ATTACH_OPT_COLS ? &a->join.cols : &a->join.rows) = (unsigned)v;
		a->fixed_size = true;
		break;
	}
	return CLI_OK;
}

/* "$USER@host", cut to the protocol's limit. */
void attach__default_label(char *out, size_t n)
{
	const struct passwd *pw;
	const char *user = getenv("USER");
	char host[256] = "localhost";

	if (!user || !*user)
		user = (pw = getpwuid(getuid())) ? pw->pw_name : "user";
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	size_t k;

	if (snprintf(out, n, "%s@%s", user, host) >= (int)n) {
		/* Cut at a character boundary: the label must stay UTF-8. */
		k = strlen(out);
		while (k > 0 && ((unsigned char)out[k - 1] & 0xc0) == 0x80)
			k--;
		if (k > 0 && (unsigned char)out[k - 1] >= 0xc0)
			k--;
		out[k] = '\0';
	}
}

/* The options, anywhere on the line; the one operand allowed is the
   session. CLI_OK, CLI_USAGE, or -1 after --help. */
static int options(struct attach *a, int argc, char **argv)
{
	struct cli_operands ops = {0};
	int c, rc = CLI_OK;

	cli_getopt_reset();
	while (rc == CLI_OK &&
	       (c = cli_getopt(argc, argv, "h", attach_opts, &ops)) != -1) {
		if (c == 'h') {
			fputs(attach_usage, stdout);
			rc = -1;
		} else if (c == '?' || c == ':') {
			rc = cli_getopt_error("attach", argv, c);
		} else if (!cli_target_option(&a->target, c, optarg)) {
			rc = option(a, c, optarg);
		}
	}
	if (rc == CLI_OK && ops.n > 0 && !a->session)
		a->session = ops.v[0];
	else if (rc == CLI_OK && ops.n > 0)
		rc = cli_usage_error("attach", "unexpected argument '%s'", ops.v[0]);
	if (rc == CLI_OK && ops.n > 1)
		rc = cli_usage_error("attach", "unexpected argument '%s'", ops.v[1]);
	cli_operands_free(&ops);
	return rc;
}

/* Options into a; CLI_OK, CLI_USAGE, or -1 after --help. */
int attach__parse(struct attach *a, int argc, char **argv)
{
	struct wsclient_addr addr;
	char err[CLI_ERR_LEN];
	int rc = options(a, argc, argv);

	if (rc != CLI_OK)
		return rc;
	if (a->url_session[0] &&
	    (a->session != a->url_session || a->target.instance != a->url_instance ||
	     a->target.gateway_arg != a->url_gateway))
		return cli_usage_error(
		    "attach", "--url names the gateway, instance and "
			      "session: give no --gateway, --instance or --session");
	if (!a->session || !*a->session)
		return cli_usage_error("attach", "--session is required");
	rc = cli_target_finish(&a->target, "attach");
	if (rc == CLI_OK &&
	    wsclient_split_url(a->target.gateway, &addr, err, sizeof(err)) < 0)
		return cli_usage_error("attach", "%s", err);
	return rc;
}
