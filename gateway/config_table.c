/* config_table: every option of ptygate-gateway, its range, default and
   help, from which its command line, config file keys, --help and
   manual pages are made (shared/opttab.h). */
#include <stddef.h>

#include "config_int.h"
#include "keys.h"
#include "peers.h"
#include "ptg_limits.h"

#define T struct gw_config

#define CUSTOM(nm, ar, ident, fl, df, hl)                                                \
	{                                                                                \
		.name = nm, .arg = ar, .type = OPTTAB_CUSTOM, .flags = fl, .id = ident,  \
		.def = df, .help = hl                                                    \
	}
#define STRING(nm, ar, field, fl, df, hl)                                                \
	{                                                                                \
		.name = nm, .arg = ar, .type = OPTTAB_STR, .flags = fl,                  \
		.off = offsetof(T, field), .size = sizeof(((T *)0)->field), .def = df,   \
		.help = hl                                                               \
	}
#define NUM(nm, ar, ty, l, h, field, df, hl)                                             \
	OPTTAB_NUM(T, nm, ar, ty, l, h, field, df, hl)
#define SECTION(title)                                                                   \
	{                                                                                \
		.type = OPTTAB_SECTION, .help = title                                    \
	}

static const struct opttab_opt opts[] = {
    SECTION("Listening"),
    CUSTOM("listen", "HOST:PORT", CONFIG__LISTEN, 0, "127.0.0.1:8080",
	   "public HTTP/WebSocket address; [V6]:PORT for IPv6; port 0 picks a free one"),
    CUSTOM("admin-listen", "HOST:PORT", CONFIG__ADMIN_LISTEN, OPTTAB_DEF_DOC,
	   "on --listen", "serve /healthz /readyz /metrics and the AgentCard here only"),
    CUSTOM("public-url", "URL", CONFIG__PUBLIC_URL, OPTTAB_DEF_DOC,
	   "http://HOST:PORT of --listen",
	   "base URL clients reach this gateway at, for attach_url and the AgentCard; "
	   "http(s):// or ws(s)://"),
    STRING("gateway-id", "ID", gateway_id, OPTTAB_DEF_DOC, "the host name",
	   "name sent to sidecars, and this gateway's name in the fleet: unique"),
    CUSTOM("static-dir", "DIR", CONFIG__STATIC_DIR, OPTTAB_DEF_DOC, "none",
	   "serve the web page files in DIR"),

    SECTION("Instances"),
    CUSTOM("instance", "ID=ADDR", CONFIG__INSTANCE, OPTTAB_REPEAT, NULL,
	   "a sandbox and its sidecar's link address: unix:/path, tcp:HOST:PORT or "
	   "vsock:CID:PORT"),
    STRING("instances-file", "FILE", instances_file, OPTTAB_RELOAD | OPTTAB_DEF_DOC,
	   "none", "\"ID ADDR\" lines, '#' comments"),

    SECTION("Registered instances (sidecars that dial in with a credential)"),
    CUSTOM("link-listen", "ADDR", CONFIG__LINK_LISTEN, OPTTAB_REPEAT, NULL,
	   "accept sidecar links at unix:/path, tcp:HOST:PORT (loopback only) or "
	   "vsock:CID:PORT; up to " PTG_STR(GW_MAX_LINK_LISTEN)),
    CUSTOM("link-key", "KID=FILE", CONFIG__LINK_KEY, OPTTAB_REPEAT | OPTTAB_RELOAD, NULL,
	   "an Ed25519 public key that signs instance credentials"),
    NUM("link-auth-timeout", "S", OPTTAB_U32, 1, 600, link_auth_timeout_s, "5",
	"a link's credential must arrive within S s"),
    NUM("link-renew-grace", "S", OPTTAB_U32, 0, 86400, link_renew_grace_s, "60",
	"a linked credential may be S s past its exp before the link is closed"),
    NUM("link-grace", "S", OPTTAB_U32, 0, 86400, link_grace_s, "30",
	"a registered instance whose link dropped stays (down) S s before it is "
	"removed"),
    NUM("max-instances", "N", OPTTAB_U32, 1, 1000000, max_instances, "10000",
	"instances in all, configured and registered"),
    NUM("max-pending-links", "N", OPTTAB_U32, 1, 100000, max_pending_links, "256",
	"links awaiting their credential"),

    SECTION("Authentication"),
    CUSTOM("hs256-secret-file", "[KID=]FILE", CONFIG__HS256, OPTTAB_REPEAT, NULL,
	   "an HS256 secret file, " PTG_STR(KEYS_HS256_MIN_FILE) " to " PTG_STR(
	       KEYS_HS256_MAX) " bytes"),
    CUSTOM("ed25519-public-key", "[KID=]FILE", CONFIG__ED25519, OPTTAB_REPEAT, NULL,
	   "an Ed25519 public key (PEM or base64)"),
    STRING("audience", "AUD", audience, OPTTAB_DEF_DOC, "not checked",
	   "require this \"aud\" claim"),
    STRING("issuer", "ISS", issuer, OPTTAB_DEF_DOC, "not checked",
	   "require this \"iss\" claim"),

    SECTION("Limits"),
    NUM("ping-interval", "S", OPTTAB_U32, 1, 3600, ping_interval_s, "30",
	"WebSocket Ping after S idle seconds"),
    NUM("pong-timeout", "S", OPTTAB_U32, 1, 600, pong_timeout_s, "10",
	"close 1011 without a Pong in S s"),
    NUM("max-conns-per-principal", "N", OPTTAB_U32, 1, 100000, max_conns_per_principal,
	"16", "connections per token subject"),
    NUM("max-conns-per-instance", "N", OPTTAB_U32, 1, 1000000, max_conns_per_instance,
	"256", "connections per instance"),
    NUM("max-conns", "N", OPTTAB_U32, 1, 1000000, max_conns, "4096",
	"connections in all"),
    NUM("max-queue-bytes", "B", OPTTAB_U64, 65536, 1ull << 30, max_queue_bytes,
	"12582912", "a connection's output queue before PTY_OUTPUT_LAGGED"),
    NUM("max-queue-ms", "MS", OPTTAB_U32, 0, 3600000, max_queue_ms, "2000",
	"how long output may wait in a connection's queue before PTY_OUTPUT_LAGGED "
	"(0: no bound)"),
    NUM("max-frame-bytes", "B", OPTTAB_U32, 1024, 16u << 20, max_frame_bytes, "1048576",
	"largest client message"),
    NUM("request-timeout-ms", "MS", OPTTAB_U32, 100, 600000, request_timeout_ms, "10000",
	"a sidecar request's deadline"),
    NUM("violation-limit", "N", OPTTAB_U32, 1, 100000, violation_limit, "10",
	"protocol violations before close " PTG_STR(PTG_CLOSE_VIOLATIONS)),
    NUM("queue-stall-timeout", "S", OPTTAB_U32, 1, 3600, queue_stall_s, "10",
	"close " PTG_STR(PTG_CLOSE_LIMITED) " a client whose queue stays over "
					    "--max-queue-bytes for S s"),
    NUM("max-ops-per-sec", "N", OPTTAB_U32, 1, 100000, max_ops_per_sec, "200",
	"client ops per second (bursts of 2 s), then the client is not read"),
    NUM("link-queue-bytes", "B", OPTTAB_U64, 65536, 1ull << 30, link_queue_bytes,
	"16777216", "bytes queued toward one sidecar before the link is dropped"),
    NUM("rest-rate", "N", OPTTAB_U32, 1, 100000, rest_rate, "100",
	"REST requests per second per token subject, bursts of 2 s, then 429"),
    NUM("rest-concurrency", "N", OPTTAB_U32, 1, 10000, rest_concurrency, "8",
	"REST requests in flight per token subject before 429"),

    SECTION("HTTP clients"),
    NUM("max-conns-per-ip", "N", OPTTAB_U32, 1, 1000000, max_conns_per_ip, "32",
	"connections one client address (IPv6: its /64) may hold, WebSockets "
	"included"),
    CUSTOM("trusted-proxy", "CIDR", CONFIG__TRUSTED_PROXY, OPTTAB_REPEAT, NULL,
	   "a reverse proxy (ADDR or ADDR/BITS): its connections are not capped, its "
	   "requests count for the client in X-Forwarded-For (last untrusted hop); up "
	   "to " PTG_STR(PEERS_MAX_TRUSTED)),
    NUM("request-head-timeout", "S", OPTTAB_U32, 1, 3600, request_head_timeout_s, "10",
	"a request's head and body must arrive within S seconds, however slowly it "
	"trickles"),
    STRING("tls-cert", "FILE", tls_cert, OPTTAB_RELOAD | OPTTAB_DEF_DOC, "plain HTTP",
	   "serve https:// and wss:// on --listen with this PEM certificate chain "
	   "(leaf first)"),
    STRING("tls-key", "FILE", tls_key, OPTTAB_RELOAD, NULL, "its PEM private key"),
    OPTTAB_FLAG(T, "allow-plaintext", allow_plaintext,
		"allow plain HTTP and ws:// on a non-loopback --listen (behind a "
		"TLS-terminating proxy)"),
    OPTTAB_FLAG(T, "no-deflate", no_deflate,
		"never agree permessage-deflate with clients"),
    CUSTOM("allowed-origin", "ORIGIN", CONFIG__ALLOWED_ORIGIN, OPTTAB_REPEAT, NULL,
	   "a web page origin (scheme://host[:port]) that may attach; up "
	   "to " PTG_STR(GW_MAX_ORIGINS) ". Without one, a request with an Origin "
					 "header must be same-origin: its host and "
					 "port those of Host or --public-url "
					 "(refused with 403)"),

    SECTION("Fleet registry (etcd)"),
    CUSTOM("registry", "etcd:URL[,URL...]", CONFIG__REGISTRY, OPTTAB_DEF_DOC,
	   "no registry",
	   "publish this gateway and its instances in etcd (v3 JSON gateway) and route "
	   "from its map"),
    STRING("registry-prefix", "PREFIX", registry_prefix, 0, "/ptygate/",
	   "the keys' prefix"),
    NUM("registry-ttl", "S", OPTTAB_U32, 2, 3600, registry_ttl_s, "10",
	"the lease's TTL"),
    STRING("fleet-url", "URL", fleet_url, OPTTAB_DEF_DOC, "--public-url",
	   "where other gateways reach this one"),
    STRING("registry-cacert", "FILE", registry_cacert, 0, NULL,
	   "PEM CA bundle that signs etcd's certificate"),
    STRING("registry-cert", "FILE", registry_cert, 0, NULL,
	   "client certificate for etcd (PEM)"),
    STRING("registry-key", "FILE", registry_key, 0, NULL, "its private key (PEM)"),
    STRING("registry-user", "NAME", registry_user, 0, NULL,
	   "etcd user (with --registry-password-file)"),
    STRING("registry-password-file", "FILE", registry_password_file, OPTTAB_RELOAD, NULL,
	   "its password"),
    NUM("max-routes", "N", OPTTAB_U32, 1, 10000000, max_routes, "1000000",
	"instances the routing cache holds"),

    SECTION("Forwarding to the owning gateway"),
    STRING("fleet-secret-file", "FILE", fleet_secret_file, OPTTAB_RELOAD | OPTTAB_DEF_DOC,
	   "none, no forwarding",
	   "the secret every gateway of the fleet shares (32 bytes or more): signs "
	   "forwarded requests and lets this gateway believe X-Forwarded-For from the "
	   "fleet's gateways"),
    STRING("fleet-cacert", "FILE", fleet_cacert, 0, NULL,
	   "PEM CA bundle that signs the other gateways' certificates (https:// fleet "
	   "URLs); with --fleet-listen, re-read on SIGHUP"),
    STRING("fleet-cert", "FILE", fleet_cert, 0, NULL,
	   "this gateway's certificate for them (PEM); with --fleet-listen, re-read on "
	   "SIGHUP"),
    STRING("fleet-key", "FILE", fleet_key, 0, NULL,
	   "its private key (PEM); with --fleet-listen, re-read on SIGHUP"),
    CUSTOM("fleet-listen", "HOST:PORT", CONFIG__FLEET_LISTEN, OPTTAB_DEF_DOC,
	   "on --listen, no client certificate",
	   "take forwarded requests here only: HTTPS with --fleet-cert, a client "
	   "certificate signed by --fleet-cacert required"),

    SECTION("Process"),
    {.name = "config",
     .arg = "FILE",
     .type = OPTTAB_CONFIG,
     .help = "read \"key = value\" lines (keys are these options without the dashes, "
	     "'#' comments; a switch takes true or false); options on the command "
	     "line win"},
    CUSTOM("log-level", "LEVEL", CONFIG__LOG_LEVEL, 0, "info",
	   "debug, info, warn or error"),
    CUSTOM("log-format", "FORMAT", CONFIG__LOG_FORMAT, 0, "text",
	   "text or json: one object a line"),
    STRING("pid-file", "FILE", pid_file, OPTTAB_DEF_DOC, "none",
	   "write the process id here"),
    {.name = "help", .type = OPTTAB_HELP, .help = "this text"},
    {.name = "help-man",
     .type = OPTTAB_MAN,
     .help = "print the manual page (section 8) in roff"},
    {.name = "help-man-conf",
     .type = OPTTAB_MAN_CONF,
     .help = "print the config file's manual page (section 5) in roff"},
    {.name = "version", .type = OPTTAB_VERSION, .help = "the version"},
};

const struct opttab config__table = {
    .prog = "ptygate-gateway",
    .summary = "WebSocket access to the terminal sessions of sandboxes",
    .usage = "ptygate-gateway [--config FILE] --instance ID=ADDR --hs256-secret-file "
	     "FILE [options]",
    .intro = "Serves the terminal sessions of sandbox instances to WebSocket clients\n"
	     "(pty-ws/v1) and a session REST API, relaying to each instance's\n"
	     "ptygate-sidecar over one link per instance.\n"
	     "\n"
	     "At least one verification key (--hs256-secret-file or "
	     "--ed25519-public-key) and at least one instance (--instance or "
	     "--instances-file) or a --link-listen address with its --link-key are "
	     "required.",
    .outro = "Exit status: 0 after a clean shutdown (SIGTERM, SIGINT), 1 on a runtime "
	     "failure, 2 for a usage error.",
    .reload_text = "re-read on SIGHUP",
    .conf_path = "/etc/ptygate/gateway.conf",
    .opts = opts,
    .n_opts = sizeof(opts) / sizeof(opts[0]),
    .help_col = 32,
    .custom = config__custom,
    .file_done = config__file_done,
};
