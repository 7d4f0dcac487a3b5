/* linklisten: the gateway's --link-listen listeners, where
   sidecars dial in. A link accepted here must first present its instance
   credential (LinkCredential, proto/link.proto) within
   --link-auth-timeout; it is verified against the --link-key set and
   handed to its instance (host->admit), which says hello on it.
   Anything else is refused: LinkRefused {reason} is sent, the link
   closed, a log line names the peer (a vsock peer by its CID) and the
   reason, and ptygate_link_refusals_total{reason} counts it. At most
   --max-pending-links links await their credential; past it new ones are
   closed at once. A link's opening is read into a buffer of at most
   LINKLISTEN_OPENING_MAX bytes (a small one unless its frame says it
   needs more), so an unauthenticated peer costs that much memory at most
   and one bounded read per wake-up. All of it, the accepts, the reads,
   the timeouts, the checks and the refusals, runs off the gateway's loop
   on one worker thread at a lower CPU priority (linkverify.h); the loop
   only registers the verified links, a few a turn. */
#ifndef PTG_LINKLISTEN_H
#define PTG_LINKLISTEN_H

#include <stddef.h>
#include <stdint.h>

#include "auth_jwt.h"
#include "keys.h"

struct ev_loop;
struct gw_config;
struct linkcred;
struct linklisten;
struct metrics;

/* What the listeners need from the gateway, and all they see of it:
   given at linklisten_new, it outlives the listeners. */
struct linklisten_host {
	struct ev_loop *loop;
	const struct gw_config *cfg;
	struct metrics *metrics;
	struct keyset *const *link_keys; /* --link-key's keys, replaced on SIGHUP */
	void *owner;			 /* the first argument of admit */
	/* A link presented cred (verified): hands fd to the instance's
	   upstream, adding the instance when it is new. Returns 0 (fd
	   taken) or -1 with *refusal (enum link_refusal) and fd untouched. */
	int (*admit)(void *owner, const struct linkcred *cred, int fd, const char *peer,
		     int *refusal);
};

/* The framed LinkCredential a link opens with, at most: its 4-byte
   length, the message's tags and a token of JWT_MAX_TOKEN bytes. */
#define LINKLISTEN_OPENING_MAX (4 + 16 + JWT_MAX_TOKEN)

/* Binds every host->cfg->link_listen address and watches them. NULL
   with the address and the reason in err. */
struct linklisten *linklisten_new(const struct linklisten_host *host, char *err,
				  size_t errlen);
/* Closes the listeners and every link still awaiting its credential.
   NULL is a no-op. */
void linklisten_free(struct linklisten *ll);
/* On the loop, after gw->link_keys was replaced (SIGHUP): the worker
   checks the next credentials with a copy of the new set. NULL is a
   no-op. */
void linklisten_keys_changed(struct linklisten *ll);

/* The credential step, a pure decision on the bytes in[0, len) a link
   has sent so far, checked with ks at now_s (seconds since the epoch):
   0 while more bytes are needed; 1 with *out filled when they are
   exactly one framed LinkCredential whose token verifies (nothing may
   follow it: the sidecar waits for the gateway's hello); otherwise a
   refusal, -(enum link_refusal), linkcred's reasons included. */
int linklisten_opening(const struct keyset *ks, const uint8_t *in, size_t len,
		       int64_t now_s, struct linkcred *out);

#endif
