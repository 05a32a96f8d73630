/* SPDX-License-Identifier: ISC */
/* fio interchange; see job_fio.h for the bin schemes. The export reads the run and its
 * stored interval lines through jobs.h and keeps nothing; the import is a pure translation
 * of fio's document into a run row. */
#include "job_fio.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db.h"
#include "jobs.h"
#include "worker/spec.h"

/* ---- small helpers */

static double num(const json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static json_int_t integer(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) ? json_integer_value(v)
	                          : (json_int_t)llround(json_number_value(v));
}

/* A size as fio's options print it when given so: "8k", "16M", "1G", else bytes. */
static json_t *fio_size(uint64_t n)
{
	static const char suffix[] = "kMGT";
	char s[32];
	int u = -1;
	while (n && n % 1024 == 0 && u < 3) {
		n /= 1024;
		u++;
	}
	if (u >= 0)
		snprintf(s, sizeof(s), "%llu%c", (unsigned long long)n, suffix[u]);
	else
		snprintf(s, sizeof(s), "%llu", (unsigned long long)n);
	return json_string(s);
}

static json_t *fio_uint(json_int_t n)
{
	char s[32];
	snprintf(s, sizeof(s), "%lld", (long long)n);
	return json_string(s);
}

/* A duration as fio's options take it: whole seconds bare ("2"), else in ms ("2500ms"). */
static json_t *fio_seconds(double s)
{
	char t[32];
	long long ms = llround(s * 1000);
	if (ms % 1000 == 0)
		snprintf(t, sizeof(t), "%lld", ms / 1000);
	else
		snprintf(t, sizeof(t), "%lldms", ms);
	return json_string(t);
}

/* fio's "time": ctime's format without the newline, "Tue Dec  1 21:00:00 2026" (UTC, as
 * every time the daemon keeps). */
static json_t *fio_time(int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	char s[64];
	gmtime_r(&tt, &tm);
	strftime(s, sizeof(s), "%a %b %e %H:%M:%S %Y", &tm);
	return json_string(s);
}

/* ---- the run's measured intervals */

/* The stored interval lines, as jobs_replay gives them (NDJSON, then an end line). */
static json_t *run_intervals(int64_t id)
{
	struct buf b = {0};
	struct fault f = {0};
	json_t *list = json_array();
	if (jobs_replay(id, false, &b, &f) < 0) {
		buf_free(&b);
		return list;
	}
	for (char *l = b.p, *nl; l && *l; l = nl ? nl + 1 : NULL) {
		nl = strchr(l, '\n');
		size_t n = nl ? (size_t)(nl - l) : strlen(l);
		json_t *o = json_loadb(l, n, 0, NULL);
		const char *type = json_string_value(json_object_get(o, "type"));
		const char *phase = json_string_value(json_object_get(o, "phase"));
		if (type && strcmp(type, "interval") == 0 && phase && strcmp(phase, "measure") == 0)
			json_array_append(list, o);
		json_decref(o);
	}
	buf_free(&b);
	return list;
}

/* An interval long enough to count as a per-second sample (the last, partial one of a run
 * is left out, as fio leaves out a window it did not fill). */
static bool whole_interval(const json_t *iv)
{
	return num(iv, "elapsed_s") >= 0.5;
}

/* fio's bw_* and iops_* figures: min, max, mean and sample stddev over the samples. */
struct stats {
	unsigned n;
	double min, max, sum, sumsq;
};

static void stats_add(struct stats *s, double v)
{
	if (s->n == 0 || v < s->min)
		s->min = v;
	if (s->n == 0 || v > s->max)
		s->max = v;
	s->n++;
	s->sum += v;
	s->sumsq += v * v;
}

static double stats_mean(const struct stats *s)
{
	return s->n ? s->sum / s->n : 0;
}

static double stats_dev(const struct stats *s)
{
	if (s->n < 2)
		return 0;
	double m = stats_mean(s), v = (s->sumsq - s->n * m * m) / (s->n - 1);
	return v > 0 ? sqrt(v) : 0;
}

static double round6(double v)
{
	return round(v * 1e6) / 1e6;
}

/* ---- fio's shape */

/* Our result's histogram of a direction as fio's buckets; NULL without one. */
static uint64_t *dir_plat(const json_t *d, uint64_t *count)
{
	struct hist *h = xmalloc(sizeof(*h));
	char err[160];
	uint64_t *plat = NULL;
	if (hist_from_json(h, json_object_get(d, "hist"), err, sizeof(err)) == 0) {
		plat = xcalloc(HIST_FIO_NR, sizeof(*plat));
		job_fio_plat_from_hist(h->counts, plat);
		*count = h->count;
	}
	free(h);
	return plat;
}

/* fio's lat object: min, max, mean, stddev, N; with the percentiles and (json+) the bins of
 * its buckets when it has them, the percentiles read off those buckets as fio does. */
static json_t *fio_lat(const json_t *lat, json_int_t n, const uint64_t *plat, bool pcts)
{
	json_t *o =
	    json_pack("{s:I, s:I, s:f, s:f, s:I}", "min", n ? integer(lat, "min") : 0, "max",
	              n ? integer(lat, "max") : 0, "mean", n ? num(lat, "mean") : 0.0, "stddev",
	              n ? num(lat, "stddev") : 0.0, "N", n);
	if (!n || !pcts)
		return o;
	json_t *pct = json_object();
	for (size_t i = 0; i < hist_npcts; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%f", hist_pcts[i]);
		json_int_t v = integer(lat, hist_pct_names[i]);
		if (plat) {
			uint64_t sum = 0;
			for (unsigned k = 0; k < HIST_FIO_NR; k++) {
				sum += plat[k];
				if ((double)sum >= hist_pcts[i] / 100.0 * (double)n) {
					v = (json_int_t)job_fio_plat_value(k);
					break;
				}
			}
		}
		json_object_set_new(pct, key, json_integer(v));
	}
	json_object_set_new(o, "percentile", pct);
	if (plat) {
		json_t *bins = json_object();
		for (unsigned k = 0; k < HIST_FIO_NR; k++) {
			if (!plat[k])
				continue;
			char key[32];
			snprintf(key, sizeof(key), "%llu",
			         (unsigned long long)job_fio_plat_value(k));
			json_object_set_new(bins, key, json_integer((json_int_t)plat[k]));
		}
		json_object_set_new(o, "bins", bins);
	}
	return o;
}

