/* config: command-line parsing of ptygate-sidecar, with every limit
   bounded so a typo cannot ask for a terabyte ring. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "num.h"
#include "ptg_limits.h"

static const char usage[] =
    "Usage: ptygate-sidecar --listen ADDR [options]\n"
    "       ptygate-sidecar --dial ADDR --instance-token-file PATH [options]\n"
    "\n"
    "Owns the terminal sessions of one sandbox and serves them to\n"
    "ptygate-gateway over the link protocol.\n"
    "\n"
    "  --listen ADDR            unix:/path, tcp:127.0.0.1:PORT or vsock:CID:PORT\n"
    "  --allow-public           allow a tcp listen address beyond loopback\n"
    "  --dial ADDR              keep a link to the gateway listening at ADDR\n"
    "                           (unix:, tcp:, vsock:2:PORT for the host),\n"
    "                           presenting the instance credential; repeatable,\n"
    "                           at most 8; needs --instance-token-file\n"
    "  --dial-backoff-max DURATION  the longest wait between dials, 100ms to\n"
    "                           1h: NNNms or seconds with s, m or h (30s)\n"
    "  --instance-id ID         the instance this sidecar serves (default: hostname)\n"
    "  --instance-token-file PATH  the instance credential (a JWT for aud\n"
    "                           ptygate-link); the instance id is its\n"
    "                           instance_id; re-read when the file changes\n"
    "  --state-dir DIR          keep session records here (default: none)\n"
    "  --replay-frames N        frames always retained per session (1000)\n"
    "  --replay-seconds S       seconds of frames retained per session (86400)\n"
    "  --replay-bytes B         byte budget of a session's history: the ring,\n"
    "                           or the frame log with --state-dir (67108864)\n"
    "  --max-controllers K      controllers per session (4)\n"
    "  --max-observers M        observers per session (32)\n"
    "  --control-seconds S      how long a control request waits for a\n"
    "                           controller's approval, 1-3600 (60)\n"
    "  --keyframe-seconds S     keyframe at least every S s of output (5)\n"
    "  --keyframe-frames N      keyframe at least every N output frames (100)\n"
    "  --keyframe-max-bytes B   largest snapshot sent, 1024-12582912; a larger\n"
    "                           screen gets KEYFRAME_UNAVAILABLE (8388608)\n"
    "  --default-size COLSxROWS size of a session created without one (120x30)\n"
    "  --max-sessions N         sessions at once, exited ones included (256)\n"
    "  --kill-grace-ms MS       hang-up to SIGKILL delay when ending (3000)\n"
    "  --exited-keep-seconds S  an exited session stays attachable (600)\n"
    "  --task-handler PATH      run task messages with PATH, the message as JSON\n"
    "                           on its stdin (default: /bin/sh -c TEXT)\n"
    "  --task-output-bytes B    stdout+stderr kept per task, 0-1048576 (1048576)\n"
    "  --task-max-running N     running tasks per sidecar, 1-1024 (16)\n"
    "  --task-max-running-session N  running tasks per session, 1-1024 (4)\n"
    "  --task-max-message-bytes B    a task's command text, 1-262144 (65536)\n"
    "  --task-page-max N        ListTasks page size cap, 1-1000 (100)\n"
    "  --task-keep N            finished tasks kept per sidecar, 1-100000 (200)\n"
    "  --state-key-file PATH    seals the state dir (libsodium secretstream);\n"
    "                           created 0600 with a new key when absent\n"
    "  --state-old-key-file PATH  an earlier key, to read what it sealed\n"
    "                           (rotation; repeatable; with --state-key-file\n"
    "                           at most " PTG_STR(
	SEAL_MAX_KEYS) " keys)\n"
		       "  --state-plaintext        keep state unsealed (checksums only)\n"
		       "  --fsync POLICY           frame log: interval:MS "
		       "(interval:100ms),\n"
		       "                           every-frame or never\n"
		       "  --state-max-bytes B      frame logs of all sessions together; "
		       "oldest\n"
		       "                           segments go first (0: no cap) (0)\n"
		       "  --state-segment-bytes B  frame log segment size, "
		       "65536-1073741824 (8388608)\n"
		       "  --replay-memory-bytes B  with --state-dir, the in-memory tail "
		       "of each\n"
		       "                           session's history; older replays read "
		       "the\n"
		       "                           disk (8388608)\n"
		       "  --export-asciicast ID    write session ID's history from "
		       "--state-dir as\n"
		       "                           asciicast v2 to stdout, then exit\n"
		       "  --session-user USER      run every session's program as USER "
		       "(the\n"
		       "                           sidecar must be root; default: its "
		       "own user)\n"
		       "  --log-level LEVEL        debug, info, warn or error (info)\n"
		       "  --log-format FORMAT      text or json: one object a line "
		       "(text)\n"
		       "  --help                   this text\n"
		       "  --version                the version\n";

void config_defaults(struct sidecar_config *c)
{
	memset(c, 0, sizeof(*c));
	c->replay_frames = 1000;
	c->replay_seconds = 86400;
	c->replay_bytes = 64ull << 20;
	c->max_controllers = 4;
	c->control_timeout_s = 60;
	c->max_observers = 32;
	c->keyframe_seconds = 5;
	c->keyframe_frames = 100;
	c->keyframe_max_bytes = 8u << 20;
	c->default_cols = 120;
	c->default_rows = 30;
	c->max_sessions = 256;
	c->kill_grace_ms = 3000;
	c->exited_keep_seconds = 600;
	c->input_buffer_bytes = 1u << 20;
	c->link_buffer_bytes = 256ull << 20;
	c->log_level = LOG_INFO;
	c->dial_backoff_max_ms = 30000;
	c->task_output_bytes = 1u << 20;
	c->task_max_running = 16;
	c->task_max_running_session = 4;
	c->task_max_message_bytes = 64u << 10;
	c->task_page_max = 100;
	c->task_keep = 200;
	c->task_max_subscribers = 64;
	c->fsync = FSYNC_INTERVAL;
	c->fsync_interval_ms = 100;
	c->state_segment_bytes = 8u << 20;
	c->replay_memory_bytes = 8u << 20;
	if (gethostname(c->instance_id, sizeof(c->instance_id) - 1) < 0)
		snprintf(c->instance_id, sizeof(c->instance_id), "local");
}

/* Parses an unsigned decimal within [lo, hi]. */
static int parse_u64(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		     uint64_t *out)
{
	if (num_parse_u64(s, lo, hi, out) < 0) {
		fprintf(stderr,
			"ptygate-sidecar: %s: expected a number from %" PRIu64
			" to %" PRIu64 ", got '%s'\n",
			opt, lo, hi, s);
		return -EINVAL;
	}
	return 0;
}

