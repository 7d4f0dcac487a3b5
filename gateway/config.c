/* config: the command line and config file of ptygate-gateway. Every
   value is checked and bounded here, so the daemon starts only with a
   configuration it can honour, and every error names the flag (or the
   file and line) it came from.

   Precedence: the config file is applied first, then the command line,
   so a scalar flag given on the command line wins. Repeatable keys
   accumulate; an --instance on the command line replaces the file's
   entry with the same id, and --instance entries (from either) win over
   the instances file's. */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fdio.h"
#include "id.h"
#include "keys.h"
#include "log.h"
#include "num.h"
#include "ptg_limits.h"
#include "xalloc.h"

#define CONFIG__PROG	 "ptygate-gateway"
#define CONFIG__LINE_MAX 8192
/* An instances file: GW_MAX_INSTANCES lines of up to CONFIG__LINE_MAX bytes. */
#define CONFIG__INSTANCES_FILE_MAX ((size_t)GW_MAX_INSTANCES * CONFIG__LINE_MAX)
/* A config file: every key a few times over, with comments. */
#define CONFIG__FILE_MAX (1u << 20)

static const char
    usage
	[] = "Usage: " CONFIG__PROG
	     " [--config FILE] --instance ID=ADDR --hs256-secret-file FILE\n"
	     "                       [options]\n"
	     "\n"
	     "Serves the terminal sessions of sandbox instances to WebSocket clients\n"
	     "(pty-ws/v1) and a session REST API, relaying to each instance's\n"
	     "ptygate-sidecar over one link per instance.\n"
	     "\n"
	     "At least one verification key (--hs256-secret-file or "
	     "--ed25519-public-key)\n"
	     "and at least one instance (--instance or --instances-file) or a\n"
	     "--link-listen address with its --link-key are required.\n"
	     "\n"
	     "Listening:\n"
	     "  --listen HOST:PORT            public HTTP/WebSocket address; [V6]:PORT "
	     "for\n"
	     "                                IPv6; port 0 picks a free one "
	     "(127.0.0.1:8080)\n"
	     "  --admin-listen HOST:PORT      serve /healthz /readyz /metrics and the\n"
	     "                                AgentCard here only (default: on "
	     "--listen)\n"
	     "  --public-url URL              base URL clients reach this gateway at, "
	     "for\n"
	     "                                attach_url and the AgentCard; http(s):// "
	     "or\n"
	     "                                ws(s):// (default: http://HOST:PORT of "
	     "--listen)\n"
	     "  --gateway-id ID               name sent to sidecars (default: hostname)\n"
	     "  --static-dir DIR              serve the web page files in DIR (default: "
	     "none)\n"
	     "\n"
	     "Instances:\n"
	     "  --instance ID=ADDR            a sandbox and its sidecar's link address:\n"
	     "                                unix:/path, tcp:HOST:PORT or "
	     "vsock:CID:PORT;\n"
	     "                                repeatable\n"
	     "  --instances-file FILE         \"ID ADDR\" lines, '#' comments; re-read "
	     "on\n"
	     "                                SIGHUP (default: none)\n"
	     "\n"
	     "Registered instances (sidecars that dial in with a credential):\n"
	     "  --link-listen ADDR            accept sidecar links at unix:/path,\n"
	     "                                tcp:HOST:PORT (loopback only) or "
	     "vsock:CID:PORT;\n"
	     "                                repeatable, up to " PTG_STR(
		 GW_MAX_LINK_LISTEN) "\n"
				     "  --link-key KID=FILE           an Ed25519 public "
				     "key that signs instance\n"
				     "                                credentials; "
				     "repeatable; re-read on SIGHUP\n"
				     "  --link-auth-timeout S         a link's "
				     "credential must arrive within S s,\n"
				     "                                1-600 (5)\n"
				     "  --link-renew-grace S          a linked "
				     "credential may be S s past its exp\n"
				     "                                before the link is "
				     "closed, 0-86400 (60)\n"
				     "  --link-grace S                a registered "
				     "instance whose link dropped stays\n"
				     "                                (down) S s before "
				     "it is removed, 0-86400 (30)\n"
				     "  --max-instances N             instances in all, "
				     "configured and registered,\n"
				     "                                1-1000000 (10000)\n"
				     "  --max-pending-links N         links awaiting "
				     "their credential, 1-100000 (256)\n"
				     "\n"
				     "Authentication (SPEC 7):\n"
				     "  --hs256-secret-file [KID=]FILE  an HS256 secret "
				     "(" PTG_STR(KEYS_HS256_MIN_FILE) " to " PTG_STR(
					 KEYS_HS256_MAX) " bytes); repeatable\n"
							 "  --ed25519-public-key "
							 "[KID=]FILE an Ed25519 public "
							 "key "
							 "(PEM or base64);\n"
							 "                               "
							 "   repeatable\n"
							 "  --audience AUD               "
							 " require this \"aud\" claim "
							 "(default: not checked)\n"
							 "  --issuer ISS                 "
							 " require this \"iss\" claim "
							 "(default: not checked)\n"
							 "\n"
							 "Limits:\n"
							 "  --ping-interval S            "
							 " WebSocket Ping after S idle "
							 "seconds, 1-3600 (30)\n"
							 "  --pong-timeout S             "
							 " close 1011 without a Pong "
							 "in S s, 1-600 (10)\n"
							 "  --max-conns-per-principal N  "
							 " connections per token "
							 "subject, 1-100000 (16)\n"
							 "  --max-conns-per-instance N   "
							 " connections per instance, "
							 "1-1000000 (256)\n"
							 "  --max-conns N                "
							 " connections in all, "
							 "1-1000000 (4096)\n"
							 "  --max-queue-bytes B          "
							 " a connection's output queue "
							 "before\n"
							 "                               "
							 " PTY_OUTPUT_LAGGED, "
							 "65536-1073741824 (12582912)\n"
							 "  --max-queue-ms MS            "
							 " how long output may wait in "
							 "a connection's queue\n"
							 "                               "
							 " before PTY_OUTPUT_LAGGED "
							 "(0: no bound),\n"
							 "                               "
							 " 0-3600000 (2000)\n"
							 "  --max-frame-bytes B          "
							 " largest client message, "
							 "1024-16777216 (1048576)\n"
							 "  --request-timeout-ms MS      "
							 " a sidecar request's "
							 "deadline, 100-600000 (10000)\n"
							 "  --violation-limit N          "
							 " protocol violations before "
							 "close " PTG_STR(
							     PTG_CLOSE_VIOLATIONS) ",\n"
										   "     "
										   "     "
										   "     "
										   "     "
										   "     "
										   "     "
										   "  "
										   "1-"
										   "10000"
										   "0 "
										   "(10)"
										   "\n"
										   "  "
										   "--"
										   "queue"
										   "-stal"
										   "l-"
										   "timeo"
										   "ut S "
										   "     "
										   " "
										   "close"
										   " " PTG_STR(
										       PTG_CLOSE_LIMITED) " a client "
													  "whose "
													  "queue "
													  "stays "
													  "over\n"
													  "           "
													  "           "
													  "          "
													  "--max-"
													  "queue-"
													  "bytes for "
													  "S s, "
													  "1-3600 "
													  "(10)\n"
													  "  "
													  "--max-ops-"
													  "per-sec N  "
													  "         "
													  "client ops "
													  "per second "
													  "(bursts of "
													  "2 s), "
													  "then\n"
													  "           "
													  "           "
													  "          "
													  "the client "
													  "is not "
													  "read, "
													  "1-100000 "
													  "(200)\n"
													  "  "
													  "--link-"
													  "queue-"
													  "bytes B    "
													  "      "
													  "bytes "
													  "queued "
													  "toward one "
													  "sidecar "
													  "before "
													  "the\n"
													  "           "
													  "           "
													  "          "
													  "link is "
													  "dropped, "
													  "65536-"
													  "1073741824 "
													  "(16777216)"
													  "\n"
													  "  "
													  "--rest-"
													  "rate N     "
													  " "
													  "           "
													  "REST "
													  "requests "
													  "per second "
													  "per token "
													  "subject,\n"
													  "           "
													  "           "
													  "          "
													  "bursts of "
													  "2 s, then "
													  "429, "
													  "1-100000 "
													  "(100)\n"
													  "  "
													  "--rest-"
													  "concurrency"
													  " N         "
													  " REST "
													  "requests "
													  "in flight "
													  "per token "
													  "subject\n"
													  "           "
													  "           "
													  "          "
													  "before "
													  "429, "
													  "1-10000 "
													  "(8)\n"

													  "\n"
													  "HTTP "
													  "clients:\n"
													  "  "
													  "--max-"
													  "conns-per-"
													  "ip N       "
													  "   "
													  "connections"
													  " one "
													  "client "
													  "address "
													  "(IPv6: "
													  "its\n"
													  "           "
													  "           "
													  "          "
													  "/64) may "
													  "hold, "
													  "WebSockets "
													  "included,\n"
													  "           "
													  "           "
													  "          "
													  "1-1000000 "
													  "(32)\n"
													  "  "
													  "--trusted-"
													  "proxy CIDR "
													  "         a "
													  "reverse "
													  "proxy "
													  "(ADDR or "
													  "ADDR/"
													  "BITS): "
													  "its\n"
													  "           "
													  "           "
													  "          "
													  "connections"
													  " are not "
													  "capped, "
													  "its "
													  "requests\n"
													  "           "
													  "           "
													  "          "
													  "count for "
													  "the client "
													  "in "
													  "X-"
													  "Forwarded-"
													  "For\n"
													  "           "
													  "           "
													  "          "
													  "(last "
													  "untrusted "
													  "hop); "
													  "repeatable,"
													  " up "
													  "to"
													  " " PTG_STR(
													      PEERS_MAX_TRUSTED) "\n"
																 "  --request-head-timeout S      a request's head and body must arrive within\n"
																 "                                S seconds, however slowly it trickles,\n"
																 "                                1-3600 (10)\n"
																 "  --tls-cert FILE               serve https:// and wss:// on --listen with this\n"
																 "                                PEM certificate chain (leaf first); re-read\n"
																 "                                on SIGHUP (default: plain HTTP)\n"
																 "  --tls-key FILE                its PEM private key; re-read on SIGHUP\n"
																 "  --allow-plaintext             allow plain HTTP and ws:// on a non-loopback\n"
																 "                                --listen (behind a TLS-terminating proxy);\n"
																 "                                in a config file: allow-plaintext = true\n"
																 "  --no-deflate                  never agree permessage-deflate with clients;\n"
																 "                                in a config file: no-deflate = true\n"
																 "  --allowed-origin ORIGIN       a web page origin (scheme://host[:port]) that\n"
																 "                                may attach; repeatable, up to " PTG_STR(
																     GW_MAX_ORIGINS) " (default:\n"
																		     "                                a request with an Origin header must be same-\n"
																		     "                                origin: its host and port those of Host or\n"
																		     "                                --public-url; refused with 403)\n"
																		     "\n";

