/* routes: the pure parts of the gateway's HTTP front door, kept free of
   MHD and unit-tested: the path grammar, the methods each route takes
   and tokens in query strings. The dispatch to one handler per route
   is routes_dispatch.c's. Paths are parsed from the raw request target here rather than
   trusting MHD's unescaping, so "%2e%2e" and "%2F" inside an id are seen for what they
   are. */
#include "routes.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "id.h"
#include "xalloc.h"

#define ROUTES__SEGS_MAX 16

/* ---- paths ---- */

static int unhex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Percent-decodes s[0, n) into out; plus_space turns '+' into ' ' (query
   strings). Refuses a bad escape, %00 and output longer than cap - 1. */
static int decode(const char *s, size_t n, bool plus_space, char *out, size_t cap)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)s[i];

		if (c == '%') {
			int hi = i + 2 < n ? unhex((unsigned char)s[i + 1]) : -1;
			int lo = i + 2 < n ? unhex((unsigned char)s[i + 2]) : -1;

			if (hi < 0 || lo < 0)
				return -EINVAL;
			c = hi * 16 + lo;
			i += 2;
		} else if (c == '+' && plus_space) {
			c = ' ';
		}
		if (c == 0 || o + 1 >= cap)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = '\0';
	return 0;
}

/* Splits and decodes the path of target into segs. Returns the count or
   -EINVAL (*why set); an empty path segment is kept as "". */
static int split(const char *target, char segs[][ROUTES_FILE_MAX + 1], const char **why)
{
	size_t end = strcspn(target, "?#"), i = 1;
	int n = 0;

	if (target[0] != '/') {
		*why = "the request target must be a path";
		return -EINVAL;
	}
	while (i <= end) {
		size_t len = strcspn(target + i, "/?#");

		if (len > end - i)
			len = end - i;
		if (n == ROUTES__SEGS_MAX ||
		    decode(target + i, len, false, segs[n], ROUTES_FILE_MAX + 1) < 0) {
			*why = n == ROUTES__SEGS_MAX ? "path too deep"
						     : "bad percent-encoding in path";
			return -EINVAL;
		}
		if (!strcmp(segs[n], ".") || !strcmp(segs[n], "..") ||
		    strchr(segs[n], '/') || strchr(segs[n], '\\')) {
			*why = "path segments '.', '..' and encoded slashes are refused";
			return -EINVAL;
		}
		n++;
		i += len + 1;
	}
	return n;
}

static int match_agents(char segs[][ROUTES_FILE_MAX + 1], int n, struct route_match *m,
			const char **why)
{
	if (n < 3)
		return -ENOENT;
	if (!id_valid(segs[1])) {
		*why = "invalid instance_id in path";
		return -EINVAL;
	}
	snprintf(m->instance, sizeof(m->instance), "%s", segs[1]);
	if (n == 4 && !strcmp(segs[2], ".well-known") &&
	    !strcmp(segs[3], "agent-card.json")) {
		m->id = ROUTE_AGENT_CARD;
		return 0;
	}
	if (strcmp(segs[2], "sessions") != 0 || n > 5)
		return -ENOENT;
	if (n == 3) {
		m->id = ROUTE_SESSIONS;
		return 0;
	}
	if (!id_valid(segs[3])) {
		*why = "invalid session_id in path";
		return -EINVAL;
	}
	snprintf(m->session, sizeof(m->session), "%s", segs[3]);
	if (n == 4) {
		m->id = ROUTE_SESSION;
		return 0;
	}
	if (!strcmp(segs[4], "recording")) {
		m->id = ROUTE_RECORDING;
		return 0;
	}
	if (strcmp(segs[4], "attach") != 0)
		return -ENOENT;
	m->id = ROUTE_ATTACH;
	return 0;
}

/* A static file path: no empty or hidden segments except a final "/"
   meaning index.html. */
static int match_static(char segs[][ROUTES_FILE_MAX + 1], int n, struct route_match *m)
{
	size_t o = 0;

	for (int i = 0; i < n; i++) {
		const char *s = segs[i][0] ? segs[i] : (i == n - 1 ? "index.html" : NULL);
		int w;

		if (!s || s[0] == '.')
			return -ENOENT;
		for (const char *p = s; *p; p++)
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return -ENOENT;
		w = snprintf(m->file + o, sizeof(m->file) - o, "%s%s", i ? "/" : "", s);
		if (w < 0 || (size_t)w >= sizeof(m->file) - o)
			return -ENOENT;
		o += (size_t)w;
	}
	m->id = ROUTE_STATIC;
	return 0;
}

