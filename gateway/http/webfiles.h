/* webfiles: the browser terminal's files under --static-dir (served by
   routes_static.c): opening them without following links, and their HTTP
   headers: how long a browser may cache each, and
   the Content-Security-Policy and other security headers of the page. */
#ifndef PTG_WEBFILES_H
#define PTG_WEBFILES_H

#include <stdbool.h>
#include <stdint.h>

#include <microhttpd.h>

/* Adds Cache-Control and the security headers for file to resp. */
void webfiles_headers(struct MHD_Response *resp, const char *file);
/* Opens file, a relative path, under dir for reading: resolved beneath
   dir with no symbolic link in any of its components (openat2
   RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS; component by component with
   O_NOFOLLOW where the kernel lacks openat2), so a link placed inside
   dir never serves what it names. Only a regular file of at most max
   bytes. Returns the fd and *size, or a negative errno. */
int webfiles_open(const char *dir, const char *file, uint64_t max, uint64_t *size);

/* The page runs only its own scripts (no inline script, no eval) and
   talks only to its own origin (the REST API and the attach WebSocket:
   'self' covers ws: and wss: to the same host). Styles allow
   'unsafe-inline' because xterm.js's DOM renderer writes its theme and
   cell styles into <style> elements it creates at run time. */
#define WEBFILES_CSP                                                                     \
	"default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; "      \
	"img-src 'self' data:; font-src 'self'; connect-src 'self'; "                    \
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

#endif