/* The fleet's options, a paragraph of their own. */
static const char usage_fleet[] =
    "Fleet registry (etcd):\n"
    "  --registry etcd:URL[,URL...] publish this gateway and its instances in\n"
    "                                etcd (v3 JSON gateway) and route from its\n"
    "                                map (default: no registry)\n"
    "  --registry-prefix PREFIX      the keys' prefix (/ptygate/)\n"
    "  --registry-ttl S              the lease's TTL, 2-3600 (10)\n"
    "  --fleet-url URL               where other gateways reach this one\n"
    "                                (default: --public-url)\n"
    "  --registry-cacert FILE        PEM CA bundle that signs etcd's certificate\n"
    "  --registry-cert FILE          client certificate for etcd (PEM)\n"
    "  --registry-key FILE           its private key (PEM)\n"
    "  --registry-user NAME          etcd user (with --registry-password-file)\n"
    "  --registry-password-file FILE its password\n"
    "  --max-routes N                instances the routing cache holds,\n"
    "                                1-10000000 (1000000)\n"
    "  --gateway-id names this gateway in the fleet: unique (default: the\n"
    "  host name)\n"
    "\n"
    "Forwarding to the owning gateway:\n"
    "  --fleet-secret-file FILE      the secret every gateway of the fleet shares\n"
    "                                (32 bytes or more): signs forwarded requests\n"
    "                                and lets this gateway believe X-Forwarded-For\n"
    "                                from the fleet's gateways (default: none, no\n"
    "                                forwarding)\n"
    "  --fleet-cacert FILE           PEM CA bundle that signs the other gateways'\n"
    "                                certificates (https:// fleet URLs)\n"
    "  --fleet-cert FILE             this gateway's certificate for them (PEM)\n"
    "  --fleet-key FILE              its private key (PEM)\n"
    "  --fleet-listen HOST:PORT      take forwarded requests here only: HTTPS\n"
    "                                with --fleet-cert, a client certificate\n"
    "                                signed by --fleet-cacert required (default:\n"
    "                                on --listen, no client certificate)\n"
    "\n";

