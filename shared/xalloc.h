/* xalloc: allocation that aborts the daemon on failure: no caller handles
   out-of-memory, and a partial recovery would hide the fault. A client
   exceeding a limit is failed by its caller before it gets this far. */
#ifndef PTG_XALLOC_H
#define PTG_XALLOC_H

#include <stddef.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
