/* config: the gateway's settings, from its command line and an optional
   config file with the same keys ("key = value" lines, '#' comments;
   a flag given on the command line wins over the file). The options,
   their ranges, defaults and help are one table, config_table.c. */
#ifndef PTG_GATEWAY_CONFIG_H
#define PTG_GATEWAY_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "addr.h"
#include "peers.h"
#include "ptg_limits.h"
#include "wshandshake.h"

#define GW_MAX_INSTANCES   1024
#define GW_MAX_KEYS	   64
#define GW_MAX_ORIGINS	   64
#define GW_MAX_LINK_LISTEN 8 /* --link-listen addresses */

struct gw_instance_cfg {
	char id[PTG_ID_MAX + 1];
	struct addr addr;
};

struct gw_key_spec {
	int ed25519;	 /* 1: Ed25519 public key file; 0: HS256 secret file */
	char spec[4200]; /* "[KID=]FILE" as given */
};

struct gw_config {
	char listen_host[256]; /* default 127.0.0.1 */
	uint16_t listen_port;  /* default 8080; 0 picks a free port */
	char admin_host[256];  /* "" : admin routes on the main port */
	uint16_t admin_port;
	char public_url[512]; /* base of attach_url; "" derives http://HOST:PORT */
	char gateway_id[129]; /* hostname by default */

	struct gw_instance_cfg instances[GW_MAX_INSTANCES];
	size_t n_instances; /* from --instance and the instances file */
	size_t
	    n_flag_instances; /* the first ones, from --instance: a reload keeps them */
	size_t n_file_instances; /* while parsing: the first ones, from the config file */
	char instances_file[4096]; /* reloaded on SIGHUP */

	/* registered instances: sidecars that dial in */
	struct addr link_listen[GW_MAX_LINK_LISTEN];
	size_t n_link_listen;
	char link_keys[GW_MAX_KEYS][4200]; /* "KID=FILE": Ed25519 public keys */
	size_t n_link_keys;
	uint32_t link_auth_timeout_s; /* a link's credential must come by then (5) */
	uint32_t link_renew_grace_s;  /* a linked credential's exp plus this (60) */
	uint32_t link_grace_s;	    /* a registered instance stays down this long (30) */
	uint32_t max_instances;	    /* configured and registered together (10000) */
	uint32_t max_pending_links; /* links awaiting their credential (256) */

	struct gw_key_spec keys[GW_MAX_KEYS];
	size_t n_keys;
	char audience[256]; /* "" : not checked */
	char issuer[256];

	uint32_t ping_interval_s;	  /* 30 */
	uint32_t pong_timeout_s;	  /* 10 */
	uint32_t max_conns_per_principal; /* 16 */
	uint32_t max_conns_per_instance;  /* 256 */
	uint32_t max_conns;		  /* 4096, all together */
	uint64_t max_queue_bytes;    /* per connection before PTY_OUTPUT_LAGGED: 12 MiB */
	uint32_t max_queue_ms;	     /* oldest waiting output before it, 0: off (2000) */
	uint32_t max_frame_bytes;    /* incoming WebSocket message: 1 MiB */
	uint32_t request_timeout_ms; /* a sidecar request: 10000 */
	uint32_t violation_limit;    /* protocol violations before 4400: 10 */
	/* http: what one client address may hold, and for how long */
	uint32_t max_conns_per_ip;	 /* 32 */
	uint32_t request_head_timeout_s; /* 10 */
	struct peer_cidr trusted_proxies[PEERS_MAX_TRUSTED];
	size_t n_trusted_proxies;
	char tls_cert[4096]; /* PEM chain; "" : plain HTTP */
	char tls_key[4096];
	int no_deflate;	     /* never agree permessage-deflate (RFC 7692) */
	int allow_plaintext; /* plain HTTP off loopback (behind a TLS proxy) */
	char allowed_origins[GW_MAX_ORIGINS][WSHS_ORIGIN_MAX + 1]; /* canonical */
	size_t n_allowed_origins; /* 0: same origin only, when Origin is sent */

	uint32_t queue_stall_s;	   /* over the queue cap this long: close 4429 (10) */
	uint32_t max_ops_per_sec;  /* client ops per second, bursts of 2 s (200) */
	uint64_t link_queue_bytes; /* toward one sidecar before a re-dial: 16 MiB */
	uint32_t rest_rate; /* REST requests a second per principal, 2 s bursts (100) */
	uint32_t rest_concurrency; /* REST requests in flight per principal (8) */
	char static_dir[4096];	   /* web page files; "" : none */
	/* the fleet registry (gateway/fleet/registry.h) */
	char registry[4096];	    /* "etcd:URL[,URL...]"; "" : none */
	char registry_prefix[256];  /* "/ptygate/" */
	uint32_t registry_ttl_s;    /* the lease's TTL (10) */
	char fleet_url[512];	    /* where other gateways reach this one */
	char registry_cacert[4096]; /* TLS to etcd */
	char registry_cert[4096];
	char registry_key[4096];
	char registry_user[256]; /* etcd authentication */
	char registry_password_file[4096];
	uint32_t max_routes; /* instances the routing cache holds */
	/* forwarding to the owning gateway (gateway/fleet/forward.h) */
	char fleet_secret_file[4096]; /* the fleet's shared secret; "" : no forwarding */
	char fleet_cacert[4096];      /* TLS to other gateways (https fleet URLs) */
	char fleet_cert[4096];	      /* this gateway's client certificate for them */
	char fleet_key[4096];
	char fleet_listen_host[256]; /* "" : forwarded requests on --listen */
	uint16_t fleet_listen_port;  /* mutual TLS: --fleet-cert, --fleet-cacert */
	int log_level;
	int log_format; /* enum log_format */
	char pid_file[4096];
};

void gw_config_defaults(struct gw_config *c);
/* Parses argv (and --config FILE). Returns 0 to run, 1 after --help,
   --version or a manual page, -EINVAL after printing the reason to
   stderr. */
int gw_config_parse(struct gw_config *c, int argc, char **argv);
/* Reads an instances file ("ID ADDR" lines, '#' comments) into
   out[0..*n). Returns 0 or -EINVAL with the file and line in err. */
int gw_config_read_instances(const char *path, struct gw_instance_cfg *out, size_t max,
			     size_t *n, char *err, size_t errlen);
/* The same on the file's text[0, len) (any bytes; control characters
   other than tabs and a CRLF ending are refused);
   name stands for the file in err ("NAME:LINE: reason"). */
int gw_config_parse_instances(const char *text, size_t len, const char *name,
			      struct gw_instance_cfg *out, size_t max, size_t *n,
			      char *err, size_t errlen);

#endif
