/* config_values: ptygate-gateway's own parsers of the options its table
   (config_table.c) leaves to it (OPTTAB_CUSTOM): addresses, URLs,
   instances, keys, origins, proxies, the registry, log settings, and the
   end of the config file. Each value is checked and bounded, and every
   error names the option (or the file and line) it came from, reported
   through the table the value is parsed by (src->table), so nothing here
   calls back into the table or config.c. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "config_int.h"
#include "id.h"
#include "log.h"
#include "ptg_limits.h"

#define report(src, name, ...) opttab_report((src)->table, src, name, __VA_ARGS__)

static int str(const struct opttab_src *src, const char *name, const char *s, char *dst,
	       size_t cap)
{
	size_t n = strlen(s);

	if (!n || n >= cap) {
		report(src, name, "must be 1 to %zu bytes", cap - 1);
		return -EINVAL;
	}
	memcpy(dst, s, n + 1);
	return 0;
}

struct gw_instance_cfg *config__instance_find(struct gw_config *c, const char *id,
					      size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (!strcmp(c->instances[i].id, id))
			return &c->instances[i];
	return NULL;
}

/* "ID=ADDR". A command-line entry replaces the config file's entry with
   the same id; any other repeat of an id is an error. */
static int instance(struct gw_config *c, const struct opttab_src *src, const char *s)
{
	const char *eq = strchr(s, '=');
	char id[sizeof(c->instances[0].id)], err[LOG_ERR_MAX];
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
	slot = config__instance_find(c, id, src->file ? 0 : c->n_file_instances,
				     c->n_instances);
	if (slot) {
		report(src, "instance", "instance '%s' given twice", id);
		return -EINVAL;
	}
	slot = src->file ? NULL : config__instance_find(c, id, 0, c->n_file_instances);
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

/* One --hs256-secret-file or --ed25519-public-key, "[KID=]FILE". */
static int add_key(struct gw_config *c, const struct opttab_src *src,
		   const struct opttab_opt *o, const char *s)
{
	struct gw_key_spec *k;

	if (c->n_keys >= GW_MAX_KEYS) {
		report(src, o->name, "more than %d keys", GW_MAX_KEYS);
		return -EINVAL;
	}
	k = &c->keys[c->n_keys];
	if (str(src, o->name, s, k->spec, sizeof(k->spec)) < 0)
		return -EINVAL;
	k->ed25519 = o->id == CONFIG__ED25519;
	c->n_keys++;
	return 0;
}

/* http(s):// or ws(s)://, a host, no query or fragment; a trailing '/'
   is dropped so paths append cleanly. */
static int public_url(struct gw_config *c, const struct opttab_src *src, const char *s)
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

static int static_dir(struct gw_config *c, const struct opttab_src *src, const char *s)
{
	struct stat st;

	if (str(src, "static-dir", s, c->static_dir, sizeof(c->static_dir)) < 0)
		return -EINVAL;
	if (stat(s, &st) < 0 || !S_ISDIR(st.st_mode)) {
		report(src, "static-dir", "'%s' is not a directory", s);
		return -EINVAL;
	}
	return 0;
}

static int parse_listen(const struct opttab_src *src, const struct opttab_opt *o,
			const char *s, char *host, size_t cap, uint16_t *port)
{
	char why[LOG_ERR_MAX];

	if (addr_parse_hostport(s, strlen(s), ADDR_PORT_ZERO, host, cap, port, why,
				sizeof(why)) < 0) {
		report(src, o->name,
		       "expected HOST:PORT or [IPV6]:PORT (port 0-65535), got '%s': %s",
		       s, why);
		return -EINVAL;
	}
	return 0;
}

/* http: one --allowed-origin, kept canonical for comparison. */
static int allowed_origin(struct gw_config *c, const struct opttab_src *src,
			  const char *s)
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
static int trusted_proxy(struct gw_config *c, const struct opttab_src *src, const char *s)
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
static int link_listen(struct gw_config *c, const struct opttab_src *src, const char *s)
{
	char err[LOG_ERR_MAX];

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
static int link_key(struct gw_config *c, const struct opttab_src *src, const char *s)
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
	if (str(src, "link-key", s, c->link_keys[c->n_link_keys],
		sizeof(c->link_keys[0])) < 0)
		return -EINVAL;
	c->n_link_keys++;
	return 0;
}

/* The registry's kind and its endpoints; the endpoints' form is checked
   by the registry's client when the gateway starts. */
static int registry(struct gw_config *c, const struct opttab_src *src, const char *s)
{
	if (strncmp(s, "etcd:", 5) != 0 || !s[5]) {
		report(src, "registry", "expected etcd:URL[,URL...], got '%s'", s);
		return -EINVAL;
	}
	return str(src, "registry", s + 5, c->registry, sizeof(c->registry));
}

static int log_level(struct gw_config *c, const struct opttab_src *src, const char *s)
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

static int log_format(struct gw_config *c, const struct opttab_src *src, const char *s)
{
	enum log_format fmt;

	if (log_format_parse(s, &fmt) < 0) {
		report(src, "log-format", "expected text or json, got '%s'", s);
		return -EINVAL;
	}
	c->log_format = fmt;
	return 0;
}

int config__custom(void *cfg, const struct opttab_src *src, const struct opttab_opt *o,
		   const char *arg)
{
	struct gw_config *c = cfg;

	switch (o->id) {
	case CONFIG__LISTEN:
		return parse_listen(src, o, arg, c->listen_host, sizeof(c->listen_host),
				    &c->listen_port);
	case CONFIG__ADMIN_LISTEN:
		return parse_listen(src, o, arg, c->admin_host, sizeof(c->admin_host),
				    &c->admin_port);
	case CONFIG__PUBLIC_URL:
		return public_url(c, src, arg);
	case CONFIG__STATIC_DIR:
		return static_dir(c, src, arg);
	case CONFIG__INSTANCE:
		return instance(c, src, arg);
	case CONFIG__HS256:
	case CONFIG__ED25519:
		return add_key(c, src, o, arg);
	case CONFIG__TRUSTED_PROXY:
		return trusted_proxy(c, src, arg);
	case CONFIG__ALLOWED_ORIGIN:
		return allowed_origin(c, src, arg);
	case CONFIG__LINK_LISTEN:
		return link_listen(c, src, arg);
	case CONFIG__LINK_KEY:
		return link_key(c, src, arg);
	case CONFIG__REGISTRY:
		return registry(c, src, arg);
	case CONFIG__FLEET_LISTEN:
		return parse_listen(src, o, arg, c->fleet_listen_host,
				    sizeof(c->fleet_listen_host), &c->fleet_listen_port);
	case CONFIG__LOG_LEVEL:
		return log_level(c, src, arg);
	case CONFIG__LOG_FORMAT:
		return log_format(c, src, arg);
	}
	report(src, o->name, "not allowed here");
	return -EINVAL;
}

void config__file_done(void *cfg)
{
	struct gw_config *c = cfg;

	c->n_file_instances = c->n_instances;
}
