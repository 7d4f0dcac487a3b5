/* routecache: a chained hash table of names to owners (see routecache.h).
   The bucket array doubles when the entries outnumber it, so a lookup
   reads one short chain however many sandboxes the fleet has. */
#include "routecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "list.h"
#include "xalloc.h"

struct rc_node {
	SLIST_ENTRY(rc_node) chain;
	struct routecache_entry e;
	uint64_t gen;
	size_t bytes;
	char *name;
};

SLIST_HEAD(chain, rc_node);

struct routecache {
	struct chain *buckets;
	size_t n_buckets; /* a power of two */
	size_t n;
	size_t max;
	size_t bytes;
	uint64_t gen;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

struct routecache *routecache_new(size_t max)
{
	struct routecache *c = xcalloc(1, sizeof(*c));

	c->n_buckets = 64;
	c->buckets = xcalloc(c->n_buckets, sizeof(*c->buckets));
	c->max = max;
	return c;
}

static void node_free(struct rc_node *n)
{
	free(n->name);
	free((char *)n->e.gateway);
	free((char *)n->e.url);
	free(n);
}

void routecache_free(struct routecache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_buckets; i++) {
		struct rc_node *n, *next;

		SLIST_FOREACH_SAFE(n, &c->buckets[i], chain, next)
			node_free(n);
	}
	free(c->buckets);
	free(c);
}

static struct chain *chain_of(const struct routecache *c, const char *name)
{
	return &c->buckets[hash(name) & (c->n_buckets - 1)];
}

static struct rc_node *find(const struct chain *ch, const char *name)
{
	struct rc_node *n;

	SLIST_FOREACH(n, ch, chain) {
		if (strcmp(n->name, name) == 0)
			return n;
	}
	return NULL;
}

static void grow(struct routecache *c)
{
	size_t nb = c->n_buckets * 2;
	struct chain *b = xcalloc(nb, sizeof(*b));
	struct rc_node *n;

	for (size_t i = 0; i < c->n_buckets; i++)
		while ((n = SLIST_FIRST(&c->buckets[i]))) {
			SLIST_REMOVE_HEAD(&c->buckets[i], chain);
			SLIST_INSERT_HEAD(&b[hash(n->name) & (nb - 1)], n, chain);
		}
	free(c->buckets);
	c->buckets = b;
	c->n_buckets = nb;
}

static void set_owner(struct routecache *c, struct rc_node *n, const char *gateway,
		      const char *url, int64_t lease)
{
	c->bytes -= n->bytes;
	free((char *)n->e.gateway);
	free((char *)n->e.url);
	n->e.gateway = xstrdup(gateway);
	n->e.url = xstrdup(url);
	n->e.lease = lease;
	n->gen = c->gen;
	n->bytes = sizeof(*n) + strlen(n->name) + strlen(gateway) + strlen(url) + 3;
	c->bytes += n->bytes;
}

int routecache_put(struct routecache *c, const char *name, const char *gateway,
		   const char *url, int64_t lease)
{
	struct chain *ch = chain_of(c, name);
	struct rc_node *n = find(ch, name);

	if (!n) {
		if (c->n >= c->max)
			return -ENOSPC;
		n = xcalloc(1, sizeof(*n));
		n->name = xstrdup(name);
		SLIST_INSERT_HEAD(ch, n, chain);
		c->n++;
	}
	set_owner(c, n, gateway, url, lease);
	if (c->n > c->n_buckets)
		grow(c);
	return 0;
}

int routecache_del(struct routecache *c, const char *name)
{
	struct chain *ch = chain_of(c, name);
	struct rc_node *n = find(ch, name);

	if (!n)
		return -ENOENT;
	SLIST_REMOVE(ch, n, rc_node, chain);
	c->bytes -= n->bytes;
	c->n--;
	node_free(n);
	return 0;
}

const struct routecache_entry *routecache_get(const struct routecache *c,
					      const char *name)
{
	struct rc_node *n = find(chain_of(c, name), name);

	return n ? &n->e : NULL;
}

size_t routecache_size(const struct routecache *c)
{
	return c->n;
}

void routecache_begin(struct routecache *c)
{
	c->gen++;
}

size_t routecache_sweep(struct routecache *c)
{
	size_t gone = 0;

	for (size_t i = 0; i < c->n_buckets; i++) {
		struct rc_node *n, *next;

		SLIST_FOREACH_SAFE(n, &c->buckets[i], chain, next) {
			if (n->gen == c->gen)
				continue;
			SLIST_REMOVE(&c->buckets[i], n, rc_node, chain);
			c->bytes -= n->bytes;
			c->n--;
			node_free(n);
			gone++;
		}
	}
	return gone;
}

size_t routecache_bytes(const struct routecache *c)
{
	return sizeof(*c) + c->n_buckets * sizeof(*c->buckets) + c->bytes;
}
