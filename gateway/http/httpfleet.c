/* httpfleet: see httpfleet.h. */
#include "httpfleet.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fleetauth.h"
#include "timeutil.h"
#include "xalloc.h"

bool httpfleet_forwarded(const struct fleetauth *key, struct MHD_Connection *c,
			 const char *method, const char *target, struct peer_addr *client)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND, FLEETAUTH_HEADER);
	const char *xff =
	    MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-Forwarded-For");
	const char *last;

	if (!key || !v || !xff ||
	    fleetauth_verify(key, time_now_ms() / 1000, v, method, target, xff) < 0)
		return 0;
	last = strrchr(xff, ',');
	last = last ? last + 1 : xff;
	last += strspn(last, " \t");
	return peer_addr_parse(last, strcspn(last, " \t"), client) == 0;
}

static enum MHD_Result one(void *cls, enum MHD_ValueKind kind, const char *key,
			   const char *value)
{
	struct httpfleet_headers *hs = cls;

	if (hs->n >= HTTPFLEET_HEADERS_MAX)
		return MHD_NO;
	buf_append(&hs->store, key, strlen(key) + 1);
	buf_append(&hs->store, value ? value : "", (value ? strlen(value) : 0) + 1);
	hs->n++;
	return MHD_YES;
}

const struct forward_header *httpfleet_collect(struct MHD_Connection *c,
					       struct httpfleet_headers *hs, size_t *n)
{
	const char *p;

	if (!hs->done) {
		hs->done = true;
		buf_init(&hs->store);
		hs->n = 0;
		MHD_get_connection_values(c, MHD_HEADER_KIND, one, hs);
		hs->h = xcalloc(hs->n + 1, sizeof(*hs->h));
		p = (const char *)buf_head(&hs->store);
		for (size_t i = 0; i < hs->n; i++) {
			hs->h[i].name = p;
			p += strlen(p) + 1;
			hs->h[i].value = p;
			p += strlen(p) + 1;
		}
	}
	*n = hs->n;
	return hs->h;
}

void httpfleet_clear(struct httpfleet_headers *hs)
{
	if (!hs->done)
		return;
	if (buf_size(&hs->store)) /* it holds the Authorization header */
		explicit_bzero(buf_head(&hs->store), buf_size(&hs->store));
	buf_free(&hs->store);
	free(hs->h);
	hs->h = NULL;
	hs->n = 0;
	hs->done = false;
}

void httpfleet_answer_headers(struct MHD_Response *resp, const struct forward_header *h,
			      size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(h[i].name, "Upgrade") != 0 &&
		    strcasecmp(h[i].name, "Connection") != 0)
			MHD_add_response_header(resp, h[i].name, h[i].value);
}
