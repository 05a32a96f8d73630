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
		for (int k = 0; k < IOHIST_KINDS; k++) {
			const uint64_t *c = iohist_counts(d, (enum iohist_kind)k, dir);
			for (unsigned i = 0; i < iohist_buckets((enum iohist_kind)k); i++)
				fuzz_assert(c[i] <= UINT32_MAX);
		}
		fuzz_assert(d->untimed[dir] <= UINT32_MAX);
	}
}

/* The disks the collector counts: only their lines are kept. */
static const struct disk_sample known[] = {{.name = "sda"}, {.name = "nvme0n1"}};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[256];
	iohist_init(NULL, NULL);
	iohist_take(known, 2);
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
		iohist_take(known, 2); /* what this line counted, alone */
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
	fuzz_assert(iohist_buckets(IOHIST_LATENCY) == IOLAT_LAT_BUCKETS &&
	            iohist_buckets(IOHIST_SIZE) == IOLAT_SIZE_BUCKETS &&
	            iohist_buckets(IOHIST_OFFSET) == IOLAT_OFF_BUCKETS);
	for (int k = 0; k < IOHIST_KINDS; k++) {
		unsigned n = iohist_buckets((enum iohist_kind)k);
		for (unsigned i = 0; i < n; i++)
			fuzz_assert(iohist_key((enum iohist_kind)k, i) &&
			            iohist_key((enum iohist_kind)k, i)[0] >= '0');
		fuzz_assert(!iohist_key((enum iohist_kind)k, n));
	}
	iohist_shutdown();
	return 0;
}
