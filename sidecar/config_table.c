/* config_table: every option of ptygate-sidecar, its range, default and
   help, from which its command line, config file, --help and manual
   pages are made (shared/opttab.h). Every limit is bounded so a typo
   cannot ask for a terabyte ring. */
#include <stddef.h>

#include "config_int.h"
#include "ptg_limits.h"
#include "seal.h"

#define T struct sidecar_config

#define CUSTOM(nm, ar, ident, df, hl)                                                    \
	{                                                                                \
		.name = nm, .arg = ar, .type = OPTTAB_CUSTOM, .id = ident, .def = df,    \
		.help = hl                                                               \
	}
#define SECTION(title)                                                                   \
	{                                                                                \
		.type = OPTTAB_SECTION, .help = title                                    \
	}

static const struct opttab_opt opts[] = {
    SECTION("Link"),
    CUSTOM("listen", "ADDR", CONFIG__LISTEN, NULL,
	   "serve the gateway's link at unix:/path, tcp:127.0.0.1:PORT or "
	   "vsock:CID:PORT"),
    OPTTAB_FLAG(T, "allow-public", allow_public,
		"allow a tcp listen address beyond loopback"),
    {.name = "dial",
     .arg = "ADDR",
     .type = OPTTAB_CUSTOM,
     .flags = OPTTAB_REPEAT,
     .id = CONFIG__DIAL,
     .help = "keep a link to the gateway listening at ADDR (unix:, tcp:, vsock:2:PORT "
	     "for the host), presenting the instance credential; at most " PTG_STR(
		 SIDECAR_MAX_DIALS) "; needs --instance-token-file"},
    CUSTOM("dial-backoff-max", "DURATION", CONFIG__DIAL_BACKOFF, "30s",
	   "the longest wait between dials, 100ms to 1h: NNNms or seconds with s, m "
	   "or h"),
    {.name = "instance-id",
     .arg = "ID",
     .type = OPTTAB_CUSTOM,
     .flags = OPTTAB_DEF_DOC,
     .id = CONFIG__INSTANCE_ID,
     .def = "hostname",
     .help = "the instance this sidecar serves"},
    {.name = "instance-token-file",
     .arg = "PATH",
     .type = OPTTAB_STR,
     .flags = OPTTAB_RELOAD,
     .off = offsetof(T, instance_token_file),
     .size = sizeof(((T *)0)->instance_token_file),
     .help = "the instance credential (a JWT for aud ptygate-link); the instance id "
	     "is its instance_id"},

    SECTION("Sessions"),
    OPTTAB_NUM(T, "replay-frames", "N", OPTTAB_U32, 0, 10000000, replay_frames, "1000",
	       "frames always retained per session"),
    OPTTAB_NUM(T, "replay-seconds", "S", OPTTAB_U32, 0, 30 * 86400, replay_seconds,
	       "86400", "seconds of frames retained per session"),
    OPTTAB_NUM(T, "replay-bytes", "B", OPTTAB_U64, 1024, 1ull << 36, replay_bytes,
	       "67108864",
	       "byte budget of a session's history: the ring, or the frame log with "
	       "--state-dir"),
    OPTTAB_NUM(T, "max-controllers", "K", OPTTAB_U32, 0, 1024, max_controllers, "4",
	       "controllers per session"),
    OPTTAB_NUM(T, "control-seconds", "S", OPTTAB_U32, 1, 3600, control_timeout_s, "60",
	       "how long a control request waits for a controller's approval"),
    OPTTAB_NUM(T, "max-observers", "M", OPTTAB_U32, 0, 4096, max_observers, "32",
	       "observers per session"),
    OPTTAB_NUM(T, "keyframe-seconds", "S", OPTTAB_U32, 1, 86400, keyframe_seconds, "5",
	       "keyframe at least every S s of output"),
    OPTTAB_NUM(T, "keyframe-frames", "N", OPTTAB_U32, 1, 1000000, keyframe_frames, "100",
	       "keyframe at least every N output frames"),
    OPTTAB_NUM(T, "keyframe-max-bytes", "B", OPTTAB_U32, 1024, 12u << 20,
	       keyframe_max_bytes, "8388608",
	       "largest snapshot sent; a larger screen gets KEYFRAME_UNAVAILABLE"),
    CUSTOM("default-size", "COLSxROWS", CONFIG__DEFAULT_SIZE, "120x30",
	   "size of a session created without one, each up to " PTG_STR(PTG_DIM_MAX)),
    OPTTAB_NUM(T, "max-sessions", "N", OPTTAB_U32, 1, 100000, max_sessions, "256",
	       "sessions at once, exited ones included"),
    OPTTAB_NUM(T, "kill-grace-ms", "MS", OPTTAB_U32, 0, 600000, kill_grace_ms, "3000",
	       "hang-up to SIGKILL delay when ending"),
    OPTTAB_NUM(T, "exited-keep-seconds", "S", OPTTAB_U32, 0, 30 * 86400,
	       exited_keep_seconds, "600", "an exited session stays attachable"),
    OPTTAB_STRING(T, "session-user", "USER", session_user, NULL,
		  "run every session's program as USER (the sidecar must be root; "
		  "default: its own user)"),

    SECTION("Tasks"),
    CUSTOM("task-handler", "PATH", CONFIG__TASK_HANDLER, NULL,
	   "run task messages with PATH, the message as JSON on its stdin (default: "
	   "/bin/sh -c TEXT)"),
    OPTTAB_NUM(T, "task-output-bytes", "B", OPTTAB_U64, 0, 1u << 20, task_output_bytes,
	       "1048576", "stdout+stderr kept per task"),
    OPTTAB_NUM(T, "task-max-running", "N", OPTTAB_U32, 1, 1024, task_max_running, "16",
	       "running tasks per sidecar"),
    OPTTAB_NUM(T, "task-max-running-session", "N", OPTTAB_U32, 1, 1024,
	       task_max_running_session, "4", "running tasks per session"),
    OPTTAB_NUM(T, "task-max-message-bytes", "B", OPTTAB_U32, 1, 256u << 10,
	       task_max_message_bytes, "65536", "a task's command text"),
    OPTTAB_NUM(T, "task-page-max", "N", OPTTAB_U32, 1, 1000, task_page_max, "100",
	       "ListTasks page size cap"),
    OPTTAB_NUM(T, "task-keep", "N", OPTTAB_U32, 1, 100000, task_keep, "200",
	       "finished tasks kept per sidecar"),

    SECTION("Durable state"),
    OPTTAB_STRING(T, "state-dir", "DIR", state_dir, NULL,
		  "keep session records here (default: none)"),
    OPTTAB_STRING(T, "state-key-file", "PATH", state_key_file, NULL,
		  "seals the state dir (libsodium secretstream); created 0600 with a "
		  "new key when absent"),
    {.name = "state-old-key-file",
     .arg = "PATH",
     .type = OPTTAB_CUSTOM,
     .flags = OPTTAB_REPEAT,
     .id = CONFIG__STATE_OLD_KEY,
     .help = "an earlier key, to read what it sealed (rotation; with "
	     "--state-key-file at most " PTG_STR(SEAL_MAX_KEYS) " keys)"},
    OPTTAB_FLAG(T, "state-plaintext", state_plaintext,
		"keep state unsealed (checksums only)"),
    CUSTOM("fsync", "POLICY", CONFIG__FSYNC, "interval:100ms",
	   "frame log: interval:MS (1ms to 60000ms), every-frame or never"),
    OPTTAB_NUM(T, "state-max-bytes", "B", OPTTAB_U64, 0, 1ull << 50, state_max_bytes, "0",
	       "frame logs of all sessions together; oldest segments go first (0: no "
	       "cap)"),
    OPTTAB_NUM(T, "state-segment-bytes", "B", OPTTAB_U64, 65536, 1u << 30,
	       state_segment_bytes, "8388608", "frame log segment size"),
    OPTTAB_NUM(T, "replay-memory-bytes", "B", OPTTAB_U64, 1024, 1ull << 36,
	       replay_memory_bytes, "8388608",
	       "with --state-dir, the in-memory tail of each session's history; older "
	       "replays read the disk"),
    {.name = "export-asciicast",
     .arg = "ID",
     .type = OPTTAB_STR,
     .flags = OPTTAB_CLI_ONLY,
     .off = offsetof(T, export_session),
     .size = sizeof(((T *)0)->export_session),
     .help = "write session ID's history from --state-dir as asciicast v2 to "
	     "stdout, then exit"},

    SECTION("Process"),
    {.name = "config",
     .arg = "FILE",
     .type = OPTTAB_CONFIG,
     .help = "read \"key = value\" lines (keys are these options without the dashes, "
	     "'#' comments); options on the command line win"},
    CUSTOM("log-level", "LEVEL", CONFIG__LOG_LEVEL, "info", "debug, info, warn or error"),
    CUSTOM("log-format", "FORMAT", CONFIG__LOG_FORMAT, "text",
	   "text or json: one object a line"),
    {.name = "help", .type = OPTTAB_HELP, .help = "this text"},
    {.name = "help-man",
     .type = OPTTAB_MAN,
     .help = "print the manual page (section 8) in roff"},
    {.name = "help-man-conf",
     .type = OPTTAB_MAN_CONF,
     .help = "print the config file's manual page (section 5) in roff"},
    {.name = "version", .type = OPTTAB_VERSION, .help = "the version"},
};

const struct opttab config__table = {
    .prog = "ptygate-sidecar",
    .summary = "terminal sessions of one sandbox, served to ptygate-gateway",
    .usage = "ptygate-sidecar --listen ADDR [options]\n"
	     "       ptygate-sidecar --dial ADDR --instance-token-file PATH [options]",
    .intro = "Owns the terminal sessions of one sandbox and serves them to\n"
	     "ptygate-gateway over the link protocol.",
    .outro = "Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 on a runtime "
	     "failure, 2 for a usage error.",
    .reload_text = "re-read when the file changes",
    .conf_path = "ptygate-sidecar --config FILE",
    .opts = opts,
    .n_opts = sizeof(opts) / sizeof(opts[0]),
    .help_col = 27,
    .custom = config__custom,
};
