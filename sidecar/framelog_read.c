/* framelog_read: the files of a frame log (names, listing, the little-
   endian fields of their records) and the reading of them: one segment's
   records in order (framelog_open verifies and cuts with it) and the
   readers replay and export use, which see whole written records only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "framelog.h"
#include "framelog_int.h"
#include "log.h"
#include "num.h"
#include "syncer.h"
#include "xalloc.h"

void framelog__put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint64_t framelog__get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = n; i > 0; i--)
		v = v << 8 | p[i - 1];
	return v;
}

static void file_path(char *out, size_t cap, const char *dir, uint64_t first,
		      const char *suffix)
{
	char name[32];

	snprintf(name, sizeof(name), "%016" PRIx64 "%s", first, suffix);
	/* dir is at most PATH_CAP - 100 (framelog_open checks it). */
	snprintf(out, cap, "%.4290s/%s", dir, name);
}

void framelog__seg_path(char *out, size_t cap, const char *dir, uint64_t first)
{
	file_path(out, cap, dir, first, ".seg");
}

void framelog__idx_path(char *out, size_t cap, const char *dir, uint64_t first)
{
	file_path(out, cap, dir, first, ".idx");
}

void framelog__log_dir(char *out, size_t cap, const char *state_dir, const char *id)
{
	snprintf(out, cap, "%s/%s.frames", state_dir, id);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "<16 lower-case hex digits><suffix>": the first sequence of a segment
   file (or of its index). Returns 0, or -EINVAL for any other name. */
static int parse_seg_name(const char *name, const char *suffix, uint64_t *first)
{
	if (strlen(name) != 16 + strlen(suffix) || strcmp(name + 16, suffix))
		return -EINVAL;
	for (int i = 0; i < 16; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		      (name[i] >= 'a' && name[i] <= 'f')))
			return -EINVAL;
	return num_parse_hex_u64_n(name, 16, first);
}

/* The first sequences of the files named <16 hex><suffix> in dir, sorted. */
uint64_t *framelog__list_files(const char *dir, const char *suffix, size_t *n)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	uint64_t *v = NULL, first;

	*n = 0;
	if (!d)
		return NULL;
	while ((e = readdir(d))) {
		if (parse_seg_name(e->d_name, suffix, &first) < 0)
			continue;
		v = xrealloc(v, (*n + 1) * sizeof(*v));
		v[(*n)++] = first;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_u64);
	return v;
}

uint64_t *framelog__list_segments(const char *dir, size_t *n)
{
	return framelog__list_files(dir, ".seg", n);
}

/* ---- reading one segment ---- */

int framelog__segfile_open(struct segfile *sf, const char *path,
			   const struct seal_keys *keys)
{
	uint8_t hdr[SEAL_HEADER_BYTES];
	int rc;

	memset(sf, 0, sizeof(*sf));
	sf->limit = UINT64_MAX;
	sf->f = fopen(path, "rbe");
	if (!sf->f)
		return -errno;
	setvbuf(sf->f, NULL, _IOFBF, READ_BUF);
	if (fread(hdr, 1, sizeof(hdr), sf->f) != sizeof(hdr))
		return -EBADMSG;
	rc = seal_pull_init(&sf->st, keys, hdr);
	sf->good_off = sizeof(hdr);
	return rc;
}

void framelog__segfile_close(struct segfile *sf)
{
	if (sf->f)
		fclose(sf->f);
	free(sf->body);
	free(sf->plain);
	sodium_memzero(&sf->st, sizeof(sf->st));
	memset(sf, 0, sizeof(*sf));
}

/* 1 and the record, 0 at a clean end, -EBADMSG for a torn or damaged
   record (the file's good part ends at good_off). */
