/* fuzz_ws: libFuzzer harness for the WebSocket codec. The first input byte
   picks the chunk size the rest is fed in (its high 7 bits: 1..128, so
   frames get cut everywhere) and, in its low bit, whether permessage-
   deflate was agreed (compressed messages then inflate, held to the
   message limit); what the codec writes goes through an outq, as in the
   gateway, and must parse back as whole unmasked server frames.
   Build: clang -g -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE
	  -Ishared -Igateway -Igateway/conn tests/fuzz/fuzz_ws.c
	  gateway/ws.c gateway/conn/outq.c shared/xalloc.c -lwslay */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "outq.h"
#include "ws.h"

struct state {
	struct outq out;
	size_t text_bytes;
	int closes;
};

static void on_write(const uint8_t *p, size_t n, void *user)
{
	outq_push_bytes(&((struct state *)user)->out, p, n);
}

static void text(const char *p, size_t n, void *user)
{
	if (n > WS_MAX_MESSAGE)
		abort();
	((struct state *)user)->text_bytes += n;
}

static void on_close(uint16_t code, const char *reason, size_t n, void *user)
{
	if (n > 123)
		abort();
	((struct state *)user)->closes++;
}

/* Walks the output: every frame must be whole, FIN, unmasked, unreserved. */
static void check_output(struct outq *q)
{
	struct iovec iov[64];
	uint8_t *all = malloc(outq_bytes(q) + 1);
	size_t len = 0, off = 0;
	int i, n;

	while ((n = outq_iov(q, iov, 64)) > 0) {
		size_t chunk = 0;

		for (i = 0; i < n; i++) {
			memcpy(all + len, iov[i].iov_base, iov[i].iov_len);
			len += iov[i].iov_len;
			chunk += iov[i].iov_len;
		}
		outq_consume(q, chunk);
	}
	while (off < len) {
		if (len - off < 2 || (all[off] & 0xf0) != 0x80 || (all[off + 1] & 0x80))
			abort();
		/* Only control frames come out of wslay here. */
		if ((all[off + 1] & 0x7f) > 125 || !(all[off] & 0x08))
			abort();
		off += 2 + (all[off + 1] & 0x7f);
	}
	if (off != len)
		abort();
	free(all);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ws_callbacks cb = {
	    .on_write = on_write, .on_text = text, .on_close = on_close};
	struct state st = {.text_bytes = 0};
	size_t step, off = 1;
	struct ws *ws;
	int ret = 0;

	if (size < 1)
		return 0;
	step = (size_t)(data[0] >> 1) + 1;
	outq_init(&st.out);
	ws = ws_new(&cb, &st);
	ws_set_deflate(ws, data[0] & 1);
	while (off < size) {
		size_t k = size - off < step ? size - off : step;

		ret = ws_feed(ws, data + off, k);
		off += k;
		if (ret == -ESHUTDOWN && !ws_close_sent(ws))
			abort();
	}
	if (!ws_close_sent(ws) && ws_send_close(ws, WS_CLOSE_NORMAL, "fuzz") != 0)
		abort();
	if (!ws_close_sent(ws) || ws_send_ping(ws, NULL, 0) != -ESHUTDOWN)
		abort();
	/* Once the peer's close is in, nothing more is read. */
	if (ws_close_received(ws) && ws_feed(ws, data, size) != -ESHUTDOWN)
		abort();
	check_output(&st.out);
	outq_clear(&st.out);
	ws_free(ws);
	return 0;
}
