/* envelope's inside, shared by envelope.c, envelope_plain.c and their
   tests. */
#ifndef PTG_ENVELOPE_INT_H
#define PTG_ENVELOPE_INT_H

#include "envelope.h"

/* Recognizes text as the plain input op (envelope_plain.c): true with
   *out a new envelope (id, op, op_kind and its own copy of payload.data
   in plain_data; envelope_free), false for anything else, which goes to
   envelope_parse_tree. */
bool envelope_plain_input(const char *text, size_t len, struct envelope **out);

/* envelope_parse with Jansson, for any frame. */
int envelope_parse_tree(const char *text, size_t len, struct envelope **out,
			struct envelope_error *err);

#endif
