/* SPDX-License-Identifier: ISC */
/* Address lists such as "127.0.0.0/8,::1/128,10.1.2.3": who may read /metrics without a
 * token. IPv4 peers seen as IPv4-mapped IPv6 (::ffff:a.b.c.d) match IPv4 entries. */
#ifndef SPINDLE_CIDR_H
#define SPINDLE_CIDR_H

#include <stdbool.h>
#include <stddef.h>

struct cidr_list;

/* "none" or "" is the empty list. NULL with the reason in err (naming the bad entry). */
struct cidr_list *cidr_list_parse(const char *spec, char *err, size_t errlen);
void cidr_list_free(struct cidr_list *l);
/* addr: a numeric IPv4 or IPv6 address, as evhttp reports the peer. */
bool cidr_list_match(const struct cidr_list *l, const char *addr);
size_t cidr_list_count(const struct cidr_list *l);

#endif
