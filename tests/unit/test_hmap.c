/* SPDX-License-Identifier: ISC */
/* The SipHash map (server/base/hmap.c): the hash against SipHash-2-4's reference vectors, and
 * the map through growth, removal, filtering and clearing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "base/hmap.h"
#include "base/util.h"

/* The reference implementation's vectors: key 00..0f, message 00..(n-1). */
static const struct {
	size_t n;
	uint64_t hash;
} vectors[] = {
    {0, 0x726fdb47dd0e0e31ULL}, {1, 0x74f839c593dc67fdULL},  {7, 0xab0200f58b01d137ULL},
    {8, 0x93f5f5799a932462ULL}, {15, 0xa129ca6149be45e5ULL}, {63, 0x958a324ceb064572ULL},
};

static void test_siphash(void)
{
	unsigned char key[HMAP_SEED_LEN], msg[64];
	for (int i = 0; i < HMAP_SEED_LEN; i++)
		key[i] = (unsigned char)i;
	for (int i = 0; i < 64; i++)
		msg[i] = (unsigned char)i;
	hmap_seed(key);
	for (size_t i = 0; i < nitems(vectors); i++)
		ok(hmap_hash(msg, vectors[i].n) == vectors[i].hash,
		   "SipHash-2-4 of %zu bytes: %016llx", vectors[i].n,
		   (unsigned long long)hmap_hash(msg, vectors[i].n));
	key[0] ^= 1;
	hmap_seed(key);
	ok(hmap_hash(msg, 15) != vectors[4].hash, "another key, another hash");
}

static int freed;
static void count_free(void *val)
{
	freed++;
	free(val);
}

static bool drop_odd(void *val, void *ctx)
{
	int *v = val;
	if (*v % 2 == 0)
		return false;
	(*(int *)ctx)++;
	free(v);
	return true;
}

static void test_map(void)
{
	struct hmap m = {0};
	char k[32];

	ok(hmap_get(&m, "a", 1) == NULL, "an empty map has nothing");
	ok(hmap_del(&m, "a", 1) == NULL, "nor anything to remove");

	/* enough keys to grow the buckets a few times */
	for (int i = 0; i < 1000; i++) {
		int *v = xmalloc(sizeof(*v));
		*v = i;
		snprintf(k, sizeof(k), "key-%d", i);
		hmap_put(&m, k, strlen(k), v);
	}
	is_int(m.n, 1000, "1000 entries");
	ok(m.nb >= 1000 && (m.nb & (m.nb - 1)) == 0, "buckets grew to a power of two (%zu)", m.nb);
	bool all = true;
	for (int i = 0; i < 1000; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		int *v = hmap_get(&m, k, strlen(k));
		all = all && v && *v == i;
	}
	ok(all, "every key finds its value after growing");
	ok(hmap_get(&m, "key-1", 4) == NULL, "a prefix of a key is another key");
	ok(hmap_get(&m, "key-10", 6) != hmap_get(&m, "key-1", 5), "so is a longer one");

	int *v = hmap_del(&m, "key-500", 7);
	ok(v && *v == 500, "removing gives the value back");
	free(v);
	ok(hmap_get(&m, "key-500", 7) == NULL, "and the key is gone");
	ok(hmap_del(&m, "key-500", 7) == NULL, "removing it again finds nothing");
	is_int(m.n, 999, "999 left");

	int dropped = 0;
	hmap_filter(&m, drop_odd, &dropped);
	is_int(dropped, 500, "the filter removed the odd values");
	is_int(m.n, 499, "and kept the even ones");
	ok(hmap_get(&m, "key-7", 5) == NULL && hmap_get(&m, "key-8", 5) != NULL,
	   "the filter's choice holds");

	/* keys are bytes: a NUL inside is part of the key */
	int nul = 42;
	hmap_put(&m, "a\0b", 3, &nul);
	ok(hmap_get(&m, "a\0b", 3) == &nul, "a key with a NUL inside");
	ok(hmap_get(&m, "a", 1) == NULL, "is not its part before the NUL");
	ok(hmap_del(&m, "a\0b", 3) == &nul, "and can be removed");

	freed = 0;
	hmap_clear(&m, count_free);
	is_int(freed, 499, "clear frees every value");
	ok(m.n == 0 && m.nb == 0 && m.b == NULL, "and leaves an empty map");

	int x = 1;
	hmap_put(&m, "x", 1, &x);
	ok(hmap_get(&m, "x", 1) == &x, "a cleared map is used again");
	hmap_clear(&m, NULL);
	ok(m.n == 0, "clear without a free function leaves the values alone");
}

/* An array indexed by key: the first of a repeated key wins, NULL keys are left out. */
static void test_index(void)
{
	const char *keys[] = {"sdb", "sdc", NULL, "sdb", "sdd"};
	struct hmap m = {0};
	for (size_t i = 0; i < nitems(keys); i++)
		hmap_index_put(&m, keys[i], i);
	is_int(hmap_index_get(&m, "sdb"), 0, "the first sdb");
	is_int(hmap_index_get(&m, "sdd"), 4, "sdd at 4");
	is_int(hmap_index_get(&m, "sde"), -1, "an absent key");
	is_int(hmap_index_get(&m, NULL), -1, "no key");
	is_int((long)m.n, 3, "three keys indexed");
	hmap_clear(&m, NULL);
}

int main(void)
{
	test_index();
	test_siphash();
	test_map();
	return done_testing();
}
