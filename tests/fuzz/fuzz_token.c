/* SPDX-License-Identifier: ISC */
/* The token check, token_verify() as auth_verify() calls it, against a fixed key:
 * - the input itself as a token (what a client sends in X-Auth-Session or a Bearer
 *   header): never accepted, since a forgery would need the key;
 * - the input as "<header>\n<payload>", each base64url-encoded and signed with another
 *   key: never accepted either;
 * - the same signed with the key itself, so libjwt's parsing and our claim checks get
 *   fuzzed JSON: accepted only with alg HS256 in the header and claims that keep every
 *   promise of token.h (sub, jti, iat <= now + 60, now < exp). */
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "fuzz.h"
#include "access/token.h"
#include "base/util.h"

#define NOW 1767225600 /* 2026-01-01T00:00:00Z */

static const unsigned char key[TOKEN_KEY_LEN] = "fuzz-key-fuzz-key-fuzz-key-0123";
static const unsigned char other_key[TOKEN_KEY_LEN] = "not-the-key-not-the-key-not-012";

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* A token verified with key: 0 accepted, -1 refused. */
static int verify(const char *token, struct token_claims *c)
{
	const char *why = NULL;
	memset(c, 0, sizeof(*c));
	int rc = token_verify(key, sizeof(key), token, NOW, c, &why);
	fuzz_assert(rc == 0 ? why == NULL : (rc == -1 && why != NULL));
	return rc;
}

/* "<b64url(header)>.<b64url(payload)>.<b64url(HMAC-SHA256(k, the first two))>", for free(). */
static char *sign(const char *header, size_t hl, const char *payload, size_t pl,
                  const unsigned char *k)
{
	char *t = xmalloc(4 * (hl + pl) / 3 + 64);
	size_t n = util_b64url(header, hl, t);
	t[n++] = '.';
	n += util_b64url(payload, pl, t + n);
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	HMAC(EVP_sha256(), k, TOKEN_KEY_LEN, (const unsigned char *)t, n, mac, &maclen);
	t[n++] = '.';
	n += util_b64url(mac, maclen, t + n);
	t[n] = '\0';
	return t;
}

/* What libjwt read as the header's alg: it parses the decoded text up to a NUL, and
 * compares alg names ignoring case ("hs256" is HS256 to it). Harmless: the signature covers
 * the header, so only the key's holder, spindled, can make a token with any alg. */
static bool header_is_hs256(const char *header, size_t hl)
{
	char *text = xstrndup(header, hl);
	json_t *h = json_loads(text, 0, NULL);
	const char *alg = json_string_value(json_object_get(h, "alg"));
	bool ok = alg && strcasecmp(alg, "HS256") == 0;
	json_decref(h);
	free(text);
	return ok;
}

static void claims_ok(const struct token_claims *c)
{
	size_t n = strnlen(c->sub, sizeof(c->sub));
	fuzz_assert(n > 0 && n < sizeof(c->sub));
	for (size_t i = 0; i < n; i++)
		fuzz_assert((unsigned char)c->sub[i] >= 0x20 && c->sub[i] != 0x7f);
	fuzz_assert(strnlen(c->jti, sizeof(c->jti)) == 32);
	for (size_t i = 0; i < 32; i++)
		fuzz_assert((c->jti[i] >= '0' && c->jti[i] <= '9') ||
		            (c->jti[i] >= 'a' && c->jti[i] <= 'f'));
	fuzz_assert(c->iat > 0 && c->iat <= NOW + 60 && c->exp > c->iat && NOW < c->exp);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct token_claims c;
	/* a header value is text: what comes before a NUL */
	char *raw = xstrndup((const char *)data, size);
	fuzz_assert(verify(raw, &c) == -1);
	free(raw);

	if (size > TOKEN_MAX_LEN)
		return 0; /* signed, it would be refused unparsed for its length */
	const char *header = (const char *)data, *nl = memchr(data, '\n', size);
	size_t hl = nl ? (size_t)(nl - header) : size;
	const char *payload = nl ? nl + 1 : "";
	size_t pl = nl ? size - hl - 1 : 0;

	char *forged = sign(header, hl, payload, pl, other_key);
	fuzz_assert(verify(forged, &c) == -1);
	free(forged);

	char *signed_ = sign(header, hl, payload, pl, key);
	if (verify(signed_, &c) == 0) {
		fuzz_assert(header_is_hs256(header, hl));
		claims_ok(&c);
	}
	free(signed_);
	return 0;
}
