/* fuzz_envelope: libFuzzer harness for envelope_parse and every payload
   validator, plus the frame builders' string escaping. The input is a
   client text frame (not required to be UTF-8: the parser must survive
   anything). Oracles beyond the sanitizers: every Error frame built from
   a refusal, and an Error whose id and message are the raw input, must
   read back as JSON (so escaping and UTF-8 repair are sound), an
   accepted input never decodes past its bound, and a frame taken as the
   plain input op without Jansson (envelope_plain.c) is one Jansson takes
   too, with the same id and the same input bytes.
   Build by hand, e.g.:
   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
     -Ishared -Igateway -Ibuild/proto tests/fuzz/fuzz_envelope.c \
     gateway/envelope.c gateway/frames.c shared/b64.c shared/buf.c \
     shared/xalloc.c shared/uuid.c shared/timeutil.c build/proto/link.pb-c.c \
     -ljansson -lprotobuf-c -o fuzz_envelope */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "envelope_int.h"
#include "frames.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The built frame must be one JSON object. */
static void check(struct buf *b)
{
	json_t *v = json_loadb((const char *)buf_head(b), buf_size(b), 0, NULL);

	if (!json_is_object(v))
		abort();
	json_decref(v);
	buf_reset(b);
}

static void validate(const struct envelope *env, struct buf *out)
{
	struct envelope_error err;
	struct envelope_join j;
	struct envelope_resize r;
	struct envelope_decide d;
	struct buf in = BUF_INIT;
	const char *ts;
	json_t *sp;
	Ptg__Role role;

	if (envelope_join(env, &j, &err)) {
		frames_error(FRAMES_INVALID_REQUEST, err.id, err.message, 1, out);
		check(out);
	}
	if (envelope_input(env, &in, &err) == 0 && buf_size(&in) > PTG_INPUT_MAX)
		abort();
	envelope_resize(env, &r, &err);
	envelope_request_role(env, &role, &err);
	if (envelope_decide_control(env, &d, &err) == 0) {
		if (!d.client_id[0] || strlen(d.client_id) > PTG_CLIENT_ID_MAX_CHARS)
			abort();
		frames_control_decided(env->id, d.client_id, d.approve, 1, out);
		check(out);
	}
	envelope_no_fields(env, &err);
	if (envelope_ping(env, &ts, &err) == 0) {
		frames_pong(env->id, ts, 1, out);
		check(out);
	}
	if (envelope_service_update(env, &sp, &err) == 0) {
		frames_service_update_response(env->id, sp, 1, out);
		check(out);
	}
	buf_free(&in);
}

/* Whatever the plain input op takes, the tree takes with one meaning. */
static void same_as_tree(const char *text, size_t len)
{
	struct envelope *plain, *tree = NULL;
	struct envelope_error err;
	struct buf a = BUF_INIT, b = BUF_INIT;
	int ra, rb;

	if (!envelope_plain_input(text, len, &plain))
		return;
	if (envelope_parse_tree(text, len, &tree, &err) != 0)
		abort();
	if (strcmp(plain->id, tree->id) || tree->op_kind != ENVELOPE_OP_PTY_INPUT ||
	    tree->has_replay_from || tree->has_extensions || tree->service_parameters)
		abort();
	ra = envelope_input(plain, &a, &err);
	rb = envelope_input(tree, &b, &err);
	if (ra != rb || buf_size(&a) != buf_size(&b) ||
	    (buf_size(&a) && memcmp(buf_head(&a), buf_head(&b), buf_size(&a))))
		abort();
	envelope_free(plain);
	envelope_free(tree);
	buf_free(&a);
	buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct envelope *env;
	struct envelope_error err;
	struct buf out = BUF_INIT;
	char *text;

	if (size > 1024 * 1024)
		return 0;
	same_as_tree((const char *)data, size);
	if (envelope_parse((const char *)data, size, &env, &err) == 0) {
		validate(env, &out);
		envelope_free(env);
	} else {
		frames_error(FRAMES_INVALID_REQUEST, err.id, err.message, 1, &out);
		check(&out);
	}
	text = strndup((const char *)data, size);
	if (!text)
		abort();
	frames_error(FRAMES_INTERNAL, text, text, 1, &out);
	check(&out);
	free(text);
	buf_free(&out);
	return 0;
}
