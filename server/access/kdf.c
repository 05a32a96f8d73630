/* SPDX-License-Identifier: ISC */
/* Password hashing with PBKDF2-HMAC-SHA256 (OpenSSL). Runs on helper threads: no
 * logging, nothing but the caller's buffers and one atomic counter. */
#include "kdf.h"
#include "base/util.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#define KDF_PREFIX   "pbkdf2-sha256$"
#define KDF_SALT_LEN 16
#define KDF_OUT_LEN  32

static atomic_ullong kdf_done;

/* Strict base64url (no padding) of exactly outlen bytes: each hash has one spelling. */
static int kdf_b64url_decode(const char *s, size_t slen, unsigned char *out, size_t outlen)
{
	return util_b64url_decode(s, slen, out, outlen) == (ssize_t)outlen ? 0 : -1;
}

/* Splits a stored hash into its parts; -1 for anything not exactly our format. */
static int kdf_parse(const char *stored, unsigned *iterations, unsigned char salt[KDF_SALT_LEN],
                     unsigned char hash[KDF_OUT_LEN])
{
	if (!stored || strncmp(stored, KDF_PREFIX, strlen(KDF_PREFIX)) != 0)
		return -1;
	const char *p = stored + strlen(KDF_PREFIX);
	/* Digits only, no sign, no leading zero: strtoul would accept " +07". */
	if (*p < '1' || *p > '9')
		return -1;
	uint64_t it = 0;
	while (*p >= '0' && *p <= '9') {
		it = it * 10 + (uint64_t)(*p - '0');
		if (it > KDF_MAX_ITERATIONS)
			return -1;
		p++;
	}
	if (it < KDF_MIN_ITERATIONS || *p != '$')
		return -1;
	const char *salt_s = ++p;
	const char *dollar = strchr(salt_s, '$');
	if (!dollar)
		return -1;
	const char *hash_s = dollar + 1;
	if (kdf_b64url_decode(salt_s, (size_t)(dollar - salt_s), salt, KDF_SALT_LEN) < 0 ||
	    kdf_b64url_decode(hash_s, strlen(hash_s), hash, KDF_OUT_LEN) < 0)
		return -1;
	*iterations = (unsigned)it;
	return 0;
}

static int kdf_derive(const char *password, const unsigned char *salt, unsigned iterations,
                      unsigned char out[KDF_OUT_LEN])
{
	int rc = PKCS5_PBKDF2_HMAC(password, (int)strlen(password), salt, KDF_SALT_LEN,
	                           (int)iterations, EVP_sha256(), KDF_OUT_LEN, out);
	if (rc != 1)
		return -1;
	atomic_fetch_add(&kdf_done, iterations);
	return 0;
}

int kdf_hash(const char *password, unsigned iterations, char *out, size_t outlen)
{
	unsigned char salt[KDF_SALT_LEN], dk[KDF_OUT_LEN];
	char salt_s[4 * ((KDF_SALT_LEN + 2) / 3) + 1], dk_s[4 * ((KDF_OUT_LEN + 2) / 3) + 1];

	if (!password || !out || iterations < KDF_MIN_ITERATIONS ||
	    iterations > KDF_MAX_ITERATIONS || strlen(password) > INT32_MAX)
		return -1;
	if (RAND_bytes(salt, sizeof(salt)) != 1 || kdf_derive(password, salt, iterations, dk) < 0)
		return -1;
	util_b64url(salt, sizeof(salt), salt_s);
	util_b64url(dk, sizeof(dk), dk_s);
	OPENSSL_cleanse(dk, sizeof(dk));
	int n = snprintf(out, outlen, KDF_PREFIX "%u$%s$%s", iterations, salt_s, dk_s);
	if (n < 0 || (size_t)n >= outlen) {
		if (outlen)
			out[0] = '\0';
		return -1;
	}
	return 0;
}

/* The check; *spent: the iterations it derived (0 when it refused before deriving). */
static bool kdf_check(const char *password, const char *stored, unsigned *spent)
{
	unsigned iterations;
	unsigned char salt[KDF_SALT_LEN], want[KDF_OUT_LEN], got[KDF_OUT_LEN];

	*spent = 0;
	if (!password || strlen(password) > INT32_MAX ||
	    kdf_parse(stored, &iterations, salt, want) < 0)
		return false;
	if (kdf_derive(password, salt, iterations, got) < 0)
		return false;
	*spent = iterations;
	bool ok = CRYPTO_memcmp(got, want, sizeof(got)) == 0;
	OPENSSL_cleanse(got, sizeof(got));
	return ok;
}

bool kdf_verify(const char *password, const char *stored)
{
	unsigned spent;
	return kdf_check(password, stored, &spent);
}

bool kdf_verify_floor(const char *password, const char *stored, unsigned floor)
{
	static const unsigned char salt[KDF_SALT_LEN];
	unsigned char pad[KDF_OUT_LEN];
	unsigned spent;

	bool ok = kdf_check(password, stored, &spent);
	if (floor > KDF_MAX_ITERATIONS)
		floor = KDF_MAX_ITERATIONS;
	/* The same PBKDF2 for the iterations still owed, right or wrong: the split costs one
	 * more setup of an HMAC key (microseconds) against thousands of iterations. */
	if (spent < floor && kdf_derive(password && strlen(password) <= INT32_MAX ? password : "",
	                                salt, floor - spent, pad) == 0)
		OPENSSL_cleanse(pad, sizeof(pad));
	return ok;
}

unsigned long long kdf_work(void)
{
	return atomic_load(&kdf_done);
}

unsigned kdf_iterations(const char *stored)
{
	unsigned iterations;
	unsigned char salt[KDF_SALT_LEN], hash[KDF_OUT_LEN];
	return kdf_parse(stored, &iterations, salt, hash) < 0 ? 0 : iterations;
}