int routes_match(const char *target, bool with_static, struct route_match *m,
		 const char **why)
{
	char segs[ROUTES__SEGS_MAX][ROUTES_FILE_MAX + 1] = {{0}}; /* "/" has no segment */
	static const struct {
		const char *name;
		enum route_id id;
	} ops[] = {{"healthz", ROUTE_HEALTHZ},
		   {"readyz", ROUTE_READYZ},
		   {"metrics", ROUTE_METRICS}};
	int n;

	memset(m, 0, sizeof(*m));
	*why = "no such path";
	n = split(target, segs, why);
	if (n < 0)
		return n;
	for (size_t i = 0; n == 1 && i < sizeof(ops) / sizeof(ops[0]); i++)
		if (!strcmp(segs[0], ops[i].name)) {
			m->id = ops[i].id;
			return 0;
		}
	if (!strcmp(segs[0], "agents")) {
		int rc = match_agents(segs, n, m, why);

		/* /agents/{i}/sessions/{s}/ is the web page of one session, and
		   /agents/{i}/sessions/{s}/{file} its files: the page names them
		   relative to itself, so a proxy that routes only /agents/{i}/...
		   (or adds a path prefix) reaches them on the same gateway. */
		if (rc == -ENOENT && with_static && n == 5 &&
		    !strcmp(segs[2], "sessions"))
			return match_static(&segs[4], 1, m);
		return rc;
	}
	if (with_static)
		return match_static(segs, n, m);
	return -ENOENT;
}

const char *routes_allow(enum route_id id)
{
	switch (id) {
	case ROUTE_SESSIONS:
		return "GET, POST";
	case ROUTE_SESSION:
		return "GET, DELETE";
	default:
		return "GET";
	}
}

/* Walks the Allow list one method at a time, so only a whole entry
   matches: a method holding the list's separator ("GET, DELETE") or a
   part of an entry ("POS") is refused. */
bool routes_method_ok(enum route_id id, const char *method)
{
	size_t n = strlen(method);

	for (const char *p = routes_allow(id); *p;) {
		size_t len = strcspn(p, ", ");

		if (len == n && n > 0 && !memcmp(p, method, n))
			return 1;
		p += len;
		p += strspn(p, ", ");
	}
	return 0;
}

/* ---- query strings ---- */

/* A value shaped like a compact JWS: "eyJ", base64url, exactly two dots. */
static int looks_like_jwt(const char *v)
{
	int dots = 0;

	if (strncmp(v, "eyJ", 3) != 0)
		return 0;
	for (; *v; v++) {
		if (*v == '.')
			dots++;
		else if (!isalnum((unsigned char)*v) && *v != '-' && *v != '_')
			return 0;
	}
	return dots == 2;
}

static int token_name(const char *name)
{
	static const char *const names[] = {"jwt", "bearer", "auth", "authorization"};
	char low[ROUTES_FILE_MAX + 1];
	size_t n = strlen(name);

	if (n >= sizeof(low))
		n = sizeof(low) - 1;
	for (size_t i = 0; i < n; i++)
		low[i] = (char)tolower((unsigned char)name[i]);
	low[n] = '\0';
	if (strstr(low, "token"))
		return 1;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(low, names[i]))
			return 1;
	return 0;
}

/* One "name[=value]" parameter; an undecodable one counts by its raw
   text so an odd escape cannot hide a token. */
static int token_param(const char *p, size_t len)
{
	char *buf = xmalloc(len + 1);
	size_t nlen = strcspn(p, "=");
	bool hit;

	if (nlen > len)
		nlen = len;
	if (decode(p, nlen, true, buf, len + 1) < 0) {
		memcpy(buf, p, nlen);
		buf[nlen] = '\0';
	}
	hit = token_name(buf);
	if (!hit && nlen < len) {
		if (decode(p + nlen + 1, len - nlen - 1, true, buf, len + 1) < 0) {
			memcpy(buf, p + nlen + 1, len - nlen - 1);
			buf[len - nlen - 1] = '\0';
		}
		hit = looks_like_jwt(buf) || !strncasecmp(buf, "bearer ", 7);
	}
	free(buf);
	return hit;
}

bool routes_query_has_token(const char *target)
{
	const char *q = strchr(target, '?');
	size_t end;

	if (!q)
		return 0;
	q++;
	end = strcspn(q, "#");
	for (size_t i = 0; i < end;) {
		size_t len = strcspn(q + i, "&;#");

		if (len > end - i)
			len = end - i;
		if (len && token_param(q + i, len))
			return 1;
		i += len + 1;
	}
	return 0;
}
