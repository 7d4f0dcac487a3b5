/* export: see export.h. Output frames become "o" events and Resize
   frames "r" events, timed from the first frame; other kinds (membership,
   keyframes, errors) have no asciicast event. asciicast needs UTF-8
   text: a character split across two frames is joined, and a byte that
   is not UTF-8 becomes U+FFFD. */
#include "export.h"

#include <errno.h>
#include <jansson.h>
#include <string.h>

#include "buf.h"
#include "framelog.h"
#include "link.pb-c.h"
#include "recstore.h"
#include "store.h"
#include "utf8.h"
#include "uuid.h"

/* Appends carry + p as valid UTF-8 to out; an incomplete sequence at the
   end waits in carry for the next frame. */
static void to_utf8(struct buf *carry, const uint8_t *p, size_t n, struct buf *out)
{
	size_t i = 0, len;
	const uint8_t *d;

	buf_append(carry, p, n);
	d = buf_head(carry);
	n = buf_size(carry);
	while (i < n) {
		len = utf8_seq_len(d + i, n - i);
		if (len) {
			buf_append(out, d + i, len);
			i += len;
			continue;
		}
		if (n - i < 4 && d[i] >= 0xc2 && d[i] <= 0xf4)
			break; /* maybe the start of a character split across frames */
		buf_append(out, "\xef\xbf\xbd", 3);
		i++;
	}
	buf_consume(carry, i);
}

static void put_event(FILE *out, double t, const char *type, const char *data, size_t n)
{
	json_t *ev = json_pack("[f s s%]", t, type, data, n);
	char *line = json_dumps(ev, JSON_COMPACT);

	fprintf(out, "%s\n", line);
	free(line);
	json_decref(ev);
}

static int find_record(const char *dir, const char *id, struct store_record **all,
		       size_t *n, struct store_record **found)
{
	*found = NULL;
	if (store_read_all(dir, all, n) < 0)
		return -errno;
	for (size_t i = 0; i < *n; i++)
		if (!strcmp((*all)[i].id, id))
			*found = &(*all)[i];
	return *found ? 0 : -ENOENT;
}

static void put_header(FILE *out, const struct store_record *r)
{
	json_t *h = json_pack("{s i, s i, s i, s I}", "version", 2, "width", (int)r->cols,
			      "height", (int)r->rows, "timestamp",
			      (json_int_t)(r->created_ms / 1000));
	char *line;

	if (r->label[0])
		json_object_set_new(h, "title", json_string(r->label));
	line = json_dumps(h, JSON_COMPACT);
	fprintf(out, "%s\n", line);
	free(line);
	json_decref(h);
}

static void put_frame(FILE *out, const struct framelog_rec *rec, int64_t start,
		      struct buf *carry, struct buf *text)
{
	Ptg__Frame *f = ptg__frame__unpack(NULL, rec->len, rec->frame);
	double t = (double)(rec->ts_ms - start) / 1000.0;
	char size[32];

	if (!f)
		return;
	if (f->kind_case == PTG__FRAME__KIND_OUTPUT) {
		buf_reset(text);
		to_utf8(carry, f->output->data.data, f->output->data.len, text);
		if (buf_size(text))
			put_event(out, t, "o", (const char *)buf_head(text),
				  buf_size(text));
	} else if (f->kind_case == PTG__FRAME__KIND_RESIZE) {
		snprintf(size, sizeof(size), "%ux%u", f->resize->cols, f->resize->rows);
		put_event(out, t, "r", size, strlen(size));
	}
	ptg__frame__free_unpacked(f, NULL);
}

int export_asciicast(const struct sidecar_config *cfg, const char *id, FILE *out)
{
	struct store_record *all = NULL, *r;
	struct framelog_reader *rd;
	struct framelog_rec rec;
	struct buf carry = BUF_INIT, text = BUF_INIT;
	size_t n = 0;
	int64_t start = -1;
	double last_t = 0;
	int rc;

	if (!uuid_is_valid(id)) {
		fprintf(stderr,
			"ptygate-sidecar: --export-asciicast: '%s' is not a session id\n",
			id);
		return 1;
	}
	recstore_seal_with(&cfg->state_keys);
	if (find_record(cfg->state_dir, id, &all, &n, &r) < 0) {
		fprintf(stderr, "ptygate-sidecar: no session %s in %s\n", id,
			cfg->state_dir);
		store_records_free(all, n);
		return 1;
	}
	put_header(out, r);
	rd = framelog_reader_open(cfg->state_dir, id, &cfg->state_keys, 0);
	while ((rc = framelog_reader_next(rd, &rec)) == 1) {
		if (start < 0)
			start = rec.ts_ms;
		last_t = (double)(rec.ts_ms - start) / 1000.0;
		put_frame(out, &rec, start, &carry, &text);
	}
	framelog_reader_free(rd);
	if (buf_size(&carry)) /* the history ends inside a character */
		put_event(out, last_t, "o", "\xef\xbf\xbd", 3);
	store_records_free(all, n);
	buf_free(&carry);
	buf_free(&text);
	if (rc < 0) {
		fprintf(stderr,
			"ptygate-sidecar: the history of %s stops at a damaged or "
			"unreadable record (%s)\n",
			id, strerror(-rc));
		return 1;
	}
	return fflush(out) == 0 ? 0 : 1;
}
