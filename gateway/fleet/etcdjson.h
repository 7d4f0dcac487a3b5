/* etcdjson: the JSON of etcd's v3 gateway (/v3/...), with no I/O: the
   request bodies the registry sends (keys and values in base64, 64-bit
   numbers as strings), its replies read into structs with every field
   checked, and the splitter that cuts a streamed reply (a watch) into
   whole messages, each bounded. */
#ifndef PTG_ETCDJSON_H
#define PTG_ETCDJSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"

/* A key or a value decoded from a reply is at most this long: the
   registry's own keys and values are far shorter, and anything longer is
   refused rather than allocated. */
#define ETCDJSON_FIELD_MAX 1024
/* A range page holds at most this many keys. */
#define ETCDJSON_PAGE_MAX 500

struct etcdjson_kv {
	char key[ETCDJSON_FIELD_MAX + 1]; /* NUL-terminated; the key has none inside */
	char value[ETCDJSON_FIELD_MAX + 1];
	size_t value_len;
	int64_t mod_revision;
	int64_t create_revision;
	int64_t lease;
	bool bad; /* in a range or a watch: refused (too long, not base64, ...),
		    every other field empty; the rest of the reply stands */
};

struct etcdjson_range {
	int64_t revision; /* the header's */
	bool more;
	size_t n;
	struct etcdjson_kv *kvs; /* n of them, malloc'd; etcdjson_range_free */
	size_t n_bad;		 /* kvs marked bad (the first one's reason in why) */
	struct buf last_key;	 /* the last kv's key as it is, bad or not: where
				    the next page starts */
};

struct etcdjson_event {
	bool deleted; /* DELETE; else PUT */
	struct etcdjson_kv kv;
};

struct etcdjson_watch {
	int64_t revision; /* the header's */
	bool created;
	bool canceled;
	int64_t compact_revision; /* > 0: the start revision was compacted */
	size_t n;
	struct etcdjson_event *events; /* malloc'd; etcdjson_watch_free */
	size_t n_bad;		       /* events marked bad (kv.bad; reason in why) */
};

/* Request bodies, appended to out. A revision or limit of 0 is left out. */
void etcdjson_range_req(struct buf *out, const char *key, size_t key_len,
			const char *range_end, int64_t revision, int64_t limit);
void etcdjson_grant_req(struct buf *out, int64_t ttl_s);
void etcdjson_lease_req(struct buf *out, int64_t lease);
void etcdjson_auth_req(struct buf *out, const char *user, const char *password);
/* A watch of [key, range_end) from start_revision. */
void etcdjson_watch_req(struct buf *out, const char *key, const char *range_end,
			int64_t start_revision);
/* A transaction putting key = value under lease when the key is absent
   (create revision 0), or when its mod revision is still mod_revision
   (> 0); else it reads the key back. */
void etcdjson_claim_req(struct buf *out, const char *key, const char *value,
			int64_t lease, int64_t mod_revision);
/* A transaction deleting key only while it is under lease. */
void etcdjson_release_req(struct buf *out, const char *key, int64_t lease);

/* Replies. Each returns 0, or -EPROTO when body is not the reply it
   should be (an error object included) and then says why in why. One bad
   kv or event of a range or a watch does not refuse the others: it is
   marked bad and counted, its reason in why, so a single stray key under
   the prefix cannot keep the whole map away. */
int etcdjson_range_reply(const char *body, size_t len, struct etcdjson_range *out,
			 char *why, size_t whylen);
void etcdjson_range_free(struct etcdjson_range *r);
int etcdjson_grant_reply(const char *body, size_t len, int64_t *lease, int64_t *ttl,
			 char *why, size_t whylen);
/* A keep-alive's answer (the stream's first message): *ttl 0 when the
   lease is gone. */
int etcdjson_keepalive_reply(const char *body, size_t len, int64_t *ttl, char *why,
			     size_t whylen);
int etcdjson_auth_reply(const char *body, size_t len, char *token, size_t tokcap,
			char *why, size_t whylen);
/* A claim's answer: *succeeded, and when it failed the key as it stands
   in *current (current->key[0] == '\0' when it is absent by now). */
int etcdjson_claim_reply(const char *body, size_t len, bool *succeeded,
			 struct etcdjson_kv *current, char *why, size_t whylen);
/* A transaction's answer: *succeeded only. */
int etcdjson_txn_reply(const char *body, size_t len, bool *succeeded, char *why,
		       size_t whylen);
/* One message of the watch stream ({"result": WatchResponse}). */
int etcdjson_watch_msg(const char *body, size_t len, struct etcdjson_watch *out,
		       char *why, size_t whylen);
void etcdjson_watch_free(struct etcdjson_watch *w);

/* The end of the range of keys that start with prefix (prefix with its
   last byte below 0xff incremented), into out (at least strlen + 1). */
void etcdjson_prefix_end(const char *prefix, char *out);

/* Cuts a stream of JSON objects (newline-delimited or not) into whole
   objects. */
struct etcdjson_split {
	struct buf pending; /* the message being gathered */
	size_t max;	    /* a message's cap in bytes */
	int depth;
	bool in_string;
	bool escaped;
};

typedef int (*etcdjson_msg_cb)(const char *msg, size_t len, void *user);

void etcdjson_split_init(struct etcdjson_split *s, size_t max);
void etcdjson_split_free(struct etcdjson_split *s);
/* Feeds n bytes; calls cb with each object completed. Returns 0, -E2BIG
   for a message over the cap, -EPROTO for bytes outside an object other
   than whitespace, or the first non-zero cb result. The splitter cannot
   be fed again after an error. */
int etcdjson_split_feed(struct etcdjson_split *s, const char *data, size_t n,
			etcdjson_msg_cb cb, void *user);

#endif
