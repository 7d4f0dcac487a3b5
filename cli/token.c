/* token: the operator's side of authentication (docs/protocol.md, "6.
   Authentication"). `keygen` writes an Ed25519 pair
   in the PEM forms the gateway loads; `mint` builds the claims (sub,
   instance_id, session_id, scope, iat, exp, nbf, aud, iss) and signs them
   with the same key code the verifier uses (auth/keys.h, auth/auth_jwt.h),
   so what the CLI mints is what the gateway accepts. With --audience
   ptygate-link it mints a sidecar's instance credential instead
   (auth/linkcred.h): Ed25519 only, no scope or session, sub defaulting to
   the instance, which must be one real instance id. */
#include "token.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <sodium.h>

#include "auth_jwt.h"
#include "cli.h"
#include "id.h"
#include "keys.h"
#include "linkcred.h"
#include "num.h"

#define TOKEN_DEFAULT_TTL   3600
#define TOKEN_DEFAULT_SCOPE "pty:observe"

static const char token_keygen_usage[] =
    "Usage: ptygate token keygen --out-private FILE --out-public FILE\n"
    "\n"
    "Generate an Ed25519 key pair: the private key as PKCS#8 PEM (mode 0600),\n"
    "the public key as SubjectPublicKeyInfo PEM (mode 0644). Existing files are\n"
    "never overwritten. Give the public key file to the gateway; keep the\n"
    "private one for `ptygate token mint --ed25519-key`.\n";

static const char token_mint_usage[] =
    "Usage: ptygate token mint (--hs256-secret-file FILE | --ed25519-key FILE)\n"
    "                          --sub SUBJECT --instance ID [options]\n"
    "       ptygate token mint --audience ptygate-link --instance ID\n"
    "                          --ed25519-key FILE [--kid KID] [--ttl DURATION]\n"
    "\n"
    "Mint a bearer token (JWT) for the gateway and print it on stdout.\n"
    "\n"
    "With --audience ptygate-link, mint a sandbox's instance credential\n"
    "instead (ptygate-sidecar --instance-token-file): signed with the fleet's\n"
    "Ed25519 provisioning key, for one instance (not '*'), --sub defaulting\n"
    "to the instance, no --scope or --session. A client token can never\n"
    "carry that audience, and this one is never a client token.\n"
    "\n"
    "  --hs256-secret-file FILE  sign with HS256, secret read from FILE\n"
    "  --ed25519-key FILE        sign with EdDSA, PKCS#8 PEM private key in FILE\n"
    "  --kid KID                 key id for the header (key rotation)\n"
    "  --sub SUBJECT             the principal (required)\n"
    "  --instance ID             instance_id, or '*' for every instance (required)\n"
    "  --session ID              session_id, or '*' (default: every session)\n"
    "  --scope \"SCOPE ...\"       space separated, repeatable: pty:observe,\n"
    "                            pty:control, tasks, sessions (default: pty:observe)\n"
    "  --ttl DURATION            lifetime: N or Ns (seconds), Nm, Nh, Nd (default 1h)\n"
    "  --not-before-in DURATION  not valid until that long from now (sets nbf)\n"
    "  --audience AUD            aud claim (ptygate-link: an instance credential)\n"
    "  --issuer ISS              iss claim\n"
    "  -h, --help                show this help\n";

static const char token_usage[] =
    "Usage: ptygate token keygen --out-private FILE --out-public FILE\n"
    "       ptygate token mint (--hs256-secret-file FILE | --ed25519-key FILE)\n"
    "                          --sub SUBJECT --instance ID [options]\n"
    "       ptygate token mint --audience ptygate-link --instance ID\n"
    "                          --ed25519-key FILE [--kid KID] [--ttl DURATION]\n"
    "\n"
    "Run 'ptygate token keygen --help' or 'ptygate token mint --help' for details.\n";

/* How `mint` signs. */
struct token_key {
	const char *hs256_file, *ed25519_file, *kid;
};

/* Adds the space-separated scopes of arg to spec->scope, each once, in
   the order given. Returns 0, or -EINVAL for an unknown scope. */
static int token_add_scopes(struct token_spec *spec, const char *arg)
{
	static const char *const known[] = {"pty:observe", "pty:control", "tasks",
					    "sessions"};
	const char *s = arg, *end;
	size_t n, i, have;

	for (; *s; s = end) {
		while (*s == ' ')
			s++;
		end = s + strcspn(s, " ");
		n = (size_t)(end - s);
		if (n == 0)
			continue;
		for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
			if (n == strlen(known[i]) && !memcmp(s, known[i], n))
				break;
		if (i == sizeof(known) / sizeof(known[0]))
			return -EINVAL;
		if (spec->scope_seen & (1u << i))
			continue;
		spec->scope_seen |= 1u << i;
		/* All four known scopes fit in TOKEN_SCOPE_MAX. */
		have = strlen(spec->scope);
		snprintf(spec->scope + have, sizeof(spec->scope) - have, "%s%s",
			 have ? " " : "", known[i]);
	}
	return 0;
}

