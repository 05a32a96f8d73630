/* SPDX-License-Identifier: ISC */
/* gzip in one call, for answers sent with Content-Encoding: gzip. */
#ifndef SPINDLE_GZIP_H
#define SPINDLE_GZIP_H

#include <stddef.h>

/* in[0..len) gzipped at level (1 fastest .. 9 smallest) into a new buffer of *out_len
 * bytes, for free(); NULL if zlib fails. The same bytes and level give the same output. */
unsigned char *gzip_bytes(const void *in, size_t len, int level, size_t *out_len);

#endif