static int parse_u32(const char *opt, const char *s, uint64_t lo, uint64_t hi,
		     uint32_t *out)
{
	uint64_t v;
	int rc = parse_u64(opt, s, lo, hi, &v);

	if (rc == 0)
		*out = (uint32_t)v;
	return rc;
}

static int parse_size(const char *s, struct sidecar_config *c)
{
	const char *x = strchr(s, 'x');
	uint64_t cols, rows;

	if (!x ||
	    num_parse_u64_n(s, (size_t)(x - s), PTG_DIM_MIN, PTG_DIM_MAX, &cols) < 0 ||
	    num_parse_u64(x + 1, PTG_DIM_MIN, PTG_DIM_MAX, &rows) < 0) {
		fprintf(stderr,
			"ptygate-sidecar: --default-size: expected COLSxROWS "
			"within 1.." PTG_STR(PTG_DIM_MAX) ", got '%s'\n",
			s);
		return -EINVAL;
	}
	c->default_cols = (unsigned)cols;
	c->default_rows = (unsigned)rows;
	return 0;
}

static int copy_str(const char *opt, const char *s, char *dst, size_t cap)
{
	if (!s[0] || strlen(s) >= cap) {
		fprintf(stderr, "ptygate-sidecar: %s: must be 1 to %zu bytes\n", opt,
			cap - 1);
		return -EINVAL;
	}
	memcpy(dst, s, strlen(s) + 1);
	return 0;
}

enum {
	OPT_LISTEN = 256,
	OPT_PUBLIC,
	OPT_INSTANCE,
	OPT_INSTANCE_TOKEN,
	OPT_STATE,
	OPT_RFRAMES,
	OPT_RSECONDS,
	OPT_RBYTES,
	OPT_MAXC,
	OPT_MAXO,
	OPT_CONTROL_S,
	OPT_KFS,
	OPT_KFF,
	OPT_KFMAX,
	OPT_SIZE,
	OPT_MAXS,
	OPT_GRACE,
	OPT_KEEP,
	OPT_LOG,
	OPT_LOG_FORMAT,
	OPT_USER,
	OPT_HELP,
	OPT_VERSION,
	OPT_TASK_HANDLER,
	OPT_TASK_OUT,
	OPT_TASK_RUN,
	OPT_TASK_RUN_SESSION,
	OPT_TASK_MSG,
	OPT_TASK_PAGE,
	OPT_TASK_KEEP,
	OPT_STATE_KEY,
	OPT_STATE_OLD_KEY,
	OPT_STATE_PLAIN,
	OPT_FSYNC,
	OPT_STATE_MAX,
	OPT_STATE_SEG,
	OPT_REPLAY_MEM,
	OPT_EXPORT,
	OPT_DIAL,
	OPT_DIAL_BACKOFF,
};