/* The claims of spec at time now, as compact JSON (caller frees). */
static char *token_claims_json(const struct token_spec *spec, int64_t now)
{
	json_t *o = json_object();
	char *out;

	json_object_set_new(o, "sub", json_string(spec->sub));
	json_object_set_new(o, "instance_id", json_string(spec->instance));
	if (spec->session)
		json_object_set_new(o, "session_id", json_string(spec->session));
	if (spec->scope[0]) /* a link credential has none */
		json_object_set_new(o, "scope", json_string(spec->scope));
	json_object_set_new(o, "iat", json_integer(now));
	json_object_set_new(o, "exp", json_integer(now + spec->ttl));
	if (spec->nbf_in >= 0)
		json_object_set_new(o, "nbf", json_integer(now + spec->nbf_in));
	if (spec->audience)
		json_object_set_new(o, "aud", json_string(spec->audience));
	if (spec->issuer)
		json_object_set_new(o, "iss", json_string(spec->issuer));
	out = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return out;
}

/* Signs claims with the key of k, appending the token to out. Returns
   CLI_OK, CLI_FAIL (unreadable key) or CLI_USAGE (bad kid). */
static int sign(const struct token_key *k, const char *claims, struct buf *out)
{
	struct buf secret = BUF_INIT;
	uint8_t sk[64];
	char err[CLI_ERR_LEN] = "";
	int rc;

	if (k->hs256_file) {
		rc = keys_read_hs256_secret(k->hs256_file, &secret, err, sizeof(err));
		if (rc == 0)
			rc = auth_jwt_mint_hs256(buf_head(&secret), buf_size(&secret),
						 k->kid, claims, out);
		if (secret.data)
			sodium_memzero(secret.data, secret.cap);
		buf_free(&secret);
	} else {
		rc = keys_load_private_file(k->ed25519_file, sk, err, sizeof(err));
		if (rc == 0)
			rc = auth_jwt_mint_eddsa(sk, k->kid, claims, out);
		sodium_memzero(sk, sizeof(sk));
	}
	if (rc < 0 && !out->len && !err[0])
		snprintf(err, sizeof(err), "signing the token failed");
	if (rc < 0) {
		cli_error("%s", err);
		return CLI_FAIL;
	}
	return CLI_OK;
}

/* The kid rule of the gateway's key specs (keys.h), so a kid minted here
   can be configured there. */
static bool kid_ok(const char *kid)
{
	size_t n = strlen(kid);

	return n >= 1 && n <= KEYS_KID_MAX &&
	       strspn(kid, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
			   "0123456789._-") == n;
}

/* Whether spec mints a sidecar's instance credential. */
static bool is_link(const struct token_spec *spec)
{
	return spec->audience && !strcmp(spec->audience, LINKCRED_AUDIENCE);
}

/* What an instance credential must be, so the gateway's link verifier
   (linkcred_verify) accepts what is minted here. */
static int check_link_spec(const struct token_spec *spec, const struct token_key *k)
{
	const char *cmd = "token mint";

	if (k->hs256_file || !k->ed25519_file)
		return cli_usage_error(cmd,
				       "--audience %s takes --ed25519-key (link "
				       "credentials are Ed25519 only)",
				       LINKCRED_AUDIENCE);
	if (spec->scope_seen || spec->session)
		return cli_usage_error(cmd, "--audience %s takes no --scope or --session",
				       LINKCRED_AUDIENCE);
	if (!spec->instance || !strcmp(spec->instance, "*") || !id_valid(spec->instance))
		return cli_usage_error(cmd,
				       "--audience %s needs --instance with one instance "
				       "id (1..%d of A-Z a-z 0-9 . _ ~ : @ -, not '*')",
				       LINKCRED_AUDIENCE, PTG_ID_MAX);
	return CLI_OK;
}

