/* xalloc: allocation wrappers that abort the process on failure, so the
   rest of the code never handles out-of-memory. */
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void __attribute__((noreturn)) fail(const char *what, size_t n)
{
	char line[128];
	int len;

	/* No stdio buffering or malloc on this path: memory is gone. */
	len = snprintf(line, sizeof(line), "fatal: %s of %zu bytes failed\n", what, n);
	if (len > 0)
		(void)!write(STDERR_FILENO, line,
			     (size_t)len < sizeof(line) ? (size_t)len : sizeof(line) - 1);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		fail("malloc", n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		fail("calloc", nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		fail("realloc", n);
	return q;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	size_t len = strnlen(s, n);
	char *p = xmalloc(len + 1);

	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}
