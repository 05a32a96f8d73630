/* SPDX-License-Identifier: ISC */
/* Log-linear latency histograms; see hist.h for the layout and its error bound. */
#include "hist.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const double hist_pcts[] = {1,  5,  10, 20, 30,   40,   50,    60,   70,
                            80, 90, 95, 99, 99.5, 99.9, 99.95, 99.99};
const char *const hist_pct_names[] = {"p1",  "p5",    "p10",   "p20",    "p30",   "p40",
                                      "p50", "p60",   "p70",   "p80",    "p90",   "p95",
                                      "p99", "p99.5", "p99.9", "p99.95", "p99.99"};
const size_t hist_npcts = sizeof(hist_pcts) / sizeof(hist_pcts[0]);

/* The recording thread is the only writer; readers on other threads load with relaxed
 * atomics, so a plain increment stays a plain increment (no lock prefix) on x86. */
static inline void hist_store(uint64_t *p, uint64_t v)
{
	__atomic_store_n(p, v, __ATOMIC_RELAXED);
}

static inline uint64_t hist_load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

void hist_init(struct hist *h)
{
	memset(h, 0, sizeof(*h));
	h->min = UINT64_MAX;
}

unsigned hist_index(uint64_t v)
{
	if (v < HIST_SUB)
		return (unsigned)v;
	unsigned m = 63u - (unsigned)__builtin_clzll(v);
	if (m >= HIST_MAX_BITS)
		return HIST_BUCKETS - 1;
	unsigned shift = m - HIST_SUB_BITS;
	return HIST_SUB + shift * HIST_SUB + (unsigned)((v >> shift) - HIST_SUB);
}

uint64_t hist_bucket_low(unsigned idx)
{
	if (idx < HIST_SUB)
		return idx;
	unsigned shift = (idx - HIST_SUB) / HIST_SUB;
	uint64_t sub = (idx - HIST_SUB) % HIST_SUB;
	return (HIST_SUB + sub) << shift;
}

uint64_t hist_bucket_high(unsigned idx)
{
	if (idx < HIST_SUB)
		return (uint64_t)idx + 1;
	unsigned shift = (idx - HIST_SUB) / HIST_SUB;
	return hist_bucket_low(idx) + ((uint64_t)1 << shift);
}

uint64_t hist_bucket_value(unsigned idx)
{
	uint64_t lo = hist_bucket_low(idx), hi = hist_bucket_high(idx);
	return lo + (hi - lo - 1) / 2;
}

void hist_record(struct hist *h, uint64_t v)
{
	unsigned i = hist_index(v);
	hist_store(&h->counts[i], h->counts[i] + 1);
	hist_store(&h->count, h->count + 1);
	hist_store(&h->sum, h->sum + v);
	if (v < h->min)
		hist_store(&h->min, v);
	if (v > h->max)
		hist_store(&h->max, v);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		dst->counts[i] += hist_load(&src->counts[i]);
	dst->count += hist_load(&src->count);
	dst->sum += hist_load(&src->sum);
	uint64_t mn = hist_load(&src->min), mx = hist_load(&src->max);
	if (mn < dst->min)
		dst->min = mn;
	if (mx > dst->max)
		dst->max = mx;
}

bool hist_equal(const struct hist *a, const struct hist *b)
{
	return a->count == b->count && a->sum == b->sum && a->min == b->min && a->max == b->max &&
	       memcmp(a->counts, b->counts, sizeof(a->counts)) == 0;
}

uint64_t hist_counts_percentile(const uint64_t *counts, uint64_t total, double pct, uint64_t lo,
                                uint64_t hi)
{
	if (total == 0)
		return 0;
	/* Nearest rank; the epsilon keeps 99.99 % of 10^6 at rank 999900, not 999901. */
	double r = ceil(pct / 100.0 * (double)total - 1e-9);
	uint64_t rank = r < 1 ? 1 : (r > (double)total ? total : (uint64_t)r);
	uint64_t seen = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		seen += counts[i];
		if (seen >= rank) {
			uint64_t v = hist_bucket_value(i);
			if (v < lo)
				v = lo;
			if (v > hi)
				v = hi;
			return v;
		}
	}
	return hi;
}

uint64_t hist_percentile(const struct hist *h, double pct)
{
	return hist_counts_percentile(h->counts, h->count, pct, h->min, h->max);
}

