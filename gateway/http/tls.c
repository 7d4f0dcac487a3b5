/* tls: see tls.h. */
#include "tls.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fdio.h"
#include "xalloc.h"

#define TLS__FILE_MAX (1 << 20) /* a PEM chain or key bigger than this is a mistake */

static void cred_free(struct tls_cred *c)
{
	if (c->x509)
		gnutls_certificate_free_credentials(c->x509);
	free(c);
}

static int load(const char *cert_file, const char *key_file, struct tls_cred **out,
		char *err, size_t errlen)
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
	c->refs = 1;
	*out = c;
	return 0;
fail:
	cred_free(c);
	return -EINVAL;
}

/* The whole file as a NUL-terminated string. */
static char *slurp(const char *path, char *err, size_t errlen)
{
	struct buf b = BUF_INIT;

	if (fd_read_file(path, FDIO_REGULAR, TLS__FILE_MAX, &b, err, errlen) < 0)
		return NULL;
	return (char *)buf_steal(&b, NULL);
}

int tls_store_init(struct tls_store *t, const char *cert_file, const char *key_file,
		   char *err, size_t errlen)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->cert_file, sizeof(t->cert_file), "%s", cert_file);
	snprintf(t->key_file, sizeof(t->key_file), "%s", key_file);
	if (load(cert_file, key_file, &t->current, err, errlen) < 0)
		return -EINVAL;
	t->cert_pem = slurp(cert_file, err, errlen);
	t->key_pem = t->cert_pem ? slurp(key_file, err, errlen) : NULL;
	if (!t->key_pem) {
		tls_store_clear(t);
		return -EINVAL;
	}
	return 0;
}

int tls_store_reload(struct tls_store *t, char *err, size_t errlen)
{
	struct tls_cred *c;

	if (load(t->cert_file, t->key_file, &c, err, errlen) < 0)
		return -EINVAL;
	tls_cred_unref(t->current);
	t->current = c;
	return 0;
}

void tls_store_clear(struct tls_store *t)
{
	tls_cred_unref(t->current);
	t->current = NULL;
	if (t->key_pem)
		explicit_bzero(t->key_pem, strlen(t->key_pem));
	free(t->key_pem);
	free(t->cert_pem);
	t->key_pem = t->cert_pem = NULL;
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