static const struct option options[] = {
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"allow-public", no_argument, NULL, OPT_PUBLIC},
    {"instance-id", required_argument, NULL, OPT_INSTANCE},
    {"instance-token-file", required_argument, NULL, OPT_INSTANCE_TOKEN},
    {"state-dir", required_argument, NULL, OPT_STATE},
    {"replay-frames", required_argument, NULL, OPT_RFRAMES},
    {"replay-seconds", required_argument, NULL, OPT_RSECONDS},
    {"replay-bytes", required_argument, NULL, OPT_RBYTES},
    {"max-controllers", required_argument, NULL, OPT_MAXC},
    {"control-seconds", required_argument, NULL, OPT_CONTROL_S},
    {"max-observers", required_argument, NULL, OPT_MAXO},
    {"keyframe-seconds", required_argument, NULL, OPT_KFS},
    {"keyframe-frames", required_argument, NULL, OPT_KFF},
    {"keyframe-max-bytes", required_argument, NULL, OPT_KFMAX},
    {"default-size", required_argument, NULL, OPT_SIZE},
    {"max-sessions", required_argument, NULL, OPT_MAXS},
    {"kill-grace-ms", required_argument, NULL, OPT_GRACE},
    {"exited-keep-seconds", required_argument, NULL, OPT_KEEP},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"task-handler", required_argument, NULL, OPT_TASK_HANDLER},
    {"task-output-bytes", required_argument, NULL, OPT_TASK_OUT},
    {"task-max-running", required_argument, NULL, OPT_TASK_RUN},
    {"task-max-running-session", required_argument, NULL, OPT_TASK_RUN_SESSION},
    {"task-max-message-bytes", required_argument, NULL, OPT_TASK_MSG},
    {"task-page-max", required_argument, NULL, OPT_TASK_PAGE},
    {"task-keep", required_argument, NULL, OPT_TASK_KEEP},
    {"state-key-file", required_argument, NULL, OPT_STATE_KEY},
    {"state-old-key-file", required_argument, NULL, OPT_STATE_OLD_KEY},
    {"state-plaintext", no_argument, NULL, OPT_STATE_PLAIN},
    {"fsync", required_argument, NULL, OPT_FSYNC},
    {"state-max-bytes", required_argument, NULL, OPT_STATE_MAX},
    {"state-segment-bytes", required_argument, NULL, OPT_STATE_SEG},
    {"replay-memory-bytes", required_argument, NULL, OPT_REPLAY_MEM},
    {"export-asciicast", required_argument, NULL, OPT_EXPORT},
    {"session-user", required_argument, NULL, OPT_USER},
    {"dial", required_argument, NULL, OPT_DIAL},
    {"dial-backoff-max", required_argument, NULL, OPT_DIAL_BACKOFF},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* ---- durable state flags (issue 9) ---- */

static const char *new_key_file, *old_key_files[SEAL_MAX_KEYS - 1];
static size_t n_old_key_files;

static int parse_fsync(struct sidecar_config *c, const char *arg)
{
	uint64_t ms;
	char num[32];
	size_t n;

	if (!strcmp(arg, "every-frame") || !strcmp(arg, "never")) {
		c->fsync = arg[0] == 'e' ? FSYNC_EVERY_FRAME : FSYNC_NEVER;
		return 0;
	}
	n = strlen(arg);
	if (!strncmp(arg, "interval:", 9) && n > 11 && n < 9 + sizeof(num) &&
	    !strcmp(arg + n - 2, "ms")) {
		memcpy(num, arg + 9, n - 11);
		num[n - 11] = 0;
		if (num_parse_u64(num, 1, 60000, &ms) == 0) {
			c->fsync = FSYNC_INTERVAL;
			c->fsync_interval_ms = (uint32_t)ms;
			return 0;
		}
	}
	fprintf(stderr,
		"ptygate-sidecar: --fsync: expected interval:MSms (1-60000), "
		"every-frame or never, got '%s'\n",
		arg);
	return -EINVAL;
}

