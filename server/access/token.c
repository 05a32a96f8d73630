/* SPDX-License-Identifier: ISC */
/* JWT HS256 with libjwt 1.10, hardened where 1.10 is soft: it decodes without a key
 * (alg none), compares signatures with strcmp, and validates no claims. */
#include "token.h"
#include "base/util.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jwt.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define TOKEN_SIG_LEN 43 /* base64url of a 32-byte HMAC-SHA256, unpadded */
/* Clock skew we forgive between an issuer and us (we are the issuer, but keep it sane). */
#define TOKEN_IAT_SKEW 60

static bool token_jti_valid(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 32;
}

static bool token_sub_valid(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return false;
	return true;
}

static bool token_b64url_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

char *token_sign(const unsigned char *key, size_t keylen, const struct token_claims *c)
{
	jwt_t *j = NULL;
	char *out = NULL;

	if (!key || keylen < TOKEN_KEY_LEN || keylen > INT32_MAX || !c ||
	    !token_sub_valid(c->sub) || !token_jti_valid(c->jti) || c->iat <= 0 ||
	    c->exp <= c->iat) {
		errno = EINVAL;
		return NULL;
	}
	if (jwt_new(&j) != 0)
		return NULL;
	if (jwt_add_grant(j, "sub", c->sub) == 0 && jwt_add_grant(j, "jti", c->jti) == 0 &&
	    jwt_add_grant_int(j, "iat", (long)c->iat) == 0 &&
	    jwt_add_grant_int(j, "exp", (long)c->exp) == 0 &&
	    jwt_set_alg(j, JWT_ALG_HS256, key, (int)keylen) == 0)
		out = jwt_encode_str(j); /* malloc'd: the caller free()s it */
	jwt_free(j);
	return out;
}

/* Our own constant-time check of the signature, done before libjwt sees the token: it
 * refuses alg none, empty-key and foreign-key tokens without parsing any JSON, and
 * libjwt's strcmp then only ever compares signatures that already matched. */
static bool token_mac_ok(const unsigned char *key, size_t keylen, const char *token,
                         size_t signed_len, const char *sig, size_t siglen)
{
	unsigned char mac[EVP_MAX_MD_SIZE];
	unsigned int maclen = 0;
	char want[TOKEN_SIG_LEN + 2];

	if (siglen != TOKEN_SIG_LEN)
		return false;
	if (!HMAC(EVP_sha256(), key, (int)keylen, (const unsigned char *)token, signed_len, mac,
	          &maclen) ||
	    maclen != 32)
		return false;
	util_b64url(mac, maclen, want);
	OPENSSL_cleanse(mac, sizeof(mac));
	return CRYPTO_memcmp(want, sig, TOKEN_SIG_LEN) == 0;
}

/* An integer claim > 0: 1.10 answers 0 with errno 0 for a string, a real or a bool, so
 * the sign check is what refuses those; a string claim is refused by name as well. */
static int token_int_claim(jwt_t *j, const char *name, int64_t *out)
{
	errno = 0;
	long v = jwt_get_grant_int(j, name);
	if (errno != 0 || v <= 0 || jwt_get_grant(j, name) != NULL)
		return -1;
	*out = v;
	return 0;
}

int token_verify(const unsigned char *key, size_t keylen, const char *token, int64_t now,
                 struct token_claims *out, const char **why)
{
	const char *dummy;
	jwt_t *j = NULL;
	int rc = -1;

	if (!why)
		why = &dummy;
	*why = "malformed token";
	/* libjwt 1.10 skips the signature check entirely without a key: never get there. */
	if (!key || keylen < TOKEN_KEY_LEN || keylen > INT32_MAX) {
		*why = "no key";
		return -1;
	}
	if (!token || !out)
		return -1;
	size_t len = strnlen(token, TOKEN_MAX_LEN + 1);
	if (len == 0 || len > TOKEN_MAX_LEN)
		return -1;
	const char *dot1 = NULL, *dot2 = NULL;
	for (size_t i = 0; i < len; i++) {
		if (token[i] == '.') {
			if (!dot1)
				dot1 = token + i;
			else if (!dot2)
				dot2 = token + i;
			else
				return -1;
		} else if (!token_b64url_char(token[i])) {
			return -1;
		}
	}
	if (!dot1 || !dot2 || dot1 == token || dot2 == dot1 + 1)
		return -1;
	if (!token_mac_ok(key, keylen, token, (size_t)(dot2 - token), dot2 + 1,
	                  len - (size_t)(dot2 + 1 - token))) {
		*why = "bad signature";
		return -1;
	}

	if (jwt_decode(&j, token, key, (int)keylen) != 0 || !j)
		return -1;
	if (jwt_get_alg(j) != JWT_ALG_HS256) {
		*why = "alg is not HS256";
		goto out;
	}
	struct token_claims c;
	memset(&c, 0, sizeof(c));
	const char *sub = jwt_get_grant(j, "sub");
	const char *jti = jwt_get_grant(j, "jti");
	if (!sub || !token_sub_valid(sub)) {
		*why = "missing or bad sub";
		goto out;
	}
	if (!jti || !token_jti_valid(jti)) {
		*why = "missing or bad jti";
		goto out;
	}
	if (token_int_claim(j, "iat", &c.iat) < 0) {
		*why = "missing or bad iat";
		goto out;
	}
	if (token_int_claim(j, "exp", &c.exp) < 0 || c.exp <= c.iat) {
		*why = "missing or bad exp";
		goto out;
	}
	if (now >= c.exp) {
		*why = "expired";
		goto out;
	}
	if (c.iat > now + TOKEN_IAT_SKEW) {
		*why = "issued in the future";
		goto out;
	}
	memcpy(c.sub, sub, strlen(sub) + 1);
	memcpy(c.jti, jti, strlen(jti) + 1);
	*out = c;
	*why = NULL;
	rc = 0;
out:
	jwt_free(j);
	return rc;
}