static const char usage_process[] =
    "Process:\n"
    "  --config FILE                 read \"key = value\" lines (keys are these flags\n"
    "                                without the dashes, '#' comments); flags on\n"
    "                                the command line win\n"
    "  --log-level LEVEL             debug, info, warn or error (info)\n"
    "  --log-format FORMAT           text or json: one object a line (text)\n"
    "  --pid-file FILE               write the process id here (default: none)\n"
    "  --help                        this text\n"
    "  --version                     the version\n"
    "\n"
    "Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 on a runtime\n"
    "failure, 2 for a usage error.\n";

enum {
	OPT_CONFIG = 256,
	OPT_LISTEN,
	OPT_ADMIN,
	OPT_PUBLIC_URL,
	OPT_GATEWAY_ID,
	OPT_STATIC,
	OPT_INSTANCE,
	OPT_INSTANCES_FILE,
	OPT_HS256,
	OPT_ED25519,
	OPT_AUDIENCE,
	OPT_ISSUER,
	OPT_PING,
	OPT_PONG,
	OPT_PER_PRINCIPAL,
	OPT_PER_INSTANCE,
	OPT_MAX_CONNS,
	OPT_QUEUE,
	OPT_QUEUE_MS,
	OPT_FRAME,
	OPT_REQ_TIMEOUT,
	OPT_VIOLATIONS,
	OPT_PER_IP,
	OPT_TRUSTED_PROXY,
	OPT_HEAD_TIMEOUT,
	OPT_TLS_CERT,
	OPT_TLS_KEY,
	OPT_ALLOW_PLAINTEXT,
	OPT_NO_DEFLATE,
	OPT_ALLOWED_ORIGIN,
	OPT_STALL,
	OPT_OPS_RATE,
	OPT_LINK_QUEUE,
	OPT_REST_RATE,
	OPT_REST_CONCURRENCY,
	OPT_LINK_LISTEN,
	OPT_LINK_KEY,
	OPT_LINK_AUTH_TIMEOUT,
	OPT_LINK_RENEW_GRACE,
	OPT_LINK_GRACE,
	OPT_MAX_INSTANCES,
	OPT_MAX_PENDING_LINKS,
	OPT_REGISTRY,
	OPT_REGISTRY_PREFIX,
	OPT_REGISTRY_TTL,
	OPT_FLEET_URL,
	OPT_REGISTRY_CACERT,
	OPT_REGISTRY_CERT,
	OPT_REGISTRY_KEY,
	OPT_REGISTRY_USER,
	OPT_REGISTRY_PASSWORD_FILE,
	OPT_MAX_ROUTES,
	OPT_FLEET_SECRET_FILE,
	OPT_FLEET_CACERT,
	OPT_FLEET_CERT,
	OPT_FLEET_KEY,
	OPT_FLEET_LISTEN,
	OPT_LOG,
	OPT_LOG_FORMAT,
	OPT_PID,
	OPT_HELP,
	OPT_VERSION,
};

static const struct option options[] = {
    {"config", required_argument, NULL, OPT_CONFIG},
    {"listen", required_argument, NULL, OPT_LISTEN},
    {"admin-listen", required_argument, NULL, OPT_ADMIN},
    {"public-url", required_argument, NULL, OPT_PUBLIC_URL},
    {"gateway-id", required_argument, NULL, OPT_GATEWAY_ID},
    {"static-dir", required_argument, NULL, OPT_STATIC},
    {"instance", required_argument, NULL, OPT_INSTANCE},
    {"instances-file", required_argument, NULL, OPT_INSTANCES_FILE},
    {"hs256-secret-file", required_argument, NULL, OPT_HS256},
    {"ed25519-public-key", required_argument, NULL, OPT_ED25519},
    {"audience", required_argument, NULL, OPT_AUDIENCE},
    {"issuer", required_argument, NULL, OPT_ISSUER},
    {"ping-interval", required_argument, NULL, OPT_PING},
    {"pong-timeout", required_argument, NULL, OPT_PONG},
    {"max-conns-per-principal", required_argument, NULL, OPT_PER_PRINCIPAL},
    {"max-conns-per-instance", required_argument, NULL, OPT_PER_INSTANCE},
    {"max-conns", required_argument, NULL, OPT_MAX_CONNS},
    {"max-queue-bytes", required_argument, NULL, OPT_QUEUE},
    {"max-queue-ms", required_argument, NULL, OPT_QUEUE_MS},
    {"max-frame-bytes", required_argument, NULL, OPT_FRAME},
    {"request-timeout-ms", required_argument, NULL, OPT_REQ_TIMEOUT},
    {"violation-limit", required_argument, NULL, OPT_VIOLATIONS},
    {"max-conns-per-ip", required_argument, NULL, OPT_PER_IP},
    {"trusted-proxy", required_argument, NULL, OPT_TRUSTED_PROXY},
    {"request-head-timeout", required_argument, NULL, OPT_HEAD_TIMEOUT},
    {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
    {"tls-key", required_argument, NULL, OPT_TLS_KEY},
    {"allow-plaintext", no_argument, NULL, OPT_ALLOW_PLAINTEXT},
    {"no-deflate", no_argument, NULL, OPT_NO_DEFLATE},
    {"allowed-origin", required_argument, NULL, OPT_ALLOWED_ORIGIN},
    {"queue-stall-timeout", required_argument, NULL, OPT_STALL},
    {"max-ops-per-sec", required_argument, NULL, OPT_OPS_RATE},
    {"link-queue-bytes", required_argument, NULL, OPT_LINK_QUEUE},
    {"rest-rate", required_argument, NULL, OPT_REST_RATE},
    {"rest-concurrency", required_argument, NULL, OPT_REST_CONCURRENCY},
    {"link-listen", required_argument, NULL, OPT_LINK_LISTEN},
    {"link-key", required_argument, NULL, OPT_LINK_KEY},
    {"link-auth-timeout", required_argument, NULL, OPT_LINK_AUTH_TIMEOUT},
    {"link-renew-grace", required_argument, NULL, OPT_LINK_RENEW_GRACE},
    {"link-grace", required_argument, NULL, OPT_LINK_GRACE},
    {"max-instances", required_argument, NULL, OPT_MAX_INSTANCES},
    {"max-pending-links", required_argument, NULL, OPT_MAX_PENDING_LINKS},
    {"registry", required_argument, NULL, OPT_REGISTRY},
    {"registry-prefix", required_argument, NULL, OPT_REGISTRY_PREFIX},
    {"registry-ttl", required_argument, NULL, OPT_REGISTRY_TTL},
    {"fleet-url", required_argument, NULL, OPT_FLEET_URL},
    {"registry-cacert", required_argument, NULL, OPT_REGISTRY_CACERT},
    {"registry-cert", required_argument, NULL, OPT_REGISTRY_CERT},
    {"registry-key", required_argument, NULL, OPT_REGISTRY_KEY},
    {"registry-user", required_argument, NULL, OPT_REGISTRY_USER},
    {"registry-password-file", required_argument, NULL, OPT_REGISTRY_PASSWORD_FILE},
    {"fleet-secret-file", required_argument, NULL, OPT_FLEET_SECRET_FILE},
    {"fleet-cacert", required_argument, NULL, OPT_FLEET_CACERT},
    {"fleet-cert", required_argument, NULL, OPT_FLEET_CERT},
    {"fleet-key", required_argument, NULL, OPT_FLEET_KEY},
    {"fleet-listen", required_argument, NULL, OPT_FLEET_LISTEN},
    {"max-routes", required_argument, NULL, OPT_MAX_ROUTES},
    {"log-level", required_argument, NULL, OPT_LOG},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"pid-file", required_argument, NULL, OPT_PID},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0},
};