static int check_spec(const struct token_spec *spec, const struct token_key *k)
{
	const char *cmd = "token mint";
	int rc;

	if (!!k->hs256_file == !!k->ed25519_file)
		return cli_usage_error(cmd, "give exactly one of --hs256-secret-file "
					    "and --ed25519-key");
	if (is_link(spec) && (rc = check_link_spec(spec, k)) != CLI_OK)
		return rc;
	if (!spec->sub || !*spec->sub || strlen(spec->sub) > JWT_SUB_MAX)
		return cli_usage_error(cmd, "--sub is required (1..%d bytes)",
				       JWT_SUB_MAX);
	if (!spec->instance || !*spec->instance || strlen(spec->instance) > PTG_ID_MAX)
		return cli_usage_error(cmd, "--instance is required (1..%d bytes)",
				       PTG_ID_MAX);
	if (spec->session && (!*spec->session || strlen(spec->session) > PTG_ID_MAX))
		return cli_usage_error(cmd, "--session must be 1..%d bytes", PTG_ID_MAX);
	if (k->kid && !kid_ok(k->kid))
		return cli_usage_error(cmd, "bad --kid '%s' (1..%d of A-Z a-z 0-9 . _ -)",
				       k->kid, KEYS_KID_MAX);
	if (spec->ttl <= 0)
		return cli_usage_error(cmd, "--ttl must be more than 0 seconds");
	return CLI_OK;
}

enum {
	TOKEN_OPT_HS256 = CLI_OPT_FIRST_FREE,
	TOKEN_OPT_ED25519,
	TOKEN_OPT_KID,
	TOKEN_OPT_SUB,
	TOKEN_OPT_INSTANCE,
	TOKEN_OPT_SESSION,
	TOKEN_OPT_SCOPE,
	TOKEN_OPT_TTL,
	TOKEN_OPT_NBF,
	TOKEN_OPT_AUD,
	TOKEN_OPT_ISS,
};

/* Every option of `ptygate token mint`, once (see CLI_GETOPT in cli.h). */
#define TOKEN_MINT_OPTS(X)                                                               \
	X("hs256-secret-file", required_argument, TOKEN_OPT_HS256, "FILE",               \
	  "sign with HS256, the secret read from FILE")                                  \
	X("ed25519-key", required_argument, TOKEN_OPT_ED25519, "FILE",                   \
	  "sign with EdDSA, the PKCS#8 PEM private key in FILE (an instance "            \
	  "credential: the fleet's provisioning key)")                                   \
	X("kid", required_argument, TOKEN_OPT_KID, "KID",                                \
	  "the key id in the header: gateways pick the key by it, which is how keys "    \
	  "are rotated")                                                                 \
	X("sub", required_argument, TOKEN_OPT_SUB, "SUBJECT",                            \
	  "the principal (required for a client token; an instance credential's "        \
	  "defaults to the instance)")                                                   \
	X("instance", required_argument, TOKEN_OPT_INSTANCE, "ID",                       \
	  "instance_id, or '*' for every instance (required; an instance credential "    \
	  "names one real instance)")                                                    \
	X("session", required_argument, TOKEN_OPT_SESSION, "ID",                         \
	  "session_id, or '*' (default: every session)")                                 \
	X("scope", required_argument, TOKEN_OPT_SCOPE, "\"SCOPE ...\"",                  \
	  "space separated, repeatable: pty:observe, pty:control, tasks, "               \
	  "sessions (default: pty:observe)")                                             \
	X("ttl", required_argument, TOKEN_OPT_TTL, "DURATION",                           \
	  "the lifetime: N or Ns (seconds), Nm, Nh or Nd (default 1h)")                  \
	X("not-before-in", required_argument, TOKEN_OPT_NBF, "DURATION",                 \
	  "not valid until that long from now (sets nbf)")                               \
	X("audience", required_argument, TOKEN_OPT_AUD, "AUD",                           \
	  "the aud claim; ptygate-link mints an instance credential instead of a "       \
	  "client token")                                                                \
	X("issuer", required_argument, TOKEN_OPT_ISS, "ISS", "the iss claim")            \
	X("help", no_argument, 'h', NULL, "show the help")

const struct option token_mint_opts[] = {TOKEN_MINT_OPTS(CLI_GETOPT) CLI_GETOPT_END};
const struct cli_optdoc token_mint_optdocs[] = {TOKEN_MINT_OPTS(CLI_OPTDOC)
						    CLI_OPTDOC_END};

/* One mint option into spec or k. Returns CLI_OK or CLI_USAGE. */
static int mint_option(int c, const char *arg, struct token_spec *spec,
		       struct token_key *k)
{
	const char *cmd = "token mint";

