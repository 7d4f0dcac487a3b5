/* routecache: the registry's map in memory, name -> (gateway id, URL), a
   hash table bounded in entries. A resync marks a new generation, puts
   what etcd holds, then sweeps the entries it did not see, so lookups go
   on from the old map while the new one is read. */
#ifndef PTG_ROUTECACHE_H
#define PTG_ROUTECACHE_H

#include <stddef.h>
#include <stdint.h>

struct routecache;

struct routecache_entry {
	const char *gateway; /* the owning gateway's id */
	const char *url;     /* its fleet URL */
	int64_t lease;	     /* the etcd lease the key is under */
};

struct routecache *routecache_new(size_t max);
void routecache_free(struct routecache *c);
/* Sets name's entry (copies every string). Returns 0, or -ENOSPC when
   name is new and the cache holds its maximum already. */
int routecache_put(struct routecache *c, const char *name, const char *gateway,
		   const char *url, int64_t lease);
/* Removes name's entry; 0, or -ENOENT. */
int routecache_del(struct routecache *c, const char *name);
/* name's entry, or NULL; valid until the cache next changes. */
const struct routecache_entry *routecache_get(const struct routecache *c,
					      const char *name);
size_t routecache_size(const struct routecache *c);
/* Starts a generation: entries put from now on belong to it. */
void routecache_begin(struct routecache *c);
/* Removes every entry not put since routecache_begin; returns how many. */
size_t routecache_sweep(struct routecache *c);
/* Bytes the cache holds (entries, strings and buckets), for the metrics. */
size_t routecache_bytes(const struct routecache *c);

#endif
