/* unit: gateway */
/* gateway/webfiles.c: which names are content-hashed (immutable), the
   Cache-Control of each; and the web page's routes in routes_match: "/"
   and "/agents/I/sessions/S/" are the page, "/agents/I/sessions/S" stays
   the REST resource. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "routes.h"
#include "webfiles.h"

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
	assert_int_equal(routes_match("/agents/i-1/sessions/s-2/x", 1, &m, &why),
			 -ENOENT);
	assert_int_equal(routes_match("/agents/i 1/sessions/s-2/", 1, &m, &why), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hashed_names),
	    cmocka_unit_test(test_cache_control),
	    cmocka_unit_test(test_page_routes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
