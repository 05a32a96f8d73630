/* SPDX-License-Identifier: ISC */
/* A string-keyed hash map for keys an attacker chooses (user names, addresses, bearer
 * tokens): buckets are picked by SipHash-2-4 under a random key, so nobody can aim keys
 * at one bucket, and keys compare in constant time, so a lookup by token does not tell
 * how much of it matched. Values are the caller's pointers; the map owns only its
 * entries. Not thread-safe. */
#ifndef SPINDLE_HMAP_H
#define SPINDLE_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HMAP_SEED_LEN 16

struct hmap_ent;

struct hmap {
	struct hmap_ent **b;
	size_t nb; /* power of two, or 0 while empty */
	size_t n;
};

/* The SipHash key every map uses from now on: random bytes, set once before any map
 * holds an entry (a map keeps the buckets its entries were hashed to). */
void hmap_seed(const unsigned char seed[HMAP_SEED_LEN]);
/* SipHash-2-4 of data under the seed. */
uint64_t hmap_hash(const void *data, size_t len);

void *hmap_get(const struct hmap *m, const char *k, size_t klen);
/* Adds k -> val; the caller knows k is absent. */
void hmap_put(struct hmap *m, const char *k, size_t klen, void *val);
/* Removes k; returns its value (the caller's to free), or NULL when k is absent. */
void *hmap_del(struct hmap *m, const char *k, size_t klen);
/* Visits every value; when fn returns true the entry is removed (fn frees the value if
 * it should go). */
void hmap_filter(struct hmap *m, bool (*fn)(void *val, void *ctx), void *ctx);
/* Removes every entry, calling free_val on its value unless free_val is NULL, and
 * releases the buckets: the map is empty and ready for use again. */
void hmap_clear(struct hmap *m, void (*free_val)(void *val));

/* A map as an index of an array: key -> the position of the first element put with it
 * (a later one with the same key is not indexed, as a search from the start would not
 * find it). A NULL key is never indexed. The keys must outlive the map. */
void hmap_index_put(struct hmap *m, const char *k, size_t i);
/* The position indexed for k, or -1. */
long hmap_index_get(const struct hmap *m, const char *k);

#endif
