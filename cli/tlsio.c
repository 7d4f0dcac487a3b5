/* tlsio: see tlsio.h */
#include "tlsio.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "timeutil.h"
#include "xalloc.h"

struct tlsio {
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	char host[256];
};

static bool ip_literal(const char *host)
{
	unsigned char b[16];

	return inet_pton(AF_INET, host, b) == 1 || inet_pton(AF_INET6, host, b) == 1;
}

static int trust(struct tlsio *t, const struct tlsio_opts *o, char *err, size_t errlen)
{
	int rc;

	if (o && o->insecure)
		return 0;
	rc = o && o->ca_file ? gnutls_certificate_set_x509_trust_file(t->cred, o->ca_file,
								      GNUTLS_X509_FMT_PEM)
			     : gnutls_certificate_set_x509_system_trust(t->cred);
	if (rc <= 0) {
		snprintf(err, errlen, "no trusted certificates in %s%s%s",
			 o && o->ca_file ? o->ca_file : "the system store",
			 rc < 0 ? ": " : "", rc < 0 ? gnutls_strerror(rc) : "");
		return -1;
	}
	/* Verified during the handshake, for this host name. */
	gnutls_session_set_verify_cert(t->s, t->host, 0);
	return 0;
}

/* Why the handshake failed, with the verification's own words. */
static void why(struct tlsio *t, int rc, char *err, size_t errlen)
{
	gnutls_datum_t out = {0};
	unsigned status;

	if (rc == GNUTLS_E_CERTIFICATE_VERIFICATION_ERROR) {
		status = gnutls_session_get_verify_cert_status(t->s);
		if (gnutls_certificate_verification_status_print(
			status, gnutls_certificate_type_get(t->s), &out, 0) == 0) {
			snprintf(err, errlen,
				 "TLS: the certificate of %s is not trusted: %s", t->host,
				 out.data);
			gnutls_free(out.data);
			return;
		}
	}
	snprintf(err, errlen, "TLS handshake with %s failed: %s", t->host,
		 gnutls_strerror(rc));
}

static int handshake(struct tlsio *t, int fd, int64_t deadline, char *err, size_t errlen)
{
	struct pollfd p = {.fd = fd};
	int64_t left;
	int rc;

	while ((rc = gnutls_handshake(t->s)) < 0) {
		if (gnutls_error_is_fatal(rc)) {
			why(t, rc, err, errlen);
			return -1;
		}
		left = deadline - time_mono_ms();
		if (left <= 0) {
			snprintf(err, errlen, "TLS handshake with %s timed out", t->host);
			return -1;
		}
		p.events = tlsio_events(t);
		poll(&p, 1, (int)left);
	}
	return 0;
}

struct tlsio *tlsio_connect(int fd, const char *host, const struct tlsio_opts *o,
			    int64_t deadline, char *err, size_t errlen)
{
	struct tlsio *t = xcalloc(1, sizeof(*t));

	snprintf(t->host, sizeof(t->host), "%s", host);
	if (gnutls_certificate_allocate_credentials(&t->cred) < 0 ||
	    gnutls_init(&t->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK) < 0)
		abort(); /* allocation failure, as xalloc does */
	if (trust(t, o, err, errlen) < 0)
		goto fail;
	gnutls_set_default_priority(t->s);
	gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, t->cred);
	if (!ip_literal(host))
		gnutls_server_name_set(t->s, GNUTLS_NAME_DNS, host, strlen(host));
	gnutls_transport_set_int(t->s, fd);
	gnutls_handshake_set_timeout(t->s, 0);
	if (handshake(t, fd, deadline, err, errlen) < 0)
		goto fail;
	return t;
fail:
	gnutls_deinit(t->s);
	gnutls_certificate_free_credentials(t->cred);
	free(t);
	return NULL;
}

static ssize_t result(ssize_t n)
{
	if (n >= 0)
		return n;
	if (n == GNUTLS_E_AGAIN || n == GNUTLS_E_INTERRUPTED)
		errno = EAGAIN;
	else if (n == GNUTLS_E_PREMATURE_TERMINATION)
		errno = ECONNRESET;
	else
		errno = EIO;
	return -1;
}

ssize_t tlsio_recv(struct tlsio *t, void *p, size_t n)
{
	return result(gnutls_record_recv(t->s, p, n));
}

ssize_t tlsio_send(struct tlsio *t, const void *p, size_t n)
{
	return result(gnutls_record_send(t->s, p, n));
}

short tlsio_events(const struct tlsio *t)
{
	return gnutls_record_get_direction(t->s) ? POLLOUT : POLLIN;
}

void tlsio_free(struct tlsio *t)
{
	if (!t)
		return;
	gnutls_bye(t->s, GNUTLS_SHUT_WR); /* non-blocking: best effort */
	gnutls_deinit(t->s);
	gnutls_certificate_free_credentials(t->cred);
	free(t);
}
