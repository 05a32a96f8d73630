/* SPDX-License-Identifier: ISC */
/* kdf_hash/kdf_verify/kdf_iterations: round trips, known answers, and refusal of every
 * malformed stored hash (a corrupt or tampered row must never verify). */
#include "tap.h"
#include "access/kdf.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Computed independently (Python hashlib.pbkdf2_hmac, salt "0123456789abcdef"). */
#define KAT_ASCII                                                                                  \
	"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I"
#define KAT_UTF8                                                                                   \
	"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$gQXu1x5KbERTJyaemxuvp-IiUbtoRPNNrYc9CBmBfrU"

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void test_roundtrip(void)
{
	char h1[KDF_HASH_MAX], h2[KDF_HASH_MAX];

	is_int(kdf_hash("correct horse", KDF_MIN_ITERATIONS, h1, sizeof(h1)), 0, "hash");
	ok(strncmp(h1, "pbkdf2-sha256$1000$", 19) == 0, "stored form: %s", h1);
	ok(kdf_verify("correct horse", h1), "right password verifies");
	ok(!kdf_verify("correct horsE", h1), "wrong password refused");
	ok(!kdf_verify("", h1), "empty password refused");
	ok(!kdf_verify("correct horse ", h1), "trailing space refused");
	is_int(kdf_iterations(h1), KDF_MIN_ITERATIONS, "iterations read back");
	is_int(kdf_hash("correct horse", KDF_MIN_ITERATIONS, h2, sizeof(h2)), 0, "hash again");
	ok(strcmp(h1, h2) != 0, "same password, different salt, different hash");
	ok(kdf_verify("correct horse", h2), "second hash verifies too");

	is_int(kdf_hash("x", 123456, h1, sizeof(h1)), 0, "hash with 123456 iterations");
	is_int(kdf_iterations(h1), 123456, "iterations 123456 read back");
	ok(kdf_verify("x", h1), "verifies");

	is_int(kdf_hash("", KDF_MIN_ITERATIONS, h1, sizeof(h1)), 0,
	       "empty password hashes (length rules are the caller's)");
	ok(kdf_verify("", h1), "and verifies");
}

static void test_known_answers(void)
{
	ok(kdf_verify("password", KAT_ASCII), "known answer (ASCII)");
	ok(kdf_verify("p\xc3\xa4ssw\xc3\xb6rd \xe2\x98\x83", KAT_UTF8), "known answer (UTF-8)");
	ok(!kdf_verify("password", KAT_UTF8), "known answer, other password refused");
	is_int(kdf_iterations(KAT_ASCII), 1000, "known answer iterations");
}

static void test_hash_refusals(void)
{
	char h[KDF_HASH_MAX];

	is_int(kdf_hash("pw", KDF_MIN_ITERATIONS - 1, h, sizeof(h)), -1,
	       "hash refuses fewer than KDF_MIN_ITERATIONS");
	is_int(kdf_hash("pw", KDF_MAX_ITERATIONS + 1, h, sizeof(h)), -1,
	       "hash refuses more than KDF_MAX_ITERATIONS");
	is_int(kdf_hash("pw", KDF_MIN_ITERATIONS, h, 40), -1, "hash refuses a short buffer");
	is_int(kdf_hash(NULL, KDF_MIN_ITERATIONS, h, sizeof(h)), -1, "hash refuses NULL");
	ok(!kdf_verify(NULL, KAT_ASCII), "verify refuses a NULL password");
	ok(!kdf_verify("password", NULL), "verify refuses a NULL hash");
}

