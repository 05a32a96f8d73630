/* SPDX-License-Identifier: ISC */
/* Log-linear histograms: percentiles of a million samples of several distributions against
 * the exact sorted values (error <= 1 %), merging equals recording everything in one,
 * the bins survive JSON and the layout keeps its bound on every bucket. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "tap.h"
#include "worker/hist.h"

#define N 1000000

static uint64_t rng_state = 0x5eed1234abcdull;

static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double unif(void)
{
	return ((double)(rnd() >> 11) + 0.5) / 9007199254740992.0;
}

static double normal(void)
{
	return sqrt(-2 * log(unif())) * cos(2 * M_PI * unif());
}

enum dist { UNIFORM, EXPONENTIAL, LOGNORMAL, BIMODAL, PARETO, SMALL, NDIST };
static const char *const dist_names[] = {"uniform", "exponential", "lognormal",
                                         "bimodal", "pareto",      "small integers"};

static uint64_t sample(enum dist d)
{
	double v = 0;
	switch (d) {
	case UNIFORM: /* 1 us .. 1 ms */
		v = 1000 + unif() * 999000;
		break;
	case EXPONENTIAL: /* mean 100 us */
		v = -log(unif()) * 100000;
		break;
	case LOGNORMAL: /* median 200 us, a long right tail */
		v = exp(log(200000) + 1.0 * normal());
		break;
	case BIMODAL: /* cache hits at 80 us, misses at 5 ms */
		v = unif() < 0.9 ? 80000 + 8000 * normal() : 5000000 + 1000000 * normal();
		break;
	case PARETO: /* xm 10 us, alpha 1.5: heavy tail up to minutes */
		v = 10000 / pow(unif(), 1 / 1.5);
		break;
	case SMALL:
		v = (double)(rnd() % 300);
		break;
	default:
		break;
	}
	if (v < 0)
		v = 0;
	if (v > 1e12)
		v = 1e12;
	return (uint64_t)v;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static const double extra_pcts[] = {0.1, 25, 75, 99.999, 100};

static void check_percentile(const struct hist *h, const uint64_t *sorted, double pct,
                             const char *name)
{
	double r = ceil(pct / 100.0 * N - 1e-9);
	size_t rank = r < 1 ? 1 : (size_t)r;
	uint64_t exact = sorted[rank - 1], got = hist_percentile(h, pct);
	double e = exact ? fabs((double)got - (double)exact) / (double)exact : (double)got;
	if (!ok(e <= 0.01, "%s p%g: %llu vs exact %llu (%.3f %%)", name, pct,
	        (unsigned long long)got, (unsigned long long)exact, e * 100))
		diag("relative error %.4f", e);
}

static void test_distribution(enum dist d, uint64_t *v)
{
	struct hist *h = malloc(sizeof(*h));
	hist_init(h);
	uint64_t sum = 0;
	for (size_t i = 0; i < N; i++) {
		v[i] = sample(d);
		sum += v[i];
		hist_record(h, v[i]);
	}
	qsort(v, N, sizeof(*v), cmp_u64);
	is_int(h->count, N, "%s: count", dist_names[d]);
	is_int(h->min, v[0], "%s: min exact", dist_names[d]);
	is_int(h->max, v[N - 1], "%s: max exact", dist_names[d]);
	ok(fabs(hist_mean(h) - (double)sum / N) < 1e-6 * ((double)sum / N + 1), "%s: mean exact",
	   dist_names[d]);
	for (size_t i = 0; i < hist_npcts; i++)
		check_percentile(h, v, hist_pcts[i], dist_names[d]);
	for (size_t i = 0; i < sizeof(extra_pcts) / sizeof(extra_pcts[0]); i++)
		check_percentile(h, v, extra_pcts[i], dist_names[d]);
	free(h);
}

