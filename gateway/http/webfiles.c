/* webfiles: see webfiles.h */
#include "webfiles.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/openat2.h>

#define WEBFILES__HASH_LEN 12

/* 1 when file's name carries a content hash, "name-<12 hex>.ext", as
   scripts/build-web.sh names everything but index.html: such a file never
   changes, so it may be cached for a year. */
static bool webfiles_is_hashed(const char *file)
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

/* The Cache-Control value for file: immutable when hashed, else
   "no-cache" (revalidate each time: index.html names the current hashed
   files, so a new build shows at the next load). */
static const char *webfiles_cache_control(const char *file)
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

/* file under dfd, each component opened without following a link: what
   openat2's RESOLVE_NO_SYMLINKS does, where openat2 is missing. */
static int webfiles_open_walk(int dfd, const char *file)
{
	char part[4096];
	const char *p = file;
	int fd = dup(dfd);

	while (fd >= 0) {
		size_t n = strcspn(p, "/");
		int last = p[n] == '\0', next;

		if (n == 0 || n >= sizeof(part) || (n <= 2 && !strncmp(p, "..", n))) {
			close(fd);
			return -ENOENT;
		}
		memcpy(part, p, n);
		part[n] = '\0';
		next =
		    openat(fd, part,
			   O_RDONLY | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY));
		close(fd);
		fd = next;
		if (last)
			break;
		p += n + 1;
	}
	return fd < 0 ? -errno : fd;
}

static int open_beneath(int dfd, const char *file)
{
	struct open_how how = {
	    .flags = O_RDONLY | O_NOFOLLOW | O_CLOEXEC,
	    .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dfd, file, &how, sizeof(how));

	/* ENOSYS: a kernel before 5.6; EPERM: a seccomp filter that does not
	   know the call (container runtimes before 2021). */
	if (fd < 0 && (errno == ENOSYS || errno == EPERM))
		return webfiles_open_walk(dfd, file);
	return fd < 0 ? -errno : (int)fd;
}

int webfiles_open(const char *dir, const char *file, uint64_t max, uint64_t *size)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int fd = dfd < 0 ? -errno : open_beneath(dfd, file);
	struct stat st;

	if (dfd >= 0)
		close(dfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		close(fd);
		return -ENOENT;
	}
	*size = (uint64_t)st.st_size;
	return fd;
}
