/* SPDX-License-Identifier: ISC */
/* Password hashing: PBKDF2-HMAC-SHA256 with a random 16-byte salt.
 * Stored form: "pbkdf2-sha256$<iterations>$<salt b64url>$<hash b64url>".
 * Both functions are slow by design: call them on a helper thread. */
#ifndef SPINDLE_KDF_H
#define SPINDLE_KDF_H

#include <stdbool.h>
#include <stddef.h>

#define KDF_MIN_ITERATIONS     1000 /* tests only; production default below */
#define KDF_DEFAULT_ITERATIONS 600000
#define KDF_MAX_ITERATIONS     10000000 /* also caps a stored hash (tampered db) */
#define KDF_HASH_MAX           160

/* 0 and out filled, -1 on failure. */
int kdf_hash(const char *password, unsigned iterations, char *out, size_t outlen);
/* Constant-time check; false for a malformed stored hash. */
bool kdf_verify(const char *password, const char *stored);
/* kdf_verify that costs at least floor iterations whatever the stored hash holds (fewer,
 * or none when malformed): a failed check then costs the same for every account. */
bool kdf_verify_floor(const char *password, const char *stored, unsigned floor);
/* Iterations the stored hash was made with, 0 if malformed. */
unsigned kdf_iterations(const char *stored);
/* Iterations derived so far by this process, all threads: the cost of the checks,
 * counted (tests compare it instead of timing). */
unsigned long long kdf_work(void);

#endif
