/* credential: the instance token file, read at start and watched after.
   A change is seen by stat() alone: the platform's atomic rename gives a
   new inode, an in-place rewrite a new size or times, so a poll costs one
   system call until something changed. The token is a bearer secret for
   as long as it lives, so every copy is wiped when dropped. */
#include "credential.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>

#include "buf.h"
#include "fdio.h"
#include "linkcred.h"
#include "log.h"
#include "timeutil.h"
#include "xalloc.h"

/* What stat() says of the file; err is its errno when it failed. */
struct file_id {
	int err;
	dev_t dev;
	ino_t ino;
	off_t size;
	mode_t mode;
	int64_t mtime_ns, ctime_ns;
};

struct credential {
	char *path;
	struct buf token; /* trimmed, NUL-terminated, the NUL not counted */
	struct linkcred claims;
	struct file_id seen; /* the file as last looked at, good or bad */
	bool warned_expiring, warned_expired;
};

static struct file_id identify(const char *path)
{
	struct file_id id;
	struct stat st;

	memset(&id, 0, sizeof(id));
	if (stat(path, &st) < 0) {
		id.err = errno;
		return id;
	}
	id.dev = st.st_dev;
	id.ino = st.st_ino;
	id.size = st.st_size;
	id.mode = st.st_mode;
	id.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	id.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	return id;
}

/* ctime covers chmod, chown and link changes that leave mtime alone. */
static bool same_file(const struct file_id *a, const struct file_id *b)
{
	return a->err == b->err && a->dev == b->dev && a->ino == b->ino &&
	       a->size == b->size && a->mtime_ns == b->mtime_ns &&
	       a->ctime_ns == b->ctime_ns;
}

static void wipe(struct buf *b)
{
	if (b->data)
		sodium_memzero(b->data, b->cap);
	buf_free(b);
}

static void format_s(int64_t s, char out[TS_STRLEN + 1])
{
	time_format_ms(s * 1000, out);
}

/* Says why the token of path was refused. */
static void refused(const char *path, int rc, const struct linkcred *lc, int64_t now,
		    char *err, size_t errlen)
{
	char when[TS_STRLEN + 1];

	if (rc != LINKCRED_EXPIRED) {
		snprintf(err, errlen, "%s: %s (%s)", path, linkcred_strerror(rc),
			 linkcred_reason(rc));
		return;
	}
	format_s(lc->exp, when);
	snprintf(err, errlen, "%s: token expired at %s, %" PRId64 " s ago (expired)",
		 path, when, now - lc->exp);
}

/* Reads the token of path into tok (trimmed, NUL-terminated) and checks
   it at now into lc. Returns 0 or a negative errno, the reason in err. */
static int read_checked(const char *path, int64_t now, struct buf *tok,
			struct linkcred *lc, char *err, size_t errlen)
{
	struct buf raw = BUF_INIT;
	const char *p;
	size_t n;
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, CREDENTIAL_FILE_MAX, &raw, err, errlen);
	if (rc < 0)
		return rc;
	p = (const char *)buf_head(&raw);
	n = buf_size(&raw);
	while (n && strchr(" \t\r\n", p[n - 1]))
		n--;
	while (n && strchr(" \t\r\n", *p)) {
		p++;
		n--;
	}
	if (n == 0) {
		snprintf(err, errlen, "%s: empty, no token in it", path);
		rc = -EINVAL;
	} else if ((rc = linkcred_peek(p, n, now, lc)) < 0) {
		refused(path, rc, lc, now, err, errlen);
		rc = -EINVAL;
	} else {
		buf_append(tok, p, n);
		*buf_reserve(tok, 1) = '\0';
	}
	wipe(&raw);
	return rc;
}

