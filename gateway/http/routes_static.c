/* routes_static: a file under --static-dir (the browser terminal),
   opened beneath the directory without following a link in any
   component (webfiles_open); routes.c has already refused dot segments
   and hidden names. */
#include <stdint.h>
#include <string.h>
#include <strings.h>

#include "config.h"
#include "routes_int.h"
#include "webfiles.h"

#define ROUTES__STATIC_MAX (64ull << 20)

static const char *mime(const char *file)
{
	static const char *const types[][2] = {
	    {".html", "text/html; charset=utf-8"},
	    {".js", "text/javascript; charset=utf-8"},
	    {".mjs", "text/javascript; charset=utf-8"},
	    {".css", "text/css; charset=utf-8"},
	    {".json", "application/json"},
	    {".map", "application/json"},
	    {".svg", "image/svg+xml"},
	    {".png", "image/png"},
	    {".ico", "image/x-icon"},
	    {".txt", "text/plain; charset=utf-8"},
	    {".wasm", "application/wasm"},
	    {".woff2", "font/woff2"},
	};
	const char *dot = strrchr(file, '.');

	for (size_t i = 0; dot && i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcasecmp(dot, types[i][0]))
			return types[i][1];
	return "application/octet-stream";
}

int routes__static(struct route_req *rq)
{
	uint64_t size;
	int fd = webfiles_open(rq->gateway->cfg->static_dir, rq->m.file,
			       ROUTES__STATIC_MAX, &size);

	if (fd < 0)
		return routes__error(rq, 404, "NOT_FOUND", "no such path");
	rq->file_fd = fd;
	rq->file_size = size;
	rq->status = 200;
	rq->content_type = mime(rq->m.file);
	rq->static_file = rq->m.file;
	return 0;
}
