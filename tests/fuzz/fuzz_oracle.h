/* fuzz_oracle: what the harnesses check beyond the sanitizers: an
   oracle that aborts with its condition, and the protocol's grammar
   of an instance or session id written independently of the gateway's. */
#ifndef PTG_FUZZ_ORACLE_H
#define PTG_FUZZ_ORACLE_H

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define fuzz__assert(cond)                                                               \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "oracle failed: %s (line %d)\n", #cond,          \
				__LINE__);                                               \
			abort();                                                         \
		}                                                                        \
	} while (0)

/* 1 to max bytes of unreserved URL characters plus ':' and '@', never
   "." or "..". */
static inline int fuzz__valid_id(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n < 1 || n > max || !strcmp(s, ".") || !strcmp(s, ".."))
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("._~:@-", s[i]))
			return 0;
	return 1;
}

#endif
