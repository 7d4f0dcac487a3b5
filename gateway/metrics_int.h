/* metrics_int: what the metrics files (metrics.c, metrics_sidecar.c)
   share and nothing outside them uses. */
#ifndef PTG_METRICS_INT_H
#define PTG_METRICS_INT_H

#include "buf.h"

/* A family's # HELP and # TYPE lines. */
void metrics__head(struct buf *out, const char *name, const char *type, const char *help);
/* A label value: backslash, double quote and newline escaped. */
void metrics__label(struct buf *out, const char *v);

#endif
