/* routecache: a chained hash table of names to owners (see routecache.h).
   The bucket array doubles when the entries outnumber it, so a lookup
   reads one short chain however many sandboxes the fleet has. */
#include "routecache.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

struct rc_node {
	struct rc_node *next;
	struct routecache_entry e;
	uint64_t gen;
	size_t bytes;
	char *name;
};

struct routecache {
	struct rc_node **buckets;
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
	for (size_t i = 0; i < c->n_buckets; i++)
		while (c->buckets[i]) {
			struct rc_node *n = c->buckets[i];

			c->buckets[i] = n->next;
			node_free(n);
		}
	free(c->buckets);
	free(c);
}

static struct rc_node **slot(const struct routecache *c, const char *name)
{
	struct rc_node **p = &c->buckets[hash(name) & (c->n_buckets - 1)];

	while (*p && strcmp((*p)->name, name) != 0)
		p = &(*p)->next;
	return p;
}

static void grow(struct routecache *c)
{
	size_t nb = c->n_buckets * 2;
	struct rc_node **b = xcalloc(nb, sizeof(*b));

	for (size_t i = 0; i < c->n_buckets; i++)
		while (c->buckets[i]) {
			struct rc_node *n = c->buckets[i];
			struct rc_node **to = &b[hash(n->name) & (nb - 1)];

			c->buckets[i] = n->next;
			n->next = *to;
			*to = n;
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
	struct rc_node **p = slot(c, name);
	struct rc_node *n = *p;

	if (!n) {
		if (c->n >= c->max)
			return -ENOSPC;
		n = xcalloc(1, sizeof(*n));
		n->name = xstrdup(name);
		*p = n;
		c->n++;
	}
	set_owner(c, n, gateway, url, lease);
	if (c->n > c->n_buckets)
		grow(c);
	return 0;
}

int routecache_del(struct routecache *c, const char *name)
{
	struct rc_node **p = slot(c, name);
	struct rc_node *n = *p;

	if (!n)
		return -ENOENT;
	*p = n->next;
	c->bytes -= n->bytes;
	c->n--;
	node_free(n);
	return 0;
}

const struct routecache_entry *routecache_get(const struct routecache *c,
					      const char *name)
{
	struct rc_node *n = *slot(c, name);

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
		struct rc_node **p = &c->buckets[i];

		while (*p) {
			struct rc_node *n = *p;

			if (n->gen == c->gen) {
				p = &n->next;
				continue;
			}
			*p = n->next;
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
