/* framelog: see framelog.h. Single-threaded: the loop appends, flushes
   on a timer and reads for replays; a segment being written is read up
   to what was written (whole records only, the writer is this thread).
   This file opens, writes and retains the log; the files' names and the
   reading of a segment, for replay and export, are framelog_read.c. */
#include "framelog.h"

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
#include "framelog_int.h"
#include "log.h"
#include "num.h"
#include "syncer.h"
#include "xalloc.h"

/* The staging buffer is kept up to this size between appends. */
#define STAGE_KEEP (64 * 1024)

/* ---- opening: verify and cut ---- */

static void drop_front(struct framelog *l, size_t count)
{
	char path[PATH_CAP];

	for (size_t i = 0; i < count; i++) {
		framelog__seg_path(path, sizeof(path), l->dir, l->segs[i].first_seq);
		unlink(path);
		framelog__idx_path(path, sizeof(path), l->dir, l->segs[i].first_seq);
		unlink(path);
		l->disk_bytes -= l->segs[i].bytes;
		if (l->segs[i].last_seq > l->forgotten_through)
			l->forgotten_through = l->segs[i].last_seq;
	}
	if (count && count < l->nsegs)
		memmove(l->segs, l->segs + count, (l->nsegs - count) * sizeof(*l->segs));
	l->nsegs -= count;
}

/* Reads a segment whole into s. Returns 0 when all of it is good, or
   -EBADMSG/-ENOKEY with s covering the good prefix (bytes = its end). */
static int verify_segment(struct framelog *l, uint64_t first, struct seg *s)
{
	char path[PATH_CAP];
	struct segfile sf;
	struct framelog_rec r;
	int rc;

	memset(s, 0, sizeof(*s));
	s->first_seq = first;
	framelog__seg_path(path, sizeof(path), l->dir, first);
	rc = framelog__segfile_open(&sf, path, l->o.keys);
	while (rc == 0) {
		rc = framelog__segfile_next(&sf, &r);
		if (rc <= 0)
			break;
		if (!s->frames && r.seq != first) {
			rc = -EBADMSG; /* a file renamed or mixed up */
			break;
		}
		if (!s->frames)
			s->first_ts = r.ts_ms;
		s->last_seq = r.seq;
		s->last_ts = r.ts_ms;
		s->frames++;
		rc = 0;
	}
	s->bytes = sf.good_off;
	framelog__segfile_close(&sf);
	return rc;
}

static void cut_tail(struct framelog *l, struct seg *s, const char *why)
{
	char path[PATH_CAP];
	struct stat st;

	framelog__seg_path(path, sizeof(path), l->dir, s->first_seq);
	if (stat(path, &st) < 0)
		return;
	if (!s->frames) {
		log_warn(l->id,
			 "frame log: segment %016" PRIx64 " has no good record "
			 "(%s): deleted",
			 s->first_seq, why);
		unlink(path);
		return;
	}
	log_warn(l->id,
		 "frame log: segment %016" PRIx64 ": %s after sequence %" PRIu64
		 ": cut %lld damaged bytes, never served",
		 s->first_seq, why, s->last_seq,
		 (long long)(st.st_size - (off_t)s->bytes));
	if (truncate(path, (off_t)s->bytes) < 0)
		log_warn(l->id, "frame log: cannot cut %s: %s", path, strerror(errno));
}

/* ---- segment indexes ---- */

/* A closed segment's index, <first>.idx: what start needs to know of it
   without reading it (its range, count, timestamps, length), sealed like
   the segment. */
#define IDX_MAGIC "ptgidx1"
#define IDX_LEN	  (8 + 8 + 8 + 4 + 8 + 8 + 8)

