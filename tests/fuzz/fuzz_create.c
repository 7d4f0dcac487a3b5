/* fuzz_create: libFuzzer harness for the create-session body of
   POST /agents/{i}/sessions (routes_parse_create). The input is the body.
   Oracles beyond the sanitizers:
   - a refusal has a message; an accepted body is within every documented
     bound (argv 1..256 with a non-empty argv[0], env names non-empty
     without '=', cols and rows 0 or 1..1024, label <= 128 code points);
   - the CreateSession it yields is sound: it packs, and unpacks to the
     same fields (every pointer in it is valid and NUL-terminated). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_oracle.h"
#include "log.h"
#include "routes.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int streq(const char *a, const char *b)
{
	if (!a || !b)
		return (!a || !a[0]) && (!b || !b[0]); /* protobuf-c: "" and NULL alike */
	return !strcmp(a, b);
}

static size_t codepoints(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void bounds(const Ptg__CreateSession *m)
{
	fuzz__assert(m->n_argv <= 256 &&
		     (m->n_argv == 0 || (m->argv[0] && m->argv[0][0])));
	for (size_t i = 0; i < m->n_argv; i++)
		fuzz__assert(m->argv[i] && strlen(m->argv[i]) <= 4096);
	for (size_t i = 0; i < m->n_env; i++) {
		const char *k = m->env[i]->name;

		fuzz__assert(k && k[0] && !strchr(k, '=') && strlen(k) <= 256);
		fuzz__assert(m->env[i]->value && strlen(m->env[i]->value) <= 32768);
	}
	fuzz__assert(m->cols <= 1024 && m->rows <= 1024);
	fuzz__assert(!m->label || codepoints(m->label) <= PTG_LABEL_MAX_CHARS);
}

static void roundtrip(const Ptg__CreateSession *m)
{
	size_t n = ptg__create_session__get_packed_size(m);
	uint8_t *buf = malloc(n ? n : 1);
	Ptg__CreateSession *u;

	if (!buf)
		abort();
	fuzz__assert(ptg__create_session__pack(m, buf) == n);
	u = ptg__create_session__unpack(NULL, n, buf);
	fuzz__assert(u != NULL);
	fuzz__assert(u->n_argv == m->n_argv && u->n_env == m->n_env);
	for (size_t i = 0; i < m->n_argv; i++)
		fuzz__assert(!strcmp(u->argv[i], m->argv[i]));
	for (size_t i = 0; i < m->n_env; i++)
		fuzz__assert(!strcmp(u->env[i]->name, m->env[i]->name) &&
			     !strcmp(u->env[i]->value, m->env[i]->value));
	fuzz__assert(streq(u->cwd, m->cwd) && streq(u->label, m->label));
	fuzz__assert(u->cols == m->cols && u->rows == m->rows && u->policy == m->policy);
	ptg__create_session__free_unpacked(u, NULL);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct route_create rc;
	char err[LOG_ERR_MAX];

	if (size > ROUTES_BODY_MAX)
		return 0;
	err[0] = '\0';
	if (routes_parse_create((const char *)data, size, &rc, err, sizeof(err)) == 0) {
		bounds(&rc.msg);
		roundtrip(&rc.msg);
	} else {
		fuzz__assert(err[0] != '\0' && memchr(err, '\0', sizeof(err)));
	}
	routes_create_clear(&rc);
	return 0;
}
