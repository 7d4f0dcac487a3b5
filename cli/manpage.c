/* manpage: see manpage.h. The prose is plain text escaped for roff here;
   the options come from each command's cli_optdoc table. */
#include "manpage.h"

#include <stdbool.h>
#include <string.h>

#include "attach.h"
#include "cli.h"
#include "completion.h"
#include "opttab.h"
#include "run.h"
#include "sessions.h"
#include "token.h"

#define MANPAGE_PARA_MAX 2048 /* one paragraph of a command's text */

const struct manpage_cmd manpage_cmds[] = {
    {"token keygen", "token keygen --out-private FILE --out-public FILE",
     "Generates an Ed25519 key pair: the private key as PKCS#8 PEM (mode 0600), the "
     "public key as SubjectPublicKeyInfo PEM (mode 0644). Existing files are never "
     "overwritten. Give the public key to the gateways (--ed25519-public-key for "
     "client tokens, --link-key for instance credentials) and keep the private one "
     "for token mint --ed25519-key.",
     "h", token_keygen_optdocs},
    {"token mint",
     "token mint (--hs256-secret-file FILE | --ed25519-key FILE) --sub SUBJECT\n"
     "        --instance ID [--session ID] [--scope SCOPES] [--ttl DURATION] [options]\n"
     "token mint --audience ptygate-link --instance ID --ed25519-key FILE\n"
     "        [--kid KID] [--ttl DURATION]",
     "Prints a signed JWT on stdout, one of two kinds.\n\n"
     "A client token: --sub and --instance (or *) are required; --session, --scope "
     "(default pty:observe), --ttl (default 1h), --not-before-in, --audience, "
     "--issuer and --kid are optional; it is signed with --hs256-secret-file or "
     "--ed25519-key.\n\n"
     "An instance credential, with --audience ptygate-link: what a sandbox's sidecar "
     "presents to the gateways it dials (ptygate-sidecar --instance-token-file). It "
     "is signed with the fleet's Ed25519 provisioning key only (HS256 is refused), "
     "names one real instance (* is refused), its sub defaults to the instance, and "
     "--scope and --session are refused. Give --kid: gateways pick the key by it.\n\n"
     "The two never mix: a token whose aud is or contains ptygate-link is refused as "
     "a client token by every gateway, and a link credential must have aud exactly "
     "ptygate-link.",
     "h", token_mint_optdocs},
    {"sessions",
     "sessions create [options] [-- COMMAND [ARG...]]\n"
     "sessions list [options]\n"
     "sessions get [options] SESSION_ID\n"
     "sessions kill [options] SESSION_ID\n"
     "sessions export [options] [-o FILE] SESSION_ID",
     "Creates, lists, shows, ends and exports the sessions of an instance through the "
     "gateway's REST API (a token with the sessions scope; export also takes "
     "pty:observe). The answer is printed for people: a table for list, key: value "
     "lines for create and get; --output json prints the gateway's JSON document as "
     "it is, for scripts. list follows the gateway's pages and prints them as one "
     "list. get shows the session's command as a shell would read it back. kill "
     "prints the session as it is after the kill: it reads the session again every "
     "100 ms for 5 s at most and prints state: exited with its exit code, or state: "
     "kill requested (not exited yet).\n\n"
     "export writes the session's recording, asciicast v2, live or exited, to FILE "
     "(-o) or stdout as it arrives, whatever its size: to FILE.part, renamed to FILE "
     "once whole and removed when the transfer fails; it gives up on a transfer that "
     "stalls for 30 s.",
     "hqo", sessions_optdocs},
    {"attach",
     "attach --session ID [options]\n"
     "attach [options] SESSION_ID\n"
     "attach --url ws[s]://HOST:PORT/agents/I/sessions/S/attach [options]",
     "Attaches this terminal to a session over the gateway's WebSocket (pty-ws/v1), "
     "as a controller with a pty:control token, else as an observer. Ctrl-] detaches; "
     "the session keeps running unless its policy ends it with its last controller. "
     "In a session whose control policy is approve, requests for control are shown "
     "as they come, and a controller answers the oldest with Ctrl-] then y (approve) "
     "or n (deny); Ctrl-] twice detaches.\n\n"
     "When the connection drops, the client reconnects by itself after 0.5 s, "
     "doubling to 30 s, and joins with replay_from set to the last sequence shown: "
     "what was missed is replayed, then the live screen. Keys typed while away are "
     "dropped, never sent late. It gives up on a refusal that will not change (HTTP "
     "400, 401, 403, 404) and after the session ended, a leave, or close codes 4400, "
     "4401, 4403 and 4404.\n\n"
     "When stdin is not a terminal, its bytes are sent until end of file, then the "
     "client leaves once the screen has been quiet for half a second (5 s at most); "
     "the join asks for no size, so a script never resizes the session.\n\n"
     "wss:// (or an https:// gateway) is spoken with GnuTLS; the certificate is "
     "checked against the system's trust store for the URL's host name, or against "
     "--ca-file alone.",
     "h", attach_optdocs},
    {"run", "run --session ID [options] -- COMMAND [ARG...]",
     "Runs COMMAND in the session as a task (a token with the tasks scope): no "
     "terminal, the session's working directory and environment. The task's stdout "
     "goes to stdout, its stderr and one status line per state (ptygate: task ID "
     "TASK_STATE_WORKING) to stderr, as they come, byte for byte. One COMMAND word is "
     "shell text (ptygate run ... -- 'make; make test'); several are quoted and run as "
     "given. The first word that is not an option starts COMMAND, whose own options "
     "follow it. Ctrl-C cancels the task.\n\n"
     "It exits with the command's exit code: 128+N when signal N ended it, 130 when "
     "canceled, 124 when --timeout passed (the task is canceled), 1 when it failed "
     "without one.",
     "hq", run_optdocs},
    {"completion", "completion bash|zsh",
     "Prints a completion script for the shell, made from the same option lists the "
     "commands parse with: commands, verbs, options, file names after the options "
     "that take one, and the values of --output, --policy and --control-policy. "
     "Install it with ptygate completion bash > /etc/bash_completion.d/ptygate, or "
     "ptygate completion zsh > \"${fpath[1]}/_ptygate\" (then compinit).",
     "h", completion_optdocs},
    {NULL, NULL, NULL, NULL, NULL},
};

