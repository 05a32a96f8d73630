/* SPDX-License-Identifier: ISC */
/* UTF-8 as jansson holds it (utf8.h). */
#include "utf8.h"

#include <stdlib.h>
#include <string.h>

#include <stdbool.h>

size_t utf8_char(const unsigned char *s)
{
	unsigned char lo = 0x80, hi = 0xbf; /* the second byte's range */
	size_t n;
	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2;
	else if (s[0] >= 0xe0 && s[0] <= 0xef) {
		n = 3;
		lo = s[0] == 0xe0 ? 0xa0 : 0x80;
		hi = s[0] == 0xed ? 0x9f : 0xbf;
	} else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
		n = 4;
		lo = s[0] == 0xf0 ? 0x90 : 0x80;
		hi = s[0] == 0xf4 ? 0x8f : 0xbf;
	} else {
		return 0;
	}
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return n;
}

void utf8_clean(char *s, unsigned flags)
{
	unsigned char *p = (unsigned char *)s;
	while (*p) {
		bool control = *p < 0x20 || *p == 0x7f;
		size_t n = control && (flags & UTF8_CONTROLS) ? 0 : utf8_char(p);
		if (n) {
			p += n;
			continue;
		}
		if ((flags & UTF8_DROP_CUT) && *p >= 0xc2 && *p <= 0xf4) {
			/* a cut: a first byte, then only continuation bytes, too few, to the end */
			size_t k = 1, want = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;
			while ((p[k] & 0xc0) == 0x80)
				k++;
			if (k < want && p[k] == '\0') {
				*p = '\0';
				return;
			}
		}
		*p++ = '?';
	}
}

json_t *utf8_json(const char *text)
{
	char *copy = strdup(text ? text : "");
	if (!copy)
		return NULL;
	utf8_clean(copy, 0);
	json_t *j = json_string(copy);
	free(copy);
	return j;
}
