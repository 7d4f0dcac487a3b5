/* peers: client addresses for the per-address connection cap. An
   address is kept as 16 bytes (IPv4 as ::ffff:a.b.c.d), so one table
   and one CIDR match serve both families. The client behind a trusted
   reverse proxy is the last untrusted hop of X-Forwarded-For; a count
   table tracks how many connections (or proxied requests) each address
   holds. */
#ifndef PTG_PEERS_H
#define PTG_PEERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define PEERS_MAX_TRUSTED 64 /* --trusted-proxy entries */

struct peer_addr {
	uint8_t b[16];
};

struct peer_cidr {
	struct peer_addr net; /* host bits zeroed */
	unsigned bits;	      /* prefix length in IPv6 terms (IPv4 /n is 96+n) */
};

/* Returns 0, or -EAFNOSUPPORT for a family other than IPv4 and IPv6. */
int peer_addr_from_sockaddr(const struct sockaddr *sa, struct peer_addr *out);
/* s[0..n) is a numeric IPv4 or IPv6 address (IPv6 optionally in
   brackets), no port. Returns 0 or -EINVAL. */
int peer_addr_parse(const char *s, size_t n, struct peer_addr *out);
/* The address as text (IPv4 dotted for mapped addresses). */
void peer_addr_str(const struct peer_addr *a, char *out, size_t cap);
/* "ADDR" or "ADDR/BITS" (IPv4 /0-32, IPv6 /0-128). Returns 0 or -EINVAL. */
int peer_cidr_parse(const char *s, struct peer_cidr *out);
bool peer_cidr_contains(const struct peer_cidr *c, const struct peer_addr *a);
bool peer_trusted(const struct peer_cidr *list, size_t n, const struct peer_addr *a);
/* The client of a request that came from peer: peer itself unless peer
   is trusted; then X-Forwarded-For (xff, NULL when absent) read from the
   right, skipping trusted hops; the first untrusted hop is the client
   (a proxy in front of ours can write anything to its left). When every
   hop is trusted, the leftmost; when a hop is not an address, or the
   header is absent, the peer. */
void peer_client(const struct peer_cidr *trusted, size_t n, const struct peer_addr *peer,
		 const char *xff, struct peer_addr *out);

/* Connections per address: an IPv4 address, or an IPv6 /64 (one host
   usually holds a whole /64). An IPv6 /56, what providers delegate to
   one customer's site (256 /64s to pick from), holds at most
   PEERS_SITE_FACTOR times the per-address limit in all, so one site
   cannot multiply its share by spreading over its /64s. */
#define PEERS_SITE_FACTOR 4
struct peer_table;
struct peer_table *peer_table_new(void);
void peer_table_free(struct peer_table *t);
/* Whether a is at limit: its address, or for IPv6 its /56 at
   limit * PEERS_SITE_FACTOR. */
bool peer_table_full(const struct peer_table *t, const struct peer_addr *a,
		     unsigned limit);
/* Counts one more for a when peer_table_full says it is not full:
   returns 0, or -EBUSY. */
int peer_table_take(struct peer_table *t, const struct peer_addr *a, unsigned limit);
void peer_table_give(struct peer_table *t, const struct peer_addr *a);

#endif
