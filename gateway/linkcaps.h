/* linkcaps: what a sidecar's messages may hold. A compromised sandbox is
   an untrusted peer: every reply and frame it sends is held to the
   protocol's limits (ptg_limits.h) and to those its hello gave, and a
   reply's JSON answer is bounded before any of it is made. Pure checks
   on decoded messages, no I/O. */
#ifndef PTG_LINKCAPS_H
#define PTG_LINKCAPS_H

#include <stddef.h>

#include "link.pb-c.h"

/* Why r breaks the protocol's limits or lim's (NULL: the hello gave
   none), or NULL when it keeps them. A sidecar's report of itself
   (Stats) is sidestats_over_caps's to check. */
const char *linkcaps_reply_over(const Ptg__Limits *lim, const Ptg__Reply *r);
/* Caps per message type on a frame: why f is refused, or NULL. */
const char *linkcaps_frame_over(const Ptg__Limits *lim, const Ptg__Frame *f);
/* The JSON answer r may become, at most, before any of it is made. */
size_t linkcaps_answer_bound(const Ptg__Reply *r);

#endif