static void write_index(struct framelog *l, const struct seg *s)
{
	uint8_t plain[IDX_LEN], *sealed;
	char path[PATH_CAP], tmp[PATH_CAP + 8];
	size_t n;
	int fd, rc;
	int64_t ticket;

	memcpy(plain, IDX_MAGIC, 8);
	framelog__put_le(plain + 8, s->first_seq, 8);
	framelog__put_le(plain + 16, s->last_seq, 8);
	framelog__put_le(plain + 24, s->frames, 4);
	framelog__put_le(plain + 28, (uint64_t)s->first_ts, 8);
	framelog__put_le(plain + 36, (uint64_t)s->last_ts, 8);
	framelog__put_le(plain + 44, s->bytes, 8);
	seal_file(l->o.keys, plain, sizeof(plain), &sealed, &n);
	framelog__idx_path(path, sizeof(path), l->dir, s->first_seq);
	/* No fsync: an index lost in a crash only costs one full check. The
	   writer thread makes the file (creating files is not free). */
	ticket = syncer_write_file(path, sealed, n);
	if (ticket > 0) {
		l->last_ticket = ticket;
		return;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	rc = fd < 0 ? -errno : fd_write_all(fd, sealed, n);
	if (fd >= 0)
		close(fd);
	if (rc < 0 || rename(tmp, path) < 0)
		unlink(tmp);
	free(sealed);
}

/* Reads the index of the segment starting at first into s. Returns 0
   when it is whole, matches the segment's name and the file's length;
   -EBADMSG (or -ENOENT) otherwise: the segment is then checked in full. */
static int read_index(const struct framelog *l, uint64_t first, struct seg *s)
{
	char path[PATH_CAP];
	struct buf raw = BUF_INIT;
	uint8_t *plain = NULL;
	size_t n = 0;
	struct stat st;
	int rc;

	framelog__idx_path(path, sizeof(path), l->dir, first);
	rc = fd_read_file(path, FDIO_REGULAR, 4096, &raw, NULL, 0);
	if (rc == 0)
		rc = seal_unseal_file(l->o.keys, buf_head(&raw), buf_size(&raw), &plain,
				      &n);
	buf_free(&raw);
	if (rc == 0 && (n != IDX_LEN || memcmp(plain, IDX_MAGIC, 8)))
		rc = -EBADMSG;
	if (rc == 0) {
		memset(s, 0, sizeof(*s));
		s->first_seq = framelog__get_le(plain + 8, 8);
		s->last_seq = framelog__get_le(plain + 16, 8);
		s->frames = (uint32_t)framelog__get_le(plain + 24, 4);
		s->first_ts = (int64_t)framelog__get_le(plain + 28, 8);
		s->last_ts = (int64_t)framelog__get_le(plain + 36, 8);
		s->bytes = framelog__get_le(plain + 44, 8);
		framelog__seg_path(path, sizeof(path), l->dir, first);
		if (s->first_seq != first || !s->frames || s->last_seq < first ||
		    stat(path, &st) < 0 || (uint64_t)st.st_size != s->bytes)
			rc = -EBADMSG;
	}
	free(plain);
	return rc;
}

/* A segment older than the newest: its index if it has a good one (its
   records are then checked when read), else every record, and an index
   is written for the next start. */
static int load_closed_segment(struct framelog *l, uint64_t first, struct seg *s)
{
	int rc;

	if (read_index(l, first, s) == 0)
		return 0;
	rc = verify_segment(l, first, s);
	if (rc == 0 && s->frames)
		write_index(l, s);
	return rc;
}

static void load_segments(struct framelog *l)
{
	size_t n;
	uint64_t *firsts = framelog__list_segments(l->dir, &n);
	uint64_t through;
	struct seg s;

	for (size_t i = 0; i < n; i++) {
		int rc = i + 1 < n ? load_closed_segment(l, firsts[i], &s)
				   : verify_segment(l, firsts[i], &s);
		const char *why = rc == -ENOKEY ? "sealed with a key not given"
						: "a torn or damaged record";

		if (rc == 0 && s.frames && l->nsegs &&
		    s.first_seq <= l->segs[l->nsegs - 1].last_seq)
			rc = -EBADMSG;
		if (rc == 0 && s.frames) {
			l->segs = xrealloc(l->segs, (l->nsegs + 1) * sizeof(*l->segs));
			l->segs[l->nsegs++] = s;
			l->disk_bytes += s.bytes;
			continue;
		}
		if (rc == 0) {
			cut_tail(l, &s, "empty");
			continue;
		}
		if (i + 1 == n && rc != -ENOKEY) {
			/* The newest segment: a torn tail of a crash. */
			cut_tail(l, &s, why);
			if (s.frames) {
				l->segs =
				    xrealloc(l->segs, (l->nsegs + 1) * sizeof(*l->segs));
				l->segs[l->nsegs++] = s;
				l->disk_bytes += s.bytes;
			}
			continue;
		}
		/* Damage inside the history: what precedes it is no longer a
		   contiguous range, so none of it is claimed. */
		log_warn(l->id,
			 "frame log: segment %016" PRIx64 ": %s after sequence %" PRIu64
			 "; history up to there dropped",
			 firsts[i], why, s.last_seq);
		drop_front(l, l->nsegs);
		if (rc != -ENOKEY) {
			char path[PATH_CAP];
			framelog__seg_path(path, sizeof(path), l->dir, firsts[i]);
			unlink(path);
			framelog__idx_path(path, sizeof(path), l->dir, firsts[i]);
			unlink(path);
		}
		/* Without its key the segment's range is unknown; the next
		   segment's start bounds it. (Sequence reuse is prevented by
		   the session record's reservation, not by the log.) */
		through = i + 1 < n ? firsts[i + 1] - 1 : s.last_seq;
		if (through > l->forgotten_through)
			l->forgotten_through = through;
	}
	free(firsts);
	if (l->nsegs)
		l->last_seq = l->segs[l->nsegs - 1].last_seq;
	if (l->forgotten_through > l->last_seq)
		l->last_seq = l->forgotten_through;
}

static int mkdir_p(const char *dir)
{
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

struct framelog *framelog_open(const char *state_dir, const char *id,
			       const struct framelog_opts *o)
{
	struct framelog *l = xcalloc(1, sizeof(*l));

	framelog__log_dir(l->dir, sizeof(l->dir), state_dir, id);
	snprintf(l->id, sizeof(l->id), "session=%s", id);
	l->o = *o;
	l->fd = -1;
	buf_init(&l->pending);
	buf_init(&l->scratch);
	l->wst = syncer_status_new();
	if (mkdir_p(l->dir) < 0) {
		log_warn(l->id, "frame log: cannot create %s: %s", l->dir,
			 strerror(errno));
		syncer_status_put(l->wst);
		free(l);
		return NULL;
	}
	load_segments(l);
	return l;
}

/* Makes a new segment's name durable: by the writer thread (an fsync of
   a directory waits for the file system's journal), queued before the
   segment's first sync. */
static void sync_dir(struct framelog *l)
{
	int fd = open(l->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int64_t ticket;

	if (fd < 0)
		return;
	/* every-frame: durable before the segment's first frame goes out. */
	ticket = l->o.fsync == FSYNC_EVERY_FRAME ? -1 : syncer_sync(fd, l->wst);
	if (ticket > 0)
		l->last_ticket = ticket;
	else
		fsync(fd);
	close(fd);
}

static int queue_sync(struct framelog *l);

/* Closes the open segment (every record is written already). wait: it
   is synced before this returns (shutdown, a session's end); otherwise
   the writer thread syncs it (a segment rolling over mid-flood). */
static void close_segment(struct framelog *l, bool wait)
{
	if (l->fd < 0)
		return;
	if (wait)
		framelog_flush(l, true);
	else if (l->o.fsync != FSYNC_NEVER)
		queue_sync(l);
	if (l->fd >= 0 && l->nsegs && l->segs[l->nsegs - 1].frames)
		write_index(l, &l->segs[l->nsegs - 1]);
	if (l->fd < 0)
		return; /* the flush failed: write_failed closed it */
	close(l->fd);
	l->fd = -1;
	sodium_memzero(&l->push, sizeof(l->push));
}

void framelog_close(struct framelog *l)
{
	if (!l)
		return;
	close_segment(l, true);
	syncer_wait(l->last_ticket);
	syncer_status_put(l->wst);
	buf_free(&l->pending);
	buf_free(&l->scratch);
	free(l->segs);
	free(l);
}

static void rm_rf_log(const char *dir)
{
	size_t n;
	uint64_t *firsts = framelog__list_segments(dir, &n);
	char path[PATH_CAP];

	for (size_t i = 0; i < n; i++) {
		framelog__seg_path(path, sizeof(path), dir, firsts[i]);
		unlink(path);
	}
	free(firsts);
	firsts = framelog__list_files(dir, ".idx", &n);
	for (size_t i = 0; i < n; i++) {
		framelog__idx_path(path, sizeof(path), dir, firsts[i]);
		unlink(path);
	}
	free(firsts);
	rmdir(dir);
}

void framelog_remove(const char *state_dir, const char *id)
{
	char dir[PATH_CAP];

	framelog__log_dir(dir, sizeof(dir), state_dir, id);
	rm_rf_log(dir);
}

/* ---- writing ---- */

static void write_failed(struct framelog *l, int err)
{
	if (!l->failed)
		log_warn(l->id,
			 "frame log: write failed: %s; history up to sequence %" PRIu64
			 " is no longer claimed",
			 strerror(-err), l->last_seq);
	l->failed = true;
	buf_reset(&l->pending);
	/* The stream lost records: nothing more goes into this segment. */
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	drop_front(l, l->nsegs);
	l->forgotten_through = l->last_seq;
}

/* A batch of the writer thread failed: the stream has a hole. */
static int thread_failed(struct framelog *l)
{
	int err = syncer_status_error(l->wst);

	if (!err)
		return 0;
	syncer_status_put(l->wst);
	l->wst = syncer_status_new();
	write_failed(l, err);
	return err;
}

/* Writes what framelog_append staged (a new segment's header, one record)
   to the file at once, before the frame goes to any link: a crash of the
   process (the page cache survives it) then loses nothing a client saw,
   and the fsync policy decides only what a power loss may take. The
   write reaches the page cache; only the kernel's dirty-page throttling,
   when the disk cannot keep up with the output, makes the loop wait. */
static int write_staged(struct framelog *l)
{
	int rc;

	if (!buf_size(&l->pending))
		return 0;
	rc = fd_write_all(l->fd, buf_head(&l->pending), buf_size(&l->pending));
	if (rc < 0) {
		write_failed(l, rc);
		return rc;
	}
	buf_reset(&l->pending);
	if (l->pending.cap > STAGE_KEEP)
		buf_free(&l->pending);
	return 0;
}

int framelog_flush(struct framelog *l, bool sync)
{
	int rc;

	if (l->fd < 0)
		return 0;
	/* A sync the thread still has for this file goes first. */
	syncer_wait(l->last_ticket);
	if ((rc = thread_failed(l)) < 0)
		return rc;
	if (sync && l->o.fsync != FSYNC_NEVER && fdatasync(l->fd) < 0)
		return -errno;
	return 0;
}

/* Has the writer thread fdatasync the open segment (syncer.h), or syncs
   here when it cannot. Returns 0 or a negative errno. */
static int queue_sync(struct framelog *l)
{
	int64_t ticket;
	int rc;

	if (l->fd < 0)
		return 0;
	if ((rc = thread_failed(l)) < 0)
		return rc;
	ticket = syncer_sync(l->fd, l->wst);
	if (ticket > 0) {
		l->last_ticket = ticket;
		return 0;
	}
	/* No thread (or no descriptor to give it): the loop syncs itself. */
	return framelog_flush(l, true);
}

int framelog_flush_async(struct framelog *l)
{
	return l->o.fsync == FSYNC_INTERVAL ? queue_sync(l) : 0;
}

static int start_segment(struct framelog *l, uint64_t seq, int64_t ts)
{
	char path[PATH_CAP];
	uint8_t hdr[SEAL_HEADER_BYTES];
	struct seg *s;

	close_segment(l, false);
	framelog__seg_path(path, sizeof(path), l->dir, seq);
	l->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (l->fd < 0)
		return -errno;
	if (l->o.fsync != FSYNC_NEVER)
		sync_dir(l);
	seal_push_init(&l->push, l->o.keys, hdr);
	buf_append(&l->pending, hdr, sizeof(hdr));
	l->segs = xrealloc(l->segs, (l->nsegs + 1) * sizeof(*l->segs));
	s = &l->segs[l->nsegs++];
	memset(s, 0, sizeof(*s));
	s->first_seq = seq;
	s->first_ts = ts;
	s->bytes = sizeof(hdr);
	l->disk_bytes += sizeof(hdr);
	l->failed = false;
	return 0;
}

int framelog_append(struct framelog *l, uint64_t seq, int64_t ts_ms, uint8_t kind,
		    const void *frame, size_t len)
{
	struct seg *s;
	uint8_t *p;
	size_t sealed;
	int rc;

	if (seq <= l->last_seq || len > FRAMELOG_MAX_RECORD)
		return -EINVAL;
	if (l->fd < 0 || l->segs[l->nsegs - 1].bytes >= l->o.segment_bytes) {
		rc = start_segment(l, seq, ts_ms);
		if (rc < 0) {
			write_failed(l, rc);
			l->last_seq = seq;
			l->forgotten_through = seq;
			return rc;
		}
	}
	buf_reset(&l->scratch);
	p = buf_reserve(&l->scratch, REC_HEAD + len);
	framelog__put_le(p, seq, 8);
	framelog__put_le(p + 8, (uint64_t)ts_ms, 8);
	p[16] = kind;
	if (len)
		memcpy(p + REC_HEAD, frame, len);
	sealed = seal_sealed_len(&l->push, REC_HEAD + len);
	p = buf_reserve(&l->pending, 4 + sealed);
	framelog__put_le(p, sealed, 4);
	seal_push(&l->push, buf_head(&l->scratch), REC_HEAD + len, p + 4);
	buf_commit(&l->pending, 4 + sealed);
	s = &l->segs[l->nsegs - 1];
	s->last_seq = seq;
	s->last_ts = ts_ms;
	s->frames++;
	s->bytes += 4 + sealed;
	l->disk_bytes += 4 + sealed;
	l->last_seq = seq;
	if ((rc = write_staged(l)) < 0)
		return rc;
	return l->o.fsync == FSYNC_EVERY_FRAME ? framelog_flush(l, true) : 0;
}

/* ---- retention ---- */

static int front_expired(const struct framelog *l, int64_t now_ms)
{
	uint64_t after = 0;
	int64_t age;

	if (l->nsegs < 2)
		return 0; /* the open segment stays */
	if (l->disk_bytes > l->o.max_bytes)
		return 1;
	for (size_t i = 1; i < l->nsegs; i++)
		after += l->segs[i].frames;
	if (after < l->o.max_frames)
		return 0;
	if (l->o.max_age_ms <= 0)
		return 1;
	if (__builtin_sub_overflow(now_ms, l->segs[0].last_ts, &age))
		return 0;
	return age >= l->o.max_age_ms;
}

uint64_t framelog_expire(struct framelog *l, int64_t now_ms)
{
	uint64_t before = l->disk_bytes;

	while (front_expired(l, now_ms))
		drop_front(l, 1);
	return before - l->disk_bytes;
}

uint64_t framelog_drop_oldest(struct framelog *l)
{
	uint64_t before = l->disk_bytes;

	if (l->nsegs < 2)
		return 0;
	drop_front(l, 1);
	return before - l->disk_bytes;
}

int64_t framelog_oldest_ts(const struct framelog *l)
{
	return l->nsegs >= 2 ? l->segs[0].first_ts : INT64_MAX;
}

uint64_t framelog_first_seq(const struct framelog *l)
{
	return l->nsegs ? l->segs[0].first_seq : 0;
}

uint64_t framelog_oldest_retained(const struct framelog *l)
{
	return l->nsegs ? l->forgotten_through + 1 : 0;
}

uint64_t framelog_last_seq(const struct framelog *l)
{
	return l->last_seq;
}
uint64_t framelog_disk_bytes(const struct framelog *l)
{
	return l->disk_bytes;
}