static json_t *fio_dir(const json_t *d, const char *name, double elapsed_s, const json_t *intervals)
{
	json_int_t ops = integer(d, "ops");
	json_int_t bytes = integer(d, "bytes");
	double bps = num(d, "bytes_per_s");
	const json_t *lat = json_object_get(d, "latency_ns");
	uint64_t hcount = 0;
	uint64_t *plat = dir_plat(d, &hcount);
	if (plat && hcount != (uint64_t)ops) {
		free(plat);
		plat = NULL;
	}
	json_t *o = json_pack(
	    "{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:i, s:i, s:{s:i, s:i, s:f, s:f, s:i}, s:o, s:o}",
	    "io_bytes", bytes, "io_kbytes", bytes / 1024, "bw_bytes", (json_int_t)llround(bps),
	    "bw", (json_int_t)llround(bps) / 1024, "iops", num(d, "iops"), "runtime",
	    ops ? (json_int_t)llround(elapsed_s * 1000) : 0, "total_ios", ops, "short_ios", 0,
	    "drop_ios", 0, "slat_ns", "min", 0, "max", 0, "mean", 0.0, "stddev", 0.0, "N", 0,
	    /* the worker times submission to completion: fio's lat. With psync (and an
	     * io_uring submit that does not block) that is its clat too; the bins and
	     * percentiles go where fio puts them by default, under clat_ns. */
	    "clat_ns", fio_lat(lat, ops, plat, true), "lat_ns", fio_lat(lat, ops, NULL, false));
	free(plat);
	struct stats iops = {0}, bw = {0};
	for (size_t i = 0; i < json_array_size(intervals); i++) {
		const json_t *iv = json_array_get(intervals, i);
		if (!whole_interval(iv))
			continue;
		const json_t *x = json_object_get(iv, name);
		stats_add(&iops, num(x, "iops"));
		stats_add(&bw, num(x, "bytes_per_s") / 1024);
	}
	if (!ops) /* fio counts no samples of a direction without I/O */
		iops.n = bw.n = 0;
	double kib = bps / 1024;
	json_object_set_new(o, "bw_min", json_integer(bw.n ? (json_int_t)llround(bw.min) : 0));
	json_object_set_new(o, "bw_max", json_integer(bw.n ? (json_int_t)llround(bw.max) : 0));
	json_object_set_new(o, "bw_agg",
	                    json_real(bw.n && kib > 0 ? round6(stats_mean(&bw) / kib * 100) : 0));
	json_object_set_new(o, "bw_mean", json_real(round6(stats_mean(&bw))));
	json_object_set_new(o, "bw_dev", json_real(round6(stats_dev(&bw))));
	json_object_set_new(o, "bw_samples", json_integer(bw.n));
	json_object_set_new(o, "iops_min",
	                    json_integer(iops.n ? (json_int_t)llround(iops.min) : 0));
	json_object_set_new(o, "iops_max",
	                    json_integer(iops.n ? (json_int_t)llround(iops.max) : 0));
	json_object_set_new(o, "iops_mean", json_real(round6(stats_mean(&iops))));
	json_object_set_new(o, "iops_stddev", json_real(round6(stats_dev(&iops))));
	json_object_set_new(o, "iops_samples", json_integer(iops.n));
	return o;
}

/* fio's io_u_lat_n/u/m buckets (io_u.c: io_u_mark_lat_*): [0] for 0-1, [1] 2-3, [2] 4-9,
 * [3] 10-19, [4] 20-49, [5] 50-99, [6] 100-249, [7] 250-499, [8] 500-749, [9] 750-999 of
 * the unit; msec also [10] 1000-1999 and [11] from 2000. */
static unsigned fio_lat_slot(uint64_t v)
{
	static const uint64_t edge[] = {2, 4, 10, 20, 50, 100, 250, 500, 750, 1000, 2000};
	unsigned i = 0;
	while (i < nitems(edge) && v >= edge[i])
		i++;
	return i;
}

/* latency_ns, latency_us and latency_ms: the share of all I/Os in each of fio's fixed
 * buckets, each of our buckets counted at the value it reports (its middle). */
static void fio_lat_buckets(json_t *job, const json_t *res)
{
	static const char *const keys[] = {"2",   "4",   "10",  "20",   "50",   "100",
	                                   "250", "500", "750", "1000", "2000", ">=2000"};
	double n[10] = {0}, u[10] = {0}, m[12] = {0}, total = 0;
	static const char *const dirs[] = {"read", "write"};
	struct hist *h = xmalloc(sizeof(*h));
	for (size_t d = 0; d < nitems(dirs); d++) {
		char err[160];
		if (hist_from_json(h, json_object_get(json_object_get(res, dirs[d]), "hist"), err,
		                   sizeof(err)) < 0)
			continue;
		for (unsigned i = 0; i < HIST_BUCKETS; i++) {
			if (!h->counts[i])
				continue;
			uint64_t v = hist_bucket_value(i);
			double c = (double)h->counts[i];
			total += c;
			if (v < 1000)
				n[fio_lat_slot(v)] += c;
			else if (v < 1000000)
				u[fio_lat_slot(v / 1000)] += c;
			else
				m[fio_lat_slot(v / 1000000)] += c;
		}
	}
	free(h);
	struct {
		const char *name;
		double *v;
		size_t nr;
	} out[] = {{"latency_ns", n, 10}, {"latency_us", u, 10}, {"latency_ms", m, 12}};
	for (size_t k = 0; k < nitems(out); k++) {
		json_t *o = json_object();
		for (size_t i = 0; i < out[k].nr; i++) {
			double p = total > 0 ? out[k].v[i] / total * 100 : 0;
			if (p > 0 && p < 0.01) /* as fio shows a bucket that has any */
				p = 0.01;
			json_object_set_new(o, keys[i], json_real(round6(p)));
		}
		json_object_set_new(job, out[k].name, o);
	}
}

