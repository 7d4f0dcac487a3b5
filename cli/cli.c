/* cli: helpers every ptygate subcommand shares (see cli.h). Messages go
   to stderr as one line each, so scripts can show them as they are. */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "auth_jwt.h"
#include "fdio.h"
#include "utf8.h"
#include "xalloc.h"

void cli_clean(const char *s, size_t n, struct buf *out)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = p[i] < 0x80 ? 1 : utf8_seq_len(p + i, n - i);

		if (p[i] < 0x20 || p[i] == 0x7f || len == 0) {
			buf_appendf(out, "\\x%02x", p[i]); /* C0, DEL, a stray byte */
			i++;
		} else if (p[i] == 0xc2 && p[i + 1] < 0xa0) {
			buf_appendf(out, "\\u%04x", p[i + 1]); /* C1: U+0080 to U+009F */
			i += 2;
		} else {
			buf_append(out, p + i, len);
			i += len;
		}
	}
}

static void vprint(FILE *f, const char *prefix, const char *end, const char *fmt,
		   va_list ap)
{
	struct buf text = BUF_INIT, out = BUF_INIT;

	buf_vappendf(&text, fmt, ap);
	buf_append_str(&out, prefix);
	cli_clean((const char *)buf_head(&text), buf_size(&text), &out);
	buf_append_str(&out, end);
	fwrite(buf_head(&out), 1, buf_size(&out), f);
	buf_free(&text);
	buf_free(&out);
}

void cli_print(FILE *f, const char *end, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint(f, "", end, fmt, ap);
	va_end(ap);
}

void cli_print_json(FILE *f, const char *json)
{
	for (const char *p = json; *p; p++) {
		if (*p == 0x7f)
			fputs("\\u007f", f);
		else
			fputc(*p, f);
	}
}

void cli_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vprint(stderr, "ptygate: ", "\n", fmt, ap);
	va_end(ap);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ptygate %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (see 'ptygate %s --help')\n", cmd);
	return CLI_USAGE;
}

int cli_getopt_error(const char *cmd, char *const argv[], int c)
{
	const char *arg = optind > 0 ? argv[optind - 1] : "?";

	if (c == ':')
		return cli_usage_error(cmd, "option '%s' needs a value", arg);
	if (optopt && optopt < 0x100)
		return cli_usage_error(cmd, "unknown option '-%c'", optopt);
	return cli_usage_error(cmd, "unknown option '%s'", arg);
}

/* Whether getopt_long stopped inside a cluster of short options ("-qo
   json" after -q): the next word is not ours to look at yet. */
static bool cli_mid_cluster;

void cli_getopt_reset(void)
{
	/* glibc re-initialises its scanner, permutation state included, on 0. */
	optind = 0;
	opterr = 0;
	cli_mid_cluster = false;
}

static void operand(struct cli_operands *ops, char *arg)
{
	ops->v[ops->n++] = arg;
}

/* An explicit loop rather than glibc's permutation: it does not reorder
   argv, and POSIXLY_CORRECT in the environment cannot change it. */
int cli_getopt(int argc, char **argv, const char *spec, const struct option *longopts,
	       struct cli_operands *ops)
{
	char full[64];
	int at, c;

	snprintf(full, sizeof(full), "+:%s", spec);
	if (!ops->v) {
		ops->v = xcalloc((size_t)argc + 1, sizeof(*ops->v));
		ops->n = 0;
		ops->dashdash = -1;
	}
	for (;;) {
		at = optind ? optind : 1;
		if (!cli_mid_cluster && at >= argc)
			return -1;
		if (!cli_mid_cluster && !strcmp(argv[at], "--")) {
			ops->dashdash = ops->n;
			for (at++; at < argc; at++)
				operand(ops, argv[at]);
			optind = argc;
			return -1;
		}
		if (!cli_mid_cluster && (argv[at][0] != '-' || !argv[at][1])) {
			operand(ops, argv[at]); /* "-" alone is an operand too */
			optind = at + 1;
			continue;
		}
		c = getopt_long(argc, argv, full, longopts, NULL);
		cli_mid_cluster = c != -1 && optind == at;
		return c;
	}
}

void cli_operands_free(struct cli_operands *ops)
{
	free(ops->v);
	ops->v = NULL;
	ops->n = 0;
	ops->dashdash = -1;
}

void cli_shell_quote(const char *word, struct buf *out)
{
	static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789,._+:@%/=-";

	if (*word && strspn(word, safe) == strlen(word)) {
		buf_append_str(out, word);
		return;
	}
	buf_append_str(out, "'");
	for (const char *p = word; *p; p++) {
		if (*p == '\'')
			buf_append_str(out, "'\\''");
		else
			buf_append(out, p, 1);
	}
	buf_append_str(out, "'");
}

