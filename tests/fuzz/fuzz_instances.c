/* fuzz_instances: libFuzzer harness for the instances file parser
   (gw_config_parse_instances, what --instances-file and SIGHUP read). The
   input is the file's text, any bytes. Oracles beyond the sanitizers:
   - a refusal names the file and line and leaves no entries;
   - accepted entries are at most max, their ids valid path ids and
     distinct, and written back as "ID ADDR" lines (addr_format) they
     parse to the same entries. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "buf.h"
#include "config.h"
#include "fuzz_oracle.h"
#include "log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ__MAX 8 /* small, so the "more than max" path is reached */

static int same_addr(const struct addr *a, const struct addr *b)
{
	if (a->kind != b->kind)
		return 0;
	switch (a->kind) {
	case ADDR_UNIX:
		return !strcmp(a->path, b->path);
	case ADDR_TCP:
		return !strcmp(a->host, b->host) && a->port == b->port;
	case ADDR_VSOCK:
		return a->cid == b->cid && a->vport == b->vport;
	}
	return 0;
}

/* Written back, the entries read the same. */
static void roundtrip(const struct gw_instance_cfg *in, size_t n)
{
	struct gw_instance_cfg again[FUZZ__MAX];
	struct buf text = BUF_INIT;
	char addr[512], err[LOG_ERR_MAX];
	size_t m;

	for (size_t i = 0; i < n; i++) {
		addr_format(&in[i].addr, addr, sizeof(addr));
		buf_append_str(&text, in[i].id);
		buf_append_str(&text, "\t");
		buf_append_str(&text, addr);
		buf_append_str(&text, "\n");
	}
	fuzz__assert(gw_config_parse_instances((const char *)buf_head(&text),
					       buf_size(&text), "again", again, FUZZ__MAX,
					       &m, err, sizeof(err)) == 0);
	fuzz__assert(m == n);
	for (size_t i = 0; i < n; i++)
		fuzz__assert(!strcmp(again[i].id, in[i].id) &&
			     same_addr(&again[i].addr, &in[i].addr));
	buf_free(&text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gw_instance_cfg out[FUZZ__MAX];
	char err[LOG_ERR_MAX];
	size_t n = 99;

	if (size > 256 * 1024)
		return 0;
	err[0] = '\0';
	if (gw_config_parse_instances((const char *)data, size, "fuzz", out, FUZZ__MAX,
				      &n, err, sizeof(err)) < 0) {
		fuzz__assert(n == 0 && !strncmp(err, "fuzz:", 5));
		return 0;
	}
	fuzz__assert(n <= FUZZ__MAX);
	for (size_t i = 0; i < n; i++) {
		fuzz__assert(fuzz__valid_id(out[i].id, PTG_ID_MAX));
		for (size_t j = 0; j < i; j++)
			fuzz__assert(strcmp(out[i].id, out[j].id) != 0);
	}
	roundtrip(out, n);
	return 0;
}
