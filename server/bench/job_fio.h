/* SPDX-License-Identifier: ISC */
/* fio interchange: a run in the shape of fio's json+ output (?format=fio), its interval
 * lines as fio's log files (?format=fio-log), and a fio JSON result read back as a run
 * (POST /jobs/import).
 *
 * fio's latency histogram (stat.h: FIO_IO_U_PLAT_BITS 6) cuts every power-of-two group
 * [2^m, 2^(m+1)), m >= 7, into 64 linear buckets and keeps values below 128 exact; json+
 * names a bucket by the value fio reports for it (plat_idx_to_val: its middle). Ours
 * (worker/hist.h) has 128 buckets a group, also exact below 128: each of our buckets lies
 * whole inside one of fio's, so folding ours into fio's is exact, and fio's bins read back
 * into ours (each bin into the bucket of its reported value) fold to the same fio bins. The
 * conversions are inline here so the unit tests check them against fio's formulas without
 * the rest of the daemon. */
#ifndef SPINDLE_JOB_FIO_H
#define SPINDLE_JOB_FIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "base/fault.h"
#include "base/util.h"
#include "worker/hist.h"

struct db_run;

/* A POST /jobs/import body is at most this. */
#define JOB_FIO_IMPORT_MAX (3u << 20)

/* fio's bucket of a value: hist_fio_index() (worker/hist.h, HIST_FIO_NR buckets), shared
 * with the worker, which folds each interval's histogram into them. */

/* The value fio reports for a bucket, its json+ key: the middle, truncated. */
static inline uint64_t job_fio_plat_value(unsigned idx)
{
	if (idx < (HIST_FIO_VAL << 1))
		return idx;
	unsigned err = (idx >> HIST_FIO_BITS) - 1;
	uint64_t base = (uint64_t)1 << (err + HIST_FIO_BITS);
	uint64_t k = idx % HIST_FIO_VAL;
	/* (k + 0.5) * 2^err, exact as err >= 1 */
	return base + (k << err) + ((uint64_t)1 << (err - 1));
}

/* Our counts (HIST_BUCKETS) folded into fio's (HIST_FIO_NR, zeroed by the caller):
 * each bucket by its lower bound. */
static inline void job_fio_plat_from_hist(const uint64_t *counts, uint64_t *plat)
{
	for (unsigned i = 0; i < HIST_BUCKETS; i++)
		if (counts[i])
			plat[hist_fio_index(hist_bucket_low(i))] += counts[i];
}

/* Our bucket for a fio bin's reported value: the one that value lies in, which lies in
 * the fio bucket the value names. */
static inline unsigned job_fio_hist_index(uint64_t fio_value)
{
	return hist_index(fio_value);
}

/* fio's json+ document of a run whose result is res (the stored result object): one job,
 * its options as fio prints them, bins in fio's scheme, the per-second figures from the
 * run's interval lines, and an extra section "spindle" (environment, findings). New
 * reference. Loop thread (reads the stored interval lines). */
json_t *job_fio_json(const struct db_run *run, const json_t *res);

enum job_fio_log { JOB_FIO_LOG_IOPS, JOB_FIO_LOG_BW, JOB_FIO_LOG_LAT, JOB_FIO_LOG_CLAT_HIST };
/* "iops", "bw", "lat" or "clat_hist"; -1 for any other name. */
int job_fio_log_parse(const char *name, enum job_fio_log *out);
/* The run's measured interval lines as the fio log file of that kind, in out (text).
 * ERR_NOT_FOUND for no such job or one without a result; ERR_INVALID_ARG for clat_hist of a
 * run whose interval lines carry no histograms (imported, or run by an older worker). */
int job_fio_log(int64_t id, enum job_fio_log which, struct buf *out, struct fault *f);

/* A fio JSON result (json or json+) as a finished, imported run: run's name, state, target,
 * times, spec and result are set (the caller sets owner and label and inserts it). The
 * first job is taken; a fault names what is wrong with any other document. Pure. */
int job_fio_import(const json_t *doc, struct db_run *run, struct fault *f);

#endif