/* Bounds of the numeric options, by option. */
struct num {
	int opt;
	uint64_t lo, hi;
	size_t off, size;
};

#define CONFIG__NUM(o, l, h, field)                                                      \
	{                                                                                \
		o, l, h, offsetof(struct gw_config, field),                              \
		    sizeof(((struct gw_config *)0)->field)                               \
	}

static const struct num nums[] = {
    CONFIG__NUM(OPT_PING, 1, 3600, ping_interval_s),
    CONFIG__NUM(OPT_PONG, 1, 600, pong_timeout_s),
    CONFIG__NUM(OPT_PER_PRINCIPAL, 1, 100000, max_conns_per_principal),
    CONFIG__NUM(OPT_PER_INSTANCE, 1, 1000000, max_conns_per_instance),
    CONFIG__NUM(OPT_MAX_CONNS, 1, 1000000, max_conns),
    CONFIG__NUM(OPT_QUEUE, 65536, 1ull << 30, max_queue_bytes),
    CONFIG__NUM(OPT_QUEUE_MS, 0, 3600000, max_queue_ms),
    CONFIG__NUM(OPT_FRAME, 1024, 16u << 20, max_frame_bytes),
    CONFIG__NUM(OPT_REQ_TIMEOUT, 100, 600000, request_timeout_ms),
    CONFIG__NUM(OPT_VIOLATIONS, 1, 100000, violation_limit),
    CONFIG__NUM(OPT_PER_IP, 1, 1000000, max_conns_per_ip),
    CONFIG__NUM(OPT_HEAD_TIMEOUT, 1, 3600, request_head_timeout_s),
    CONFIG__NUM(OPT_STALL, 1, 3600, queue_stall_s),
    CONFIG__NUM(OPT_OPS_RATE, 1, 100000, max_ops_per_sec),
    CONFIG__NUM(OPT_LINK_QUEUE, 65536, 1ull << 30, link_queue_bytes),
    CONFIG__NUM(OPT_REST_RATE, 1, 100000, rest_rate),
    CONFIG__NUM(OPT_REST_CONCURRENCY, 1, 10000, rest_concurrency),
    CONFIG__NUM(OPT_LINK_AUTH_TIMEOUT, 1, 600, link_auth_timeout_s),
    CONFIG__NUM(OPT_LINK_RENEW_GRACE, 0, 86400, link_renew_grace_s),
    CONFIG__NUM(OPT_LINK_GRACE, 0, 86400, link_grace_s),
    CONFIG__NUM(OPT_MAX_INSTANCES, 1, 1000000, max_instances),
    CONFIG__NUM(OPT_MAX_PENDING_LINKS, 1, 100000, max_pending_links),
    CONFIG__NUM(OPT_REGISTRY_TTL, 2, 3600, registry_ttl_s),
    CONFIG__NUM(OPT_MAX_ROUTES, 1, 10000000, max_routes),
};

/* Where a value came from, for messages and for --instance precedence. */
struct source {
	const char *file; /* NULL: the command line */
	unsigned line;
	size_t n_file_instances; /* instances[0, n) came from the config file */
};

