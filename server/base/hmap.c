/* SPDX-License-Identifier: ISC */
/* A string-keyed hash map under SipHash: see hmap.h. */
#include "hmap.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

struct hmap_ent {
	struct hmap_ent *next;
	uint64_t hash;
	void *val;
	size_t klen;
	char key[];
};

static unsigned char hmap_key[HMAP_SEED_LEN];

void hmap_seed(const unsigned char seed[HMAP_SEED_LEN])
{
	memcpy(hmap_key, seed, HMAP_SEED_LEN);
}

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND                                                                                   \
	do {                                                                                       \
		v0 += v1;                                                                          \
		v1 = ROTL(v1, 13);                                                                 \
		v1 ^= v0;                                                                          \
		v0 = ROTL(v0, 32);                                                                 \
		v2 += v3;                                                                          \
		v3 = ROTL(v3, 16);                                                                 \
		v3 ^= v2;                                                                          \
		v0 += v3;                                                                          \
		v3 = ROTL(v3, 21);                                                                 \
		v3 ^= v0;                                                                          \
		v2 += v1;                                                                          \
		v1 = ROTL(v1, 17);                                                                 \
		v1 ^= v2;                                                                          \
		v2 = ROTL(v2, 32);                                                                 \
	} while (0)

static uint64_t load64(const unsigned char *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

uint64_t hmap_hash(const void *data, size_t len)
{
	const unsigned char *in = data;
	uint64_t k0 = load64(hmap_key), k1 = load64(hmap_key + 8);
	uint64_t v0 = 0x736f6d6570736575ULL ^ k0, v1 = 0x646f72616e646f6dULL ^ k1;
	uint64_t v2 = 0x6c7967656e657261ULL ^ k0, v3 = 0x7465646279746573ULL ^ k1;
	uint64_t b = (uint64_t)len << 56;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t m = load64(in + i);
		v3 ^= m;
		SIPROUND;
		SIPROUND;
		v0 ^= m;
	}
	for (size_t j = 0; i + j < len; j++)
		b |= (uint64_t)in[i + j] << (8 * j);
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

static struct hmap_ent **hmap_find(const struct hmap *m, const char *k, size_t klen, uint64_t h)
{
	struct hmap_ent **pp = &m->b[h & (m->nb - 1)];
	for (; *pp; pp = &(*pp)->next)
		if ((*pp)->hash == h && (*pp)->klen == klen &&
		    CRYPTO_memcmp((*pp)->key, k, klen) == 0)
			return pp;
	return NULL;
}

void *hmap_get(const struct hmap *m, const char *k, size_t klen)
{
	if (!m->nb)
		return NULL;
	struct hmap_ent **pp = hmap_find(m, k, klen, hmap_hash(k, klen));
	return pp ? (*pp)->val : NULL;
}

static void hmap_grow(struct hmap *m)
{
	size_t nb = m->nb ? m->nb * 2 : 64;
	struct hmap_ent **b = xcalloc(nb, sizeof(*b));
	for (size_t i = 0; i < m->nb; i++) {
		struct hmap_ent *e = m->b[i], *next;
		for (; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(m->b);
	m->b = b;
	m->nb = nb;
}

void hmap_put(struct hmap *m, const char *k, size_t klen, void *val)
{
	if (m->n >= m->nb)
		hmap_grow(m);
	struct hmap_ent *e = xmalloc(sizeof(*e) + klen + 1);
	e->hash = hmap_hash(k, klen);
	e->val = val;
	e->klen = klen;
	memcpy(e->key, k, klen);
	e->key[klen] = '\0';
	e->next = m->b[e->hash & (m->nb - 1)];
	m->b[e->hash & (m->nb - 1)] = e;
	m->n++;
}

void *hmap_del(struct hmap *m, const char *k, size_t klen)
{
	if (!m->nb)
		return NULL;
	struct hmap_ent **pp = hmap_find(m, k, klen, hmap_hash(k, klen));
	if (!pp)
		return NULL;
	struct hmap_ent *e = *pp;
	void *val = e->val;
	*pp = e->next;
	free(e);
	m->n--;
	return val;
}

void hmap_filter(struct hmap *m, bool (*fn)(void *val, void *ctx), void *ctx)
{
	for (size_t i = 0; i < m->nb; i++) {
		struct hmap_ent **pp = &m->b[i];
		while (*pp) {
			struct hmap_ent *e = *pp;
			if (fn(e->val, ctx)) {
				*pp = e->next;
				free(e);
				m->n--;
			} else {
				pp = &e->next;
			}
		}
	}
}

static bool remove_all(void *val, void *ctx)
{
	void (*free_val)(void *) = *(void (**)(void *))ctx;
	if (free_val)
		free_val(val);
	return true;
}

void hmap_clear(struct hmap *m, void (*free_val)(void *val))
{
	hmap_filter(m, remove_all, &free_val);
	free(m->b);
	memset(m, 0, sizeof(*m));
}

void hmap_index_put(struct hmap *m, const char *k, size_t i)
{
	if (k && !hmap_get(m, k, strlen(k)))
		hmap_put(m, k, strlen(k), (void *)(uintptr_t)(i + 1));
}

long hmap_index_get(const struct hmap *m, const char *k)
{
	void *v = k ? hmap_get(m, k, strlen(k)) : NULL;
	return v ? (long)((uintptr_t)v - 1) : -1;
}
