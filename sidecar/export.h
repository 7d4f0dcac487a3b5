/* export: `ptygate-sidecar --export-asciicast SESSION_ID`: a session's
   persisted history (its frame log in --state-dir) as an asciicast v2
   recording on stdout, for standard players (asciinema play). */
#ifndef PTG_EXPORT_H
#define PTG_EXPORT_H

#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "config.h"

/* The asciicast v2 encoder, shared by the command line export and the
   link's ExportSession pages: the state carried from frame to frame (and
   from page to page): time zero and an incomplete UTF-8 character. */
struct export_enc {
	int64_t start_ms; /* ts of the first frame; 0 before it */
	struct buf carry; /* at most 3 bytes of a split character */
	double last_t;
};

/* The header line: the terminal's size, the creation time, the label as
   title when set. */
void export_header(struct buf *out, unsigned cols, unsigned rows, int64_t created_ms,
		   const char *label);
/* The events of one packed Frame (an "o" for Output, an "r" for Resize,
   nothing for other kinds) appended to out. */
void export_frame(struct export_enc *e, const uint8_t *frame, size_t len, int64_t ts_ms,
		  struct buf *out);
/* The end of a recording: a character cut at the end becomes U+FFFD. */
void export_end(struct export_enc *e, struct buf *out);

/* Writes the recording to out. Returns 0, or 1 after printing the reason
   to stderr (unknown session, unreadable or damaged history). */
int export_asciicast(const struct sidecar_config *cfg, const char *id, FILE *out);

#endif
