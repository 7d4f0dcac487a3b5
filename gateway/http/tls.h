/* tls: the certificate and key of a gateway listener's TLS (tlsfront.h),
   reloadable on SIGHUP.

   Every new connection's GnuTLS session takes the credentials loaded
   last, before its handshake. A session points at its credentials until
   it ends, so a generation is reference-counted by the connections that
   use it and freed when it is no longer current and the last of them
   has closed.

   A store made with a CA file is the fleet listener's: its credentials
   also trust that CA, and each connection's handshake fails unless the
   client presents a certificate it signs (tls_client_check). */
#ifndef PTG_TLS_H
#define PTG_TLS_H

#include <stddef.h>

#include <gnutls/gnutls.h>

struct tls_cred {
	gnutls_certificate_credentials_t x509;
	unsigned refs; /* the store's (while current) and each connection's */
};

struct tls_store {
	char cert_file[4096], key_file[4096];
	char ca_file[4096]; /* "" : no client certificate asked for */
	struct tls_cred *current;
};

/* Loads cert_file (PEM chain, leaf first) and key_file (PEM), and when
   ca_file is neither NULL nor "", the CA bundle (PEM) that signs the
   clients' certificates. Returns 0, or -EINVAL with the file and
   GnuTLS's reason in err. */
int tls_store_init(struct tls_store *t, const char *cert_file, const char *key_file,
		   const char *ca_file, char *err, size_t errlen);
/* Reads the files again; on any error the current credentials stay. */
int tls_store_reload(struct tls_store *t, char *err, size_t errlen);
void tls_store_clear(struct tls_store *t);

/* Whether the peer of session (a server's) sent a certificate that the
   session's credentials' CA signs, valid now and for client
   authentication. Returns 0, or -EACCES with the reason in why. */
int tls_client_check(gnutls_session_t session, char *why, size_t whylen);

struct tls_cred *tls_cred_ref(struct tls_cred *c);
/* NULL is a no-op. */
void tls_cred_unref(struct tls_cred *c);

#endif