static int apply_state_option(struct sidecar_config *c, int opt, const char *arg)
{
	switch (opt) {
	case OPT_STATE_KEY:
		new_key_file = arg;
		return 0;
	case OPT_STATE_OLD_KEY:
		if (n_old_key_files >= SEAL_MAX_KEYS - 1) {
			fprintf(stderr,
				"ptygate-sidecar: --state-old-key-file: at most %d\n",
				SEAL_MAX_KEYS - 1);
			return -EINVAL;
		}
		old_key_files[n_old_key_files++] = arg;
		return 0;
	case OPT_STATE_PLAIN:
		c->state_plaintext = 1;
		return 0;
	case OPT_FSYNC:
		return parse_fsync(c, arg);
	case OPT_STATE_MAX:
		return parse_u64("--state-max-bytes", arg, 0, 1ull << 50,
				 &c->state_max_bytes);
	case OPT_STATE_SEG:
		return parse_u64("--state-segment-bytes", arg, 65536, 1u << 30,
				 &c->state_segment_bytes);
	case OPT_REPLAY_MEM:
		return parse_u64("--replay-memory-bytes", arg, 1024, 1ull << 36,
				 &c->replay_memory_bytes);
	case OPT_EXPORT:
		c->export_session = arg;
		return 0;
	}
	return -EINVAL;
}

/* Without a key, state is refused rather than written in clear, unless
   the operator said --state-plaintext. */
static int load_state_keys(struct sidecar_config *c)
{
	char err[512];

	if (!c->state_dir[0] && !c->export_session)
		return 0;
	if (sodium_init() < 0) {
		fprintf(stderr, "ptygate-sidecar: libsodium failed to start\n");
		return -EINVAL;
	}
	if (!new_key_file && !c->state_plaintext) {
		fprintf(stderr, "ptygate-sidecar: --state-dir needs --state-key-file "
				"(state is sealed at rest) or --state-plaintext\n");
		return -EINVAL;
	}
	if (new_key_file && c->state_plaintext) {
		fprintf(stderr, "ptygate-sidecar: --state-key-file and --state-plaintext "
				"exclude each other\n");
		return -EINVAL;
	}
	if (new_key_file && seal_load_key(&c->state_keys, new_key_file,
					  !c->export_session, err, sizeof(err)) < 0)
		goto bad;
	for (size_t i = 0; i < n_old_key_files; i++)
		if (seal_load_key(&c->state_keys, old_key_files[i], 0, err, sizeof(err)) <
		    0)
			goto bad;
	return 0;
bad:
	fprintf(stderr, "ptygate-sidecar: state key: %s\n", err);
	return -EINVAL;
}

/* ---- dial-out (issue 18) ---- */

/* A duration of 100 ms to 1 h: "NNNms", or seconds with an optional s,
   m or h. */
static int parse_backoff_max(struct sidecar_config *c, const char *arg)
{
	size_t n = strlen(arg);
	uint64_t ms;
	int64_t s;

	if (n > 2 && !strcmp(arg + n - 2, "ms")) {
		if (num_parse_u64_n(arg, n - 2, 100, 3600000, &ms) == 0) {
			c->dial_backoff_max_ms = (int64_t)ms;
			return 0;
		}
	} else if (num_parse_duration_s(arg, 3600, &s) == 0 && s > 0) {
		c->dial_backoff_max_ms = s * 1000;
		return 0;
	}
	fprintf(stderr,
		"ptygate-sidecar: --dial-backoff-max: expected 100ms to 1h (NNNms, "
		"or seconds with s, m or h), got '%s'\n",
		arg);
	return -EINVAL;
}

static int parse_log_format(struct sidecar_config *c, const char *arg)
{
	enum log_format fmt;

	if (log_format_parse(arg, &fmt) < 0) {
		fprintf(
		    stderr,
		    "ptygate-sidecar: --log-format: expected text or json, got '%s'\n",
		    arg);
		return -EINVAL;
	}
	c->log_format = fmt;
	return 0;
}

static int add_dial(struct sidecar_config *c, const char *arg)
{
	char err[256];

	if (c->n_dial >= SIDECAR_MAX_DIALS) {
		fprintf(stderr, "ptygate-sidecar: --dial: at most %d addresses\n",
			SIDECAR_MAX_DIALS);
		return -EINVAL;
	}
	if (addr_parse(arg, &c->dial[c->n_dial], err, sizeof(err)) < 0) {
		fprintf(stderr, "ptygate-sidecar: --dial: %s\n", err);
		return -EINVAL;
	}
	c->n_dial++;
	return 0;
}