static void test_malformed(void)
{
	static const struct {
		const char *stored, *what;
	} bad[] = {
	    {"", "empty"},
	    {"password", "plain text"},
	    {"!", "locked marker"},
	    {"pbkdf2-sha256", "prefix only"},
	    {"pbkdf2-sha256$", "prefix and dollar"},
	    {"pbkdf2-sha1$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "other algorithm"},
	    {"PBKDF2-SHA256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "upper-case prefix"},
	    {"pbkdf2-sha256$$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "no iterations"},
	    {"pbkdf2-sha256$0$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "zero iterations"},
	    {"pbkdf2-sha256$1$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "1 iteration (below the floor)"},
	    {"pbkdf2-sha256$01000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "leading zero"},
	    {"pbkdf2-sha256$+1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "plus sign"},
	    {"pbkdf2-sha256$-1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "negative"},
	    {"pbkdf2-sha256$ "
	     "1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "space"},
	    {"pbkdf2-sha256$10000001$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR5"
	     "9I",
	     "above KDF_MAX_ITERATIONS (would pin a thread)"},
	    {"pbkdf2-sha256$4294967297$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTO"
	     "jR59I",
	     "iterations wrap around 32 bits"},
	    {"pbkdf2-sha256$99999999999999999999999$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4"
	     "vkgEmMRV_0tJTOjR59I",
	     "iterations overflow 64 bits"},
	    {"pbkdf2-sha256$1000x$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "junk after iterations"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg", "no hash part"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$", "empty hash"},
	    {"pbkdf2-sha256$1000$$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I", "empty salt"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2Rl$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59I",
	     "short salt"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg==$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "padded salt"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZh$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "salt with non-zero trailing bits"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFi+2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I",
	     "salt in standard (not url) base64"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR59",
	     "truncated hash"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59IA",
	     "hash one character too long"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59J",
	     "hash with non-zero trailing bits"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I$",
	     "extra field"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_"
	     "0tJTOjR59I\n",
	     "trailing newline"},
	    {"pbkdf2-sha256$1000$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP99J_T4vkgEmMRV_0tJTOjR5 "
	     "I",
	     "space in hash"},
	};
	for (size_t i = 0; i < nitems(bad); i++) {
		ok(!kdf_verify("password", bad[i].stored) && kdf_iterations(bad[i].stored) == 0,
		   "malformed refused: %s", bad[i].what);
	}
	/* One changed character in a valid hash: well formed, wrong. */
	char t[] = KAT_ASCII;
	t[strlen(t) - 5] = t[strlen(t) - 5] == 'A' ? 'B' : 'A';
	ok(!kdf_verify("password", t), "tampered hash refused");
	is_int(kdf_iterations(t), 1000, "tampered hash still parses");
	/* Same hash, iterations changed: must not verify. */
	ok(!kdf_verify("password", "pbkdf2-sha256$1001$MDEyMzQ1Njc4OWFiY2RlZg$hRRjgXWkW8ResfIvBP9"
	                           "9J_T4vkgEmMRV_0tJTOjR59I"),
	   "iteration count changed refused");
}

static void test_cost(void)
{
	char h[KDF_HASH_MAX];
	double a = now_ms();
	int rc = kdf_hash("a reasonably long passphrase", KDF_DEFAULT_ITERATIONS, h, sizeof(h));
	double b = now_ms();
	is_int(rc, 0, "hash at the default cost");
	ok(kdf_verify("a reasonably long passphrase", h), "verifies at the default cost");
	diag("kdf_hash: %.0f ms at %u iterations", b - a, (unsigned)KDF_DEFAULT_ITERATIONS);
}

/* Iterations kdf_verify_floor derived for one check (kdf_work counts them). */
static unsigned long long floor_work(const char *password, const char *stored, unsigned floor,
                                     bool *okv)
{
	unsigned long long before = kdf_work();
	*okv = kdf_verify_floor(password, stored, floor);
	return kdf_work() - before;
}

/* A check costs the same, counted in iterations, whether the hash is weaker than the floor,
 * missing, or as strong; right or wrong. Counting, not timing: no machine-speed flakes. */
static void test_floor(void)
{
	char h2000[KDF_HASH_MAX], h5000[KDF_HASH_MAX];
	bool v;

	unsigned long long w = kdf_work();
	is_int(kdf_hash("pw-two", 2000, h2000, sizeof(h2000)), 0, "hash at 2000");
	ok(kdf_work() - w == 2000, "kdf_work counts the 2000 iterations of a hash");
	is_int(kdf_hash("pw-five", 5000, h5000, sizeof(h5000)), 0, "hash at 5000");

	ok(floor_work("password", KAT_ASCII, 5000, &v) == 5000 && v,
	   "right password, 1000-iteration hash, floor 5000: 5000 iterations, verifies");
	ok(floor_work("wrong", KAT_ASCII, 5000, &v) == 5000 && !v,
	   "wrong password, 1000-iteration hash, floor 5000: 5000 iterations");
	ok(floor_work("wrong", h2000, 5000, &v) == 5000 && !v, "wrong, 2000 iterations: 5000");
	ok(floor_work("wrong", h5000, 5000, &v) == 5000 && !v, "wrong, 5000 iterations: 5000");
	ok(floor_work("pw-five", h5000, 5000, &v) == 5000 && v, "right, 5000 iterations: 5000");
	ok(floor_work("wrong", "!", 5000, &v) == 5000 && !v, "malformed hash: 5000");
	ok(floor_work(NULL, h2000, 5000, &v) == 5000 && !v, "no password: 5000");
	ok(floor_work("wrong", h5000, 1000, &v) == 5000 && !v,
	   "a hash costlier than the floor costs what it costs");
	ok(floor_work("pw-two", h2000, 0, &v) == 2000 && v, "floor 0: kdf_verify");
	ok(kdf_verify("pw-two", h2000) && !kdf_verify("wrong", h2000), "kdf_verify unchanged");
}

int main(void)
{
	test_roundtrip();
	test_known_answers();
	test_hash_refusals();
	test_malformed();
	test_floor();
	test_cost();
	return done_testing();
}