/* fio's I/O depth maps (io_u.c): iodepth_level by the depth in flight (1, 2, 4 ... 32,
 * >=64); submit and complete by the I/Os per call (0, 4, 8 ... 64, >=64). */
static void fio_depths(json_t *job, const json_t *spec, json_int_t ops)
{
	json_int_t depth = integer(spec, "iodepth");
	json_int_t batch =
	    json_object_get(spec, "iodepth_batch") ? integer(spec, "iodepth_batch") : 1;
	if (depth < 1)
		depth = 1;
	if (batch < 1)
		batch = 1;
	static const char *const lvl[] = {"1", "2", "4", "8", "16", "32", ">=64"};
	static const char *const sub[] = {"0", "4", "8", "16", "32", "64", ">=64"};
	unsigned li = 0, si = 0;
	while (li < 6 && depth >= (json_int_t)2 << li)
		li++;
	static const json_int_t sub_hi[] = {0, 4, 8, 16, 32, 64};
	while (si < 6 && batch > sub_hi[si])
		si++;
	json_t *l = json_object(), *s = json_object(), *c = json_object();
	for (unsigned i = 0; i < 7; i++) {
		json_object_set_new(l, lvl[i], json_real(ops && i == li ? 100.0 : 0.0));
		json_object_set_new(s, sub[i], json_real(ops && i == si ? 100.0 : 0.0));
		json_object_set_new(c, sub[i], json_real(ops && i == si ? 100.0 : 0.0));
	}
	json_object_set_new(job, "iodepth_level", l);
	json_object_set_new(job, "iodepth_submit", s);
	json_object_set_new(job, "iodepth_complete", c);
}

/* The spec as fio's "job options": every value a string, as fio prints them. */
static json_t *fio_options(const struct db_run *run, const json_t *spec)
{
	/* an imported run: fio's options as fio wrote them */
	const json_t *own = json_object_get(json_object_get(spec, "fio"), "options");
	if (run->imported && json_is_object(own))
		return json_deep_copy(own);
	const char *pattern = json_string_value(json_object_get(spec, "pattern"));
	static const struct {
		const char *ours, *fio;
	} rw[] = {{"read", "read"},         {"write", "write"},
	          {"randread", "randread"}, {"randwrite", "randwrite"},
	          {"randrw", "randrw"},     {"slob", "randrw"},
	          {"iozone", "rw"}};
	const char *fio_rw = "randread";
	for (size_t i = 0; pattern && i < nitems(rw); i++)
		if (strcmp(rw[i].ours, pattern) == 0)
			fio_rw = rw[i].fio;
	json_t *o =
	    json_pack("{s:s, s:s, s:s}", "name", run->name, "filename", run->target, "rw", fio_rw);
	if (json_is_integer(json_object_get(spec, "block_size")))
		json_object_set_new(o, "bs", fio_size((uint64_t)integer(spec, "block_size")));
	if (json_is_integer(json_object_get(spec, "size")))
		json_object_set_new(o, "size", fio_size((uint64_t)integer(spec, "size")));
	const char *engine = json_string_value(json_object_get(spec, "engine"));
	if (engine)
		json_object_set_new(o, "ioengine", json_string(engine));
	json_object_set_new(o, "iodepth",
	                    fio_uint(integer(spec, "iodepth") ? integer(spec, "iodepth") : 1));
	if (json_object_get(spec, "iodepth_batch"))
		json_object_set_new(o, "iodepth_batch_submit",
		                    fio_uint(integer(spec, "iodepth_batch")));
	json_object_set_new(o, "direct",
	                    json_string(json_is_true(json_object_get(spec, "direct")) ? "1" : "0"));
	/* threads of one kind each run the same loop: fio's numjobs */
	json_int_t jobs = integer(spec, "threads") + integer(spec, "readers") +
	                  integer(spec, "writers") + integer(spec, "sessions");
	json_object_set_new(o, "numjobs", fio_uint(jobs > 0 ? jobs : 1));
	if (json_object_get(spec, "rwmix_read") && strcmp(fio_rw, "randrw") == 0)
		json_object_set_new(o, "rwmixread", fio_uint(integer(spec, "rwmix_read")));
	if (json_is_number(json_object_get(spec, "runtime_s"))) {
		json_object_set_new(o, "runtime", fio_seconds(num(spec, "runtime_s")));
		json_object_set_new(o, "time_based", json_string("1"));
	}
	if (json_is_number(json_object_get(spec, "ramp_s")))
		json_object_set_new(o, "ramp_time", fio_seconds(num(spec, "ramp_s")));
	if (json_object_get(spec, "fsync_every") && integer(spec, "fsync_every"))
		json_object_set_new(o, "fsync", fio_uint(integer(spec, "fsync_every")));
	return o;
}

/* fio's disk_util from the run's device record: the raw counters' differences over the
 * measured seconds when the run has them, else its per-second means times the seconds. */