static void report(const struct source *src, const char *opt, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void report(const struct source *src, const char *opt, const char *fmt, ...)
{
	va_list ap;

	if (src && src->file)
		fprintf(stderr, CONFIG__PROG ": %s:%u: %s: ", src->file, src->line, opt);
	else
		fprintf(stderr, CONFIG__PROG ": --%s: ", opt);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void gw_config_defaults(struct gw_config *c)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
	c->listen_port = 8080;
	c->ping_interval_s = 30;
	c->pong_timeout_s = 10;
	c->max_conns_per_principal = 16;
	c->max_conns_per_instance = 256;
	c->max_conns = 4096;
	c->max_queue_bytes = 12ull << 20;
	c->max_queue_ms = 2000;
	c->max_frame_bytes = 1u << 20;
	c->request_timeout_ms = 10000;
	c->violation_limit = 10;
	c->max_conns_per_ip = 32;
	c->request_head_timeout_s = 10;
	c->queue_stall_s = 10;
	c->max_ops_per_sec = 200;
	c->link_queue_bytes = 16ull << 20;
	c->rest_rate = 100;
	c->rest_concurrency = 8;
	c->link_auth_timeout_s = 5;
	c->link_renew_grace_s = 60;
	c->link_grace_s = 30;
	c->max_instances = 10000;
	c->max_pending_links = 256;
	snprintf(c->registry_prefix, sizeof(c->registry_prefix), "/ptygate/");
	c->registry_ttl_s = 10;
	c->max_routes = 1000000;
	c->log_level = LOG_INFO;
	if (gethostname(c->gateway_id, sizeof(c->gateway_id) - 1) < 0 ||
	    !c->gateway_id[0])
		snprintf(c->gateway_id, sizeof(c->gateway_id), "gateway");
}

static const char *option_name(int opt)
{
	for (const struct option *o = options; o->name; o++)
		if (o->val == opt)
			return o->name;
	return "?";
}

static int num(struct gw_config *c, const struct source *src, const struct num *n,
	       const char *s)
{
	uint64_t v;
	uint8_t *field = (uint8_t *)c + n->off;

	if (num_parse_u64(s, n->lo, n->hi, &v) < 0) {
		report(src, option_name(n->opt),
		       "expected a number from %" PRIu64 " to %" PRIu64 ", got '%s'",
		       n->lo, n->hi, s);
		return -EINVAL;
	}
	if (n->size == sizeof(uint64_t)) {
		memcpy(field, &v, sizeof(v));
	} else {
		uint32_t v32 = (uint32_t)v;
		memcpy(field, &v32, sizeof(v32));
	}
	return 0;
}

static int str(const struct source *src, int opt, const char *s, char *dst, size_t cap)
{
	size_t n = strlen(s);

	if (!n || n >= cap) {
		report(src, option_name(opt), "must be 1 to %zu bytes", cap - 1);
		return -EINVAL;
	}
	memcpy(dst, s, n + 1);
	return 0;
}

static struct gw_instance_cfg *find(struct gw_config *c, const char *id, size_t from,
				    size_t to)
{
	for (size_t i = from; i < to; i++)
		if (!strcmp(c->instances[i].id, id))
			return &c->instances[i];
	return NULL;
}

/* "ID=ADDR". A command-line entry replaces the config file's entry with
   the same id; any other repeat of an id is an error. */
static int instance(struct gw_config *c, struct source *src, const char *s)
{
	const char *eq = strchr(s, '=');
	char id[sizeof(c->instances[0].id)], err[256];
	struct gw_instance_cfg *slot;
	struct addr a;

	if (!eq || (size_t)(eq - s) >= sizeof(id)) {
		report(src, "instance", "expected ID=ADDR, got '%s'", s);
		return -EINVAL;
	}
	memcpy(id, s, (size_t)(eq - s));
	id[eq - s] = '\0';
	if (!id_valid(id)) {
		report(src, "instance",
		       "bad instance id '%s' (1 to %d of A-Z a-z 0-9 . _ ~ : @ -)", id,
		       PTG_ID_MAX);
		return -EINVAL;
	}
	if (addr_parse(eq + 1, &a, err, sizeof(err)) < 0) {
		report(src, "instance", "%s: %s", id, err);
		return -EINVAL;
	}
	slot = find(c, id, src->file ? 0 : src->n_file_instances, c->n_instances);
	if (slot) {
		report(src, "instance", "instance '%s' given twice", id);
		return -EINVAL;
	}
	slot = src->file ? NULL : find(c, id, 0, src->n_file_instances);
	if (!slot) {
		if (c->n_instances >= GW_MAX_INSTANCES) {
			report(src, "instance", "more than %d instances",
			       GW_MAX_INSTANCES);
			return -EINVAL;
		}
		slot = &c->instances[c->n_instances++];
	}
	snprintf(slot->id, sizeof(slot->id), "%s", id);
	slot->addr = a;
	return 0;
}

static int set_option(struct gw_config *c, const struct source *src, int opt,
		      const char *s)
{
	struct gw_key_spec *k;

	if (c->n_keys >= GW_MAX_KEYS) {
		report(src, option_name(opt), "more than %d keys", GW_MAX_KEYS);
		return -EINVAL;
	}
	k = &c->keys[c->n_keys];
	if (str(src, opt, s, k->spec, sizeof(k->spec)) < 0)
		return -EINVAL;
	k->ed25519 = opt == OPT_ED25519;
	c->n_keys++;
	return 0;
}

/* http(s):// or ws(s)://, a host, no query or fragment; a trailing '/'
   is dropped so paths append cleanly. */
static int public_url(struct gw_config *c, const struct source *src, const char *s)
{
	static const char *const schemes[] = {"http://", "https://", "ws://", "wss://"};
	size_t n = strlen(s), skip = 0;

	for (size_t i = 0; i < 4 && !skip; i++)
		if (!strncmp(s, schemes[i], strlen(schemes[i])))
			skip = strlen(schemes[i]);
	if (!skip || n == skip || s[skip] == '/' || strpbrk(s, "?# \t\r\n\"") ||
	    n >= sizeof(c->public_url)) {
		report(src, "public-url",
		       "expected http(s):// or ws(s)://HOST[:PORT][/PATH], got '%s'", s);
		return -EINVAL;
	}
	while (n > skip && s[n - 1] == '/')
		n--;
	memcpy(c->public_url, s, n);
	c->public_url[n] = '\0';
	return 0;
}

static int static_dir(struct gw_config *c, const struct source *src, const char *s)
{
	struct stat st;

	if (str(src, OPT_STATIC, s, c->static_dir, sizeof(c->static_dir)) < 0)
		return -EINVAL;
	if (stat(s, &st) < 0 || !S_ISDIR(st.st_mode)) {
		report(src, "static-dir", "'%s' is not a directory", s);
		return -EINVAL;
	}
	return 0;
}

static int parse_listen(const struct source *src, int opt, const char *s, char *host,
			size_t cap, uint16_t *port)
{
	char why[128];

	if (addr_parse_hostport(s, strlen(s), ADDR_PORT_ZERO, host, cap, port, why,
				sizeof(why)) < 0) {
		report(src, option_name(opt),
		       "expected HOST:PORT or [IPV6]:PORT (port 0-65535), got '%s': %s",
		       s, why);
		return -EINVAL;
	}
	return 0;
}

/* A flag without a value: on the command line arg is NULL; in a config
   file the value must be "true" or "false". */
static int set_switch(const struct source *src, int opt, const char *arg, int *out)
{
	if (!arg || !strcmp(arg, "true")) {
		*out = 1;
		return 0;
	}
	if (!strcmp(arg, "false")) {
		*out = 0;
		return 0;
	}
	report(src, option_name(opt), "expected true or false, got '%s'", arg);
	return -EINVAL;
}

/* http: one --allowed-origin, kept canonical for comparison. */
static int allowed_origin(struct gw_config *c, const struct source *src, const char *s)
{
	if (c->n_allowed_origins >= GW_MAX_ORIGINS) {
		report(src, "allowed-origin", "more than %d origins", GW_MAX_ORIGINS);
		return -EINVAL;
	}
	if (wshs_origin_canon(s, strlen(s), c->allowed_origins[c->n_allowed_origins]) <
	    0) {
		report(src, "allowed-origin",
		       "expected http(s)://HOST[:PORT] without a path, got '%s'", s);
		return -EINVAL;
	}
	c->n_allowed_origins++;
	return 0;
}

/* http: one --trusted-proxy entry. */
static int trusted_proxy(struct gw_config *c, const struct source *src, const char *s)
{
	if (c->n_trusted_proxies >= PEERS_MAX_TRUSTED) {
		report(src, "trusted-proxy", "more than %d entries", PEERS_MAX_TRUSTED);
		return -EINVAL;
	}
	if (peer_cidr_parse(s, &c->trusted_proxies[c->n_trusted_proxies]) < 0) {
		report(src, "trusted-proxy",
		       "expected an IP address or ADDR/BITS, got '%s'", s);
		return -EINVAL;
	}
	c->n_trusted_proxies++;
	return 0;
}

/* One --link-listen address. */
static int link_listen(struct gw_config *c, const struct source *src, const char *s)
{
	char err[256];

	if (c->n_link_listen >= GW_MAX_LINK_LISTEN) {
		report(src, "link-listen", "more than %d addresses", GW_MAX_LINK_LISTEN);
		return -EINVAL;
	}
	if (addr_parse(s, &c->link_listen[c->n_link_listen], err, sizeof(err)) < 0) {
		report(src, "link-listen", "%s", err);
		return -EINVAL;
	}
	c->n_link_listen++;
	return 0;
}

/* One --link-key KID=FILE: a kid is required, so keys rotate by kid. */
static int link_key(struct gw_config *c, const struct source *src, const char *s)
{
	const char *eq = strchr(s, '=');

	if (c->n_link_keys >= GW_MAX_KEYS) {
		report(src, "link-key", "more than %d keys", GW_MAX_KEYS);
		return -EINVAL;
	}
	if (!eq || eq == s || !eq[1]) {
		report(src, "link-key", "expected KID=FILE, got '%s'", s);
		return -EINVAL;
	}
	if (str(src, OPT_LINK_KEY, s, c->link_keys[c->n_link_keys],
		sizeof(c->link_keys[0])) < 0)
		return -EINVAL;
	c->n_link_keys++;
	return 0;
}

/* The registry's kind and its endpoints; the endpoints' form is checked
   by the registry's client when the gateway starts. */
static int registry(struct gw_config *c, const struct source *src, const char *s)
{
	if (strncmp(s, "etcd:", 5) != 0 || !s[5]) {
		report(src, option_name(OPT_REGISTRY),
		       "expected etcd:URL[,URL...], got '%s'", s);
		return -EINVAL;
	}
	return str(src, OPT_REGISTRY, s + 5, c->registry, sizeof(c->registry));
}

static int log_level(struct gw_config *c, const struct source *src, const char *s)
{
	enum log_level lvl;

	if (log_level_parse(s, &lvl) < 0) {
		report(src, "log-level", "expected debug, info, warn or error, got '%s'",
		       s);
		return -EINVAL;
	}
	c->log_level = lvl;
	return 0;
}

static int log_format(struct gw_config *c, const struct source *src, const char *s)
{
	enum log_format fmt;

	if (log_format_parse(s, &fmt) < 0) {
		report(src, "log-format", "expected text or json, got '%s'", s);
		return -EINVAL;
	}
	c->log_format = fmt;
	return 0;
}

static int apply(struct gw_config *c, struct source *src, int opt, const char *arg)
{
	for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++)
		if (nums[i].opt == opt)
			return num(c, src, &nums[i], arg);
	switch (opt) {
	case OPT_LISTEN:
		return parse_listen(src, opt, arg, c->listen_host, sizeof(c->listen_host),
				    &c->listen_port);
	case OPT_ADMIN:
		return parse_listen(src, opt, arg, c->admin_host, sizeof(c->admin_host),
				    &c->admin_port);
	case OPT_PUBLIC_URL:
		return public_url(c, src, arg);
	case OPT_GATEWAY_ID:
		return str(src, opt, arg, c->gateway_id, sizeof(c->gateway_id));
	case OPT_STATIC:
		return static_dir(c, src, arg);
	case OPT_INSTANCE:
		return instance(c, src, arg);
	case OPT_INSTANCES_FILE:
		return str(src, opt, arg, c->instances_file, sizeof(c->instances_file));
	case OPT_HS256:
	case OPT_ED25519:
		return set_option(c, src, opt, arg);
	case OPT_AUDIENCE:
		return str(src, opt, arg, c->audience, sizeof(c->audience));
	case OPT_ISSUER:
		return str(src, opt, arg, c->issuer, sizeof(c->issuer));
	case OPT_TRUSTED_PROXY:
		return trusted_proxy(c, src, arg);
	case OPT_TLS_CERT:
		return str(src, opt, arg, c->tls_cert, sizeof(c->tls_cert));
	case OPT_TLS_KEY:
		return str(src, opt, arg, c->tls_key, sizeof(c->tls_key));
	case OPT_ALLOW_PLAINTEXT:
		return set_switch(src, opt, arg, &c->allow_plaintext);
	case OPT_NO_DEFLATE:
		return set_switch(src, opt, arg, &c->no_deflate);
	case OPT_ALLOWED_ORIGIN:
		return allowed_origin(c, src, arg);
	case OPT_LINK_LISTEN:
		return link_listen(c, src, arg);
	case OPT_LINK_KEY:
		return link_key(c, src, arg);
	case OPT_REGISTRY:
		return registry(c, src, arg);
	case OPT_REGISTRY_PREFIX:
		return str(src, opt, arg, c->registry_prefix, sizeof(c->registry_prefix));
	case OPT_FLEET_URL:
		return str(src, opt, arg, c->fleet_url, sizeof(c->fleet_url));
	case OPT_REGISTRY_CACERT:
		return str(src, opt, arg, c->registry_cacert, sizeof(c->registry_cacert));
	case OPT_REGISTRY_CERT:
		return str(src, opt, arg, c->registry_cert, sizeof(c->registry_cert));
	case OPT_REGISTRY_KEY:
		return str(src, opt, arg, c->registry_key, sizeof(c->registry_key));
	case OPT_REGISTRY_USER:
		return str(src, opt, arg, c->registry_user, sizeof(c->registry_user));
	case OPT_REGISTRY_PASSWORD_FILE:
		return str(src, opt, arg, c->registry_password_file,
			   sizeof(c->registry_password_file));
	case OPT_FLEET_SECRET_FILE:
		return str(src, opt, arg, c->fleet_secret_file,
			   sizeof(c->fleet_secret_file));
	case OPT_FLEET_CACERT:
		return str(src, opt, arg, c->fleet_cacert, sizeof(c->fleet_cacert));
	case OPT_FLEET_CERT:
		return str(src, opt, arg, c->fleet_cert, sizeof(c->fleet_cert));
	case OPT_FLEET_LISTEN:
		return parse_listen(src, opt, arg, c->fleet_listen_host,
				    sizeof(c->fleet_listen_host), &c->fleet_listen_port);
	case OPT_FLEET_KEY:
		return str(src, opt, arg, c->fleet_key, sizeof(c->fleet_key));
	case OPT_LOG:
		return log_level(c, src, arg);
	case OPT_LOG_FORMAT:
		return log_format(c, src, arg);
	case OPT_PID:
		return str(src, opt, arg, c->pid_file, sizeof(c->pid_file));
	}
	report(src, option_name(opt), "not allowed here");
	return -EINVAL;
}

