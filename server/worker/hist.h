/* SPDX-License-Identifier: ISC */
/* Log-linear latency histograms: every power-of-two group [2^m, 2^(m+1)) is cut into
 * HIST_SUB linear sub-buckets, so a bucket is at most 1/HIST_SUB of its lower bound wide
 * and the value reported for it (its middle) is within 1/(2*HIST_SUB) = 0.4 % of any value
 * recorded in it. Values below HIST_SUB are exact. Recording is integer-only (a clz, a shift
 * and an increment); histograms of the same layout merge by adding counts, and serialise to
 * JSON as their non-empty bins so a run can be merged and re-read later.
 *
 * Shared by spindle-worker and spindled; depends on jansson only. */
#ifndef SPINDLE_HIST_H
#define SPINDLE_HIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define HIST_SUB_BITS 7
#define HIST_SUB      (1u << HIST_SUB_BITS)
/* Values from 2^HIST_MAX_BITS ns (about 18 minutes) up land in the last bucket; max stays exact. */
#define HIST_MAX_BITS 40
#define HIST_BUCKETS  (HIST_SUB + (HIST_MAX_BITS - HIST_SUB_BITS) * HIST_SUB)
/* The name of this layout in serialised bins; a reader refuses any other. */
#define HIST_SCHEME "loglin2-sub128-max2^40"

struct hist {
	uint64_t count;
	uint64_t sum; /* of recorded values, for the mean */
	uint64_t min; /* UINT64_MAX while empty */
	uint64_t max;
	uint64_t counts[HIST_BUCKETS];
};

/* The percentiles every summary carries, in order, and their JSON keys ("p99.99"). */
extern const double hist_pcts[];
extern const char *const hist_pct_names[];
extern const size_t hist_npcts;

void hist_init(struct hist *h);
/* One writer thread per histogram; other threads may read it at any time (relaxed atomics). */
void hist_record(struct hist *h, uint64_t v);
void hist_merge(struct hist *dst, const struct hist *src);
bool hist_equal(const struct hist *a, const struct hist *b);

unsigned hist_index(uint64_t v);
uint64_t hist_bucket_low(unsigned idx);
/* One past the highest value of the bucket. */
uint64_t hist_bucket_high(unsigned idx);
/* The value reported for a bucket: its middle. */
uint64_t hist_bucket_value(unsigned idx);

/* Nearest-rank percentile (0 < pct <= 100) of the counts array, clamped to [lo, hi];
 * 0 when total is 0. Works on any counts array of HIST_BUCKETS (e.g. an interval's deltas). */
uint64_t hist_counts_percentile(const uint64_t *counts, uint64_t total, double pct, uint64_t lo,
                                uint64_t hi);
uint64_t hist_percentile(const struct hist *h, double pct);
double hist_mean(const struct hist *h);

/* {"min":..,"mean":..,"max":..,"stddev":..,"p1":..,...,"p99.99":..} in the unit recorded.
 * New reference. */
json_t *hist_summary_json(const struct hist *h);
/* {"scheme":..,"count":..,"sum":..,"min":..,"max":..,"bins":[idx,count,idx,count,...]}.
 * New reference. */
json_t *hist_to_json(const struct hist *h);
/* The inverse; -1 with a reason in err when the document is not such a histogram. */
int hist_from_json(struct hist *h, const json_t *j, char *err, size_t errlen);

/* fio's latency buckets (its stat.h: FIO_IO_U_PLAT_BITS 6): every power-of-two group
 * [2^m, 2^(m+1)), m >= 7, cut into 64, values below 128 exact, 29 groups, 1856 in all. Ours
 * are finer (128 a group), so each of our buckets lies whole in one of fio's. */
#define HIST_FIO_BITS     6
#define HIST_FIO_VAL      (1u << HIST_FIO_BITS)
#define HIST_FIO_GROUP_NR 29
#define HIST_FIO_NR       (HIST_FIO_GROUP_NR * HIST_FIO_VAL) /* 1856 */
/* An interval line's histogram is fio's buckets merged 2^HIST_FIO_COARSE at a time, as fio's
 * log_hist_coarseness merges them for its histogram log: 464 buckets, each at most 1/16 of
 * its power of two wide. A second's line stays near a kilobyte; ours at full resolution made
 * it six to ten, every second of every run kept. */
#define HIST_FIO_COARSE    2
#define HIST_FIO_COARSE_NR (HIST_FIO_NR >> HIST_FIO_COARSE) /* 464 */

/* fio's bucket of a value in ns (values past its last group land in the last bucket). */
static inline unsigned hist_fio_index(uint64_t v)
{
	unsigned msb = v ? 63u - (unsigned)__builtin_clzll(v) : 0;
	if (msb <= HIST_FIO_BITS)
		return (unsigned)v;
	unsigned err = msb - HIST_FIO_BITS;
	unsigned idx = ((err + 1) << HIST_FIO_BITS) + (unsigned)((v >> err) & (HIST_FIO_VAL - 1));
	return idx < HIST_FIO_NR - 1 ? idx : HIST_FIO_NR - 1;
}

#endif
