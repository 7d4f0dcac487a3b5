/* members: membership and roles of one session (docs/protocol.md, "Roles").
   A session holds a few dozen members at most, so a TAILQ in join order
   with linear lookups is both the simplest and fast enough. The
   distinct links of the members are counted beside it: every frame goes
   once per link, and a thousand observers on one gateway are one link. */
#include "members.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "xalloc.h"

static const char reason_no_control[] = "token lacks pty:control";

struct members {
	unsigned max[3]; /* indexed by enum member_role */
	unsigned count[3];
	TAILQ_HEAD(, member) all; /* in join order */
	struct link_count {
		void *link;
		unsigned members; /* of this session on the link, >= 1 */
	} * links;
	unsigned nlinks, links_cap;
	char ctl_full[48]; /* "controller capacity reached (N)" */
	char obs_full[48];
};

struct members *members_new(unsigned max_controllers, unsigned max_observers)
{
	struct members *m = xcalloc(1, sizeof(*m));

	TAILQ_INIT(&m->all);
	m->max[MEMBER_CONTROLLER] = max_controllers;
	m->max[MEMBER_OBSERVER] = max_observers;
	snprintf(m->ctl_full, sizeof(m->ctl_full), "controller capacity reached (%u)",
		 max_controllers);
	snprintf(m->obs_full, sizeof(m->obs_full), "observer capacity reached (%u)",
		 max_observers);
	return m;
}

void members_free(struct members *m)
{
	struct member *mb, *next;

	if (!m)
		return;
	TAILQ_FOREACH_SAFE(mb, &m->all, entry, next)
		free(mb);
	free(m->links);
	free(m);
}

/* Kernel randomness; like an allocation failure, its absence is fatal. */
static void random_bytes(void *buf, size_t n)
{
	size_t got = 0;

	while (got < n) {
		ssize_t rc = getrandom((char *)buf + got, n - got, 0);

		if (rc < 0 && errno == EINTR)
			continue;
		if (rc <= 0)
			abort();
		got += (size_t)rc;
	}
}

/* A fresh "c-" + 16 hex id, retried until no current member holds it. */
static struct member *members_find_client(struct members *m, const char *client_id);

static void issue_client_id(struct members *m, char out[24])
{
	static const char hex[] = "0123456789abcdef";
	uint8_t rnd[8];

	do {
		random_bytes(rnd, sizeof(rnd));
		out[0] = 'c';
		out[1] = '-';
		for (size_t i = 0; i < sizeof(rnd); i++) {
			out[2 + 2 * i] = hex[rnd[i] >> 4];
			out[3 + 2 * i] = hex[rnd[i] & 0xf];
		}
		out[2 + 2 * sizeof(rnd)] = '\0';
	} while (members_find_client(m, out));
}

/* Copies at most PTG_LABEL_MAX_BYTES bytes; a cut never lands inside a UTF-8
   sequence, so it backs off over continuation bytes (10xxxxxx). */