/* Lines kept as they are (a synopsis), each after prefix but those that
   start with a space: they go on the line before. */
static void literal_lines(FILE *out, const char *prefix, const char *text)
{
	char line[MANPAGE_PARA_MAX];

	fputs(".nf\n", out);
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		snprintf(line, sizeof(line), "%s%.*s", *p == ' ' ? "" : prefix, (int)len,
			 p);
		opttab_roff(out, line);
		fputc('\n', out);
		p = nl ? nl + 1 : NULL;
	}
	fputs(".fi\n", out);
}

static void option(FILE *out, const struct manpage_cmd *c, const struct cli_optdoc *d)
{
	bool has_short = d->val > 0 && d->val < 0x100 && strchr(c->shortopts, d->val);

	opttab_roff_option_head(out, has_short ? (char)d->val : '\0', d->name, d->arg);
	opttab_roff(out, d->help);
	fputc('\n', out);
}

static void command(FILE *out, const struct manpage_cmd *c)
{
	fputs(".SS \"ptygate ", out);
	opttab_roff(out, c->name);
	fputs("\"\n", out);
	literal_lines(out, "ptygate ", c->synopsis);
	opttab_roff_paragraphs(out, c->text);
	for (const struct cli_optdoc *d = c->docs; d->name; d++)
		option(out, c, d);
}

static const char manpage_head[] =
    ".\\\" Made by ptygate \\-\\-help\\-man from its commands' option lists.\n"
    ".TH \"PTYGATE\" \"1\" \"\" \"ptygate " PTG_VERSION "\" \"ptygate\"\n"
    ".nh\n"
    ".SH NAME\n"
    "ptygate \\- the ptygate client: tokens, sessions, terminal attach, tasks\n"
    ".SH SYNOPSIS\n"
    ".nf\n"
    "\\fBptygate\\fR \\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIoperands\\fR]\n"
    "\\fBptygate\\fR \\fB\\-\\-help\\fR | \\fB\\-\\-version\\fR | "
    "\\fB\\-\\-help\\-man\\fR\n"
    ".fi\n";

static const char manpage_description[] =
    "ptygate talks to a ptygate-gateway: it mints the tokens the gateway verifies, "
    "manages the sessions of a sandbox instance over the REST API, attaches a "
    "terminal to a session over WebSocket, and runs commands in a session as tasks.\n\n"
    "Options may come before or after the operands (ptygate sessions get ID -o json), "
    "short ones may be grouped (-qo json), and -- ends them: everything after it is "
    "an operand. ptygate run is the exception by design: its first operand starts "
    "COMMAND. Every command has --help.\n\n"
    "Text from the network never reaches the terminal raw: every line printed from "
    "the gateway (refusals, error frames, task states, session fields) shows each C0 "
    "control, DEL and invalid UTF-8 byte as \\xHH and each C1 control as \\u00HH. "
    "What is a program's own output, the screen of attach and the task output of "
    "run, is passed as it is.";

