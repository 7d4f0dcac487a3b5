/* link: the framing of the link protocol, a pure codec. A frame is a
   4-byte big-endian body length and one packed Ptg__LinkMessage. The
   length is checked against LINK_MAX_MESSAGE before anything is
   allocated, so a peer cannot make us reserve more than the cap, and
   unpacking runs on a budget (LINK_DECODE_MAX_ALLOCS allocations, bytes
   at most twice the message plus 1 MiB), so a message of millions of
   empty repeated entries fails early instead of costing a gigabyte.
   link_wrap_frame frames an already packed Frame without copying it; it
   writes the only varints outside protobuf-c, with the generated field
   numbers. */
#include "link.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

static void put_length(uint8_t *p, size_t n)
{
	p[0] = (uint8_t)(n >> 24);
	p[1] = (uint8_t)(n >> 16);
	p[2] = (uint8_t)(n >> 8);
	p[3] = (uint8_t)n;
}

void link_encode(const Ptg__LinkMessage *m, struct buf *out)
{
	size_t n = ptg__link_message__get_packed_size(m);
	uint8_t *p;

	/* Our own messages never approach the cap; one that does is a bug
	   the peer would reject anyway, so fail loudly here. */
	if (n > LINK_MAX_MESSAGE)
		abort();
	p = buf_reserve(out, 4 + n);
	put_length(p, n);
	ptg__link_message__pack(m, p + 4);
	buf_commit(out, 4 + n);
}

static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static uint64_t tag(uint32_t field, ProtobufCWireType type)
{
	return (uint64_t)field << 3 | type;
}

/* Frame.target_attach_id's number, from the generated descriptor (the
   oneof cases name LinkMessage's numbers; plain fields only have this).
   Looked up once: the search costs more than the framing it serves. Any
   thread may race to fill the cache; they all store the same number. */
static uint32_t target_field(void)
{
	static _Atomic uint32_t field;
	uint32_t id = atomic_load_explicit(&field, memory_order_relaxed);

	if (!id) {
		id = protobuf_c_message_descriptor_get_field_by_name(
			 &ptg__frame__descriptor, "target_attach_id")
			 ->id;
		atomic_store_explicit(&field, id, memory_order_relaxed);
	}
	return id;
}

void link_wrap_frame(struct link_wrap *w, size_t frame_len, uint64_t target)
{
	w->tail_len = 0;
	if (target) {
		w->tail_len =
		    put_varint(w->tail, tag(target_field(), PROTOBUF_C_WIRE_TYPE_VARINT));
		w->tail_len += put_varint(w->tail + w->tail_len, target);
	}
	w->head_len = 4;
	w->head_len +=
	    put_varint(w->head + w->head_len, tag(PTG__LINK_MESSAGE__MSG_FRAME,
						  PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED));
	w->head_len += put_varint(w->head + w->head_len, frame_len + w->tail_len);
	w->body = w->head_len - 4 + frame_len + w->tail_len;
	put_length(w->head, w->body);
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
