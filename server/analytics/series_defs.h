/* SPDX-License-Identifier: ISC */
/* What every part of the series store shares (series.h): its sizes, its settings, the
 * precision of its values and the aggregate of a bucket. So that series.c, series_writer.c and
 * series_pack.c, each above the next, all include it and none includes one above it. */
#ifndef SPINDLE_SERIES_DEFS_H
#define SPINDLE_SERIES_DEFS_H

#include <stdbool.h>
#include <stdint.h>

#define SERIES_RING      4096 /* seconds kept in memory, at most (within its budget) */
#define SERIES_CHUNK     10   /* seconds between flushes: the most a crash loses */
#define SERIES_MAX_VALUE 1e15

struct workq;

struct series_retention {
	int64_t second_h, minute_h, hour_h; /* hours each granularity is kept */
};

struct series_config {
	const char *db_path;  /* the database, migrated (db_open); opened again for samples */
	struct workq *wq;     /* helper threads for queries that read the disk; NULL: inline */
	bool unpaced;         /* tests and benchmarks: no pause between maintenance steps */
	int64_t memory_bytes; /* what the seconds memory keeps packed may take; 0: 16 MB */
	int64_t pack_bytes;   /* tests: the flush rows' bytes packing an hour holds; 0: 2 MB */
	struct series_retention retention;
};

/* The min, max, sum and count of the seconds of a bucket (series_query) or a rollup. */
struct series_agg {
	double min, max, sum;
	int64_t count; /* seconds with a value; 0: none (then min, max, sum are 0) */
};

/* v rounded to the 3 decimals kept (NaN stays NaN): what series_put() stores
 * (series_pack.c). */
double series_round(double v);

#endif