int framelog__segfile_next(struct segfile *sf, struct framelog_rec *out)
{
	uint8_t lenb[4];
	size_t got, n, m;

	/* Past the limit the writer thread may be mid-write: not ours yet. */
	if (sf->good_off >= sf->limit)
		return 0;
	got = fread(lenb, 1, 4, sf->f);
	if (got == 0 && feof(sf->f))
		return 0;
	if (got != 4)
		return -EBADMSG;
	n = (size_t)framelog__get_le(lenb, 4);
	if (n < REC_HEAD || n > FRAMELOG_MAX_RECORD + 64)
		return -EBADMSG;
	if (n > sf->cap) {
		sf->body = xrealloc(sf->body, n);
		sf->plain = xrealloc(sf->plain, n);
		sf->cap = n;
	}
	if (fread(sf->body, 1, n, sf->f) != n)
		return -EBADMSG;
	if (seal_pull(&sf->st, sf->body, n, sf->plain, &m) < 0 || m < REC_HEAD)
		return -EBADMSG;
	out->seq = framelog__get_le(sf->plain, 8);
	out->ts_ms = (int64_t)framelog__get_le(sf->plain + 8, 8);
	out->kind = sf->plain[16];
	out->frame = sf->plain + REC_HEAD;
	out->len = m - REC_HEAD;
	if (out->seq <= sf->prev_seq)
		return -EBADMSG;
	sf->prev_seq = out->seq;
	sf->good_off += 4 + n;
	return 1;
}

/* ---- replay ---- */

struct framelog_reader {
	char dir[PATH_CAP];
	const struct seal_keys *keys;
	uint64_t *firsts;
	uint64_t *limits; /* each segment's written bytes, or NULL: all */
	size_t n, next;
	uint64_t after;
	struct segfile sf;
	bool open;
};

static struct framelog_reader *reader_new(const char *dir, const struct seal_keys *keys,
					  uint64_t *firsts, size_t n, uint64_t after)
{
	struct framelog_reader *r = xcalloc(1, sizeof(*r));
	size_t start = 0;

	snprintf(r->dir, sizeof(r->dir), "%s", dir);
	r->keys = keys;
	r->firsts = firsts;
	r->n = n;
	r->after = after;
	/* Skip segments that end at or before after: the next one starts
	   above it. */
	while (start + 1 < n && firsts[start + 1] <= after + 1)
		start++;
	r->next = start;
	return r;
}

struct framelog_reader *framelog_reader_new(struct framelog *l, uint64_t after)
{
	uint64_t *firsts = xcalloc(l->nsegs + 1, sizeof(*firsts));
	uint64_t *limits = xcalloc(l->nsegs + 1, sizeof(*limits));
	struct framelog_reader *r;

	/* Every record appended is in the file (framelog_append writes it);
	   what is appended later is beyond the limits, for a later reader. */
	for (size_t i = 0; i < l->nsegs; i++) {
		firsts[i] = l->segs[i].first_seq;
		limits[i] = l->segs[i].bytes;
	}
	r = reader_new(l->dir, l->o.keys, firsts, l->nsegs, after);
	r->limits = limits;
	return r;
}

struct framelog_reader *framelog_reader_open(const char *state_dir, const char *id,
					     const struct seal_keys *keys, uint64_t after)
{
	char dir[PATH_CAP];
	size_t n;
	uint64_t *firsts;

	framelog__log_dir(dir, sizeof(dir), state_dir, id);
	firsts = framelog__list_segments(dir, &n);
	return reader_new(dir, keys, firsts, n, after);
}

int framelog_reader_next(struct framelog_reader *r, struct framelog_rec *out)
{
	char path[PATH_CAP];
	int rc;

	for (;;) {
		if (!r->open) {
			if (r->next >= r->n)
				return 0;
			framelog__seg_path(path, sizeof(path), r->dir,
					   r->firsts[r->next++]);
			rc = framelog__segfile_open(&r->sf, path, r->keys);
			if (r->limits)
				r->sf.limit = r->limits[r->next - 1];
			if (rc < 0) {
				framelog__segfile_close(&r->sf);
				return rc;
			}
			r->open = true;
		}
		rc = framelog__segfile_next(&r->sf, out);
		if (rc == 0) {
			framelog__segfile_close(&r->sf);
			r->open = false;
			continue;
		}
		if (rc < 0 || out->seq > r->after)
			return rc;
	}
}

void framelog_reader_free(struct framelog_reader *r)
{
	if (!r)
		return;
	if (r->open)
		framelog__segfile_close(&r->sf);
	free(r->firsts);
	free(r->limits);
	free(r);
}
