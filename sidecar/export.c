/* export: see export.h. Output frames become "o" events and Resize
   frames "r" events, timed from the first frame; other kinds (membership,
   keyframes, errors) have no asciicast event. asciicast needs UTF-8
   text: a character split across two frames is joined, and a byte that
   is not UTF-8 becomes U+FFFD. */
#include "export.h"

#include <errno.h>
#include <string.h>

#include <jansson.h>

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

static void put_event(struct buf *out, double t, const char *type, const char *data,
		      size_t n)
{
	json_t *ev = json_pack("[f s s%]", t, type, data, n);
	char *line = json_dumps(ev, JSON_COMPACT);

	buf_append_str(out, line);
	buf_append(out, "\n", 1);
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

void export_header(struct buf *out, unsigned cols, unsigned rows, int64_t created_ms,
		   const char *label)
{
	json_t *h =
	    json_pack("{s i, s i, s i, s I}", "version", 2, "width", (int)cols, "height",
		      (int)rows, "timestamp", (json_int_t)(created_ms / 1000));
	char *line;

	if (label && label[0])
		json_object_set_new(h, "title", json_string(label));
	line = json_dumps(h, JSON_COMPACT);
	buf_append_str(out, line);
	buf_append(out, "\n", 1);
	free(line);
	json_decref(h);
}

void export_frame(struct export_enc *e, const uint8_t *frame, size_t len, int64_t ts_ms,
		  struct buf *out)
{
	Ptg__Frame *f = ptg__frame__unpack(NULL, len, frame);
	struct buf text = BUF_INIT;
	char size[32];
	double t;

	if (!e->start_ms)
		e->start_ms = ts_ms ? ts_ms : 1;
	t = ts_ms > e->start_ms ? (double)(ts_ms - e->start_ms) / 1000.0 : 0;
	e->last_t = t;
	if (!f)
		return;
	if (f->kind_case == PTG__FRAME__KIND_OUTPUT) {
		to_utf8(&e->carry, f->output->data.data, f->output->data.len, &text);
		if (buf_size(&text))
			put_event(out, t, "o", (const char *)buf_head(&text),
				  buf_size(&text));
	} else if (f->kind_case == PTG__FRAME__KIND_RESIZE) {
		snprintf(size, sizeof(size), "%ux%u", f->resize->cols, f->resize->rows);
		put_event(out, t, "r", size, strlen(size));
	}
	buf_free(&text);
	ptg__frame__free_unpacked(f, NULL);
}

void export_end(struct export_enc *e, struct buf *out)
{
	if (buf_size(&e->carry)) /* the history ends inside a character */
		put_event(out, e->last_t, "o", "\xef\xbf\xbd", 3);
	buf_reset(&e->carry);
}

/* Writes what out holds to f and empties it. */
static void flush_to(struct buf *out, FILE *f)
{
	fwrite(buf_head(out), 1, buf_size(out), f);
	buf_reset(out);
}

int export_asciicast(const struct sidecar_config *cfg, const char *id, FILE *out)
{
	struct store_record *all = NULL, *r;
	struct framelog_reader *rd;
	struct framelog_rec rec;
	struct export_enc e = {0};
	struct buf text = BUF_INIT;
	size_t n = 0;
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
	export_header(&text, r->cols, r->rows, r->created_ms, r->label);
	rd = framelog_reader_open(cfg->state_dir, id, &cfg->state_keys, 0);
	while ((rc = framelog_reader_next(rd, &rec)) == 1) {
		export_frame(&e, rec.frame, rec.len, rec.ts_ms, &text);
		if (buf_size(&text) >= 65536)
			flush_to(&text, out);
	}
	framelog_reader_free(rd);
	export_end(&e, &text);
	flush_to(&text, out);
	store_records_free(all, n);
	buf_free(&e.carry);
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
