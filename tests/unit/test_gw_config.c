/* unit: gateway */
/* gw_config: every flag with a good and a bad value, the required key and
   instance, --help/--version, the config file (comments, quotes, unknown
   keys, command-line precedence) and the instances file (comments, bad
   lines with their line number, duplicates, merging with --instance);
   the option table (config_table.c): every option in --help and both
   manual pages, every range and its error the table's. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config.h"
#include "config_int.h"
#include "help_opttab.h"
#include "help_ranges.h"
#include "log.h"

static char dir[] = "/tmp/ptg-gwcfg-XXXXXX";
static char path_buf[8][512];

static const char *tmpfile_with(int slot, const char *name, const char *text)
{
	FILE *f;

	snprintf(path_buf[slot], sizeof(path_buf[slot]), "%s/%s", dir, name);
	f = fopen(path_buf[slot], "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	return path_buf[slot];
}

static int setup(void **state)
{
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Parses a NULL-terminated list of arguments into a fresh config. */
static int parse(struct gw_config *c, ...)
{
	char *argv[64] = {"ptygate-gateway"};
	int argc = 1;
	va_list ap;

	gw_config_defaults(c);
	va_start(ap, c);
	for (char *a; (a = va_arg(ap, char *)) != NULL;)
		argv[argc++] = a;
	va_end(ap);
	argv[argc] = NULL;
	return gw_config_parse(c, argc, argv);
}

#define BASE "--instance", "a=unix:/tmp/a.sock", "--hs256-secret-file", "/k"

static struct gw_config *cfg_new(void)
{
	return calloc(1, sizeof(struct gw_config));
}

static void test_defaults(void **state)
{
	struct gw_config *c = cfg_new();

	assert_int_equal(parse(c, BASE, NULL), 0);
	assert_string_equal(c->listen_host, "127.0.0.1");
	assert_int_equal(c->listen_port, 8080);
	assert_string_equal(c->admin_host, "");
	assert_string_equal(c->public_url, "");
	assert_true(c->gateway_id[0] != '\0');
	assert_int_equal(c->ping_interval_s, 30);
	assert_int_equal(c->pong_timeout_s, 10);
	assert_int_equal(c->max_conns_per_principal, 16);
	assert_int_equal(c->max_conns_per_instance, 256);
	assert_int_equal(c->max_conns, 4096);
	assert_int_equal(c->max_queue_bytes, 12u << 20);
	assert_int_equal(c->max_queue_ms, 2000);
	assert_int_equal(c->max_frame_bytes, 1u << 20);
	assert_int_equal(c->request_timeout_ms, 10000);
	assert_int_equal(c->violation_limit, 10);
	assert_int_equal(c->log_level, LOG_INFO);
	assert_int_equal(c->n_instances, 1);
	assert_string_equal(c->instances[0].id, "a");
	assert_int_equal(c->instances[0].addr.kind, ADDR_UNIX);
	assert_string_equal(c->instances[0].addr.path, "/tmp/a.sock");
	assert_int_equal(c->n_keys, 1);
	assert_int_equal(c->keys[0].ed25519, 0);
	assert_string_equal(c->keys[0].spec, "/k");
	free(c);
}