struct credential *credential_load(const char *path, int64_t now_s, char *err,
				   size_t errlen)
{
	struct credential *c = xcalloc(1, sizeof(*c));

	c->path = xstrdup(path);
	buf_init(&c->token);
	c->seen = identify(path);
	if (read_checked(path, now_s, &c->token, &c->claims, err, errlen) < 0) {
		credential_free(c);
		return NULL;
	}
	if (!c->seen.err && (c->seen.mode & 077))
		log_warn(NULL,
			 "instance token %s can be read by group or others (mode %03o); "
			 "it is a credential: chmod 600",
			 path, (unsigned)(c->seen.mode & 0777));
	return c;
}

void credential_free(struct credential *c)
{
	if (!c)
		return;
	wipe(&c->token);
	free(c->path);
	free(c);
}

const char *credential_token(const struct credential *c, size_t *len)
{
	if (len)
		*len = buf_size(&c->token);
	return (const char *)buf_head(&c->token);
}

int credential_settle_instance(const struct credential *c, char *instance_id, size_t cap,
			       bool given, char *err, size_t errlen)
{
	const char *inst = c->claims.instance_id;

	if (given && strcmp(instance_id, inst)) {
		snprintf(
		    err, errlen,
		    "--instance-id %s differs from instance_id %s of the token in %s; "
		    "give one or make them agree",
		    instance_id, inst, c->path);
		return -EINVAL;
	}
	snprintf(instance_id, cap, "%s", inst);
	return 0;
}

/* Takes tok and lc as the current token. */
static void replace(struct credential *c, struct buf *tok, const struct linkcred *lc)
{
	char when[TS_STRLEN + 1];

	wipe(&c->token);
	c->token = *tok;
	buf_init(tok);
	c->claims = *lc;
	c->warned_expiring = c->warned_expired = false;
	format_s(lc->exp, when);
	log_info(NULL, "instance token %s renewed: expires at %s%s%s", c->path, when,
		 lc->kid[0] ? ", kid " : "", lc->kid);
}

/* Re-reads the changed file: 1 taken, 0 the same token, < 0 refused. */
static int reload(struct credential *c, int64_t now)
{
	struct buf tok = BUF_INIT;
	struct linkcred lc;
	char err[LOG_ERR_MAX], when[TS_STRLEN + 1];
	int rc;

	rc = read_checked(c->path, now, &tok, &lc, err, sizeof(err));
	if (rc == 0 && strcmp(lc.instance_id, c->claims.instance_id)) {
		snprintf(err, sizeof(err), "%s: names instance %s, this sidecar is %s",
			 c->path, lc.instance_id, c->claims.instance_id);
		rc = -EINVAL;
	}
	if (rc < 0) {
		format_s(c->claims.exp, when);
		log_warn(NULL,
			 "instance token changed but refused: %s; keeping the "
			 "current one (expires at %s)",
			 err, when);
	} else if (buf_size(&tok) == buf_size(&c->token) &&
		   !memcmp(buf_head(&tok), buf_head(&c->token), buf_size(&tok))) {
		rc = 0;
	} else {
		replace(c, &tok, &lc);
		rc = 1;
	}
	wipe(&tok);
	return rc;
}

/* Once per token: in its last fifth of life, and expired. */
static void warn_expiry(struct credential *c, int64_t now)
{
	int64_t exp = c->claims.exp, life = exp - c->claims.iat;
	char when[TS_STRLEN + 1];

	format_s(exp, when);
	if (now >= exp && !c->warned_expired) {
		c->warned_expired = c->warned_expiring = true;
		log_error(NULL,
			  "instance token %s expired at %s; gateways refuse this "
			  "sidecar's links until the platform renews the file",
			  c->path, when);
	} else if (now < exp && now >= exp - (life > 0 ? life / 5 : 0) &&
		   !c->warned_expiring) {
		c->warned_expiring = true;
		log_warn(NULL,
			 "instance token %s expires at %s (in %" PRId64
			 " s); the platform should renew it",
			 c->path, when, exp - now);
	}
}

int credential_check_changed(struct credential *c, int64_t now_s)
{
	struct file_id id = identify(c->path);
	int rc = 0;

	if (!same_file(&id, &c->seen)) {
		c->seen = id;
		rc = reload(c, now_s);
	}
	warn_expiry(c, now_s);
	return rc;
}