static json_t *fio_disk_util(const json_t *dev)
{
	if (!json_is_string(json_object_get(dev, "disk")))
		return NULL;
	const json_t *c = json_object_get(dev, "counters");
	double secs = num(dev, "seconds");
	json_t *du = json_pack("{s:O}", "name", json_object_get(dev, "disk"));
	if (json_is_object(c)) {
		static const char *const keys[] = {"read_ios",     "write_ios",  "read_merges",
		                                   "write_merges", "read_ticks", "write_ticks",
		                                   "in_queue"};
		for (size_t i = 0; i < nitems(keys); i++)
			json_object_set_new(du, keys[i], json_integer(integer(c, keys[i])));
		double ms = num(c, "ms");
		json_object_set_new(du, "util",
		                    json_real(ms > 0 ? round6(num(c, "io_ticks") / ms * 100) : 0));
	} else if (secs > 0) {
		json_object_set_new(
		    du, "read_ios",
		    json_integer((json_int_t)llround(num(dev, "reads_per_s") * secs)));
		json_object_set_new(
		    du, "write_ios",
		    json_integer((json_int_t)llround(num(dev, "writes_per_s") * secs)));
		json_object_set_new(du, "util", json_real(num(dev, "busy_pct")));
	} else {
		json_decref(du);
		return NULL;
	}
	return du;
}

json_t *job_fio_json(const struct db_run *run, const json_t *res)
{
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
	if (!spec)
		spec = json_object();
	json_t *intervals = run->imported ? json_array() : run_intervals(run->id);
	double elapsed = num(res, "elapsed_s");
	const json_t *cpu = json_object_get(res, "cpu");
	double usr = num(cpu, "user_s"), sys = num(cpu, "system_s");
	const json_t *sync = json_object_get(res, "sync");
	json_int_t nsync = integer(sync, "ops");
	json_int_t ops = integer(json_object_get(res, "read"), "ops") +
	                 integer(json_object_get(res, "write"), "ops");
	json_t *job = json_pack(
	    "{s:s, s:i, s:I, s:i, s:i, s:I, s:o, s:o, s:o, s:{s:i, s:i, s:i}, s:{s:I, s:o}, s:I, "
	    "s:f, s:f, s:i, s:i, s:i}",
	    "jobname", run->name, "groupid", 0, "job_start", (json_int_t)run->start_time * 1000,
	    "error", 0, "eta", 0, "elapsed", (json_int_t)llround(elapsed), "job options",
	    fio_options(run, spec), "read",
	    fio_dir(json_object_get(res, "read"), "read", elapsed, intervals), "write",
	    fio_dir(json_object_get(res, "write"), "write", elapsed, intervals), "trim", "io_bytes",
	    0, "iops", 0, "total_ios", 0, "sync", "total_ios", nsync, "lat_ns",
	    fio_lat(json_object_get(sync, "latency_ns"), nsync, NULL, true), "job_runtime",
	    (json_int_t)llround(elapsed * 1000), "usr_cpu",
	    elapsed > 0 ? round6(usr / elapsed * 100) : 0.0, "sys_cpu",
	    elapsed > 0 ? round6(sys / elapsed * 100) : 0.0, "ctx", 0, "majf", 0, "minf", 0);
	fio_depths(job, spec, ops);
	fio_lat_buckets(job, res);
	int64_t when = run->end_time ? run->end_time : run->ctime;
	json_t *o = json_pack("{s:s, s:I, s:I, s:o, s:o, s:[o]}", "fio version",
	                      "spindle-worker " PACKAGE_VERSION, "timestamp", (json_int_t)when,
	                      "timestamp_ms", (json_int_t)when * 1000, "time", fio_time(when),
	                      "global options", json_object(), "jobs", job);
	json_t *du = fio_disk_util(json_object_get(res, "device"));
	if (du)
		json_object_set_new(o, "disk_util", json_pack("[o]", du));
	/* what fio has no place for: what the target sat on and what the run was found to do */
	json_t *env = run->environment ? json_loads(run->environment, 0, NULL) : NULL;
	const json_t *findings = json_object_get(res, "findings");
	json_object_set_new(o, "spindle",
	                    json_pack("{s:I, s:b, s:o, s:O}", "job", (json_int_t)run->id,
	                              "imported", run->imported, "environment",
	                              env ? env : json_null(), "findings",
	                              findings ? findings : json_null()));
	json_decref(intervals);
	json_decref(spec);
	return o;
}

/* ---- fio's log files */

int job_fio_log_parse(const char *name, enum job_fio_log *out)
{
	static const char *const names[] = {[JOB_FIO_LOG_IOPS] = "iops",
	                                    [JOB_FIO_LOG_BW] = "bw",
	                                    [JOB_FIO_LOG_LAT] = "lat",
	                                    [JOB_FIO_LOG_CLAT_HIST] = "clat_hist"};
	for (size_t i = 0; name && i < nitems(names); i++)
		if (strcmp(names[i], name) == 0) {
			*out = (enum job_fio_log)i;
			return 0;
		}
	return -1;
}

/* One interval's histogram of a direction ({"bins":[idx,count,...]}: fio's buckets merged
 * as log_hist_coarseness HIST_FIO_COARSE merges them) as the row fio writes; false when
 * the line has none. */
static bool interval_plat(const json_t *x, uint64_t *plat)
{
	const json_t *bins = json_object_get(json_object_get(x, "hist"), "bins");
	if (!json_is_array(bins))
		return false;
	memset(plat, 0, HIST_FIO_COARSE_NR * sizeof(*plat));
	for (size_t i = 0; i + 1 < json_array_size(bins); i += 2) {
		json_int_t idx = json_integer_value(json_array_get(bins, i));
		json_int_t c = json_integer_value(json_array_get(bins, i + 1));
		if (idx >= 0 && idx < HIST_FIO_COARSE_NR && c > 0)
			plat[idx] += (uint64_t)c;
	}
	return true;
}

