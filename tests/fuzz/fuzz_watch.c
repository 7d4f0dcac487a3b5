/* fuzz_watch: libFuzzer harness for the registry's watch stream: the
   bytes an etcd member (or anything posing as one) streams back, cut by
   etcdjson_split_feed into messages, each read by etcdjson_watch_msg.
   The first byte picks the chunk size, so messages split across reads
   are covered. Oracles beyond the sanitizers:
   - fed whole or in chunks, the splitter gives the same messages and the
     same result;
   - each message is one object ('{' to '}'), within the cap;
   - a message read has events with a key (no NUL inside) and values
     within ETCDJSON_FIELD_MAX, or marked bad and empty; a refused one
     holds no events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "etcdjson.h"
#include "fuzz_oracle.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ__CAP 4096

struct seen {
	struct buf all; /* every message, each followed by a NUL */
	size_t n;
};

static void check_msg(const char *msg, size_t len)
{
	struct etcdjson_watch w;
	char why[LOG_ERR_MAX];

	if (etcdjson_watch_msg(msg, len, &w, why, sizeof(why)) < 0) {
		fuzz__assert(w.events == NULL && w.n == 0 && why[0]);
		return;
	}
	for (size_t i = 0; i < w.n; i++) {
		const struct etcdjson_kv *kv = &w.events[i].kv;

		if (kv->bad) {
			fuzz__assert(!kv->key[0] && !kv->value_len);
			continue;
		}
		fuzz__assert(kv->key[0] && strlen(kv->key) <= ETCDJSON_FIELD_MAX);
		fuzz__assert(kv->value_len <= ETCDJSON_FIELD_MAX);
	}
	etcdjson_watch_free(&w);
}

static int on_msg(const char *msg, size_t len, void *user)
{
	struct seen *s = user;

	fuzz__assert(len >= 2 && len <= FUZZ__CAP);
	fuzz__assert(msg[0] == '{' && msg[len - 1] == '}');
	buf_append(&s->all, msg, len);
	buf_append(&s->all, "", 1);
	s->n++;
	check_msg(msg, len);
	return 0;
}

static int feed(const uint8_t *data, size_t size, size_t chunk, struct seen *s)
{
	struct etcdjson_split sp;
	int rc = 0;

	etcdjson_split_init(&sp, FUZZ__CAP);
	for (size_t off = 0; off < size && rc == 0; off += chunk) {
		size_t n = size - off < chunk ? size - off : chunk;

		rc = etcdjson_split_feed(&sp, (const char *)data + off, n, on_msg, s);
	}
	etcdjson_split_free(&sp);
	return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct seen whole = {BUF_INIT, 0}, chunked = {BUF_INIT, 0};
	size_t chunk;
	int a, b;

	if (size < 1)
		return 0;
	chunk = (size_t)data[0] % 17 + 1;
	data++;
	size--;
	a = feed(data, size, size ? size : 1, &whole);
	b = feed(data, size, chunk, &chunked);
	fuzz__assert(a == b);
	fuzz__assert(a == 0 || a == -E2BIG || a == -EPROTO);
	fuzz__assert(whole.n == chunked.n);
	fuzz__assert(buf_size(&whole.all) == buf_size(&chunked.all));
	fuzz__assert(
	    !memcmp(buf_head(&whole.all), buf_head(&chunked.all), buf_size(&whole.all)));
	buf_free(&whole.all);
	buf_free(&chunked.all);
	return 0;
}
