/* SPDX-License-Identifier: ISC */
/* token_sign/token_verify: a good token passes; every forgery we know of is refused. */
#include "tap.h"
#include "access/token.h"
#include "base/util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#define NOW 1767225600 /* 2026-01-01T00:00:00Z: tests don't depend on the clock */
#define JTI "0123456789abcdef0123456789abcdef"

static unsigned char key[TOKEN_KEY_LEN], other_key[TOKEN_KEY_LEN];

/* "<b64url(header)>.<b64url(payload)>.<b64url(HMAC(md, k, first two parts))>", or with
 * an empty signature when md is NULL. The result is for free(). */
static char *forge(const char *header, const char *payload, const EVP_MD *md,
                   const unsigned char *k, size_t klen)
{
	size_t hl = strlen(header), pl = strlen(payload);
	char *t = xmalloc(4 * (hl + pl) / 3 + 200);
	size_t n = util_b64url(header, hl, t);
	t[n++] = '.';
	n += util_b64url(payload, pl, t + n);
	if (md) {
		unsigned char mac[EVP_MAX_MD_SIZE];
		unsigned int maclen = 0;
		static const unsigned char empty[1];
		HMAC(md, k ? k : empty, (int)klen, (unsigned char *)t, n, mac, &maclen);
		t[n++] = '.';
		util_b64url(mac, maclen, t + n);
	} else {
		t[n++] = '.';
		t[n] = '\0';
	}
	return t;
}

#define HS256 "{\"alg\":\"HS256\",\"typ\":\"JWT\"}"
#define GOOD_PAYLOAD                                                                               \
	"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}"

static int verify(const char *tok, const char **why)
{
	struct token_claims c;
	return token_verify(key, sizeof(key), tok, NOW, &c, why);
}

static void refused(char *tok, const char *what)
{
	const char *why = NULL;
	int rc = verify(tok, &why);
	ok(rc == -1 && why != NULL, "refused: %s (%s)", what, why ? why : "accepted!");
	free(tok);
}

static void test_good(void)
{
	struct token_claims c = {.sub = "monitor", .jti = JTI, .iat = NOW, .exp = NOW + 3600};
	struct token_claims got;
	const char *why = "unset";

	ok(token_sign(key, 16, &c) == NULL, "sign refuses a short key");
	ok(token_sign(NULL, 0, &c) == NULL, "sign refuses no key");
	char *t = token_sign(key, sizeof(key), &c);
	ok(t != NULL, "sign");
	is_int(token_verify(key, sizeof(key), t, NOW, &got, &why), 0, "good token accepted");
	ok(why == NULL, "no reason on success");
	is_str(got.sub, "monitor", "sub round-trips");
	is_str(got.jti, JTI, "jti round-trips");
	is_int(got.iat, NOW, "iat round-trips");
	is_int(got.exp, NOW + 3600, "exp round-trips");
	is_int(token_verify(key, sizeof(key), t, NOW + 3599, &got, &why), 0,
	       "accepted a second before exp");
	is_int(token_verify(key, sizeof(key), t, NOW - 59, &got, &why), 0,
	       "accepted with iat 59 s in the future (clock skew)");

	/* Same claims by hand must give the same token: proves forge() builds real JWTs,
	 * so the refusals below are refused for the reason they test. */
	char *h = forge(HS256, GOOD_PAYLOAD, EVP_sha256(), key, sizeof(key));
	is_int(verify(h, &why), 0, "hand-built HS256 token with our key accepted");
	free(h);
	free(t);
}

static void test_expiry(void)
{
	struct token_claims c = {.sub = "monitor", .jti = JTI, .iat = NOW - 7200, .exp = NOW - 1};
	struct token_claims got;
	const char *why = NULL;
	char *t = token_sign(key, sizeof(key), &c);
	int rc = token_verify(key, sizeof(key), t, NOW, &got, &why);
	ok(rc == -1 && why && strcmp(why, "expired") == 0, "expired token refused (%s)",
	   why ? why : "accepted!");
	free(t);

	c.iat = NOW;
	c.exp = NOW + 3600;
	t = token_sign(key, sizeof(key), &c);
	rc = token_verify(key, sizeof(key), t, NOW + 3600, &got, &why);
	ok(rc == -1, "refused at exactly exp (%s)", why ? why : "accepted!");
	rc = token_verify(key, sizeof(key), t, NOW - 61, &got, &why);
	ok(rc == -1 && why && strcmp(why, "issued in the future") == 0,
	   "refused when iat is more than 60 s in the future (%s)", why ? why : "accepted!");
	free(t);
}

