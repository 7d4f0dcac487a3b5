/* registry_core: what the registry's parts share below them (see
   registry_int.h): the prefix's key names, a failed request logged and
   counted, the kick that flushes on the next loop turn, and a lease found
   gone. It calls none of the other registry files: the kick arms a timer
   registry.c made, and a lost lease reaches the keys through
   keys_events. */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "registry_int.h"

void registry__key(const struct registry *r, const char *kind, const char *name,
		   char *out, size_t cap)
{
	snprintf(out, cap, "%s%s%s", r->prefix, kind, name);
}

void registry__request_failed(struct registry *r, const char *what, int rc, long status,
			      const char *err)
{
	r->request_errors++;
	if (rc < 0)
		log_warn(NULL, "registry: %s failed at %s: %s", what,
			 etcd_endpoint(r->etcd), err);
	else
		log_warn(NULL, "registry: %s: etcd answered %ld: %.200s", what, status,
			 err);
	/* etcd refuses a token it no longer knows: authenticate again. */
	if (r->user[0] && (status == 401 || (err && strstr(err, "auth token"))))
		r->authenticated = false;
}

void registry__kick(struct registry *r)
{
	if (!ev_timer_armed(r->kick))
		ev_timer_arm(r->kick, 0, 0);
}

void registry__lease_lost(struct registry *r, const char *why)
{
	if (!r->lease)
		return;
	log_warn(NULL, "registry: lease %lld lost (%s): granting a new one",
		 (long long)r->lease, why);
	r->lease = 0;
	r->leases_lost++;
	r->keys_events->lease_lost(r);
}
