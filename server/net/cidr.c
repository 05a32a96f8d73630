/* SPDX-License-Identifier: ISC */
/* Address lists: parsed once at start-up, matched per request with a few compares. */
#include "cidr.h"
#include "base/util.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CIDR_MAX_ENTRIES 64

/* IPv4 entries are kept as IPv4-mapped IPv6 (prefix + 96), so one compare fits both. */
struct cidr {
	unsigned char addr[16];
	unsigned prefix; /* bits, 0..128 */
};

struct cidr_list {
	size_t n;
	struct cidr e[CIDR_MAX_ENTRIES];
};

static const unsigned char v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* Numeric address -> 16 bytes (IPv4 mapped); *v4 tells which it was. */
static bool cidr_addr(const char *s, unsigned char out[16], bool *v4)
{
	struct in_addr a4;
	if (inet_pton(AF_INET, s, &a4) == 1) {
		memcpy(out, v4mapped, 12);
		memcpy(out + 12, &a4, 4);
		*v4 = true;
		return true;
	}
	*v4 = false;
	return inet_pton(AF_INET6, s, out) == 1;
}

/* The host bits of an entry must be zero: "10.1.2.3/8" is more likely a typo than meant. */
static bool cidr_host_bits_clear(const struct cidr *c)
{
	for (unsigned bit = c->prefix; bit < 128; bit++)
		if (c->addr[bit / 8] & (0x80u >> (bit % 8)))
			return false;
	return true;
}

static bool cidr_entry(const char *s, size_t len, struct cidr *c, char *err, size_t errlen)
{
	char buf[64];
	bool v4;
	long long prefix = -1;

	if (len == 0 || len >= sizeof(buf)) {
		snprintf(err, errlen, "'%.*s' is not an address or ADDRESS/PREFIX", (int)(len % 64),
		         s);
		return false;
	}
	memcpy(buf, s, len);
	buf[len] = '\0';
	char *slash = strchr(buf, '/');
	if (slash) {
		*slash = '\0';
		if (util_parse_ll(slash + 1, 0, 128, &prefix) < 0) {
			snprintf(err, errlen, "'%s/%s': the prefix is not a number of bits", buf,
			         slash + 1);
			return false;
		}
	}
	if (!cidr_addr(buf, c->addr, &v4)) {
		snprintf(err, errlen, "'%s' is not a numeric IPv4 or IPv6 address", buf);
		return false;
	}
	if (prefix < 0)
		prefix = v4 ? 32 : 128;
	if (v4 && prefix > 32) {
		snprintf(err, errlen, "'%s/%lld': an IPv4 prefix is 0 to 32 bits", buf, prefix);
		return false;
	}
	c->prefix = (unsigned)prefix + (v4 ? 96 : 0);
	if (!cidr_host_bits_clear(c)) {
		snprintf(err, errlen, "'%s/%lld': bits set past the prefix", buf, prefix);
		return false;
	}
	return true;
}

struct cidr_list *cidr_list_parse(const char *spec, char *err, size_t errlen)
{
	struct cidr_list *l = xcalloc(1, sizeof(*l));

	if (!spec || strcmp(spec, "none") == 0)
		return l;
	for (const char *p = spec; *p;) {
		while (*p == ' ' || *p == ',')
			p++;
		if (!*p)
			break;
		size_t len = strcspn(p, ", ");
		if (l->n == CIDR_MAX_ENTRIES) {
			snprintf(err, errlen, "more than %d entries", CIDR_MAX_ENTRIES);
			free(l);
			return NULL;
		}
		if (!cidr_entry(p, len, &l->e[l->n], err, errlen)) {
			free(l);
			return NULL;
		}
		l->n++;
		p += len;
	}
	return l;
}

void cidr_list_free(struct cidr_list *l)
{
	free(l);
}

size_t cidr_list_count(const struct cidr_list *l)
{
	return l ? l->n : 0;
}

bool cidr_list_match(const struct cidr_list *l, const char *addr)
{
	unsigned char a[16];
	bool v4;

	if (!l || !addr || !cidr_addr(addr, a, &v4))
		return false;
	for (size_t i = 0; i < l->n; i++) {
		const struct cidr *c = &l->e[i];
		unsigned full = c->prefix / 8, rest = c->prefix % 8;
		if (memcmp(a, c->addr, full) != 0)
			continue;
		if (rest && ((a[full] ^ c->addr[full]) & (0xffu << (8 - rest)) & 0xff))
			continue;
		return true;
	}
	return false;
}
