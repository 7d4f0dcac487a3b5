/* fuzz_jwt: libFuzzer harness for auth_jwt_verify. The input is a token; the
   key set holds an Ed25519 key and an HS256 secret, both with kids, so
   every path up to and past the signature check is reachable (a fuzzer
   will not forge a signature, but it does reach header, alg, kid and
   signature-length handling). Also feeds the input to the PEM parsers.
   Build by hand, e.g.:
   clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE \
     -Ishared -Iauth tests/fuzz/fuzz_jwt.c auth/auth_jwt.c \
     auth/keys.c shared/b64.c shared/buf.c shared/fdio.c shared/xalloc.c \
     -lsodium -ljansson -o fuzz_jwt */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <sodium.h>

#include "auth_jwt.h"
#include "keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct keyset *keys(void)
{
	static struct keyset *ks;
	static const uint8_t seed[32] = {1, 2, 3};
	static const uint8_t secret[32] = "fuzz-secret-fuzz-secret-fuzz-se";
	uint8_t pk[32], sk[64];

	if (ks)
		return ks;
	ks = keys_new();
	if (!ks)
		abort();
	crypto_sign_seed_keypair(pk, sk, seed);
	if (keys_add_ed25519_pub(ks, "ed", pk) || keys_add_hs256(ks, "hs", secret, 32))
		abort();
	return ks;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jwt_policy pol = {"aud", "iss", JWT_LEEWAY_S};
	struct jwt_claims c;
	uint8_t pk[32], sk[64];

	(void)auth_jwt_verify(keys(), NULL, (const char *)data, size, 1700000000, &c);
	(void)auth_jwt_verify(keys(), &pol, (const char *)data, size, 1700000000, &c);
	(void)keys_parse_public((const char *)data, size, pk);
	(void)keys_parse_private((const char *)data, size, sk);
	return 0;
}