static void test_every_flag(void **state)
{
	struct gw_config *c = cfg_new();

	assert_int_equal(
	    parse(c, "--listen", "[::1]:9000", "--admin-listen", "127.0.0.2:0",
		  "--public-url", "https://gw.example/base/", "--gateway-id", "gw-7",
		  "--static-dir", dir, "--instance", "i-1=tcp:127.0.0.1:7000",
		  "--instance", "i.2=vsock:3:7000", "--hs256-secret-file", "k1=/s1",
		  "--ed25519-public-key", "k2=/p2", "--audience", "aud", "--issuer",
		  "iss", "--ping-interval", "5", "--pong-timeout", "2",
		  "--max-conns-per-principal", "3", "--max-conns-per-instance", "4",
		  "--max-conns", "5", "--max-queue-bytes", "65536", "--max-frame-bytes",
		  "2048", "--request-timeout-ms", "100", "--violation-limit", "7",
		  "--log-level", "debug", "--pid-file", "/run/gw.pid", NULL),
	    0);
	assert_string_equal(c->listen_host, "::1");
	assert_int_equal(c->listen_port, 9000);
	assert_string_equal(c->admin_host, "127.0.0.2");
	assert_int_equal(c->admin_port, 0);
	assert_string_equal(c->public_url, "https://gw.example/base");
	assert_string_equal(c->gateway_id, "gw-7");
	assert_string_equal(c->static_dir, dir);
	assert_int_equal(c->n_instances, 2);
	assert_string_equal(c->instances[0].id, "i-1");
	assert_int_equal(c->instances[0].addr.kind, ADDR_TCP);
	assert_int_equal(c->instances[0].addr.port, 7000);
	assert_string_equal(c->instances[1].id, "i.2");
	assert_int_equal(c->instances[1].addr.kind, ADDR_VSOCK);
	assert_int_equal(c->n_keys, 2);
	assert_int_equal(c->keys[0].ed25519, 0);
	assert_string_equal(c->keys[0].spec, "k1=/s1");
	assert_int_equal(c->keys[1].ed25519, 1);
	assert_string_equal(c->keys[1].spec, "k2=/p2");
	assert_string_equal(c->audience, "aud");
	assert_string_equal(c->issuer, "iss");
	assert_int_equal(c->ping_interval_s, 5);
	assert_int_equal(c->pong_timeout_s, 2);
	assert_int_equal(c->max_conns_per_principal, 3);
	assert_int_equal(c->max_conns_per_instance, 4);
	assert_int_equal(c->max_conns, 5);
	assert_int_equal(c->max_queue_bytes, 65536);
	assert_int_equal(c->max_frame_bytes, 2048);
	assert_int_equal(c->request_timeout_ms, 100);
	assert_int_equal(c->violation_limit, 7);
	assert_int_equal(c->log_level, LOG_DEBUG);
	assert_string_equal(c->pid_file, "/run/gw.pid");
	free(c);
}

static void test_bad_values(void **state)
{
	static const char *const bad[][2] = {
	    {"--listen", "nohost"},
	    {"--listen", ":80"},
	    {"--listen", "h:99999"},
	    {"--listen", "::1:80"},
	    {"--listen", "[::1]80"},
	    {"--listen", "h:8x"},
	    {"--admin-listen", "h:-1"},
	    {"--public-url", "ftp://x"},
	    {"--public-url", "http://"},
	    {"--public-url", "http://h/?q"},
	    {"--static-dir", "/nonexistent-dir-ptg"},
	    {"--instance", "noequals"},
	    {"--instance", "a/b=unix:/x"},
	    {"--instance", "..=unix:/x"},
	    {"--instance", "a=bogus:1"},
	    {"--ping-interval", "0"},
	    {"--ping-interval", "3601"},
	    {"--ping-interval", "abc"},
	    {"--ping-interval", "-1"},
	    {"--ping-interval", "1x"},
	    {"--ping-interval", ""},
	    {"--pong-timeout", "601"},
	    {"--max-conns", "0"},
	    {"--max-conns-per-principal", "0"},
	    {"--max-conns-per-instance", "1000001"},
	    {"--max-queue-bytes", "65535"},
	    {"--max-frame-bytes", "16777217"},
	    {"--request-timeout-ms", "99"},
	    {"--violation-limit", "0"},
	    {"--log-level", "loud"},
	    {"--audience", ""},
	    {"--gateway-id", ""},
	};
	struct gw_config *c = cfg_new();

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = parse(c, BASE, bad[i][0], bad[i][1], NULL);

		if (rc != -EINVAL)
			fail_msg("%s '%s' accepted", bad[i][0], bad[i][1]);
	}
	assert_int_equal(parse(c, BASE, "--bogus", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "stray", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--listen", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--instance", "a=unix:/other", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--listen", "127.0.0.1:9", "--admin-listen",
			       "127.0.0.1:9", NULL),
			 -EINVAL);
	free(c);
}

static void test_required(void **state)
{
	struct gw_config *c = cfg_new();

	assert_int_equal(parse(c, "--instance", "a=unix:/x", NULL), -EINVAL);
	assert_int_equal(parse(c, "--hs256-secret-file", "/k", NULL), -EINVAL);
	assert_int_equal(
	    parse(c, "--ed25519-public-key", "/p", "--instance", "a=unix:/x", NULL), 0);
	assert_int_equal(parse(c, "--help", NULL), 1);
	assert_int_equal(parse(c, "--version", NULL), 1);
	free(c);
}