int job_fio_log(int64_t id, enum job_fio_log which, struct buf *out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	if (jobs_run_get(id, run, f) < 0) {
		free(run);
		return -1;
	}
	int rc = 0;
	if (!run->result) {
		rc = fault_set(f, ERR_NOT_FOUND, "job: job %lld has no result (it is %s)",
		               (long long)run->id, run->state);
		db_run_clear(run);
		free(run);
		return rc;
	}
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
	json_int_t bs = integer(spec, "block_size");
	json_t *intervals = run_intervals(run->id);
	uint64_t *plat = xmalloc(HIST_FIO_COARSE_NR * sizeof(*plat));
	static const char *const dirs[] = {"read", "write"};
	size_t lines = 0;
	/* fio's time column is msec since the job's I/O began: ours counts from the measured
	 * phase, the first interval ending at about 1000 */
	double t0 = json_array_size(intervals) ? num(json_array_get(intervals, 0), "t_s") -
	                                             num(json_array_get(intervals, 0), "elapsed_s")
	                                       : 0;
	for (size_t i = 0; i < json_array_size(intervals) && rc == 0; i++) {
		const json_t *iv = json_array_get(intervals, i);
		long msec = lround((num(iv, "t_s") - t0) * 1000);
		for (unsigned d = 0; d < nitems(dirs); d++) {
			const json_t *x = json_object_get(iv, dirs[d]);
			if (integer(x, "ops") == 0)
				continue;
			switch (which) {
			case JOB_FIO_LOG_IOPS:
				buf_printf(out, "%ld, %lld, %u, %lld, 0\n", msec,
				           (long long)llround(num(x, "iops")), d, (long long)bs);
				break;
			case JOB_FIO_LOG_BW:
				buf_printf(out, "%ld, %lld, %u, %lld, 0\n", msec,
				           (long long)llround(num(x, "bytes_per_s") / 1024), d,
				           (long long)bs);
				break;
			case JOB_FIO_LOG_LAT:
				buf_printf(out, "%ld, %lld, %u, %lld, 0\n", msec,
				           (long long)llround(num(x, "lat_mean_ns")), d,
				           (long long)bs);
				break;
			case JOB_FIO_LOG_CLAT_HIST:
				if (!interval_plat(x, plat)) {
					rc = fault_set(f, ERR_INVALID_ARG,
					               "log: job %lld's interval lines carry no "
					               "latency histograms (clat_hist needs them)",
					               (long long)run->id);
					break;
				}
				buf_printf(out, "%ld, %u, %lld", msec, d, (long long)bs);
				for (unsigned k = 0; k < HIST_FIO_COARSE_NR; k++)
					buf_printf(out, ", %llu", (unsigned long long)plat[k]);
				buf_add(out, "\n", 1);
				break;
			}
			lines++;
		}
	}
	if (rc == 0 && json_array_size(intervals) == 0)
		rc = fault_set(f, ERR_INVALID_ARG,
		               "log: job %lld has no measured interval lines to log (%s)",
		               (long long)run->id,
		               run->imported ? "an imported job has none, nor latency histograms"
		                             : "it measured nothing");
	if (rc == 0 && !out->p)
		buf_add(out, "", 0);
	free(plat);
	json_decref(intervals);
	json_decref(spec);
	db_run_clear(run);
	free(run);
	return rc;
}

/* ---- import */

static int bad(struct fault *f, const char *what)
{
	return fault_set(f, ERR_INVALID_ARG, "%s", what);
}

/* Bounds of what an import stores: latencies (ns) and runtimes (ms) below ~11 days, rates
 * below 10^12 a second, counts below 2^62, so that sums and products stay exact. */
#define IMPORT_NS_MAX    1e15
#define IMPORT_MS_MAX    1e12
#define IMPORT_RATE_MAX  1e12
#define IMPORT_COUNT_MAX 4611686018427387904.0 /* 2^62 */

/* o[key] when it is a number from 0 to max (a whole one when whole), or absent (0);
 * otherwise -1 and a fault naming <where>.<key>. */
static int import_num(const json_t *o, const char *where, const char *key, double max, bool whole,
                      double *out, struct fault *f)
{
	const json_t *v = json_object_get(o, key);
	*out = 0;
	if (!v)
		return 0;
	double x = json_number_value(v);
	if (!json_is_number(v) || !isfinite(x) || x < 0 || x > max ||
	    (whole && !json_is_integer(v)))
		return fault_set(f, ERR_INVALID_ARG, "%s.%s: must be %s from 0 to %g (got %.17g)",
		                 where, key, whole ? "a whole number" : "a number", max,
		                 json_is_number(v) ? x : -1.0);
	*out = x;
	return 0;
}

/* fio's clat_ns (or lat_ns) as our latency summary, and its bins (json+) as our histogram
 * ({"scheme":...}); percentiles from fio's "percentile" member, else from the bins. */
