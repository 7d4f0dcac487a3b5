/* webfiles: see webfiles.h */
#include "webfiles.h"

#include <ctype.h>
#include <string.h>

#define WEBFILES__HASH_LEN 12

int webfiles_is_hashed(const char *file)
{
	const char *base = strrchr(file, '/');
	const char *dot = strrchr(file, '.');
	const char *h;

	base = base ? base + 1 : file;
	if (!dot || dot < base || (size_t)(dot - base) < WEBFILES__HASH_LEN + 2)
		return 0;
	h = dot - WEBFILES__HASH_LEN;
	if (h[-1] != '-')
		return 0;
	for (int i = 0; i < WEBFILES__HASH_LEN; i++)
		if (!isxdigit((unsigned char)h[i]) || isupper((unsigned char)h[i]))
			return 0;
	return 1;
}

const char *webfiles_cache_control(const char *file)
{
	return webfiles_is_hashed(file) ? "public, max-age=31536000, immutable"
					: "no-cache";
}

void webfiles_headers(struct MHD_Response *resp, const char *file)
{
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL,
				webfiles_cache_control(file));
	MHD_add_response_header(resp, "Content-Security-Policy", WEBFILES_CSP);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "DENY");
}
