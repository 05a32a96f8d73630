/* SPDX-License-Identifier: ISC */
/* JWT HS256 tokens: pure functions, no state, so they are easy to test. */
#ifndef SPINDLE_TOKEN_H
#define SPINDLE_TOKEN_H

#include <stddef.h>
#include <stdint.h>

#define TOKEN_KEY_LEN 32   /* 256-bit HMAC secret */
#define TOKEN_MAX_LEN 1024 /* ours are ~250 bytes; anything longer is refused unparsed */

struct token_claims {
	char sub[65];
	char jti[33];
	int64_t iat, exp;
};

/* New token for free(), or NULL. Refuses a key shorter than TOKEN_KEY_LEN. */
char *token_sign(const unsigned char *key, size_t keylen, const struct token_claims *c);
/* 0 when the signature is valid with this key, alg is HS256, sub/jti/iat/exp are
 * present and well formed, iat <= now + 60 and now < exp; -1 otherwise, with a
 * short reason in *why (static string). Never decodes without the key. */
int token_verify(const unsigned char *key, size_t keylen, const char *token, int64_t now,
                 struct token_claims *out, const char **why);

#endif
