/* SPDX-License-Identifier: ISC */
/* gzip in one call: see gzip.h. */
#include "gzip.h"
#include "util.h"

#include <stdlib.h>

#include <zlib.h>

unsigned char *gzip_bytes(const void *in, size_t len, int level, size_t *out_len)
{
	z_stream z = {0};
	/* windowBits 15 + 16: a gzip wrapper (no name, no time: the bytes depend on the input
	 * alone); memLevel 8, zlib's default */
	if (deflateInit2(&z, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return NULL;
	uLong cap = deflateBound(&z, (uLong)len);
	unsigned char *out = xmalloc(cap);
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)len;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(out);
		return NULL;
	}
	*out_len = z.total_out;
	deflateEnd(&z);
	return out;
}