bool cli_target_option(struct cli_target *t, int c, const char *arg)
{
	switch (c) {
	case CLI_OPT_GATEWAY:
		t->gateway_arg = arg;
		return true;
	case CLI_OPT_INSTANCE:
		t->instance = arg;
		return true;
	case CLI_OPT_TOKEN:
		t->token_arg = arg;
		return true;
	case CLI_OPT_TOKEN_FILE:
		t->token_file = arg;
		return true;
	}
	return false;
}

/* A JWT is base64url and dots; anything else (a space, CR or LF above
   all) must never reach an HTTP header line. */
static bool token_ok(const char *s, size_t n)
{
	size_t i;

	if (n == 0 || n > JWT_MAX_TOKEN)
		return false;
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* Copies the token out of text, without surrounding whitespace. */
static int take_token(struct cli_target *t, const char *text, size_t n, const char *cmd,
		      const char *from)
{
	while (n && (*text == ' ' || *text == '\t' || *text == '\r' || *text == '\n'))
		text++, n--;
	while (n && (text[n - 1] == ' ' || text[n - 1] == '\t' || text[n - 1] == '\r' ||
		     text[n - 1] == '\n'))
		n--;
	if (!token_ok(text, n))
		return cli_usage_error(cmd,
				       "the token from %s is empty, too long or "
				       "holds characters a JWT cannot",
				       from);
	t->token = xstrndup(text, n);
	return CLI_OK;
}

static int load_token(struct cli_target *t, const char *cmd)
{
	struct buf b = BUF_INIT;
	char err[CLI_ERR_LEN];
	const char *env = getenv("PTYGATE_TOKEN");
	int rc;

	if (t->token_arg && t->token_file)
		return cli_usage_error(cmd, "give --token or --token-file, not both");
	if (t->token_arg) {
		/* Kept for scripts, but a command line is public (ps, /proc). */
		fprintf(stderr,
			"ptygate %s: warning: --token is visible to other users "
			"(ps); prefer --token-file or PTYGATE_TOKEN\n",
			cmd);
		return take_token(t, t->token_arg, strlen(t->token_arg), cmd, "--token");
	}
	if (!t->token_file) {
		if (!env || !*env)
			return cli_usage_error(cmd,
					       "no token: give --token, --token-file "
					       "or set PTYGATE_TOKEN");
		return take_token(t, env, strlen(env), cmd, "PTYGATE_TOKEN");
	}
	/* Not FDIO_REGULAR: a token may come through a pipe, <(command). */
	rc = fd_read_file(t->token_file, 0, JWT_MAX_TOKEN + 64, &b, err, sizeof(err));
	if (rc < 0) {
		cli_error("%s", err);
		rc = CLI_FAIL;
	} else {
		rc = take_token(t, (const char *)buf_head(&b), buf_size(&b), cmd,
				t->token_file);
	}
	if (b.data)
		sodium_memzero(b.data, b.cap);
	buf_free(&b);
	return rc;
}

int cli_target_finish(struct cli_target *t, const char *cmd)
{
	const char *gw = t->gateway_arg;
	size_t n;

	if (!gw || !*gw)
		gw = getenv("PTYGATE_GATEWAY");
	if (!gw || !*gw)
		gw = CLI_DEFAULT_GATEWAY;
	n = strlen(gw);
	while (n && gw[n - 1] == '/')
		n--;
	if (!strchr(gw, ':') || strpbrk(gw, " \t\r\n"))
		return cli_usage_error(cmd, "bad gateway URL '%s'", gw);
	t->gateway = xstrndup(gw, n);
	if (!t->instance || !*t->instance)
		t->instance = getenv("PTYGATE_INSTANCE");
	if (!t->instance || !*t->instance)
		return cli_usage_error(cmd, "no instance: give --instance or set "
					    "PTYGATE_INSTANCE");
	if (strlen(t->instance) > PTG_ID_MAX)
		return cli_usage_error(cmd, "--instance is longer than %d bytes",
				       PTG_ID_MAX);
	return load_token(t, cmd);
}

void cli_target_clear(struct cli_target *t)
{
	if (!t)
		return;
	free(t->gateway);
	t->gateway = NULL;
	if (t->token) {
		sodium_memzero(t->token, strlen(t->token));
		free(t->token);
		t->token = NULL;
	}
}

void cli_path_escape(const char *s, struct buf *out)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p;

	for (p = (const unsigned char *)s; *p; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' ||
		    *p == '~') {
			buf_append(out, p, 1);
		} else {
			char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};

			buf_append(out, e, 3);
		}
	}
}