double hist_mean(const struct hist *h)
{
	return h->count ? (double)h->sum / (double)h->count : 0.0;
}

static double hist_stddev(const struct hist *h)
{
	if (h->count < 2)
		return 0.0;
	double mean = hist_mean(h), acc = 0;
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		if (!h->counts[i])
			continue;
		double d = (double)hist_bucket_value(i) - mean;
		acc += d * d * (double)h->counts[i];
	}
	return sqrt(acc / (double)(h->count - 1));
}

json_t *hist_summary_json(const struct hist *h)
{
	json_t *o = json_object();
	json_object_set_new(o, "min", json_integer(h->count ? (json_int_t)h->min : 0));
	json_object_set_new(o, "mean", json_real(round(hist_mean(h) * 10) / 10));
	json_object_set_new(o, "max", json_integer((json_int_t)h->max));
	json_object_set_new(o, "stddev", json_real(round(hist_stddev(h) * 10) / 10));
	for (size_t i = 0; i < hist_npcts; i++)
		json_object_set_new(o, hist_pct_names[i],
		                    json_integer((json_int_t)hist_percentile(h, hist_pcts[i])));
	return o;
}

json_t *hist_to_json(const struct hist *h)
{
	json_t *bins = json_array();
	for (unsigned i = 0; i < HIST_BUCKETS; i++) {
		if (!h->counts[i])
			continue;
		json_array_append_new(bins, json_integer(i));
		json_array_append_new(bins, json_integer((json_int_t)h->counts[i]));
	}
	return json_pack("{s:s, s:I, s:I, s:I, s:I, s:o}", "scheme", HIST_SCHEME, "count",
	                 (json_int_t)h->count, "sum", (json_int_t)h->sum, "min",
	                 (json_int_t)(h->count ? h->min : 0), "max", (json_int_t)h->max, "bins",
	                 bins);
}

static int hist_uint(const json_t *j, const char *key, uint64_t *out, char *err, size_t errlen)
{
	const json_t *v = json_object_get(j, key);
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		snprintf(err, errlen, "%s: must be a non-negative integer", key);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

int hist_from_json(struct hist *h, const json_t *j, char *err, size_t errlen)
{
	hist_init(h);
	if (!json_is_object(j)) {
		snprintf(err, errlen, "histogram: must be an object");
		return -1;
	}
	const char *scheme = json_string_value(json_object_get(j, "scheme"));
	if (!scheme || strcmp(scheme, HIST_SCHEME) != 0) {
		snprintf(err, errlen, "scheme: must be \"%s\"", HIST_SCHEME);
		return -1;
	}
	uint64_t count, sum, mn, mx;
	if (hist_uint(j, "count", &count, err, errlen) || hist_uint(j, "sum", &sum, err, errlen) ||
	    hist_uint(j, "min", &mn, err, errlen) || hist_uint(j, "max", &mx, err, errlen))
		return -1;
	const json_t *bins = json_object_get(j, "bins");
	if (!json_is_array(bins) || json_array_size(bins) % 2) {
		snprintf(err, errlen, "bins: must be an array of index, count pairs");
		return -1;
	}
	uint64_t total = 0;
	long long last = -1;
	for (size_t i = 0; i < json_array_size(bins); i += 2) {
		const json_t *ji = json_array_get(bins, i), *jc = json_array_get(bins, i + 1);
		if (!json_is_integer(ji) || !json_is_integer(jc) ||
		    json_integer_value(ji) <= last || json_integer_value(ji) >= HIST_BUCKETS ||
		    json_integer_value(jc) <= 0) {
			snprintf(
			    err, errlen,
			    "bins: pair %zu is not an ascending index below %u with a positive "
			    "count",
			    i / 2, HIST_BUCKETS);
			return -1;
		}
		last = json_integer_value(ji);
		h->counts[last] = (uint64_t)json_integer_value(jc);
		total += h->counts[last];
	}
	if (total != count) {
		snprintf(err, errlen, "count: %llu but the bins hold %llu",
		         (unsigned long long)count, (unsigned long long)total);
		return -1;
	}
	if (count && mn > mx) {
		snprintf(err, errlen, "min: larger than max");
		return -1;
	}
	h->count = count;
	h->sum = sum;
	h->min = count ? mn : UINT64_MAX;
	h->max = mx;
	return 0;
}