static void test_merge(uint64_t *v)
{
	enum { PARTS = 8 };
	struct hist *all = malloc(sizeof(*all)), *parts = malloc(PARTS * sizeof(*parts)),
	            *merged = malloc(sizeof(*merged));
	hist_init(all);
	hist_init(merged);
	for (int p = 0; p < PARTS; p++)
		hist_init(&parts[p]);
	for (size_t i = 0; i < N; i++) {
		v[i] = sample((enum dist)(i % (NDIST - 1)));
		hist_record(all, v[i]);
		hist_record(&parts[rnd() % PARTS], v[i]);
	}
	for (int p = 0; p < PARTS; p++)
		hist_merge(merged, &parts[p]);
	ok(hist_equal(merged, all), "merging 8 histograms equals recording all in one");
	for (size_t i = 0; i < hist_npcts; i++)
		is_int(hist_percentile(merged, hist_pcts[i]), hist_percentile(all, hist_pcts[i]),
		       "merged p%g equals the single histogram's", hist_pcts[i]);

	/* an empty histogram merges as nothing */
	struct hist *empty = malloc(sizeof(*empty));
	hist_init(empty);
	hist_merge(merged, empty);
	ok(hist_equal(merged, all), "merging an empty histogram changes nothing");

	/* the bins survive JSON and can be merged later */
	json_t *j = hist_to_json(all);
	char *text = json_dumps(j, JSON_COMPACT);
	json_t *back = json_loads(text, 0, NULL);
	struct hist *re = malloc(sizeof(*re));
	char err[200] = "";
	ok(hist_from_json(re, back, err, sizeof(err)) == 0, "bins read back from JSON %s", err);
	ok(hist_equal(re, all), "read-back histogram equals the original");
	hist_init(merged);
	hist_merge(merged, re);
	ok(hist_equal(merged, all), "and merges like the original");
	diag("%zu bytes of JSON for a million samples", strlen(text));
	free(text);

	/* refusals */
	json_object_set_new(back, "scheme", json_string("other"));
	ok(hist_from_json(re, back, err, sizeof(err)) < 0 && strncmp(err, "scheme", 6) == 0,
	   "another scheme is refused: %s", err);
	json_object_set_new(back, "scheme", json_string(HIST_SCHEME));
	json_object_set_new(back, "count", json_integer(1));
	ok(hist_from_json(re, back, err, sizeof(err)) < 0 && strncmp(err, "count", 5) == 0,
	   "a count that disagrees with the bins is refused: %s", err);
	json_object_set_new(back, "bins", json_pack("[i,i,i,i]", 5, 1, 3, 1));
	json_object_set_new(back, "count", json_integer(2));
	ok(hist_from_json(re, back, err, sizeof(err)) < 0 && strncmp(err, "bins", 4) == 0,
	   "bins out of order are refused: %s", err);
	json_object_set_new(back, "bins", json_pack("[i,i]", HIST_BUCKETS, 2));
	ok(hist_from_json(re, back, err, sizeof(err)) < 0, "a bin past the end is refused");
	json_decref(back);
	json_decref(j);
	free(all);
	free(parts);
	free(merged);
	free(empty);
	free(re);
}

static void test_layout(void)
{
	int bad = 0;
	double worst = 0;
	for (unsigned i = 0; i + 1 < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_low(i), hi = hist_bucket_high(i);
		if (hist_bucket_low(i + 1) != hi || hist_index(lo) != i || hist_index(hi - 1) != i)
			bad++;
		if (lo >= HIST_SUB) {
			double w = (double)(hi - lo) / (double)lo;
			if (w > worst)
				worst = w;
		}
	}
	ok(bad == 0, "buckets tile the range and index back to themselves (%d bad)", bad);
	ok(worst <= 1.0 / HIST_SUB, "no bucket is wider than 1/%u of its lower bound (%.5f)",
	   HIST_SUB, worst);
	ok(HIST_SUB >= 64, "at least 64 linear sub-buckets per power of two (%u)", HIST_SUB);
	for (uint64_t v = 0; v < HIST_SUB; v++)
		if (hist_bucket_value(hist_index(v)) != v)
			bad++;
	ok(bad == 0, "values below %u are exact", HIST_SUB);
	is_int(hist_index(UINT64_MAX), HIST_BUCKETS - 1, "huge values land in the last bucket");

	struct hist h;
	hist_init(&h);
	is_int(hist_percentile(&h, 99), 0, "an empty histogram reports 0");
	hist_record(&h, 123456789);
	is_int(hist_percentile(&h, 50), 123456789, "one sample: every percentile is it (clamped)");
	is_int(hist_percentile(&h, 99.99), 123456789, "one sample: p99.99 too");
}

int main(void)
{
	uint64_t *v = malloc(N * sizeof(*v));
	test_layout();
	for (int d = 0; d < NDIST; d++)
		test_distribution((enum dist)d, v);
	test_merge(v);
	free(v);
	return done_testing();
}