static const char manpage_tail[] =
    ".SH ENVIRONMENT\n"
    ".TP\n\\fBPTYGATE_GATEWAY\\fR\n"
    "The gateway's base URL when \\fB\\-\\-gateway\\fR is not given (else "
    "http://127.0.0.1:8080).\n"
    ".TP\n\\fBPTYGATE_INSTANCE\\fR\n"
    "The instance when \\fB\\-\\-instance\\fR is not given.\n"
    ".TP\n\\fBPTYGATE_TOKEN\\fR\n"
    "The bearer token when neither \\fB\\-\\-token\\fR nor \\fB\\-\\-token\\-file\\fR "
    "is given.\n"
    ".TP\n\\fBUSER\\fR\n"
    "With the host name, the default \\fB\\-\\-label\\fR of attach.\n"
    ".SH FILES\n"
    ".TP\n\\fI/etc/bash_completion.d/ptygate\\fR\n"
    "Where \\fBptygate completion bash\\fR is usually installed.\n"
    ".TP\n\\fIFILE.part\\fR\n"
    "What \\fBsessions export \\-o\\fR \\fIFILE\\fR writes until the recording is "
    "whole.\n"
    ".SH \"EXIT STATUS\"\n"
    ".TP\n\\fB0\\fR\nSuccess; for attach, a detach or a normal close.\n"
    ".TP\n\\fB1\\fR\nA failure: the gateway refused or could not be reached, a file "
    "could not be read, the token expired, attach gave up reconnecting.\n"
    ".TP\n\\fB2\\fR\nA usage error.\n"
    ".PP\n"
    "attach exits with the program's exit code when the session ends while "
    "attached; run exits with the command's exit code, 128+N for signal N, 130 "
    "when canceled and 124 when \\fB\\-\\-timeout\\fR passed.\n"
    ".SH EXAMPLES\n"
    ".nf\n"
    "ptygate token keygen \\-\\-out\\-private client.key \\-\\-out\\-public client.pub\n"
    "ptygate token mint \\-\\-ed25519\\-key client.key \\-\\-sub alice \\-\\-instance "
    "vm\\-1 \\e\n"
    "    \\-\\-scope \"pty:control sessions tasks\" > alice.token\n"
    "export PTYGATE_GATEWAY=http://127.0.0.1:8080 PTYGATE_INSTANCE=vm\\-1\n"
    "sid=$(ptygate sessions create \\-q \\-\\-token\\-file alice.token \\-\\- "
    "/bin/bash)\n"
    "ptygate attach \\-\\-token\\-file alice.token \"$sid\"\n"
    "ptygate run \\-\\-token\\-file alice.token \\-\\-session \"$sid\" \\-\\- 'make; "
    "make test'\n"
    "ptygate sessions export \\-\\-token\\-file alice.token \\-o session.cast \"$sid\"\n"
    "ptygate token mint \\-\\-audience ptygate\\-link \\-\\-instance vm\\-42 \\e\n"
    "    \\-\\-ed25519\\-key provisioning.pem \\-\\-kid prov\\-1 \\-\\-ttl 12h > "
    "vm\\-42.token\n"
    ".fi\n"
    ".SH \"SEE ALSO\"\n"
    "\\fBptygate\\-gateway\\fR(8), \\fBptygate\\-gateway.conf\\fR(5), "
    "\\fBptygate\\-sidecar\\fR(8), \\fBptygate\\-sidecar.conf\\fR(5)\n";

void manpage_print(FILE *out)
{
	fputs(manpage_head, out);
	fputs(".SH DESCRIPTION\n", out);
	opttab_roff_paragraphs(out, manpage_description);
	fputs(".SH COMMANDS\n", out);
	for (const struct manpage_cmd *c = manpage_cmds; c->name; c++)
		command(out, c);
	fputs(
	    ".SH OPTIONS\n"
	    ".TP\n\\fB\\-h\\fR, \\fB\\-\\-help\\fR\nShow the commands; after a command, "
	    "its help.\n"
	    ".TP\n\\fB\\-\\-version\\fR\nShow the version.\n"
	    ".TP\n\\fB\\-\\-help\\-man\\fR\nPrint this manual page (roff).\n",
	    out);
	fputs(manpage_tail, out);
}