/* at: where clat is in the document ("jobs[0].read.clat_ns"), for the faults */
static int import_lat(const json_t *clat, const char *at, json_int_t n, json_t *out,
                      struct fault *f)
{
	char where[64];
	double x;
	snprintf(where, sizeof(where), "%s", at);
	static const char *const keys[] = {"min", "max", "mean", "stddev"};
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (import_num(clat, where, keys[i], IMPORT_NS_MAX, false, &x, f) < 0)
			return -1;
	if (num(clat, "mean") * (double)n >= IMPORT_COUNT_MAX)
		return fault_set(f, ERR_INVALID_ARG,
		                 "%s.mean: %g ns over %lld I/Os is more time than can be "
		                 "stored",
		                 where, num(clat, "mean"), (long long)n);
	const json_t *pcts = json_object_get(clat, "percentile");
	const char *pkey;
	const json_t *pv;
	snprintf(where, sizeof(where), "%s.percentile", at);
	json_object_foreach((json_t *)pcts, pkey, pv)
	{
		if (import_num(pcts, where, pkey, IMPORT_NS_MAX, false, &x, f) < 0)
			return -1;
	}
	json_t *sum = json_pack("{s:I, s:f, s:I, s:f}", "min", integer(clat, "min"), "mean",
	                        round(num(clat, "mean") * 10) / 10, "max", integer(clat, "max"),
	                        "stddev", round(num(clat, "stddev") * 10) / 10);
	const json_t *pct = json_object_get(clat, "percentile");
	const json_t *bins = json_object_get(clat, "bins");
	struct hist *h = NULL;
	if (json_is_object(bins)) {
		h = xmalloc(sizeof(*h));
		hist_init(h);
		const char *key;
		const json_t *v;
		json_object_foreach((json_t *)bins, key, v)
		{
			char *end;
			unsigned long long val = strtoull(key, &end, 10);
			if (*end || !json_is_integer(v) || json_integer_value(v) < 0 ||
			    (double)val > IMPORT_NS_MAX ||
			    (uint64_t)json_integer_value(v) >
			        (uint64_t)IMPORT_COUNT_MAX - h->count) {
				json_decref(sum);
				free(h);
				return fault_set(
				    f, ERR_INVALID_ARG,
				    "%s.bins: '%.40s' is not a latency in ns with a count (their "
				    "sum below 2^62)",
				    at, key);
			}
			h->counts[job_fio_hist_index(val)] += (uint64_t)json_integer_value(v);
			h->count += (uint64_t)json_integer_value(v);
		}
		if (h->count != (uint64_t)n) {
			uint64_t got = h->count;
			json_decref(sum);
			free(h);
			return fault_set(f, ERR_INVALID_ARG,
			                 "%s.bins: they count %llu I/Os, N says %lld", at,
			                 (unsigned long long)got, (long long)n);
		}
		h->min = n ? (uint64_t)integer(clat, "min") : UINT64_MAX;
		h->max = (uint64_t)integer(clat, "max");
		h->sum = (uint64_t)llround(num(clat, "mean") * (double)n);
	}
	for (size_t i = 0; i < hist_npcts; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%f", hist_pcts[i]);
		const json_t *v = json_object_get(pct, key);
		json_int_t ns = 0;
		if (json_is_number(v))
			ns = integer(pct, key);
		else if (h)
			ns = (json_int_t)hist_percentile(h, hist_pcts[i]);
		json_object_set_new(sum, hist_pct_names[i], json_integer(ns));
	}
	json_object_set_new(out, "latency_ns", sum);
	if (h)
		json_object_set_new(out, "hist", hist_to_json(h));
	free(h);
	return 0;
}

static int import_dir(const json_t *job, const char *dir, json_t *res, struct fault *f)
{
	const json_t *d = json_object_get(job, dir);
	if (!json_is_object(d)) {
		char what[80];
		snprintf(what, sizeof(what), "jobs[0].%s: required: fio's %s section", dir, dir);
		return bad(f, what);
	}
	if (!json_is_integer(json_object_get(d, "total_ios")) ||
	    !json_is_integer(json_object_get(d, "io_bytes"))) {
		char what[96];
		snprintf(what, sizeof(what), "jobs[0].%s: total_ios and io_bytes must be counts",
		         dir);
		return bad(f, what);
	}
	double x;
	char where[32];
	snprintf(where, sizeof(where), "jobs[0].%s", dir);
	if (import_num(d, where, "total_ios", IMPORT_COUNT_MAX, true, &x, f) < 0 ||
	    import_num(d, where, "io_bytes", IMPORT_COUNT_MAX, true, &x, f) < 0 ||
	    import_num(d, where, "bw_bytes", IMPORT_COUNT_MAX, false, &x, f) < 0 ||
	    import_num(d, where, "iops", IMPORT_RATE_MAX, false, &x, f) < 0 ||
	    import_num(d, where, "runtime", IMPORT_MS_MAX, false, &x, f) < 0)
		return -1;
	json_int_t n = integer(d, "total_ios");
	const char *member = "clat_ns";
	const json_t *clat = json_object_get(d, member);
	if (!json_is_object(clat))
		clat = json_object_get(d, member = "lat_ns");
	if (n > 0 && !json_is_object(clat)) {
		char what[80];
		snprintf(what, sizeof(what), "jobs[0].%s.clat_ns: required with I/Os", dir);
		return bad(f, what);
	}
	json_t *o =
	    json_pack("{s:I, s:I, s:f, s:I}", "ops", n, "bytes", integer(d, "io_bytes"), "iops",
	              round(num(d, "iops") * 10) / 10, "bytes_per_s", integer(d, "bw_bytes"));
	char at[48];
	snprintf(at, sizeof(at), "jobs[0].%s.%s", dir, member);
	if (import_lat(clat, at, n, o, f) < 0) {
		json_decref(o);
		return -1;
	}
	json_object_set_new(res, dir, o);
	return 0;
}

/* "8k", "4k,8k" (read,write: the first), "1m" as bytes; 0 when not a size. */
static uint64_t import_size(const char *s)
{
	char first[64];
	uint64_t v = 0;
	if (!s)
		return 0;
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(s, ",:"), s);
	return spec_parse_size(first, &v) == 0 ? v : 0;
}

/* fio's time option: "30" (seconds), "30s", "2500ms", "1m", "1h"; 0 when not one. */
static double import_seconds(const char *t)
{
	static const struct {
		const char *unit;
		double secs;
	} units[] = {{"", 1}, {"s", 1}, {"ms", 1e-3}, {"us", 1e-6}, {"m", 60}, {"h", 3600}};
	char *end;
	double v = t ? strtod(t, &end) : 0;
	if (!t || end == t || v <= 0)
		return 0;
	for (size_t i = 0; i < nitems(units); i++)
		if (strcmp(end, units[i].unit) == 0)
			return v * units[i].secs;
	return 0;
}