static void test_forgeries(void)
{
	/* alg none: the classic; 1.10 would accept it if we ever decoded without a key. */
	refused(forge("{\"alg\":\"none\"}", GOOD_PAYLOAD, NULL, NULL, 0), "alg none, no signature");
	refused(forge("{\"alg\":\"none\",\"typ\":\"JWT\"}", GOOD_PAYLOAD, NULL, NULL, 0),
	        "alg none with typ JWT");
	refused(forge("{\"alg\":\"none\"}", GOOD_PAYLOAD, EVP_sha256(), key, sizeof(key)),
	        "alg none carrying a valid HMAC of our key");
	refused(forge("{\"alg\":\"NONE\"}", GOOD_PAYLOAD, NULL, NULL, 0), "alg NONE");
	/* What a server with an empty secret would issue. */
	refused(forge(HS256, GOOD_PAYLOAD, EVP_sha256(), NULL, 0),
	        "HS256 signed with an empty key");
	refused(forge(HS256, GOOD_PAYLOAD, EVP_sha256(), other_key, sizeof(other_key)),
	        "HS256 signed by another server's key");
	refused(forge("{\"alg\":\"HS384\",\"typ\":\"JWT\"}", GOOD_PAYLOAD, EVP_sha384(), key,
	              sizeof(key)),
	        "HS384 with our key");
	refused(forge("{\"alg\":\"HS512\",\"typ\":\"JWT\"}", GOOD_PAYLOAD, EVP_sha512(), key,
	              sizeof(key)),
	        "HS512 with our key");
	refused(forge("{\"alg\":\"RS256\",\"typ\":\"JWT\"}", GOOD_PAYLOAD, EVP_sha256(), key,
	              sizeof(key)),
	        "RS256 header over an HS256 MAC");

	/* Tampered payload: sign as monitor, swap in an admin payload, keep the signature. */
	char *good = forge(HS256, GOOD_PAYLOAD, EVP_sha256(), key, sizeof(key));
	char *evil = forge(
	    HS256, "{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"admin\"}",
	    EVP_sha256(), key, sizeof(key));
	char *dot_g = strrchr(good, '.'), *dot_e = strrchr(evil, '.');
	char *tampered = xasprintf("%.*s%s", (int)(dot_e - evil), evil, dot_g);
	refused(tampered, "payload changed (sub admin), signature kept");
	/* A later exp, same trick. */
	char *later =
	    forge(HS256,
	          "{\"exp\":1999999999,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	          EVP_sha256(), key, sizeof(key));
	char *dot_l = strrchr(later, '.');
	refused(xasprintf("%.*s%s", (int)(dot_l - later), later, dot_g),
	        "exp extended, signature kept");
	/* One flipped signature character. */
	char *flip = xstrdup(good);
	char *last = flip + strlen(flip) - 2;
	*last = *last == 'A' ? 'B' : 'A';
	refused(flip, "one signature character changed");
	/* Signature truncated, and padded. */
	refused(xasprintf("%.*s", (int)strlen(good) - 1, good), "signature truncated");
	refused(xasprintf("%s=", good), "signature padded with '='");
	refused(xasprintf("%sA", good), "signature with an extra character");
	refused(xasprintf("%s.", good), "a fourth segment");
	free(good);
	free(evil);
	free(later);
}

static void test_claims(void)
{
	static const struct {
		const char *payload, *what;
	} cases[] = {
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"" JTI "\"}", "no sub"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"sub\":\"monitor\"}", "no jti"},
	    {"{\"exp\":1767229200,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}", "no iat"},
	    {"{\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}", "no exp"},
	    {"{}", "no claims at all"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"\"}",
	     "empty sub"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":7}",
	     "sub is a number"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"0123\",\"sub\":\"monitor\"}",
	     "jti too short"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"0123456789ABCDEF0123456789abcdef\","
	     "\"sub\":\"monitor\"}",
	     "jti upper-case"},
	    {"{\"exp\":1767229200,\"iat\":1767225600,\"jti\":\"0123456789abcdef0123456789abcdeg\","
	     "\"sub\":\"monitor\"}",
	     "jti not hex"},
	    {"{\"exp\":\"1767229200\",\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	     "exp is a string"},
	    {"{\"exp\":1767229200,\"iat\":\"1767225600\",\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	     "iat is a string"},
	    {"{\"exp\":1767229200,\"iat\":1.5,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	     "iat is a real"},
	    {"{\"exp\":true,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	     "exp is a bool"},
	    {"{\"exp\":1767225600,\"iat\":1767225600,\"jti\":\"" JTI "\",\"sub\":\"monitor\"}",
	     "exp == iat"},
	    {"[1,2,3]", "payload is an array"},
	    {"not json", "payload is not JSON"},
	};
	for (size_t i = 0; i < nitems(cases); i++)
		refused(forge(HS256, cases[i].payload, EVP_sha256(), key, sizeof(key)),
		        cases[i].what);
	refused(forge("not json", GOOD_PAYLOAD, EVP_sha256(), key, sizeof(key)),
	        "header is not JSON");
	refused(forge("{\"typ\":\"JWT\"}", GOOD_PAYLOAD, EVP_sha256(), key, sizeof(key)),
	        "header without alg");
}

static void test_garbage(void)
{
	static const char *const bad[] = {
	    "",
	    ".",
	    "..",
	    "...",
	    "a",
	    "a.b",
	    "a.b.c",
	    "a..c",
	    ".b.c",
	    "a.b.",
	    "eyJhbGciOiJIUzI1NiJ9",
	    "eyJhbGciOiJIUzI1NiJ9.e30",
	    "Bearer x.y.z",
	    "a b.c.d",
	    "a.b.c\n",
	    "\xff\xfe.\x01.\x02",
	};
	struct token_claims c;
	const char *why;

	for (size_t i = 0; i < nitems(bad); i++)
		refused(xstrdup(bad[i]), "garbage");
	ok(token_verify(key, sizeof(key), NULL, NOW, &c, &why) == -1, "NULL token refused");

	char *big = xmalloc(TOKEN_MAX_LEN + 100);
	memset(big, 'A', TOKEN_MAX_LEN + 99);
	big[10] = '.';
	big[20] = '.';
	big[TOKEN_MAX_LEN + 99] = '\0';
	refused(big, "longer than TOKEN_MAX_LEN");

	/* The key-side guards: these would make libjwt 1.10 skip the signature check. */
	struct token_claims tc = {.sub = "monitor", .jti = JTI, .iat = NOW, .exp = NOW + 3600};
	char *t = token_sign(key, sizeof(key), &tc);
	ok(token_verify(NULL, 0, t, NOW, &c, &why) == -1, "verify with a NULL key refused");
	ok(token_verify(key, 0, t, NOW, &c, &why) == -1, "verify with key length 0 refused");
	ok(token_verify(key, TOKEN_KEY_LEN - 1, t, NOW, &c, &why) == -1,
	   "verify with a short key refused");
	free(t);
}

static void test_speed(void)
{
	struct token_claims c = {.sub = "monitor", .jti = JTI, .iat = NOW, .exp = NOW + 3600};
	struct token_claims got;
	char *t = token_sign(key, sizeof(key), &c);
	const int n = 20000;
	int fails = 0;
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++)
		fails += token_verify(key, sizeof(key), t, NOW, &got, NULL) != 0;
	clock_gettime(CLOCK_MONOTONIC, &b);
	double us = ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / 1e3;
	is_int(fails, 0, "%d verifies", n);
	diag("token_verify: %.2f us per verify (%d runs, %zu-byte token)", us / n, n, strlen(t));
	free(t);
}

/* util_b64url_decode: the inverse of util_b64url, strict about its one spelling. */
static void test_b64url_decode(void)
{
	unsigned char in[64], out[64];
	char text[100];
	for (size_t len = 0; len <= 40; len++) {
		util_random(in, len);
		size_t n = util_b64url(in, len, text);
		ssize_t got = util_b64url_decode(text, n, out, sizeof(out));
		if (got != (ssize_t)len || memcmp(in, out, len) != 0) {
			ok(0, "round trip of %zu bytes", len);
			return;
		}
	}
	ok(1, "every length from 0 to 40 bytes round-trips");
	is_int(util_b64url_decode("AQI", 3, out, 2), 2, "3 characters: 2 bytes");
	is_int(util_b64url_decode("AQJ", 3, out, 2), -1, "unused trailing bits set: refused");
	is_int(util_b64url_decode("AQI=", 4, out, 4), -1, "padding: refused");
	is_int(util_b64url_decode("AQ+I", 4, out, 4), -1, "+ (base64, not base64url): refused");
	is_int(util_b64url_decode("AQIDB", 5, out, 8), -1, "a length no bytes encode to: refused");
	is_int(util_b64url_decode("AQID", 4, out, 2), -1, "more bytes than the room: refused");
}

int main(void)
{
	if (util_random(key, sizeof(key)) < 0 || util_random(other_key, sizeof(other_key)) < 0)
		return 2;
	test_good();
	test_expiry();
	test_forgeries();
	test_claims();
	test_garbage();
	test_b64url_decode();
	test_speed();
	return done_testing();
}
