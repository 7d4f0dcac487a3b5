/* fuzz_fields: splits a fuzz input into NUL-terminated strings, the way
   HTTP hands the gateway header values: one field per line, each cut at
   its first NUL (a header value never holds one). A field the input does
   not reach is NULL, so "header absent" is explored too. */
#ifndef PTG_FUZZ_FIELDS_H
#define PTG_FUZZ_FIELDS_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Fills f[0, n) from data; free them with fuzz_fields_free. */
static inline void fuzz_fields(const uint8_t *data, size_t size, char **f, size_t n)
{
	size_t off = 0;

	for (size_t i = 0; i < n; i++) {
		const uint8_t *nl;
		size_t len;

		f[i] = NULL;
		if (off > size || (off == size && i > 0))
			continue;
		nl = memchr(data + off, '\n', size - off);
		len = nl ? (size_t)(nl - (data + off)) : size - off;
		f[i] = strndup((const char *)data + off, len);
		if (!f[i])
			abort();
		off += len + 1;
	}
}

static inline void fuzz_fields_free(char **f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i]);
}

#endif