static json_t *import_spec(const json_t *job, const char *fio_version, const json_t *res)
{
	const json_t *opts = json_object_get(job, "job options");
	const char *rw = json_string_value(json_object_get(opts, "rw"));
	if (!rw)
		rw = json_string_value(json_object_get(opts, "readwrite"));
	static const struct {
		const char *fio, *ours;
	} pat[] = {{"read", "read"},           {"write", "write"},   {"randread", "randread"},
	           {"randwrite", "randwrite"}, {"randrw", "randrw"}, {"rw", "randrw"},
	           {"readwrite", "randrw"}};
	json_t *s = json_object();
	const char *name = json_string_value(json_object_get(job, "jobname"));
	if (name)
		json_object_set_new(s, "name", json_string(name));
	for (size_t i = 0; rw && i < nitems(pat); i++)
		if (strcmp(pat[i].fio, rw) == 0)
			json_object_set_new(s, "pattern", json_string(pat[i].ours));
	if (!json_object_get(s, "pattern")) { /* by the directions that did I/O */
		bool r = integer(json_object_get(res, "read"), "ops") > 0;
		bool w = integer(json_object_get(res, "write"), "ops") > 0;
		json_object_set_new(s, "pattern",
		                    json_string(r && w ? "randrw"
		                                : w    ? "randwrite"
		                                       : "randread"));
	}
	uint64_t v;
	if ((v = import_size(json_string_value(json_object_get(opts, "size")))))
		json_object_set_new(s, "size", json_integer((json_int_t)v));
	if ((v = import_size(json_string_value(json_object_get(opts, "bs")))))
		json_object_set_new(s, "block_size", json_integer((json_int_t)v));
	else if ((v = import_size(json_string_value(json_object_get(opts, "blocksize")))))
		json_object_set_new(s, "block_size", json_integer((json_int_t)v));
	else
		json_object_set_new(s, "block_size", json_integer(4096)); /* fio's default */
	const char *numjobs = json_string_value(json_object_get(opts, "numjobs"));
	json_object_set_new(s, "threads", json_integer(numjobs ? atoi(numjobs) : 1));
	const char *engine = json_string_value(json_object_get(opts, "ioengine"));
	json_object_set_new(s, "engine", json_string(engine ? engine : "psync"));
	const char *depth = json_string_value(json_object_get(opts, "iodepth"));
	json_object_set_new(s, "iodepth", json_integer(depth ? atoi(depth) : 1));
	const char *direct = json_string_value(json_object_get(opts, "direct"));
	json_object_set_new(s, "direct", json_boolean(direct && atoi(direct) != 0));
	double secs = import_seconds(json_string_value(json_object_get(opts, "runtime")));
	if (secs > 0)
		json_object_set_new(s, "runtime_s", json_real(secs));
	secs = import_seconds(json_string_value(json_object_get(opts, "ramp_time")));
	if (secs > 0)
		json_object_set_new(s, "ramp_s", json_real(secs));
	const char *mix = json_string_value(json_object_get(opts, "rwmixread"));
	if (mix)
		json_object_set_new(s, "rwmix_read", json_integer(atoi(mix)));
	json_t *fio_opts = json_object();
	const char *key;
	const json_t *ov;
	json_object_foreach((json_t *)opts, key, ov)
	{
		if (json_is_string(ov))
			json_object_set(fio_opts, key, (json_t *)ov);
	}
	json_object_set_new(s, "fio",
	                    json_pack("{s:s, s:o}", "version", fio_version, "options", fio_opts));
	return s;
}