static int apply_option(struct sidecar_config *c, int opt, const char *arg)
{
	char err[256];
	enum log_level lvl;

	switch (opt) {
	case OPT_LISTEN:
		if (addr_parse(arg, &c->listen, err, sizeof(err)) < 0) {
			fprintf(stderr, "ptygate-sidecar: --listen: %s\n", err);
			return -EINVAL;
		}
		return 1;
	case OPT_PUBLIC:
		c->allow_public = 1;
		return 0;
	case OPT_INSTANCE:
		c->instance_id_given = 1;
		return copy_str("--instance-id", arg, c->instance_id,
				sizeof(c->instance_id));
	case OPT_INSTANCE_TOKEN:
		return copy_str("--instance-token-file", arg, c->instance_token_file,
				sizeof(c->instance_token_file));
	case OPT_STATE:
		return copy_str("--state-dir", arg, c->state_dir, sizeof(c->state_dir));
	case OPT_RFRAMES:
		return parse_u32("--replay-frames", arg, 0, 10000000, &c->replay_frames);
	case OPT_RSECONDS:
		return parse_u32("--replay-seconds", arg, 0, 30 * 86400,
				 &c->replay_seconds);
	case OPT_RBYTES:
		return parse_u64("--replay-bytes", arg, 1024, 1ull << 36,
				 &c->replay_bytes);
	case OPT_MAXC:
		return parse_u32("--max-controllers", arg, 0, 1024, &c->max_controllers);
	case OPT_CONTROL_S:
		return parse_u32("--control-seconds", arg, 1, 3600,
				 &c->control_timeout_s);
	case OPT_MAXO:
		return parse_u32("--max-observers", arg, 0, 4096, &c->max_observers);
	case OPT_KFS:
		return parse_u32("--keyframe-seconds", arg, 1, 86400,
				 &c->keyframe_seconds);
	case OPT_KFF:
		return parse_u32("--keyframe-frames", arg, 1, 1000000,
				 &c->keyframe_frames);
	case OPT_KFMAX:
		return parse_u32("--keyframe-max-bytes", arg, 1024, 12u << 20,
				 &c->keyframe_max_bytes);
	case OPT_SIZE:
		return parse_size(arg, c);
	case OPT_MAXS:
		return parse_u32("--max-sessions", arg, 1, 100000, &c->max_sessions);
	case OPT_GRACE:
		return parse_u32("--kill-grace-ms", arg, 0, 600000, &c->kill_grace_ms);
	case OPT_KEEP:
		return parse_u32("--exited-keep-seconds", arg, 0, 30 * 86400,
				 &c->exited_keep_seconds);
	case OPT_TASK_HANDLER:
		if (arg[0] != '/') {
			fprintf(stderr,
				"ptygate-sidecar: --task-handler: an absolute path, got "
				"'%s'\n",
				arg);
			return -EINVAL;
		}
		return copy_str("--task-handler", arg, c->task_handler,
				sizeof(c->task_handler));
	case OPT_TASK_OUT:
		return parse_u64("--task-output-bytes", arg, 0, 1u << 20,
				 &c->task_output_bytes);
	case OPT_TASK_RUN:
		return parse_u32("--task-max-running", arg, 1, 1024,
				 &c->task_max_running);
	case OPT_TASK_RUN_SESSION:
		return parse_u32("--task-max-running-session", arg, 1, 1024,
				 &c->task_max_running_session);
	case OPT_TASK_MSG:
		return parse_u32("--task-max-message-bytes", arg, 1, 256u << 10,
				 &c->task_max_message_bytes);
	case OPT_TASK_PAGE:
		return parse_u32("--task-page-max", arg, 1, 1000, &c->task_page_max);
	case OPT_TASK_KEEP:
		return parse_u32("--task-keep", arg, 1, 100000, &c->task_keep);
	case OPT_STATE_KEY:
	case OPT_STATE_OLD_KEY:
	case OPT_STATE_PLAIN:
	case OPT_FSYNC:
	case OPT_STATE_MAX:
	case OPT_STATE_SEG:
	case OPT_REPLAY_MEM:
	case OPT_EXPORT:
		return apply_state_option(c, opt, arg);
	case OPT_USER:
		return copy_str("--session-user", arg, c->session_user,
				sizeof(c->session_user));
	case OPT_DIAL:
		return add_dial(c, arg);
	case OPT_DIAL_BACKOFF:
		return parse_backoff_max(c, arg);
	case OPT_LOG:
		if (log_level_parse(arg, &lvl) < 0) {
			fprintf(stderr,
				"ptygate-sidecar: --log-level: expected debug, "
				"info, warn or error, got '%s'\n",
				arg);
			return -EINVAL;
		}
		c->log_level = lvl;
		return 0;
	case OPT_LOG_FORMAT:
		return parse_log_format(c, arg);
	}
	return -EINVAL;
}

