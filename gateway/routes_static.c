/* routes_static: a file under --static-dir (the browser terminal),
   opened relative to the directory without following links; routes.c
   has already refused dot segments and hidden names. */
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gateway.h"
#include "routes_int.h"

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
	int dfd = open(rq->gw->cfg->static_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd =
	    dfd < 0 ? -1 : openat(dfd, rq->m.file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;

	if (dfd >= 0)
		close(dfd);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size > ROUTES__STATIC_MAX) {
		if (fd >= 0)
			close(fd);
		return routes__error(rq, 404, "NOT_FOUND", "no such path");
	}
	rq->file_fd = fd;
	rq->file_size = (uint64_t)st.st_size;
	rq->status = 200;
	rq->content_type = mime(rq->m.file);
	rq->static_file = rq->m.file;
	return 0;
}