int job_fio_import(const json_t *doc, struct db_run *run, struct fault *f)
{
	if (!json_is_object(doc))
		return bad(f, "body: must be fio's JSON output (--output-format=json or json+)");
	const char *version = json_string_value(json_object_get(doc, "fio version"));
	if (!version)
		return bad(f, "fio version: required: this is not fio's JSON output "
		              "(--output-format=json or json+)");
	const json_t *jobs = json_object_get(doc, "jobs");
	if (!json_is_array(jobs) || json_array_size(jobs) == 0)
		return bad(f, "jobs: required: fio's output holds no jobs");
	const json_t *job = json_array_get(jobs, 0);
	const char *name = json_string_value(json_object_get(job, "jobname"));
	if (!json_is_object(job) || !name || !*name)
		return bad(f, "jobs[0].jobname: required");
	if (strlen(name) > DB_RUN_NAME_MAX)
		return fault_set(f, ERR_INVALID_ARG, "jobs[0].jobname: at most %d characters",
		                 DB_RUN_NAME_MAX);
	const json_t *ts = json_object_get(doc, "timestamp");
	if (!json_is_integer(ts) || json_integer_value(ts) <= 0 ||
	    json_integer_value(ts) > 253402300799) /* 9999-12-31 */
		return bad(f, "timestamp: required: when fio ended, in epoch seconds");
	/* Every other number kept, in range: no sum, product or rounding of them wraps. */
	double x;
	const json_t *sync = json_object_get(job, "sync");
	const json_t *du = json_array_get(json_object_get(doc, "disk_util"), 0);
	if (import_num(job, "jobs[0]", "job_runtime", IMPORT_MS_MAX, false, &x, f) < 0 ||
	    import_num(job, "jobs[0]", "usr_cpu", IMPORT_RATE_MAX, false, &x, f) < 0 ||
	    import_num(job, "jobs[0]", "sys_cpu", IMPORT_RATE_MAX, false, &x, f) < 0 ||
	    import_num(sync, "jobs[0].sync", "total_ios", IMPORT_COUNT_MAX, true, &x, f) < 0 ||
	    import_num(du, "disk_util[0]", "util", IMPORT_RATE_MAX, false, &x, f) < 0)
		return -1;
	static const char *const du_keys[] = {"read_ios",     "write_ios",  "read_merges",
	                                      "write_merges", "read_ticks", "write_ticks",
	                                      "in_queue"};
	for (size_t i = 0; i < nitems(du_keys); i++)
		if (import_num(du, "disk_util[0]", du_keys[i], IMPORT_COUNT_MAX, false, &x, f) < 0)
			return -1;
	json_t *res = json_object();
	if (import_dir(job, "read", res, f) < 0 || import_dir(job, "write", res, f) < 0) {
		json_decref(res);
		return -1;
	}
	const char *fname =
	    json_string_value(json_object_get(json_object_get(job, "job options"), "filename"));
	if (fname && strlen(fname) >= DB_RUN_TARGET_MAX) {
		json_decref(res);
		return bad(f, "jobs[0].job options.filename: too long");
	}
	/* job_runtime in ms; a read or write section's runtime when absent */
	double runtime_ms = num(job, "job_runtime");
	if (runtime_ms <= 0)
		runtime_ms = fmax(num(json_object_get(job, "read"), "runtime"),
		                  num(json_object_get(job, "write"), "runtime"));
	double elapsed = runtime_ms / 1000;
	json_t *sres = json_pack("{s:I}", "ops", integer(sync, "total_ios"));
	const json_t *slat = json_object_get(sync, "lat_ns");
	if (json_is_object(slat)) {
		json_t *tmp = json_object();
		int rc =
		    import_lat(slat, "jobs[0].sync.lat_ns", integer(sync, "total_ios"), tmp, f);
		if (rc == 0)
			json_object_set(sres, "latency_ns", json_object_get(tmp, "latency_ns"));
		json_decref(tmp);
		if (rc < 0) {
			json_decref(sres);
			json_decref(res);
			return -1;
		}
	}
	char when[32];
	double iops =
	    num(json_object_get(res, "read"), "iops") + num(json_object_get(res, "write"), "iops");
	const char *ramp =
	    json_string_value(json_object_get(json_object_get(job, "job options"), "ramp_time"));
	/* the shape of a result run here: no worker protocol (version 0), no layout, no
	 * samples of the box */
	json_object_set_new(res, "version", json_integer(0));
	json_object_set_new(res, "time",
	                    json_string(util_iso8601(json_integer_value(ts), when, sizeof(when))));
	json_object_set_new(res, "elapsed_s", json_real(elapsed));
	json_object_set_new(res, "ramp_s", json_real(import_seconds(ramp)));
	json_object_set_new(res, "layout_s", json_real(0));
	json_object_set_new(res, "box_cpu",
	                    json_pack("{s:i, s:n, s:n, s:n, s:n, s:n, s:n, s:n, s:n}", "seconds", 0,
	                              "user_pct", "nice_pct", "system_pct", "iowait_pct", "irq_pct",
	                              "softirq_pct", "steal_pct", "idle_pct"));
	json_object_set_new(res, "sync", sres);
	json_object_set_new(res, "cpu",
	                    json_pack("{s:f, s:f}", "user_s",
	                              round6(num(job, "usr_cpu") / 100 * elapsed), "system_s",
	                              round6(num(job, "sys_cpu") / 100 * elapsed)));
	json_object_set_new(res, "imported", json_pack("{s:s}", "fio_version", version));
	/* fio's disk_util: the first disk, with its counters as a run records them */
	json_t *dev;
	if (json_is_object(du) && json_is_string(json_object_get(du, "name")) && elapsed > 0) {
		dev = json_pack("{s:O, s:s, s:I, s:f, s:f, s:f, s:f}", "disk",
		                json_object_get(du, "name"), "why",
		                "imported: fio's disk_util counts, no per-second figures of the "
		                "collector",
		                "seconds", (json_int_t)llround(elapsed), "reads_per_s",
		                round(num(du, "read_ios") / elapsed * 10) / 10, "writes_per_s",
		                round(num(du, "write_ios") / elapsed * 10) / 10, "ops_per_s",
		                round((num(du, "read_ios") + num(du, "write_ios")) / elapsed * 10) /
		                    10,
		                "busy_pct", round(num(du, "util") * 10) / 10);
		json_t *c = json_object();
		for (size_t i = 0; i < nitems(du_keys); i++)
			json_object_set_new(c, du_keys[i], json_integer(integer(du, du_keys[i])));
		json_object_set_new(c, "ms", json_integer((json_int_t)llround(runtime_ms)));
		json_object_set_new(
		    c, "io_ticks",
		    json_integer((json_int_t)llround(num(du, "util") / 100 * runtime_ms)));
		json_object_set_new(dev, "counters", c);
	} else {
		dev = json_pack("{s:n, s:s}", "disk", "why", "fio's output has no disk_util");
	}
	json_object_set_new(res, "device", dev);
	const json_t *dops = json_object_get(dev, "ops_per_s");
	json_object_set_new(res, "summary",
	                    json_pack("{s:f, s:O, s:O, s:n, s:n}", "iops", round(iops * 10) / 10,
	                              "disk", json_object_get(dev, "disk"), "disk_iops",
	                              dops ? dops : json_null(), "cpu_user_pct", "cpu_system_pct"));
	json_t *spec = import_spec(job, version, res);
	memset(run, 0, sizeof(*run));
	snprintf(run->name, sizeof(run->name), "%s", name);
	snprintf(run->state, sizeof(run->state), "done");
	snprintf(run->target, sizeof(run->target), "%s", fname ? fname : "");
	run->end_time = json_integer_value(ts);
	run->start_time = run->end_time - (int64_t)llround(elapsed);
	run->ctime = run->start_time;
	run->imported = true;
	run->spec = json_dumps(spec, JSON_COMPACT);
	run->result = json_dumps(res, JSON_COMPACT);
	json_decref(spec);
	json_decref(res);
	return 0;
}
