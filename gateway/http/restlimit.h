/* restlimit: the REST API's per-principal limits (--rest-rate,
   --rest-concurrency): a token bucket of requests per second with bursts
   of two seconds, and a count of requests in flight, per token subject.
   A principal's entry lives while it has requests in flight or its
   bucket is not full again; the table holds RESTLIMIT_MAX_PRINCIPALS. */
#ifndef PTG_RESTLIMIT_H
#define PTG_RESTLIMIT_H

#include <stdint.h>

#define RESTLIMIT_MAX_PRINCIPALS 4096

struct restlimit;

struct restlimit *restlimit_new(uint32_t per_sec, uint32_t in_flight);
void restlimit_free(struct restlimit *rl);
/* Admits one request of principal at now_ms (a monotonic clock): 0, and
   the request holds one in-flight place until restlimit_release; or
   -EBUSY with the seconds to wait (at least 1) in *retry_after_s and the
   limit that was hit in *what (a static string). */
int restlimit_acquire(struct restlimit *rl, const char *principal, int64_t now_ms,
		      unsigned *retry_after_s, const char **what);
/* Gives back the place an admitted request of principal held. */
void restlimit_release(struct restlimit *rl, const char *principal);

#endif
