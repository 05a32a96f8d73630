/* SPDX-License-Identifier: ISC */
/* fio's latency bins (job_fio.h) against fio's formulas as its stat.h states them: values
 * below 2^(PLAT_BITS+1) exact; from there, group g (1-based, g = msb - PLAT_BITS) starts at
 * index (g + 1) * 64, holds values [2^msb, 2^(msb+1)) in 64 buckets 2^g wide, and a bucket
 * is reported at its middle. Then the conversion of our histogram: every bucket of ours lies
 * inside one of fio's, folding is exact for any value, and fio's bins read back into ours
 * fold to the same bins. */
#include <stdint.h>
#include <stdlib.h>

#include "bench/job_fio.h"
#include "tap.h"

/* The reference, written from the description above: the lowest value of fio bucket idx
 * and its width, walking the groups. */
static void ref_bucket(unsigned idx, uint64_t *lo, uint64_t *width)
{
	if (idx < 128) {
		*lo = idx;
		*width = 1;
		return;
	}
	unsigned g = idx / 64 - 1; /* error bits */
	*width = (uint64_t)1 << g;
	*lo = ((uint64_t)1 << (g + 6)) + (uint64_t)(idx % 64) * *width;
}

static uint64_t rng = 0x1234567887654321ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(void)
{
	/* the index of every value that fio can tell apart, against the reference */
	bool idx_ok = true, val_ok = true;
	for (unsigned idx = 0; idx < HIST_FIO_NR; idx++) {
		uint64_t lo, w;
		ref_bucket(idx, &lo, &w);
		uint64_t probes[] = {lo, lo + w / 2, lo + w - 1};
		for (int k = 0; k < 3; k++)
			if (hist_fio_index(probes[k]) != idx) {
				if (idx_ok)
					diag("value %llu: index %u, want %u",
					     (unsigned long long)probes[k],
					     hist_fio_index(probes[k]), idx);
				idx_ok = false;
			}
		uint64_t want = idx < 128 ? idx : lo + w / 2; /* (k + 0.5) * w, w even */
		if (job_fio_plat_value(idx) != want) {
			if (val_ok)
				diag("index %u: value %llu, want %llu", idx,
				     (unsigned long long)job_fio_plat_value(idx),
				     (unsigned long long)want);
			val_ok = false;
		}
	}
	ok(idx_ok, "plat_val_to_idx: every bucket's lowest, middle and highest value");
	ok(val_ok, "plat_idx_to_val: every bucket reported at its middle");
	is_int(HIST_FIO_NR, 1856, "1856 bins, as fio 3.x writes in a clat_hist log");
	/* known points from fio 3.33's own json+ (a psync run whose clat min was 63549 ns) */
	is_int(job_fio_plat_value(hist_fio_index(63549)), 63744, "63549 ns -> bin 63744");
	is_int(job_fio_plat_value(hist_fio_index(100900)), 100864, "100900 ns -> bin 100864");
	is_int(job_fio_plat_value(hist_fio_index(8969686)), 8978432, "8969686 ns -> bin 8978432");
	is_int(hist_fio_index(127), 127, "127 exact");
	is_int(hist_fio_index(128), 128, "128 starts the first group");
	is_int(hist_fio_index(UINT64_MAX / 2), HIST_FIO_NR - 1, "huge values: last bin");

	/* each of our buckets lies inside one fio bucket (up to fio's last group) */
	bool inside = true;
	for (unsigned i = 0; i < HIST_BUCKETS - 1; i++) {
		uint64_t lo = hist_bucket_low(i), hi = hist_bucket_high(i) - 1;
		if (hist_fio_index(lo) != hist_fio_index(hi)) {
			if (inside)
				diag("our bucket %u [%llu, %llu] spans fio buckets", i,
				     (unsigned long long)lo, (unsigned long long)hi);
			inside = false;
		}
	}
	ok(inside, "every bucket of ours lies in one fio bucket");

	/* folding is exact: random values recorded both ways give the same fio counts */
	struct hist *h = malloc(sizeof(*h));
	uint64_t *direct = calloc(HIST_FIO_NR, sizeof(uint64_t));
	uint64_t *folded = calloc(HIST_FIO_NR, sizeof(uint64_t));
	uint64_t *again = calloc(HIST_FIO_NR, sizeof(uint64_t));
	hist_init(h);
	for (int n = 0; n < 200000; n++) {
		uint64_t v = rnd() >> (rnd() % 64); /* every magnitude */
		if (v >= ((uint64_t)1 << 34))
			v >>= 20; /* within fio's groups */
		hist_record(h, v);
		direct[hist_fio_index(v)]++;
	}
	job_fio_plat_from_hist(h->counts, folded);
	ok(memcmp(direct, folded, HIST_FIO_NR * sizeof(uint64_t)) == 0,
	   "our histogram folded into fio's bins equals recording in fio's bins");

	/* fio's bins back into ours (each at its reported value) fold to the same bins */
	struct hist *back = malloc(sizeof(*back));
	hist_init(back);
	for (unsigned k = 0; k < HIST_FIO_NR; k++)
		if (folded[k])
			back->counts[job_fio_hist_index(job_fio_plat_value(k))] += folded[k];
	job_fio_plat_from_hist(back->counts, again);
	ok(memcmp(folded, again, HIST_FIO_NR * sizeof(uint64_t)) == 0,
	   "fio bins -> our buckets -> fio bins gives the same bins");
	free(h);
	free(back);
	free(direct);
	free(folded);
	free(again);
	return done_testing();
}
