/* tls: see tls.h. */
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <gnutls/x509.h>

#include "xalloc.h"

static void cred_free(struct tls_cred *c)
{
	if (c->x509)
		gnutls_certificate_free_credentials(c->x509);
	free(c);
}

static int trust(struct tls_cred *c, const char *ca_file, char *err, size_t errlen)
{
	int rc;

	if (!ca_file || !ca_file[0])
		return 0;
	rc =
	    gnutls_certificate_set_x509_trust_file(c->x509, ca_file, GNUTLS_X509_FMT_PEM);
	if (rc > 0)
		return 0;
	snprintf(err, errlen, "--fleet-cacert %s: %s", ca_file,
		 rc < 0 ? gnutls_strerror(rc) : "no certificate in it");
	return -EINVAL;
}

static int load(const char *cert_file, const char *key_file, const char *ca_file,
		struct tls_cred **out, char *err, size_t errlen)
{
	struct tls_cred *c = xcalloc(1, sizeof(*c));
	int rc;

	rc = gnutls_certificate_allocate_credentials(&c->x509);
	if (rc < 0) {
		snprintf(err, errlen, "GnuTLS: %s", gnutls_strerror(rc));
		c->x509 = NULL;
		goto fail;
	}
	rc = gnutls_certificate_set_x509_key_file2(c->x509, cert_file, key_file,
						   GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0) {
		snprintf(err, errlen, "--tls-cert %s, --tls-key %s: %s", cert_file,
			 key_file, gnutls_strerror(rc));
		goto fail;
	}
	if (trust(c, ca_file, err, errlen) < 0)
		goto fail;
	c->refs = 1;
	*out = c;
	return 0;
fail:
	cred_free(c);
	return -EINVAL;
}

int tls_store_init(struct tls_store *t, const char *cert_file, const char *key_file,
		   const char *ca_file, char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->cert_file, sizeof(t->cert_file), "%s", cert_file);
	snprintf(t->key_file, sizeof(t->key_file), "%s", key_file);
	snprintf(t->ca_file, sizeof(t->ca_file), "%s", ca_file ? ca_file : "");
	return load(cert_file, key_file, t->ca_file, &t->current, err, errlen);
}

int tls_store_reload(struct tls_store *t, char *err, size_t errlen)
{
	struct tls_cred *c;

	if (load(t->cert_file, t->key_file, t->ca_file, &c, err, errlen) < 0)
		return -EINVAL;
	tls_cred_unref(t->current);
	t->current = c;
	return 0;
}

void tls_store_clear(struct tls_store *t)
{
	tls_cred_unref(t->current);
	t->current = NULL;
}

struct tls_cred *tls_cred_ref(struct tls_cred *c)
{
	c->refs++;
	return c;
}

void tls_cred_unref(struct tls_cred *c)
{
	if (c && --c->refs == 0)
		cred_free(c);
}

int tls_client_check(gnutls_session_t session, char *why, size_t whylen)
{
	gnutls_typed_vdata_st purpose = {
	    .type = GNUTLS_DT_KEY_PURPOSE_OID,
	    .data = (unsigned char *)GNUTLS_KP_TLS_WWW_CLIENT,
	};
	gnutls_datum_t text = {NULL, 0};
	unsigned status = 0, n = 0;
	int rc;

	if (!gnutls_certificate_get_peers(session, &n) || n == 0) {
		snprintf(why, whylen, "no client certificate");
		return -EACCES;
	}
	rc = gnutls_certificate_verify_peers(session, &purpose, 1, &status);
	if (rc < 0) {
		snprintf(why, whylen, "client certificate: %s", gnutls_strerror(rc));
		return -EACCES;
	}
	if (status == 0)
		return 0;
	if (gnutls_certificate_verification_status_print(status, GNUTLS_CRT_X509, &text,
							 0) == 0) {
		snprintf(why, whylen, "client certificate: %s", (const char *)text.data);
		gnutls_free(text.data);
	} else {
		snprintf(why, whylen, "client certificate not trusted (status 0x%x)",
			 status);
	}
	return -EACCES;
}