/* 1 for a tcp address on this machine's loopback, where any local
   user may bind the port. */
static int is_loopback_dial(const struct addr *a)
{
	return !strcmp(a->host, "localhost") || !strncmp(a->host, "127.", 4) ||
	       !strcmp(a->host, "::1");
}

/* --session-user keeps session code away from the link: the user must
   exist and differ from the sidecar's, the sidecar must be able to switch
   to it, and the link must be one that user cannot dial (a tcp port on
   loopback is open to every local user). */
static int check_session_user(const struct sidecar_config *c)
{
	const struct passwd *pw;

	if (!c->session_user[0])
		return 0;
	pw = getpwnam(c->session_user);
	if (!pw) {
		fprintf(stderr, "ptygate-sidecar: --session-user: no user '%s'\n",
			c->session_user);
		return -EINVAL;
	}
	if (geteuid() != 0) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: the sidecar must run as "
			"root to switch to '%s'\n",
			c->session_user);
		return -EINVAL;
	}
	if (pw->pw_uid == 0 || pw->pw_uid == geteuid()) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: '%s' is the sidecar's own "
			"user (uid %u); choose an unprivileged one\n",
			c->session_user, (unsigned)pw->pw_uid);
		return -EINVAL;
	}
	if (c->listen_given && c->listen.kind == ADDR_TCP) {
		fprintf(stderr,
			"ptygate-sidecar: --session-user: a tcp link can be dialled "
			"by any local user; use unix: or vsock:\n");
		return -EINVAL;
	}
	for (unsigned i = 0; i < c->n_dial; i++) {
		if (c->dial[i].kind == ADDR_TCP && is_loopback_dial(&c->dial[i])) {
			fprintf(
			    stderr,
			    "ptygate-sidecar: --session-user: a session could listen "
			    "on the loopback port of --dial %s:%u while the gateway is "
			    "down and take the credential; use unix: or vsock:\n",
			    c->dial[i].host, c->dial[i].port);
			return -EINVAL;
		}
	}
	return 0;
}

/* --dial presents the instance credential, so it needs one; --listen is
   needed only without --dial. */
static int check_modes(const struct sidecar_config *c)
{
	if (c->n_dial && !c->instance_token_file[0]) {
		fprintf(stderr, "ptygate-sidecar: --dial needs --instance-token-file "
				"(the credential presented to the gateway)\n");
		return -EINVAL;
	}
	if (!c->listen_given && !c->n_dial && !c->export_session) {
		fprintf(stderr, "ptygate-sidecar: --listen ADDR or --dial ADDR is "
				"required\n");
		return -EINVAL;
	}
	return 0;
}

int config_parse(struct sidecar_config *c, int argc, char **argv)
{
	int opt, rc, have_listen = 0;

	optind = 1;
	opterr = 1;
	new_key_file = NULL;
	n_old_key_files = 0;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (opt == OPT_HELP) {
			fputs(usage, stdout);
			return 1;
		}
		if (opt == OPT_VERSION) {
			puts("ptygate-sidecar " PTG_VERSION);
			return 1;
		}
		if (opt == '?')
			goto bad;
		rc = apply_option(c, opt, optarg);
		if (rc < 0)
			return rc;
		have_listen |= rc == 1;
	}
	if (optind < argc) {
		fprintf(stderr, "ptygate-sidecar: unexpected argument '%s'\n",
			argv[optind]);
		goto bad;
	}
	if (c->export_session && !c->state_dir[0]) {
		fprintf(stderr,
			"ptygate-sidecar: --export-asciicast needs --state-dir\n");
		goto bad;
	}
	if (load_state_keys(c) < 0)
		return -EINVAL;
	c->listen_given = have_listen;
	if (check_modes(c) < 0)
		goto bad;
	return check_session_user(c) < 0 ? -EINVAL : 0;
bad:
	fputs("Try 'ptygate-sidecar --help'.\n", stderr);
	return -EINVAL;
}
