/* control: see control.h. */
#include "control.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int control_find(const struct control *c, const char *client_id)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strcmp(c->v[i].client_id, client_id) == 0)
			return (int)i;
	return -1;
}

int control_add(struct control *c, void *link, uint64_t attach_id, const char *client_id,
		const char *label, int64_t now_ms, int64_t wall_ms, uint32_t timeout_ms)
{
	struct control_request *r;

	if (control_find(c, client_id) >= 0)
		return 1;
	if (c->n == CONTROL_PENDING_MAX)
		return -ENOSPC;
	r = &c->v[c->n++];
	memset(r, 0, sizeof(*r));
	r->link = link;
	r->attach_id = attach_id;
	snprintf(r->client_id, sizeof(r->client_id), "%s", client_id);
	/* Labels are whole UTF-8 already (members.c cut them): copied as they are. */
	snprintf(r->label, sizeof(r->label), "%s", label ? label : "");
	r->expires_ms = now_ms + timeout_ms;
	r->expires_wall_ms = wall_ms + timeout_ms;
	return 0;
}

void control_remove(struct control *c, unsigned i, struct control_request *out)
{
	if (i >= c->n)
		return;
	if (out)
		*out = c->v[i];
	memmove(&c->v[i], &c->v[i + 1], (c->n - i - 1) * sizeof(c->v[0]));
	c->n--;
}

bool control_take_expired(struct control *c, int64_t now_ms, struct control_request *out)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->v[i].expires_ms <= now_ms) {
			control_remove(c, i, out);
			return 1;
		}
	return 0;
}

int64_t control_next_deadline(const struct control *c)
{
	int64_t at = -1;

	for (unsigned i = 0; i < c->n; i++)
		if (at < 0 || c->v[i].expires_ms < at)
			at = c->v[i].expires_ms;
	return at;
}
