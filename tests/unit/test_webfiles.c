/* unit: gateway */
/* gateway/http/webfiles.c: which names are content-hashed (immutable), the
   Cache-Control of each; and the web page's routes in routes_match: "/"
   and "/agents/I/sessions/S/" are the page, "/agents/I/sessions/S" stays
   the REST resource; files are opened beneath --static-dir with no
   symbolic link in any component (openat2, and the walk without it). */
#include "../../gateway/http/webfiles.c"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "routes.h"

static void test_hashed_names(void **state)
{
	(void)state;
	assert_true(webfiles_is_hashed("app-04d85ab60541.js"));
	assert_true(webfiles_is_hashed("addon-fit-bdaefa370b1b.js"));
	assert_true(webfiles_is_hashed("vendor/x-0123456789ab.css"));
	assert_false(webfiles_is_hashed("index.html"));
	assert_false(webfiles_is_hashed("app.js"));
	assert_false(webfiles_is_hashed("app-04d85ab6054.js"));	 /* 11 hex */
	assert_false(webfiles_is_hashed("app-04D85AB60541.js")); /* upper case */
	assert_false(webfiles_is_hashed("app_04d85ab60541.js")); /* no dash */
	assert_false(webfiles_is_hashed("-04d85ab60541.js"));	 /* no name */
	assert_false(webfiles_is_hashed("04d85ab60541"));	 /* no extension */
	assert_false(webfiles_is_hashed("d-0123456789ab.x/y"));	 /* dot in a directory */
}

static void test_cache_control(void **state)
{
	(void)state;
	assert_string_equal(webfiles_cache_control("xterm-1f991ac3b4b2.js"),
			    "public, max-age=31536000, immutable");
	assert_string_equal(webfiles_cache_control("index.html"), "no-cache");
	assert_null(strstr(WEBFILES_CSP, "unsafe-eval"));
	assert_non_null(strstr(WEBFILES_CSP, "script-src 'self';"));
}

static void test_page_routes(void **state)
{
	struct route_match m;
	const char *why;

	(void)state;
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_STATIC);
	assert_string_equal(m.file, "index.html");
	assert_int_equal(
	    routes_match("/agents/i-1/sessions/s-2/?role=observer", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_STATIC);
	assert_int_equal(routes_match("/", 1, &m, &why), 0);
	assert_string_equal(m.file, "index.html");
	/* Without a static dir, or without the slash: not the page. */
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/", 0, &m, &why), -ENOENT);
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_SESSION);
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/attach", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_ATTACH);
	/* Other shapes under /agents are never files. */
	assert_int_equal(routes_match("/agents/i-1/other/s-2/", 1, &m, &why), -ENOENT);
	/* The page's own files, named relative to it (any proxy prefix). */
	assert_int_equal(
	    routes_match("/agents/i-1/sessions/s-2/app-0123.js", 1, &m, &why), 0);
	assert_int_equal(m.id, ROUTE_STATIC);
	assert_string_equal(m.file, "app-0123.js");
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/.hidden", 1, &m, &why),
			 -ENOENT);
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/a%01b", 1, &m, &why),
			 -ENOENT);
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/js/app.js", 1, &m, &why),
			 -ENOENT);
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/app.js", 0, &m, &why),
			 -ENOENT);
	assert_int_equal(routes_match("/agents/i 1/sessions/s-2/", 1, &m, &why), -EINVAL);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void link_at(const char *dir, const char *name, const char *target)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_int_equal(symlink(target, path), 0);
}

/* Opens file under dir both ways; returns the size read, or -1. */
static long open_both(const char *dir, const char *file)
{
	uint64_t size = 0;
	int fd = webfiles_open(dir, file, 1 << 20, &size);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int wfd = webfiles_open_walk(dfd, file);
	struct stat st;
	int walked = wfd >= 0 && fstat(wfd, &st) == 0 && S_ISREG(st.st_mode);

	close(dfd);
	assert_int_equal(fd >= 0, walked); /* both ways agree */
	if (wfd >= 0)
		close(wfd);
	if (fd < 0)
		return -1;
	close(fd);
	return (long)size;
}

/* A link inside --static-dir, to a directory or a file, in the middle of
   the path or at its end, never serves what it names. */
static void test_open_no_links(void **state)
{
	char base[] = "/tmp/ptg-web-XXXXXX", web[300], out[300], cmd[400];
	uint64_t size;

	(void)state;
	assert_non_null(mkdtemp(base));
	snprintf(web, sizeof(web), "%s/web", base);
	snprintf(out, sizeof(out), "%s/outside", base);
	assert_int_equal(mkdir(web, 0755), 0);
	assert_int_equal(mkdir(out, 0755), 0);
	put(out, "secret.txt", "secret");
	put(web, "index.html", "<html>");
	snprintf(cmd, sizeof(cmd), "%s/js", web);
	assert_int_equal(mkdir(cmd, 0755), 0);
	put(web, "js/app.js", "app();");
	link_at(web, "outlink", out);			       /* a directory outside */
	link_at(web, "jslink", "js");			       /* a directory inside */
	link_at(web, "page.html", "index.html");	       /* a file inside */
	link_at(web, "js/up.txt", "../../outside/secret.txt"); /* a file outside */

	assert_int_equal(open_both(web, "index.html"), 6);
	assert_int_equal(open_both(web, "js/app.js"), 6);
	assert_int_equal(open_both(web, "outlink/secret.txt"), -1);
	assert_int_equal(open_both(web, "jslink/app.js"), -1);
	assert_int_equal(open_both(web, "page.html"), -1);
	assert_int_equal(open_both(web, "js/up.txt"), -1);
	assert_int_equal(open_both(web, "../outside/secret.txt"), -1);
	assert_int_equal(open_both(web, "js"), -1); /* not a regular file */
	assert_int_equal(open_both(web, "missing.js"), -1);
	/* Over the size cap: refused. */
	assert_true(webfiles_open(web, "index.html", 5, &size) < 0);
	assert_int_equal(webfiles_open("/nonexistent/ptg-web", "index.html", 9, &size),
			 -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	assert_int_equal(system(cmd), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hashed_names),
	    cmocka_unit_test(test_cache_control),
	    cmocka_unit_test(test_page_routes),
	    cmocka_unit_test(test_open_no_links),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
