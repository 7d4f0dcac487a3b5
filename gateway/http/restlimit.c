/* restlimit: see restlimit.h. Tokens are counted in thousandths so a
   bucket refills smoothly at any rate; entries are found by a linear
   scan, and the table is swept of entries that would start afresh
   anyway (nothing in flight, bucket full) only when it is full. */
#include "restlimit.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth_jwt.h"
#include "xalloc.h"

#define MILLI 1000

struct principal {
	char sub[JWT_SUB_MAX + 1];
	uint64_t tokens; /* thousandths of a request */
	int64_t refilled_ms;
	uint32_t in_flight;
};

struct restlimit {
	uint32_t per_sec, max_in_flight;
	uint64_t burst; /* two seconds' worth, in thousandths */
	struct principal *v;
	size_t n;
};

struct restlimit *restlimit_new(uint32_t per_sec, uint32_t in_flight)
{
	struct restlimit *rl = xcalloc(1, sizeof(*rl));

	rl->per_sec = per_sec ? per_sec : 1;
	rl->max_in_flight = in_flight ? in_flight : 1;
	rl->burst = 2ull * rl->per_sec * MILLI;
	rl->v = xcalloc(RESTLIMIT_MAX_PRINCIPALS, sizeof(*rl->v));
	return rl;
}

void restlimit_free(struct restlimit *rl)
{
	if (!rl)
		return;
	free(rl->v);
	free(rl);
}

static struct principal *find(struct restlimit *rl, const char *sub)
{
	for (size_t i = 0; i < rl->n; i++)
		if (!strcmp(rl->v[i].sub, sub))
			return &rl->v[i];
	return NULL;
}

/* per_sec requests a second are per_sec thousandths a millisecond. */
static void refill(const struct restlimit *rl, struct principal *p, int64_t now_ms)
{
	if (now_ms > p->refilled_ms) {
		uint64_t add = (uint64_t)(now_ms - p->refilled_ms) * rl->per_sec;

		p->tokens = p->tokens + add > rl->burst ? rl->burst : p->tokens + add;
		p->refilled_ms = now_ms;
	}
}

/* Drops the entries a fresh one would equal. */
static void sweep(struct restlimit *rl, int64_t now_ms)
{
	for (size_t i = 0; i < rl->n;) {
		refill(rl, &rl->v[i], now_ms);
		if (rl->v[i].in_flight == 0 && rl->v[i].tokens == rl->burst)
			rl->v[i] = rl->v[--rl->n];
		else
			i++;
	}
}

static struct principal *find_or_add(struct restlimit *rl, const char *sub,
				     int64_t now_ms)
{
	struct principal *p = find(rl, sub);

	if (p)
		return p;
	if (rl->n == RESTLIMIT_MAX_PRINCIPALS)
		sweep(rl, now_ms);
	if (rl->n == RESTLIMIT_MAX_PRINCIPALS)
		return NULL;
	p = &rl->v[rl->n++];
	snprintf(p->sub, sizeof(p->sub), "%s", sub);
	p->tokens = rl->burst;
	p->refilled_ms = now_ms;
	p->in_flight = 0;
	return p;
}

int restlimit_acquire(struct restlimit *rl, const char *principal, int64_t now_ms,
		      unsigned *retry_after_s, const char **what)
{
	struct principal *p = find_or_add(rl, principal, now_ms);
	uint64_t wait_ms;

	*retry_after_s = 1;
	if (!p) {
		*what = "principals with requests in flight";
		return -EBUSY;
	}
	if (p->in_flight >= rl->max_in_flight) {
		*what = "requests in flight per principal";
		return -EBUSY;
	}
	refill(rl, p, now_ms);
	if (p->tokens < MILLI) {
		wait_ms = (MILLI - p->tokens + rl->per_sec - 1) / rl->per_sec;
		*retry_after_s = (unsigned)((wait_ms + 999) / 1000);
		if (*retry_after_s == 0)
			*retry_after_s = 1;
		*what = "requests per second per principal";
		return -EBUSY;
	}
	p->tokens -= MILLI;
	p->in_flight++;
	*what = NULL;
	return 0;
}

void restlimit_release(struct restlimit *rl, const char *principal)
{
	struct principal *p = find(rl, principal);

	if (p && p->in_flight > 0)
		p->in_flight--;
}