static void copy_label(char *dst, const char *src)
{
	size_t n = src ? strnlen(src, PTG_LABEL_MAX_BYTES + 1) : 0;

	if (n > PTG_LABEL_MAX_BYTES) {
		n = PTG_LABEL_MAX_BYTES;
		while (n > 0 && ((unsigned char)src[n] & 0xc0) == 0x80)
			n--;
	}
	if (n)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

/* The role a controller request gets, or why it is refused (NULL: granted). */
static const char *controller_refusal(const struct members *m, bool may_control)
{
	if (!may_control)
		return reason_no_control;
	if (m->count[MEMBER_CONTROLLER] >= m->max[MEMBER_CONTROLLER])
		return m->ctl_full;
	return NULL;
}

static int has_room(const struct members *m, enum member_role r)
{
	return m->count[r] < m->max[r];
}

static void count_link(struct members *m, void *link)
{
	for (unsigned i = 0; i < m->nlinks; i++)
		if (m->links[i].link == link) {
			m->links[i].members++;
			return;
		}
	if (m->nlinks == m->links_cap) {
		m->links_cap = m->links_cap ? 2 * m->links_cap : 4;
		m->links = xrealloc(m->links, m->links_cap * sizeof(*m->links));
	}
	m->links[m->nlinks++] = (struct link_count){link, 1};
}

static void uncount_link(struct members *m, void *link)
{
	for (unsigned i = 0; i < m->nlinks; i++)
		if (m->links[i].link == link) {
			if (--m->links[i].members == 0)
				m->links[i] = m->links[--m->nlinks];
			return;
		}
}

static void link_in(struct members *m, struct member *mb)
{
	TAILQ_INSERT_TAIL(&m->all, mb, entry);
	m->count[mb->role]++;
	count_link(m, mb->link);
}

struct member *members_join(struct members *m, void *link, uint64_t attach_id,
			    enum member_role requested, bool may_control,
			    const char *label, bool *downgraded, const char **reason)
{
	enum member_role role = MEMBER_OBSERVER;
	struct member *mb;

	*downgraded = false;
	*reason = NULL;
	if (requested == MEMBER_CONTROLLER) {
		*reason = controller_refusal(m, may_control);
		*downgraded = *reason != NULL;
		if (!*downgraded)
			role = MEMBER_CONTROLLER;
	}
	if (!has_room(m, role))
		return NULL;
	mb = xcalloc(1, sizeof(*mb));
	mb->link = link;
	mb->attach_id = attach_id;
	mb->role = role;
	mb->may_control = may_control;
	copy_label(mb->label, label);
	issue_client_id(m, mb->client_id);
	link_in(m, mb);
	return mb;
}

struct member *members_find(struct members *m, void *link, uint64_t attach_id)
{
	struct member *mb;

	TAILQ_FOREACH(mb, &m->all, entry) {
		if (mb->link == link && mb->attach_id == attach_id)
			return mb;
	}
	return NULL;
}

/* The member with this client id, or NULL. */
static struct member *members_find_client(struct members *m, const char *client_id)
{
	struct member *mb;

	TAILQ_FOREACH(mb, &m->all, entry) {
		if (strcmp(mb->client_id, client_id) == 0)
			return mb;
	}
	return NULL;
}

void members_leave(struct members *m, struct member *mb)
{
	TAILQ_REMOVE(&m->all, mb, entry);
	m->count[mb->role]--;
	uncount_link(m, mb->link);
	free(mb);
}

unsigned members_nlinks(const struct members *m)
{
	return m->nlinks;
}

void *members_link(const struct members *m, unsigned i)
{
	return m->links[i].link;
}

bool members_request_role(struct members *m, struct member *mb, enum member_role want,
			  bool *downgraded, const char **reason)
{
	*downgraded = false;
	*reason = NULL;
	if (want != MEMBER_CONTROLLER)
		want = MEMBER_OBSERVER;
	if (want == mb->role)
		return 0;
	if (want == MEMBER_CONTROLLER)
		*reason = controller_refusal(m, mb->may_control);
	else if (!has_room(m, MEMBER_OBSERVER))
		*reason = m->obs_full;
	if (*reason) {
		*downgraded = true;
		return 0;
	}
	m->count[mb->role]--;
	mb->role = want;
	m->count[want]++;
	return 1;
}

unsigned members_count(const struct members *m, enum member_role r)
{
	if (r != MEMBER_CONTROLLER && r != MEMBER_OBSERVER)
		return 0;
	return m->count[r];
}

struct member *members_first(struct members *m)
{
	return TAILQ_FIRST(&m->all);
}

struct member *members_next(struct members *m, struct member *mb)
{
	return TAILQ_NEXT(mb, entry);
}

unsigned members_drop_link(struct members *m, void *link)
{
	struct member *mb, *next;
	unsigned n = 0;

	TAILQ_FOREACH_SAFE(mb, &m->all, entry, next) {
		if (mb->link == link) {
			members_leave(m, mb);
			n++;
		}
	}
	return n;
}