static void test_config_file(void **state)
{
	struct gw_config *c = cfg_new();
	const char *f = tmpfile_with(0, "gw.conf",
				     "# the gateway\n"
				     "\n"
				     "listen = 127.0.0.1:7001\n"
				     "  ping-interval=12  \n"
				     "audience = \"my aud\"\n"
				     "instance = a=unix:/from-file\n"
				     "instance = b=unix:/b\n"
				     "hs256-secret-file = /k\n");

	assert_int_equal(parse(c, "--config", f, NULL), 0);
	assert_int_equal(c->listen_port, 7001);
	assert_int_equal(c->ping_interval_s, 12);
	assert_string_equal(c->audience, "my aud");
	assert_int_equal(c->n_instances, 2);
	assert_int_equal(c->n_keys, 1);

	/* The command line wins: scalars, and an --instance with a file's id. */
	assert_int_equal(parse(c, "--ping-interval", "20", "--instance", "a=unix:/cli",
			       "--config", f, NULL),
			 0);
	assert_int_equal(c->ping_interval_s, 20);
	assert_int_equal(c->n_instances, 2);
	assert_string_equal(c->instances[0].id, "a");
	assert_string_equal(c->instances[0].addr.path, "/cli");

	f = tmpfile_with(1, "bad1.conf", "listen = 127.0.0.1:1\nnosuchkey = 1\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(1, "bad2.conf", "just words\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(1, "bad3.conf", "config = /other\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(1, "bad4.conf", "max-conns = lots\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(1, "bad5.conf", "instance = a=unix:/1\ninstance = a=unix:/2\n");
	assert_int_equal(parse(c, "--hs256-secret-file", "/k", "--config", f, NULL),
			 -EINVAL);
	assert_int_equal(parse(c, BASE, "--config", "/nonexistent/ptg.conf", NULL),
			 -EINVAL);
	free(c);
}

/* The config file is read as the instances file is: CRLF endings are
   fine, a control byte inside a value is refused (it would stay in the
   value), and a FIFO is refused at once instead of waiting for a writer. */
static void test_config_file_bytes(void **state)
{
	struct gw_config *c = cfg_new();
	char fifo[600];
	const char *f;

	f = tmpfile_with(0, "crlf.conf", "listen = 127.0.0.1:7002\r\naudience = a\r\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), 0);
	assert_int_equal(c->listen_port, 7002);
	assert_string_equal(c->audience, "a");
	f = tmpfile_with(0, "ctl.conf", "audience = a\x01b\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(0, "esc.conf", "issuer = x\x1b[2J\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	alarm(5); /* a hang fails the test instead of stalling it */
	assert_int_equal(parse(c, BASE, "--config", fifo, NULL), -EINVAL);
	alarm(0);
	free(c);
}

static void test_instances_file(void **state)
{
	struct gw_instance_cfg out[4];
	char err[LOG_ERR_MAX];
	size_t n = 99;
	const char *f = tmpfile_with(2, "inst",
				     "# id address\n"
				     "\n"
				     "one unix:/one.sock\n"
				     "  two\ttcp:127.0.0.1:7002   # trailing comment\n");

	assert_int_equal(gw_config_read_instances(f, out, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[0].id, "one");
	assert_string_equal(out[0].addr.path, "/one.sock");
	assert_string_equal(out[1].id, "two");
	assert_int_equal(out[1].addr.port, 7002);

	f = tmpfile_with(2, "inst-bad", "one unix:/one.sock\n\nthree\n");
	assert_int_equal(gw_config_read_instances(f, out, 4, &n, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "inst-bad:3:"));
	f = tmpfile_with(2, "inst-addr", "one nonsense:/x\n");
	assert_int_equal(gw_config_read_instances(f, out, 4, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":1:"));
	f = tmpfile_with(2, "inst-extra", "one unix:/x extra\n");
	assert_int_equal(gw_config_read_instances(f, out, 4, &n, err, sizeof(err)),
			 -EINVAL);
	f = tmpfile_with(2, "inst-dup", "one unix:/x\none unix:/y\n");
	assert_int_equal(gw_config_read_instances(f, out, 4, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, ":2:"));
	f = tmpfile_with(2, "inst-many", "a unix:/a\nb unix:/b\nc unix:/c\n");
	assert_int_equal(gw_config_read_instances(f, out, 2, &n, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(
	    gw_config_read_instances("/nonexistent/x", out, 2, &n, err, sizeof(err)),
	    -EINVAL);
}

/* The text parser the file reader and fuzz_instances share. */
static void test_instances_text(void **state)
{
	static const char crlf[] = "one unix:/one.sock\r\ntwo unix:/two.sock\t\r\n";
	static const char nul[] = "one unix:/one.sock\ntwo unix:/t\0wo.sock\n";
	/* found by fuzz_instances: the CR stayed in the path ("/b\r"), which
	   written back read as "/b" */
	static const char cr_inside[] = "b\tunix:/b\r # note\n";
	static const char ctl[] = "one unix:/o\x1bne.sock\n";
	struct gw_instance_cfg out[4];
	char err[LOG_ERR_MAX], *long_line;
	size_t n = 99;

	assert_int_equal(gw_config_parse_instances(crlf, sizeof(crlf) - 1, "t", out, 4,
						   &n, err, sizeof(err)),
			 0);
	assert_int_equal(n, 2);
	assert_string_equal(out[1].addr.path, "/two.sock");
	assert_int_equal(gw_config_parse_instances(nul, sizeof(nul) - 1, "t", out, 4, &n,
						   err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(n, 0);
	assert_non_null(strstr(err, "t:2:"));
	assert_int_equal(gw_config_parse_instances(cr_inside, sizeof(cr_inside) - 1, "t",
						   out, 4, &n, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "t:1: control character"));
	assert_int_equal(gw_config_parse_instances(ctl, sizeof(ctl) - 1, "t", out, 4, &n,
						   err, sizeof(err)),
			 -EINVAL);
	long_line = malloc(9000);
	assert_non_null(long_line);
	memset(long_line, 'a', 9000);
	assert_int_equal(
	    gw_config_parse_instances(long_line, 9000, "t", out, 4, &n, err, sizeof(err)),
	    -EINVAL);
	assert_non_null(strstr(err, "line too long"));
	free(long_line);
	assert_int_equal(
	    gw_config_parse_instances("", 0, "t", out, 4, &n, err, sizeof(err)), 0);
	assert_int_equal(n, 0);
}

static void test_instances_file_merge(void **state)
{
	struct gw_config *c = cfg_new();
	const char *f = tmpfile_with(3, "inst-merge", "a unix:/file-a\nb unix:/file-b\n");

	/* The instances file alone satisfies "at least one instance". */
	assert_int_equal(
	    parse(c, "--hs256-secret-file", "/k", "--instances-file", f, NULL), 0);
	assert_int_equal(c->n_instances, 2);
	assert_string_equal(c->instances_file, f);
	/* A flag's instance wins over the file's entry with the same id. */
	assert_int_equal(parse(c, BASE, "--instances-file", f, NULL), 0);
	assert_int_equal(c->n_instances, 2);
	assert_string_equal(c->instances[0].addr.path, "/tmp/a.sock");
	assert_string_equal(c->instances[1].id, "b");
	f = tmpfile_with(3, "inst-broken", "a\n");
	assert_int_equal(parse(c, BASE, "--instances-file", f, NULL), -EINVAL);
	free(c);
}

/* The http block: client limits, TLS, plaintext, origins; defaults,
   bounds, and allow-plaintext from a config file. */
static void test_http_flags(void **state)
{
	struct gw_config *c = cfg_new();
	const char *file;

	assert_int_equal(parse(c, BASE, NULL), 0);
	assert_int_equal(c->max_conns_per_ip, 32);
	assert_int_equal(c->request_head_timeout_s, 10);
	assert_int_equal(c->n_trusted_proxies, 0);
	assert_string_equal(c->tls_cert, "");
	assert_int_equal(c->allow_plaintext, 0);
	assert_int_equal(c->n_allowed_origins, 0);

	assert_int_equal(parse(c, BASE, "--max-conns-per-ip", "1",
			       "--request-head-timeout", "3600", "--trusted-proxy",
			       "10.0.0.0/8", "--trusted-proxy", "::1", "--tls-cert",
			       "/c.pem", "--tls-key", "/k.pem", "--allow-plaintext",
			       "--allowed-origin", "HTTPS://App.Example:443", NULL),
			 0);
	assert_int_equal(c->max_conns_per_ip, 1);
	assert_int_equal(c->request_head_timeout_s, 3600);
	assert_int_equal(c->n_trusted_proxies, 2);
	assert_int_equal(c->trusted_proxies[0].bits, 96 + 8);
	assert_int_equal(c->trusted_proxies[1].bits, 128);
	assert_string_equal(c->tls_cert, "/c.pem");
	assert_string_equal(c->tls_key, "/k.pem");
	assert_int_equal(c->allow_plaintext, 1);
	assert_int_equal(c->n_allowed_origins, 1);
	assert_string_equal(c->allowed_origins[0], "https://app.example");

	assert_int_equal(parse(c, BASE, "--max-conns-per-ip", "0", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--request-head-timeout", "3601", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--trusted-proxy", "10.0.0.0/33", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--trusted-proxy", "proxy.example", NULL),
			 -EINVAL);
	assert_int_equal(parse(c, BASE, "--tls-cert", "/c.pem", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--tls-key", "/k.pem", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-cert", "/c.pem", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-key", "/k.pem", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-secret-file", "/s", "--fleet-cacert",
			       "/ca", "--fleet-cert", "/c.pem", "--fleet-key", "/k.pem",
			       NULL),
			 0);
	assert_string_equal(c->fleet_secret_file, "/s");
	assert_string_equal(c->fleet_cacert, "/ca");
	assert_string_equal(c->fleet_cert, "/c.pem");
	assert_string_equal(c->fleet_key, "/k.pem");
	assert_string_equal(c->fleet_listen_host, "");
	/* --fleet-listen: mutual TLS needs the fleet's CA, this gateway's
	   certificate and the secret. */
	assert_int_equal(parse(c, BASE, "--fleet-listen", "0.0.0.0:8443", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-listen", "0.0.0.0:8443",
			       "--fleet-secret-file", "/s", "--fleet-cert", "/c.pem",
			       "--fleet-key", "/k.pem", NULL),
			 -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-listen", "0.0.0.0:8443",
			       "--fleet-cacert", "/ca", "--fleet-cert", "/c.pem",
			       "--fleet-key", "/k.pem", NULL),
			 -EINVAL);
	assert_int_equal(parse(c, BASE, "--fleet-listen", "[::1]:8443",
			       "--fleet-secret-file", "/s", "--fleet-cacert", "/ca",
			       "--fleet-cert", "/c.pem", "--fleet-key", "/k.pem", NULL),
			 0);
	assert_string_equal(c->fleet_listen_host, "::1");
	assert_int_equal(c->fleet_listen_port, 8443);
	assert_int_equal(parse(c, BASE, "--fleet-listen", "nope", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--allowed-origin", "https://a.example/x", NULL),
			 -EINVAL);
	assert_int_equal(parse(c, BASE, "--allowed-origin", "null", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--allow-plaintext=yes", NULL), -EINVAL);

	file = tmpfile_with(0, "http.conf",
			    "allow-plaintext = true\ntrusted-proxy = 127.0.0.1\n");
	assert_int_equal(parse(c, BASE, "--config", file, NULL), 0);
	assert_int_equal(c->allow_plaintext, 1);
	assert_int_equal(c->n_trusted_proxies, 1);
	file = tmpfile_with(0, "http.conf", "allow-plaintext = yes\n");
	assert_int_equal(parse(c, BASE, "--config", file, NULL), -EINVAL);
	file = tmpfile_with(0, "http.conf", "help = true\n");
	assert_int_equal(parse(c, BASE, "--config", file, NULL), -EINVAL);
	free(c);
}

static void show_help(void)
{
	struct gw_config *c = cfg_new();

	assert_int_equal(parse(c, "--help", NULL), 1);
	free(c);
}

static int try_option(const char *opt, const char *value)
{
	struct gw_config *c = cfg_new();
	int rc = parse(c, BASE, opt, value, NULL);

	free(c);
	return rc;
}

/* Every "LO-HI" and "(DEFAULT)" --help states is what the parser holds. */
static void test_registry_flags(void **state)
{
	struct gw_config *c = cfg_new();

	gw_config_defaults(c);
	assert_string_equal(c->registry, "");
	assert_string_equal(c->registry_prefix, "/ptygate/");
	assert_int_equal(c->registry_ttl_s, 10);
	assert_int_equal(c->max_routes, 1000000);
	assert_int_equal(
	    parse(c, BASE, "--registry", "etcd:http://e1:2379,http://e2:2379",
		  "--registry-prefix", "/fleet/", "--registry-ttl", "2", "--fleet-url",
		  "https://gw1:8443", "--registry-cacert", "/ca.pem", "--registry-cert",
		  "/c->pem", "--registry-key", "/k.pem", "--registry-user", "u",
		  "--registry-password-file", "/pw", "--max-routes", "5", NULL),
	    0);
	assert_string_equal(c->registry, "http://e1:2379,http://e2:2379");
	assert_string_equal(c->registry_prefix, "/fleet/");
	assert_int_equal(c->registry_ttl_s, 2);
	assert_string_equal(c->fleet_url, "https://gw1:8443");
	assert_string_equal(c->registry_cacert, "/ca.pem");
	assert_string_equal(c->registry_cert, "/c->pem");
	assert_string_equal(c->registry_key, "/k.pem");
	assert_string_equal(c->registry_user, "u");
	assert_string_equal(c->registry_password_file, "/pw");
	assert_int_equal(c->max_routes, 5);
	/* Another kind of registry, none at all, bounds, a user alone. */
	assert_int_equal(parse(c, BASE, "--registry", "consul:http://e1", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--registry", "etcd:", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--registry-ttl", "1", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--max-routes", "0", NULL), -EINVAL);
	assert_int_equal(parse(c, BASE, "--registry-user", "u", NULL), -EINVAL);
	free(c);
}

static void test_help_states_the_parsers_ranges(void **state)
{
	char *text = help_capture(show_help);

	assert_non_null(text);
	assert_non_null(strstr(text, "--max-conns N"));
	assert_true(help_check_ranges(text, try_option) >= 25);
	free(text);
}

static int try_option_in(void *cfg, const char *opt, const char *value)
{
	return parse(cfg, BASE, opt, value, NULL);
}

static void test_table_documents_every_option(void **state)
{
	assert_true(help_opttab_check_documented(&config__table) >= 60);
}

static void test_ranges_come_from_the_table(void **state)
{
	struct gw_config *c = cfg_new();

	assert_true(help_opttab_check_ranges(&config__table, try_option_in, c) >= 24);
	free(c);
}

/* Switches in a config file take true or false; the command line's
   switch wins over a file's false. */
static void test_config_file_switches(void **state)
{
	struct gw_config *c = cfg_new();
	const char *f =
	    tmpfile_with(0, "sw.conf", "no-deflate = true\nallow-plaintext = false\n");

	assert_int_equal(parse(c, BASE, "--config", f, NULL), 0);
	assert_true(c->no_deflate);
	assert_false(c->allow_plaintext);
	assert_int_equal(parse(c, BASE, "--config", f, "--allow-plaintext", NULL), 0);
	assert_true(c->allow_plaintext);
	f = tmpfile_with(0, "sw-bad.conf", "no-deflate = yes\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	f = tmpfile_with(0, "sw-man.conf", "help-man = true\n");
	assert_int_equal(parse(c, BASE, "--config", f, NULL), -EINVAL);
	free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_help_states_the_parsers_ranges),
	    cmocka_unit_test(test_defaults),
	    cmocka_unit_test(test_registry_flags),
	    cmocka_unit_test(test_every_flag),
	    cmocka_unit_test(test_bad_values),
	    cmocka_unit_test(test_required),
	    cmocka_unit_test(test_config_file),
	    cmocka_unit_test(test_config_file_bytes),
	    cmocka_unit_test(test_instances_file),
	    cmocka_unit_test(test_instances_text),
	    cmocka_unit_test(test_instances_file_merge),
	    cmocka_unit_test(test_http_flags),
	    cmocka_unit_test(test_table_documents_every_option),
	    cmocka_unit_test(test_ranges_come_from_the_table),
	    cmocka_unit_test(test_config_file_switches),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