	switch (c) {
	case TOKEN_OPT_HS256:
		k->hs256_file = arg;
		break;
	case TOKEN_OPT_ED25519:
		k->ed25519_file = arg;
		break;
	case TOKEN_OPT_KID:
		k->kid = arg;
		break;
	case TOKEN_OPT_SUB:
		spec->sub = arg;
		break;
	case TOKEN_OPT_INSTANCE:
		spec->instance = arg;
		break;
	case TOKEN_OPT_SESSION:
		spec->session = arg;
		break;
	case TOKEN_OPT_AUD:
		spec->audience = arg;
		break;
	case TOKEN_OPT_ISS:
		spec->issuer = arg;
		break;
	case TOKEN_OPT_SCOPE:
		if (token_add_scopes(spec, arg) < 0)
			return cli_usage_error(cmd,
					       "unknown scope in '%s' (known: "
					       "pty:observe pty:control tasks sessions)",
					       arg);
		break;
	case TOKEN_OPT_TTL:
		if (num_parse_duration_s(arg, CLI_DURATION_MAX, &spec->ttl) < 0)
			return cli_usage_error(cmd, "bad --ttl '%s'", arg);
		break;
	case TOKEN_OPT_NBF:
		if (num_parse_duration_s(arg, CLI_DURATION_MAX, &spec->nbf_in) < 0)
			return cli_usage_error(cmd, "bad --not-before-in '%s'", arg);
		break;
	}
	return CLI_OK;
}

/* Parses mint's options into spec and k; CLI_OK, CLI_USAGE, or -1 for
   --help (already printed). */
static int mint_parse(int argc, char **argv, struct token_spec *spec, struct token_key *k)
{
	int c, rc;

	spec->ttl = TOKEN_DEFAULT_TTL;
	spec->nbf_in = -1;
	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:h", token_mint_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(token_mint_usage, stdout);
			return -1;
		}
		if (c == '?' || c == ':')
			return cli_getopt_error("token mint", argv, c);
		rc = mint_option(c, optarg, spec, k);
		if (rc != CLI_OK)
			return rc;
	}
	if (optind < argc)
		return cli_usage_error("token mint", "unexpected argument '%s'",
				       argv[optind]);
	if (is_link(spec) && !spec->sub)
		spec->sub = spec->instance;
	if (!spec->scope[0] && !is_link(spec))
		token_add_scopes(spec, TOKEN_DEFAULT_SCOPE);
	return check_spec(spec, k);
}

static int mint(int argc, char **argv)
{
	struct token_spec spec = {0};
	struct token_key k = {0};
	struct buf out = BUF_INIT;
	char *claims;
	int rc;

	rc = mint_parse(argc, argv, &spec, &k);
	if (rc != CLI_OK)
		return rc < 0 ? CLI_OK : rc;
	claims = token_claims_json(&spec, (int64_t)time(NULL));
	rc = sign(&k, claims, &out);
	if (rc == CLI_OK && printf("%s\n", (const char *)buf_head(&out)) < 0)
		rc = CLI_FAIL;
	free(claims);
	buf_free(&out);
	return rc;
}

/* Every option of `ptygate token keygen`, once (see CLI_GETOPT in cli.h). */
#define TOKEN_KEYGEN_OPTS(X)                                                             \
	X("out-private", required_argument, 'k', "FILE",                                 \
	  "write the private key here, PKCS#8 PEM, mode 0600 (required)")                \
	X("out-public", required_argument, 'p', "FILE",                                  \
	  "write the public key here, SubjectPublicKeyInfo PEM, mode 0644 (required)")   \
	X("help", no_argument, 'h', NULL, "show the help")

const struct option token_keygen_opts[] = {TOKEN_KEYGEN_OPTS(CLI_GETOPT) CLI_GETOPT_END};
const struct cli_optdoc token_keygen_optdocs[] = {TOKEN_KEYGEN_OPTS(CLI_OPTDOC)
						      CLI_OPTDOC_END};

static int keygen(int argc, char **argv)
{
	const char *cmd = "token keygen", *priv = NULL, *pub = NULL;
	char err[CLI_ERR_LEN];
	int c;

	cli_getopt_reset();
	while ((c = getopt_long(argc, argv, "+:h", token_keygen_opts, NULL)) != -1) {
		if (c == 'h') {
			fputs(token_keygen_usage, stdout);
			return CLI_OK;
		}
		if (c == '?' || c == ':')
			return cli_getopt_error(cmd, argv, c);
		if (c == 'k')
			priv = optarg;
		else
			pub = optarg;
	}
	if (optind < argc)
		return cli_usage_error(cmd, "unexpected argument '%s'", argv[optind]);
	if (!priv || !pub || !*priv || !*pub)
		return cli_usage_error(cmd,
				       "--out-private and --out-public are required");
	if (keys_generate_files(priv, pub, err, sizeof(err)) < 0) {
		cli_error("%s", err);
		return CLI_FAIL;
	}
	return CLI_OK;
}

int token_main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		fputs(token_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? CLI_USAGE : CLI_OK;
	}
	if (!strcmp(argv[1], "keygen"))
		return keygen(argc - 1, argv + 1);
	if (!strcmp(argv[1], "mint"))
		return mint(argc - 1, argv + 1);
	return cli_usage_error("token", "unknown command '%s' (keygen, mint)", argv[1]);
}
