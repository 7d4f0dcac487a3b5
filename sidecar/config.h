/* config: the sidecar's settings, from its command line and an optional
   config file with the same keys (--config FILE; the command line wins).
   The options, their ranges, defaults and help are one table,
   config_table.c. */
#ifndef PTG_SIDECAR_CONFIG_H
#define PTG_SIDECAR_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "framelog.h"
#include "ptg_limits.h"
#include "seal.h"

#define SIDECAR_MAX_DIALS 8 /* --dial addresses */

struct sidecar_config {
	struct addr listen;
	int listen_given; /* --listen ADDR was given */
	int allow_public; /* tcp listen beyond loopback */
	/* dial-out: gateways this sidecar keeps linked */
	struct addr dial[SIDECAR_MAX_DIALS];
	unsigned n_dial;
	int64_t dial_backoff_max_ms; /* the cap of the redial backoff */
	char instance_id[PTG_ID_MAX + 1];
	/* the instance credential */
	int instance_id_given;		/* --instance-id was on the command line */
	char instance_token_file[4096]; /* "" : none (--instance-token-file) */

	char state_dir[4096];	 /* "" when not persisting */
	uint32_t replay_frames;	 /* the AgentCard's replay_buffer_frames */
	uint32_t replay_seconds; /* replay_buffer_retention_seconds */
	uint64_t replay_bytes;	 /* byte budget per session */
	uint32_t max_controllers;
	uint32_t control_timeout_s; /* a control request waits this long */
	uint32_t max_observers;
	uint32_t keyframe_seconds;
	uint32_t keyframe_frames;
	uint32_t keyframe_max_bytes; /* a larger snapshot: KEYFRAME_UNAVAILABLE */
	uint32_t default_cols, default_rows;
	uint32_t max_sessions;
	uint32_t kill_grace_ms;	      /* hang-up to SIGKILL */
	uint32_t exited_keep_seconds; /* an exited session stays attachable */
	uint64_t input_buffer_bytes;  /* pending PTY input per session */
	uint64_t link_buffer_bytes;   /* a link that falls this far behind is dropped */
	int log_level;
	int log_format; /* enum log_format */
	/* tasks */
	char task_handler[4096];    /* "" : /bin/sh -c */
	uint64_t task_output_bytes; /* captured stdout+stderr per task */
	uint32_t task_max_running;  /* per sidecar */
	uint32_t task_max_running_session;
	uint32_t task_max_message_bytes; /* the command's text */
	uint32_t task_page_max;		 /* ListTasks page size cap */
	uint32_t task_keep;		 /* finished tasks kept (oldest dropped) */
	uint32_t task_max_subscribers;	 /* per task */
	/* durable state */
	struct seal_keys state_keys; /* n == 0: plaintext (--state-plaintext) */
	char state_key_file[4096];   /* "" : none */
	char state_old_key_files[SEAL_MAX_KEYS - 1][4096];
	size_t n_state_old_key_files;
	int state_plaintext;
	enum framelog_fsync fsync;
	uint32_t fsync_interval_ms;
	uint64_t state_max_bytes; /* frame logs of all sessions; 0: no cap */
	uint64_t state_segment_bytes;
	uint64_t replay_memory_bytes;	     /* the ring (a cache) with --state-dir */
	char export_session[PTG_ID_MAX + 1]; /* --export-asciicast ID; "" : none */
	char session_user[64];		     /* "" : programs run as the sidecar's user */
};

/* Fills the defaults (those of the protocol's replay and limits). */
void config_defaults(struct sidecar_config *c);
/* Parses argv and the --config file. Returns 0 to run, 1 when --help,
   --version or a manual page printed, or -EINVAL after printing the
   reason to stderr. */
int config_parse(struct sidecar_config *c, int argc, char **argv);

#endif