/* Strips spaces and tabs at both ends, in place. */
static char *trim(char *s)
{
	size_t n;

	while (*s == ' ' || *s == '\t')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' ||
		     s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/* One "key = value" line of the config file; a value may be quoted. */
static int file_line(struct gw_config *c, struct source *src, char *line)
{
	char *eq, *key, *val;
	size_t n;

	line = trim(line);
	if (!line[0] || line[0] == '#')
		return 0;
	eq = strchr(line, '=');
	if (!eq) {
		fprintf(stderr, CONFIG__PROG ": %s:%u: expected 'key = value'\n",
			src->file, src->line);
		return -EINVAL;
	}
	*eq = '\0';
	key = trim(line);
	val = trim(eq + 1);
	n = strlen(val);
	if (n >= 2 && val[0] == '"' && val[n - 1] == '"') {
		val[n - 1] = '\0';
		val++;
	}
	for (const struct option *o = options; o->name; o++) {
		if (strcmp(o->name, key) != 0)
			continue;
		if (o->val == OPT_CONFIG || o->val == OPT_HELP || o->val == OPT_VERSION)
			break;
		return apply(c, src, o->val, val);
	}
	fprintf(stderr, CONFIG__PROG ": %s:%u: unknown key '%s'\n", src->file, src->line,
		key);
	return -EINVAL;
}

/* Whether line[0, n) holds a control byte other than a tab (a final CR
   of a CRLF ending aside): one inside a token would stay in it. */
static int has_control(const char *line, size_t n)
{
	if (n && line[n - 1] == '\r')
		n--;
	for (size_t i = 0; i < n; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') || line[i] == 0x7f)
			return 1;
	return 0;
}

/* What a config or instances file line is given to: the line without its
   '\n', NUL-terminated (it may be changed), and its number. On failure it
   says why in why, or leaves why empty when it said so itself. */
typedef int (*line_fn)(char *line, unsigned lineno, void *ctx, char *why, size_t whylen);

/* Calls fn on each line of text[0, len) until one fails; a line too long
   or holding a control byte is refused before fn sees it. Returns 0 or
   -EINVAL with *lineno the line that failed. */
static int lines(const char *text, size_t len, line_fn fn, void *ctx, unsigned *lineno,
		 char *why, size_t whylen)
{
	char line[CONFIG__LINE_MAX];
	size_t off = 0;
	int rc = 0;

	*lineno = 0;
	while (rc == 0 && off < len) {
		const char *nl = memchr(text + off, '\n', len - off);
		size_t end = nl ? (size_t)(nl - text) : len;

		++*lineno;
		why[0] = '\0';
		if (end - off >= sizeof(line) - 1) {
			snprintf(why, whylen, "line too long");
			rc = -EINVAL;
		} else if (has_control(text + off, end - off)) {
			snprintf(why, whylen, "control character in line");
			rc = -EINVAL;
		} else {
			memcpy(line, text + off, end - off);
			line[end - off] = '\0';
			rc = fn(line, *lineno, ctx, why, whylen);
		}
		off = end + 1;
	}
	return rc;
}

struct file_ctx {
	struct gw_config *c;
	struct source *src;
};

static int file_each(char *line, unsigned lineno, void *ctx, char *why, size_t whylen)
{
	struct file_ctx *f = ctx;

	f->src->line = lineno;
	return file_line(f->c, f->src, line); /* it says why itself */
}

static int load_file(struct gw_config *c, struct source *src, const char *path)
{
	struct file_ctx ctx = {c, src};
	struct buf text = BUF_INIT;
	char err[512], why[300];
	unsigned lineno;
	int rc;

	rc = fd_read_file(path, FDIO_REGULAR, CONFIG__FILE_MAX, &text, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, CONFIG__PROG ": --config: %s\n", err);
		return -EINVAL;
	}
	src->file = path;
	rc = lines((const char *)buf_head(&text), buf_size(&text), file_each, &ctx,
		   &lineno, why, sizeof(why));
	if (rc < 0 && why[0])
		fprintf(stderr, CONFIG__PROG ": %s:%u: %s\n", path, lineno, why);
	buf_free(&text);
	src->n_file_instances = c->n_instances;
	src->file = NULL;
	return rc;
}

/* One "ID ADDR" line of an instances file into *out. */
static int instances_line(char *line, struct gw_instance_cfg *out, char *why,
			  size_t whylen)
{
	char *id, *addr, *rest, *save = NULL;
	char err[256];

	id = strtok_r(line, " \t", &save);
	addr = strtok_r(NULL, " \t", &save);
	rest = strtok_r(NULL, " \t", &save);
	if (!id || !addr || (rest && rest[0] != '#')) {
		snprintf(why, whylen, "expected 'ID ADDR'");
		return -EINVAL;
	}
	if (!id_valid(id)) {
		snprintf(why, whylen, "bad instance id '%.128s'", id);
		return -EINVAL;
	}
	if (addr_parse(addr, &out->addr, err, sizeof(err)) < 0) {
		snprintf(why, whylen, "%s", err);
		return -EINVAL;
	}
	snprintf(out->id, sizeof(out->id), "%s", id);
	return 0;
}

/* One line of an instances file: blank, a comment, or an entry appended
   to out[*n) unless its id is already there. */
static int instances_entry(char *line, struct gw_instance_cfg *out, size_t max, size_t *n,
			   char *why, size_t whylen)
{
	char *p = trim(line);
	int rc;

	if (!p[0] || p[0] == '#')
		return 0;
	if (*n >= max) {
		snprintf(why, whylen, "more than %zu instances", max);
		return -EINVAL;
	}
	rc = instances_line(p, &out[*n], why, whylen);
	for (size_t i = 0; i < *n && rc == 0; i++)
		if (!strcmp(out[i].id, out[*n].id)) {
			snprintf(why, whylen, "instance '%s' given twice", out[i].id);
			rc = -EINVAL;
		}
	*n += rc == 0;
	return rc;
}

struct instances_ctx {
	struct gw_instance_cfg *out;
	size_t max, *n;
};

static int instances_each(char *line, unsigned lineno, void *ctx, char *why,
			  size_t whylen)
{
	struct instances_ctx *in = ctx;

	return instances_entry(line, in->out, in->max, in->n, why, whylen);
}

int gw_config_parse_instances(const char *text, size_t len, const char *name,
			      struct gw_instance_cfg *out, size_t max, size_t *n,
			      char *err, size_t errlen)
{
	struct instances_ctx ctx = {out, max, n};
	char why[300];
	unsigned lineno;
	int rc;

	*n = 0;
	rc = lines(text, len, instances_each, &ctx, &lineno, why, sizeof(why));
	if (rc < 0) {
		snprintf(err, errlen, "%s:%u: %s", name, lineno, why);
		*n = 0;
	}
	return rc;
}

int gw_config_read_instances(const char *path, struct gw_instance_cfg *out, size_t max,
			     size_t *n, char *err, size_t errlen)
{
	struct buf text = BUF_INIT;
	int rc;

	*n = 0;
	/* FDIO_REGULAR: a FIFO would stall the reload (SIGHUP) for ever. */
	if (fd_read_file(path, FDIO_REGULAR, CONFIG__INSTANCES_FILE_MAX, &text, err,
			 errlen) < 0)
		return -EINVAL;
	rc = gw_config_parse_instances((const char *)buf_head(&text), buf_size(&text),
				       path, out, max, n, err, errlen);
	buf_free(&text);
	return rc;
}

/* Adds the instances file's entries whose id no --instance gave. */
static int merge_instances_file(struct gw_config *c)
{
	struct gw_instance_cfg *tmp = xcalloc(GW_MAX_INSTANCES, sizeof(*tmp));
	char err[512];
	size_t n, have = c->n_instances;
	int rc;

	rc = gw_config_read_instances(c->instances_file, tmp, GW_MAX_INSTANCES, &n, err,
				      sizeof(err));
	if (rc < 0)
		fprintf(stderr, CONFIG__PROG ": --instances-file: %s\n", err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		if (find(c, tmp[i].id, 0, have))
			continue;
		if (c->n_instances >= GW_MAX_INSTANCES) {
			fprintf(stderr, CONFIG__PROG ": more than %d instances\n",
				GW_MAX_INSTANCES);
			rc = -EINVAL;
			break;
		}
		c->instances[c->n_instances++] = tmp[i];
	}
	free(tmp);
	return rc;
}

static int check(struct gw_config *c)
{
	c->n_flag_instances = c->n_instances;
	if (c->instances_file[0] && merge_instances_file(c) < 0)
		return -EINVAL;
	if (!c->n_keys) {
		fprintf(stderr,
			CONFIG__PROG ": no token verification key: give "
				     "--hs256-secret-file or --ed25519-public-key\n");
		return -EINVAL;
	}
	if (!c->n_instances && !c->n_link_listen) {
		fprintf(stderr,
			CONFIG__PROG ": no instance: give --instance ID=ADDR, "
				     "--instances-file FILE or --link-listen ADDR\n");
		return -EINVAL;
	}
	if (!c->n_link_listen != !c->n_link_keys) {
		fprintf(stderr,
			CONFIG__PROG ": --link-listen and --link-key go together\n");
		return -EINVAL;
	}
	if (!c->registry_user[0] != !c->registry_password_file[0]) {
		fprintf(stderr, CONFIG__PROG ": --registry-user and "
					     "--registry-password-file go together\n");
		return -EINVAL;
	}
	if (!c->fleet_cert[0] != !c->fleet_key[0]) {
		fprintf(stderr,
			CONFIG__PROG ": --fleet-cert and --fleet-key go together\n");
		return -EINVAL;
	}
	if (c->fleet_listen_host[0] &&
	    (!c->fleet_secret_file[0] || !c->fleet_cacert[0] || !c->fleet_cert[0])) {
		fprintf(stderr,
			CONFIG__PROG ": --fleet-listen needs --fleet-secret-file, "
				     "--fleet-cacert, --fleet-cert and --fleet-key\n");
		return -EINVAL;
	}
	if (!c->tls_cert[0] != !c->tls_key[0]) {
		fprintf(stderr, CONFIG__PROG ": --tls-cert and --tls-key go together\n");
		return -EINVAL;
	}
	if (c->admin_host[0] && c->admin_port && c->admin_port == c->listen_port &&
	    !strcmp(c->admin_host, c->listen_host)) {
		fprintf(stderr,
			CONFIG__PROG ": --admin-listen: same address as --listen\n");
		return -EINVAL;
	}
	return 0;
}

struct opt_arg {
	int opt;
	const char *arg;
};

/* Collects the options (getopt validates them), handling --help and
   --version at once. Returns 0, 1 (help or version) or -EINVAL. */
static int collect(int argc, char **argv, struct opt_arg *args, size_t *n,
		   const char **config_file)
{
	int opt;

	optind = 0; /* GNU: a full re-initialisation, so parsing can repeat */
	opterr = 1;
	while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
		if (opt == OPT_HELP) {
			fputs(usage, stdout);
			fputs(usage_fleet, stdout);
			fputs(usage_process, stdout);
			return 1;
		}
		if (opt == OPT_VERSION) {
			puts(CONFIG__PROG " " PTG_VERSION);
			return 1;
		}
		if (opt == '?' || opt == ':')
			return -EINVAL;
		if (opt == OPT_CONFIG)
			*config_file = optarg;
		else
			args[(*n)++] = (struct opt_arg){opt, optarg};
	}
	if (optind < argc) {
		fprintf(stderr, CONFIG__PROG ": unexpected argument '%s'\n",
			argv[optind]);
		return -EINVAL;
	}
	return 0;
}

int gw_config_parse(struct gw_config *c, int argc, char **argv)
{
	struct opt_arg *args = xcalloc((size_t)argc + 1, sizeof(*args));
	struct source src = {NULL, 0, 0};
	const char *config_file = NULL;
	size_t n = 0;
	int rc;

	rc = collect(argc, argv, args, &n, &config_file);
	if (rc == 0 && config_file)
		rc = load_file(c, &src, config_file);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = apply(c, &src, args[i].opt, args[i].arg);
	if (rc == 0)
		rc = check(c);
	free(args);
	if (rc < 0) {
		fputs("Try '" CONFIG__PROG " --help'.\n", stderr);
		return -EINVAL;
	}
	return rc;
}
