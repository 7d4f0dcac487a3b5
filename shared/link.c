/* link: the framing of the link protocol, a pure codec. A frame is a
   4-byte big-endian body length and one packed Ptg__LinkMessage. The
   length is checked against LINK_MAX_MESSAGE before anything is
   allocated, so a peer cannot make us reserve more than the cap, and
   unpacking runs on a budget (LINK_DECODE_MAX_ALLOCS allocations, bytes
   at most twice the message plus 1 MiB), so a message of millions of
   empty repeated entries fails early instead of costing a gigabyte. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "link.h"

void link_encode(const Ptg__LinkMessage *m, struct buf *out)
{
	size_t n = ptg__link_message__get_packed_size(m);
	uint8_t *p;

	/* Our own messages never approach the cap; one that does is a bug
	   the peer would reject anyway, so fail loudly here. */
	if (n > LINK_MAX_MESSAGE)
		abort();
	p = buf_reserve(out, 4 + n);
	p[0] = (uint8_t)(n >> 24);
	p[1] = (uint8_t)(n >> 16);
	p[2] = (uint8_t)(n >> 8);
	p[3] = (uint8_t)n;
	ptg__link_message__pack(m, p + 4);
	buf_commit(out, 4 + n);
}

struct alloc_budget {
	size_t allocs, bytes, max_bytes;
};

static void *budget_alloc(void *data, size_t size)
{
	struct alloc_budget *b = data;

	if (b->allocs >= LINK_DECODE_MAX_ALLOCS || size > b->max_bytes - b->bytes)
		return NULL;
	b->allocs++;
	b->bytes += size;
	return malloc(size);
}

static void budget_free(void *data, void *p)
{
	free(p);
}

int link_decode(struct buf *in, Ptg__LinkMessage **out)
{
	struct alloc_budget budget = {0, 0, 0};
	ProtobufCAllocator alloc = {budget_alloc, budget_free, &budget};
	const uint8_t *p = buf_head(in);
	Ptg__LinkMessage *m;
	uint32_t n;

	*out = NULL;
	if (buf_size(in) < 4)
		return 0;
	n = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (n > LINK_MAX_MESSAGE)
		return -EMSGSIZE;
	if (buf_size(in) - 4 < n)
		return 0;
	budget.max_bytes = 2 * (size_t)n + (1u << 20);
	m = ptg__link_message__unpack(&alloc, n, p + 4);
	if (!m)
		return -EBADMSG;
	if (m->msg_case == PTG__LINK_MESSAGE__MSG__NOT_SET) {
		ptg__link_message__free_unpacked(m, NULL);
		return -EBADMSG;
	}
	buf_consume(in, 4 + (size_t)n);
	*out = m;
	return 1;
}

void link_message_free(Ptg__LinkMessage *m)
{
	if (m)
		ptg__link_message__free_unpacked(m, NULL);
}
