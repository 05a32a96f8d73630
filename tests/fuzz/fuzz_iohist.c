/* SPDX-License-Identifier: ISC */
/* spindled's reader of the eBPF helper's stream (server/analytics/iohist.c) on any lines,
 * after the hello and "ok" the helper starts with: each line of the input is fed as the
 * connection hands it over, up to the first the reader refuses (where it would close the
 * connection), and the second is taken after each. Promises: a refused line (or the
 * helper's "error") counts nothing and says why; an accepted device line counts, for its device, no
 * bucket more than 2^32 - 1 (what one line can carry); every bucket has its key. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "analytics/iohist.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static void check_counts(const struct iohist_disk *d)
{
	for (int dir = 0; dir < IOLAT_DIRS; dir++) {
		for (unsigned i = 0; i < IOLAT_LAT_BUCKETS; i++)
			fuzz_assert(d->lat[dir][i] <= UINT32_MAX);
		for (unsigned i = 0; i < IOLAT_SIZE_BUCKETS; i++)
			fuzz_assert(d->size[dir][i] <= UINT32_MAX);
		for (unsigned i = 0; i < IOLAT_OFF_BUCKETS; i++)
			fuzz_assert(d->off[dir][i] <= UINT32_MAX);
		fuzz_assert(d->untimed[dir] <= UINT32_MAX);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];
	iohist_init(NULL, NULL);
	fuzz_assert(iohist_feed_line("spindle-iolat 1 latency=106 size=18 offset=64", why,
	                             sizeof(why)) == 0);
	fuzz_assert(iohist_feed_line("ok 1", why, sizeof(why)) == 0);
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = (size_t)((nl ? nl : end) - p);
		p = nl ? nl + 1 : end;
		if (memchr(p - len - (nl ? 1 : 0), '\0', len))
			break; /* the connection refuses a line with a NUL before the reader sees it
			        */
		char *line = malloc(len + 1);
		memcpy(line, p - len - (nl ? 1 : 0), len);
		line[len] = '\0';
		why[0] = '\0';
		int rc = iohist_feed_line(line, why, sizeof(why));
		iohist_take(); /* what this line counted, alone */
		const struct iohist_disk *d = len > 2 ? iohist_get("sda") : NULL;
		if (rc != 0) {
			fuzz_assert(why[0] != '\0');
			fuzz_assert(!iohist_get("sda") && !iohist_get("nvme0n1"));
			free(line);
			break;
		}
		if (d)
			check_counts(d);
		free(line);
	}
	for (unsigned i = 0; i < IOLAT_LAT_BUCKETS; i++)
		fuzz_assert(iohist_lat_key(i) && iohist_lat_key(i)[0] >= '0');
	for (unsigned i = 0; i < IOLAT_SIZE_BUCKETS; i++)
		fuzz_assert(iohist_size_key(i) && iohist_size_key(i)[0] >= '0');
	for (unsigned i = 0; i < IOLAT_OFF_BUCKETS; i++)
		fuzz_assert(iohist_off_key(i) && iohist_off_key(i)[0] >= '0');
	fuzz_assert(!iohist_lat_key(IOLAT_LAT_BUCKETS) && !iohist_size_key(IOLAT_SIZE_BUCKETS) &&
	            !iohist_off_key(IOLAT_OFF_BUCKETS));
	iohist_shutdown();
	return 0;
}
