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

#define TLSIO_RECORD (16 * 1024) /* a TLS record's largest payload */

struct tlsio {
	gnutls_session_t s;
	gnutls_certificate_credentials_t cred;
	char host[256];
	/* A frame's header held for its payload (tlsio_send_more), and
	   whether GnuTLS holds the record joining them (its send would
	   have blocked). */
	uint8_t head[TLSIO_HEAD_MAX];
	size_t head_len;
	bool record_held;
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
	return tlsio_send_more(t, p, n, false);
}

/* The held header and the start of p as one record. GnuTLS keeps a
   record it could not write and finishes it when called with nothing
   (counting its bytes), so a retry of the same send completes it. */
static ssize_t send_joined(struct tlsio *t, const void *p, size_t n)
{
	uint8_t rec[TLSIO_RECORD];
	size_t k = n < sizeof(rec) - t->head_len ? n : sizeof(rec) - t->head_len;
	ssize_t w;

	if (t->record_held) {
		w = gnutls_record_send(t->s, NULL, 0);
	} else {
		memcpy(rec, t->head, t->head_len);
		memcpy(rec + t->head_len, p, k);
		w = gnutls_record_send(t->s, rec, t->head_len + k);
	}
	if (w == GNUTLS_E_AGAIN) {
		t->record_held = true;
		return result(w);
	}
	t->record_held = false;
	if (w < 0)
		return result(w);
	w -= (ssize_t)t->head_len; /* a record is whole: w covers the head */
	t->head_len = 0;
	return w;
}

ssize_t tlsio_send_more(struct tlsio *t, const void *p, size_t n, bool more)
{
	if (more && !t->head_len && n <= sizeof(t->head)) {
		memcpy(t->head, p, n);
		t->head_len = n;
		return (ssize_t)n;
	}
	if (t->head_len)
		return send_joined(t, p, n);
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
