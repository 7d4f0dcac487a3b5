/* peers: see peers.h. The table is a chained hash keyed by the 16-byte
   address with a per-process random seed, so nobody can choose
   addresses that all land in one chain; an entry lives while its count
   is above zero. An IPv6 connection counts twice, on its /64 and on its
   /56, each entry under its own key. */
#include "peers.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "list.h"
#include "num.h"
#include "xalloc.h"

#define PEERS__BUCKETS 4096 /* power of two; chains stay short at --max-conns */

static const uint8_t v4_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

static void map_v4(const void *in4, struct peer_addr *out)
{
	memcpy(out->b, v4_prefix, 12);
	memcpy(out->b + 12, in4, 4);
}

static int is_v4(const struct peer_addr *a)
{
	return !memcmp(a->b, v4_prefix, 12);
}

int peer_addr_from_sockaddr(const struct sockaddr *sa, struct peer_addr *out)
{
	if (sa->sa_family == AF_INET) {
		map_v4(&((const struct sockaddr_in *)sa)->sin_addr, out);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(out->b, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

int peer_addr_parse(const char *s, size_t n, struct peer_addr *out)
{
	char tmp[INET6_ADDRSTRLEN + 2];
	uint8_t v4[4];

	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (!n || n >= sizeof(tmp))
		return -EINVAL;
	memcpy(tmp, s, n);
	tmp[n] = '\0';
	if (inet_pton(AF_INET, tmp, v4) == 1) {
		map_v4(v4, out);
		return 0;
	}
	return inet_pton(AF_INET6, tmp, out->b) == 1 ? 0 : -EINVAL;
}

void peer_addr_str(const struct peer_addr *a, char *out, size_t cap)
{
	char tmp[INET6_ADDRSTRLEN];

	if (is_v4(a))
		inet_ntop(AF_INET, a->b + 12, tmp, sizeof(tmp));
	else
		inet_ntop(AF_INET6, a->b, tmp, sizeof(tmp));
	snprintf(out, cap, "%s", tmp);
}

static void mask(struct peer_addr *a, unsigned bits)
{
	for (unsigned i = 0; i < 16; i++) {
		unsigned keep = bits > i * 8 ? bits - i * 8 : 0;
		if (keep < 8)
			a->b[i] &= (uint8_t)(0xff00u >> keep);
	}
}

int peer_cidr_parse(const char *s, struct peer_cidr *out)
{
	const char *slash = strchr(s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen(s);
	uint64_t bits;
	unsigned max;

	if (peer_addr_parse(s, n, &out->net) < 0 || (n && s[0] == '['))
		return -EINVAL;
	max = is_v4(&out->net) && !strchr(s, ':') ? 32 : 128;
	bits = max;
	/* At most 3 digits: "/0032" is no way to write a prefix length. */
	if (slash &&
	    (strlen(slash + 1) > 3 || num_parse_u64(slash + 1, 0, max, &bits) < 0))
		return -EINVAL;
	out->bits = (unsigned)bits + (max == 32 ? 96 : 0);
	mask(&out->net, out->bits);
	return 0;
}

bool peer_cidr_contains(const struct peer_cidr *c, const struct peer_addr *a)
{
	struct peer_addr m = *a;

	mask(&m, c->bits);
	return !memcmp(m.b, c->net.b, 16);
}

bool peer_trusted(const struct peer_cidr *list, size_t n, const struct peer_addr *a)
{
	for (size_t i = 0; i < n; i++)
		if (peer_cidr_contains(&list[i], a))
			return 1;
	return 0;
}

/* The hop ending at end (exclusive) in xff: its start and trimmed span. */
static const char *next_hop(const char *xff, const char *end, const char **s, size_t *n)
{
	const char *start = end, *b, *e;

	while (start > xff && start[-1] != ',')
		start--;
	b = start;
	e = end;
	while (b < e && (*b == ' ' || *b == '\t'))
		b++;
	while (e > b && (e[-1] == ' ' || e[-1] == '\t'))
		e--;
	*s = b;
	*n = (size_t)(e - b);
	return start;
}

void peer_client(const struct peer_cidr *trusted, size_t n, const struct peer_addr *peer,
		 const char *xff, struct peer_addr *out)
{
	const char *end, *s;
	size_t len;
	struct peer_addr hop;

	*out = *peer;
	if (!xff || !peer_trusted(trusted, n, peer))
		return;
	end = xff + strlen(xff);
	for (;;) {
		const char *start = next_hop(xff, end, &s, &len);
		if (peer_addr_parse(s, len, &hop) < 0)
			return; /* not an address: keep what we have */
		*out = hop;
		if (!peer_trusted(trusted, n, &hop) || start == xff)
			return; /* the client, or every hop trusted: the leftmost */
		end = start - 1;
	}
}

/* ---- the count table ---- */

struct entry {
	struct peer_addr a;
	unsigned count;
	SLIST_ENTRY(entry) chain;
};

SLIST_HEAD(chain, entry);

struct peer_table {
	struct chain bucket[PEERS__BUCKETS];
	uint64_t seed;
	size_t size;
};

struct peer_table *peer_table_new(void)
{
	struct peer_table *t = xcalloc(1, sizeof(*t));

	if (getrandom(&t->seed, sizeof(t->seed), 0) != sizeof(t->seed))
		t->seed = (uint64_t)(uintptr_t)t ^ 0x9e3779b97f4a7c15ull;
	return t;
}

void peer_table_free(struct peer_table *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < PEERS__BUCKETS; i++) {
		struct entry *e, *next;

		SLIST_FOREACH_SAFE(e, &t->bucket[i], chain, next)
			free(e);
	}
	free(t);
}

/* What is counted: an IPv4 address, or an IPv6 /64. One IPv6 host
   usually holds a whole /64 and can pick a new address per connection,
   so counting single IPv6 addresses would cap nothing. */
static struct peer_addr key_of(const struct peer_addr *a)
{
	struct peer_addr k = *a;

	if (!is_v4(a))
		memset(k.b + 8, 0, 8);
	return k;
}

/* An IPv6 address's /56, tagged in its last byte so it never equals the
   key of a /64 (whose last byte is 0) nor an IPv4 key (::ffff:0:0/96). */
static struct peer_addr site_of(const struct peer_addr *a)
{
	struct peer_addr k = *a;

	memset(k.b + 7, 0, 9);
	k.b[15] = 1;
	return k;
}

/* FNV-1a over the seed and the key: enough with a secret seed and
   chains bounded by the connection limit. */
static struct chain *chain_of(const struct peer_table *t, const struct peer_addr *key)
{
	uint64_t h = 0xcbf29ce484222325ull ^ t->seed;

	for (size_t i = 0; i < 16; i++)
		h = (h ^ key->b[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	return (struct chain *)&t->bucket[h & (PEERS__BUCKETS - 1)];
}

static struct entry *find(const struct chain *c, const struct peer_addr *key)
{
	struct entry *e;

	SLIST_FOREACH(e, c, chain) {
		if (!memcmp(e->a.b, key->b, 16))
			return e;
	}
	return NULL;
}

static unsigned count_of(const struct peer_table *t, const struct peer_addr *key)
{
	struct entry *e = find(chain_of(t, key), key);

	return e ? e->count : 0;
}

static void add(struct peer_table *t, const struct peer_addr *key, int site)
{
	struct chain *c = chain_of(t, key);
	struct entry *e = find(c, key);

	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->a = *key;
		SLIST_INSERT_HEAD(c, e, chain);
		t->size += !site;
	}
	e->count++;
}

static void drop(struct peer_table *t, const struct peer_addr *key, int site)
{
	struct chain *c = chain_of(t, key);
	struct entry *e = find(c, key);

	if (!e)
		return;
	if (--e->count == 0) {
		SLIST_REMOVE(c, e, entry, chain);
		free(e);
		t->size -= !site;
	}
}

static unsigned site_limit(unsigned limit)
{
	return limit > UINT32_MAX / PEERS_SITE_FACTOR ? UINT32_MAX
						      : limit * PEERS_SITE_FACTOR;
}

bool peer_table_full(const struct peer_table *t, const struct peer_addr *a,
		     unsigned limit)
{
	struct peer_addr k = key_of(a), site;

	if (count_of(t, &k) >= limit)
		return true;
	if (is_v4(a))
		return false;
	site = site_of(a);
	return count_of(t, &site) >= site_limit(limit);
}

int peer_table_take(struct peer_table *t, const struct peer_addr *a, unsigned limit)
{
	struct peer_addr k = key_of(a), site = site_of(a);

	if (peer_table_full(t, a, limit))
		return -EBUSY;
	add(t, &k, 0);
	if (!is_v4(a))
		add(t, &site, 1);
	return 0;
}

void peer_table_give(struct peer_table *t, const struct peer_addr *a)
{
	struct peer_addr k = key_of(a), site = site_of(a);

	if (!count_of(t, &k))
		return; /* not counted: nothing to give back, the site's neither */
	drop(t, &k, 0);
	if (!is_v4(a))
		drop(t, &site, 1);
}
