/* export: `ptygate-sidecar --export-asciicast SESSION_ID`: a session's
   persisted history (its frame log in --state-dir) as an asciicast v2
   recording on stdout, for standard players (asciinema play). */
#ifndef PTG_EXPORT_H
#define PTG_EXPORT_H

#include <stdio.h>

#include "config.h"

/* Writes the recording to out. Returns 0, or 1 after printing the reason
   to stderr (unknown session, unreadable or damaged history). */
int export_asciicast(const struct sidecar_config *cfg, const char *id, FILE *out);

#endif
