/* SPDX-License-Identifier: ISC */
/* Hrefs: where the API's objects live, spelt in one place (api_href in api.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base/util.h"

static void put(struct buf *o, char c)
{
	buf_add(o, &c, 1);
}

/* One byte of a segment: unreserved characters (RFC 3986) as they are, the rest %XX. */
static void put_byte(struct buf *o, unsigned char c)
{
	static const char hex[] = "0123456789ABCDEF";
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	    c == '-' || c == '.' || c == '_' || c == '~') {
		put(o, (char)c);
	} else {
		put(o, '%');
		put(o, hex[c >> 4]);
		put(o, hex[c & 15]);
	}
}

/* s as one path segment, '/' (which no segment can carry: the router refuses an encoded
 * one) as '|'. nested: a '|' of the name as "~|" and a '~' as "~~", so that
 * api_nested_name() reads back exactly s (a lone '|' is always a '/'). */
static void put_segment(struct buf *o, const char *s, bool nested)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (nested && (*p == '|' || *p == '~'))
			put_byte(o, '~');
		put_byte(o, *p == '/' ? '|' : *p);
	}
}

/* The member of obj named by [name, name + len), as a segment; nothing when absent. */
static void put_member(struct buf *o, const json_t *obj, const char *name, size_t len, bool nested)
{
	char key[64];
	if (len >= sizeof(key))
		return;
	memcpy(key, name, len);
	key[len] = '\0';
	const json_t *v = json_object_get(obj, key);
	if (json_is_string(v)) {
		put_segment(o, json_string_value(v), nested);
	} else if (json_is_integer(v)) {
		char num[24];
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
		put_segment(o, num, nested);
	}
}

static json_t *href_set(json_t *obj, const char *path, bool nested)
{
	struct buf o = {0};
	for (const char *p = path; *p; p++) {
		const char *end = *p == '{' ? strchr(p, '}') : NULL;
		if (!end) {
			put(&o, *p);
			continue;
		}
		put_member(&o, obj, p + 1, (size_t)(end - p - 1), nested);
		p = end;
	}
	json_object_set_new(obj, "href", json_string(o.p ? o.p : ""));
	buf_free(&o);
	return obj;
}

json_t *api_href(json_t *obj, const char *path)
{
	return href_set(obj, path, false);
}

json_t *api_href_nested(json_t *obj, const char *path)
{
	return href_set(obj, path, true);
}

int api_nested_name(const char *seg, char *out, size_t len)
{
	size_t n = 0;
	for (const char *p = seg; *p; p++) {
		char c = *p == '|' ? '/' : *p;
		if (*p == '~') {
			if (p[1] != '|' && p[1] != '~')
				return -1; /* no name is written so */
			c = *++p;
		}
		if (n + 1 >= len)
			return -1;
		out[n++] = c;
	}
	if (!len)
		return -1;
	out[n] = '\0';
	return 0;
}
