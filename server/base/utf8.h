/* SPDX-License-Identifier: ISC */
/* UTF-8 as jansson holds it (utf8.c): one check of a character, and one cleaner that
 * makes any text a valid JSON string. Pure functions over bytes, linked by spindled and
 * by the worker alike. */
#ifndef SPINDLE_UTF8_H
#define SPINDLE_UTF8_H

#include <stddef.h>
#include <jansson.h>

/* Length of the well-formed UTF-8 character at s, as jansson checks it (no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. Reads no byte past a NUL. */
size_t utf8_char(const unsigned char *s);

#define UTF8_CONTROLS 1u /* the C0 controls and DEL become '?' too */
#define UTF8_DROP_CUT 2u /* a character cut at the end (snprintf cut the text) is dropped */

/* In place: every byte that starts no well-formed character becomes '?', so the text can
 * always be a JSON string. For text from outside: a client's, another program's, the
 * kernel's, or jansson's own error text quoting the bytes before a fault. */
void utf8_clean(char *s, unsigned flags);

/* Another program's or the kernel's text as a JSON string: a copy, cleaned as above. New
 * reference. */
json_t *utf8_json(const char *text);

#endif
