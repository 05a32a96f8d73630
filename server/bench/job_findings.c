/* SPDX-License-Identifier: ISC */
/* Findings: a few numbers of a finished run set against each other, each with the rule that
 * made it and a sentence, so a run explains itself without another tool. Every finding reads
 * only what the result, the environment and the intervals hold; one whose inputs are absent
 * is left out rather than guessed. The thresholds are in the rules' texts too. */
#include "job_findings.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

#define AMP_FLAG      1.5  /* disk bytes per application byte */
#define CACHE_FLAG    50.0 /* percent of reads that did not reach the disk */
#define SYS_US_FLAG   50.0 /* µs of system CPU per I/O */
#define BUSY_LIMIT    95.0 /* percent busy: the device is the limit */
#define IDLE_LIMIT    5.0  /* percent idle below which the CPUs are the limit */
#define TAIL_FLAG     10.0 /* p99.9 / p50 */
#define STACK_FLAG    50.0 /* percent of the median spent above the block layer */
#define CV_FLAG       0.10 /* coefficient of variation of per-second IOPS */
#define WARMUP_SE     2.0  /* standard errors */
#define WARMUP_REL    0.10 /* and a tenth of the rest's mean */
#define WARMUP_MIN_S  5    /* measured seconds before a warm-up can be told */
#define STABILITY_MIN 3    /* measured seconds for the stability finding */
#define SECOND_MIN    0.75 /* an interval this long to 1.5 s counts as one second */
#define SECOND_MAX    1.5
#define MAX_INTERVALS (1u << 20)

static double r2(double v)
{
	return round(v * 100) / 100;
}

/* Values are rounded as their sentences print them (%.1f), so the two never disagree. */
static double r1(double v)
{
	return round(v * 10) / 10;
}

/* A number at o.k1[.k2] (keys may hold dots: "p99.9"); false when absent or not a number. */
static bool num(const json_t *o, const char *k1, const char *k2, double *out)
{
	const json_t *v = json_object_get(o, k1);
	if (k2)
		v = json_object_get(v, k2);
	if (!json_is_number(v))
		return false;
	*out = json_number_value(v);
	return isfinite(*out);
}

static json_t *finding(const char *id, const char *title, json_t *value, const char *unit,
                       bool flag, const char *rule, json_t *inputs, const char *fmt, ...)
    __attribute__((format(printf, 8, 9)));
static json_t *finding(const char *id, const char *title, json_t *value, const char *unit,
                       bool flag, const char *rule, json_t *inputs, const char *fmt, ...)
{
	char text[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:s, s:o, s:o, s:b, s:s, s:o, s:s}", "id", id, "title", title,
	                 "value", value, "unit", unit ? json_string(unit) : json_null(), "flag",
	                 flag, "rule", rule, "inputs", inputs, "text", text);
}

/* ---- per-second IOPS of the measured phase */

/* The IOPS of each measured interval about a second long, in order; *n of them. Passes
 * (iozone) are different workloads one after another: their seconds are not one series. */
static double *per_second(const json_t *intervals, size_t *n)
{
	*n = 0;
	if (!json_is_array(intervals))
		return NULL;
	size_t cap = json_array_size(intervals);
	if (cap == 0 || cap > MAX_INTERVALS)
		return NULL;
	double *v = xmalloc(cap * sizeof(*v));
	size_t i;
	const json_t *iv;
	json_array_foreach(intervals, i, iv)
	{
		const char *phase = json_string_value(json_object_get(iv, "phase"));
		double el, r, w;
		if (json_object_get(iv, "pass")) {
			*n = 0;
			break;
		}
		if (!phase || strcmp(phase, "measure") != 0 || !num(iv, "elapsed_s", NULL, &el) ||
		    el < SECOND_MIN || el > SECOND_MAX || !num(iv, "read", "iops", &r) ||
		    !num(iv, "write", "iops", &w))
			continue;
		v[(*n)++] = r + w;
	}
	if (*n == 0) {
		free(v);
		return NULL;
	}
	return v;
}

static void mean_sd(const double *v, size_t n, double *mean, double *sd)
{
	double s = 0, ss = 0;
	for (size_t i = 0; i < n; i++)
		s += v[i];
	*mean = n ? s / (double)n : 0;
	for (size_t i = 0; i < n; i++)
		ss += (v[i] - *mean) * (v[i] - *mean);
	*sd = n > 1 ? sqrt(ss / (double)(n - 1)) : 0;
}

json_t *findings_stability(const json_t *intervals)
{
	size_t n;
	double *v = per_second(intervals, &n), mean, sd;
	if (n < 2) {
		free(v);
		return NULL;
	}
	mean_sd(v, n, &mean, &sd);
	free(v);
	return json_pack("{s:I, s:f, s:f, s:f}", "seconds", (json_int_t)n, "iops_mean",
	                 round(mean * 10) / 10, "iops_stddev", round(sd * 10) / 10, "iops_cv",
	                 mean > 0 ? round(sd / mean * 1e4) / 1e4 : 0.0);
}

/* ---- the findings */

static bool random_reads(const json_t *spec)
{
	const char *p = json_string_value(json_object_get(spec, "pattern"));
	return p &&
	       (strcmp(p, "randread") == 0 || strcmp(p, "randrw") == 0 || strcmp(p, "slob") == 0);
}

/* The device's figures are there when the collector saw the disk for a second or more. */
static const json_t *device_of(const json_t *result)
{
	const json_t *dev = json_object_get(result, "device");
	double secs;
	return num(dev, "seconds", NULL, &secs) && secs > 0 ? dev : NULL;
}

static const json_t *box_cpu_of(const json_t *result)
{
	const json_t *cpu = json_object_get(result, "box_cpu");
	double secs;
	return num(cpu, "seconds", NULL, &secs) && secs > 0 ? cpu : NULL;
}

static const json_t *arc_of(const json_t *result)
{
	const json_t *arc = json_object_get(result, "arc");
	double secs;
	return num(arc, "seconds", NULL, &secs) && secs > 0 ? arc : NULL;
}

static json_t *read_amplification(const json_t *spec, const json_t *env, const json_t *res)
{
	double app, disk = 0, secs = 0, rs = 0, bs = 0, worst = 0;
	if (!num(res, "read", "bytes_per_s", &app) || app <= 0)
		return NULL;
	const json_t *dev = device_of(res);
	bool have_dev =
	    dev && num(dev, "read_bytes_per_s", NULL, &disk) && num(dev, "seconds", NULL, &secs);
	if (num(json_object_get(env, "zfs"), "recordsize", NULL, &rs) &&
	    num(spec, "block_size", NULL, &bs) && rs > 0 && bs > 0 && bs < rs && random_reads(spec))
		worst = rs / bs;
	json_t *in = json_object();
	if (worst > 0) {
		json_object_set_new(in, "recordsize", json_integer((json_int_t)rs));
		json_object_set_new(in, "block_size", json_integer((json_int_t)bs));
		json_object_set_new(in, "worst_case", json_real(r2(worst)));
	}
	char zfs[200] = "";
	if (worst > 0)
		snprintf(
		    zfs, sizeof(zfs),
		    "each %.0f-byte random read may fetch a whole %.0f-byte ZFS record, up to %gx",
		    bs, rs, r2(worst));
	if (!have_dev) {
		if (worst <= 0) {
			json_decref(in);
			return NULL;
		}
		return finding(
		    "read_amplification", "Read amplification", json_real(r2(worst)), "x", true,
		    "ZFS recordsize / block size under random reads smaller than a record: "
		    "the worst case, each read fetching a whole record (the disk's own "
		    "reads were not measured)",
		    in,
		    "Up to %gx the bytes the job asked for: each %.0f-byte random read may fetch a "
		    "whole %.0f-byte ZFS record (the disk's reads were not measured).",
		    r2(worst), bs, rs);
	}
	double amp = disk / app;
	json_object_set_new(in, "disk_read_bytes_per_s", json_real(disk));
	json_object_set_new(in, "app_read_bytes_per_s", json_real(app));
	json_object_set_new(in, "seconds", json_real(secs));
	json_object_set_new(in, "disk_read_bytes", json_integer((json_int_t)llround(disk * secs)));
	json_object_set_new(in, "app_read_bytes", json_integer((json_int_t)llround(app * secs)));
	const char *rule =
	    worst > 0 ? "disk bytes read per second / application bytes read per second over the "
	                "measured seconds; flagged above 1.5. On ZFS, recordsize / block size is "
	                "the worst case for random reads smaller than a record"
	              : "disk bytes read per second / application bytes read per second over the "
	                "measured seconds; flagged above 1.5";
	char why[260] = ".";
	if (worst > 0)
		snprintf(why, sizeof(why), ": %s.", zfs);
	else if (amp < 1)
		snprintf(why, sizeof(why), ": the rest came from a cache.");
	else if (amp > AMP_FLAG)
		snprintf(why, sizeof(why),
		         ": larger reads than asked for (readahead, records, or other I/O on the "
		         "disk).");
	/* on a pool, its disks' figures summed */
	bool pool = json_is_array(json_object_get(dev, "pool_disks"));
	return finding("read_amplification", "Read amplification", json_real(r2(amp)), "x",
	               amp > AMP_FLAG, rule, in, "The %s read %.2fx the bytes the job asked for%s",
	               pool ? "pool's disks" : "disk", amp, why);
}

/* The ARC's figures are the whole box's: alone they speak for a target on ZFS only. A run
 * without Direct I/O (spec "direct" false) whose reads mostly missed the disk measured the
 * page cache, and says so by name with what to change. */
static json_t *cache_served(const json_t *spec, const json_t *env, const json_t *res)
{
	double app, disk = 0, hits = 0, misses = 0, hit_pct = 0;
	if (!num(res, "read", "iops", &app) || app <= 0)
		return NULL;
	const json_t *dev = device_of(res), *arc = arc_of(res);
	bool have_dev = dev && num(dev, "reads_per_s", NULL, &disk);
	bool have_arc = arc && num(arc, "hits_per_s", NULL, &hits) &&
	                num(arc, "misses_per_s", NULL, &misses) &&
	                num(arc, "hit_pct", NULL, &hit_pct);
	if (!have_dev && !(have_arc && json_is_object(json_object_get(env, "zfs"))))
		return NULL;
	json_t *in = json_pack("{s:f}", "app_reads_per_s", app);
	char arc_text[200] = "";
	if (have_arc) {
		json_object_set_new(in, "arc_hits_per_s", json_real(hits));
		json_object_set_new(in, "arc_misses_per_s", json_real(misses));
		json_object_set_new(in, "arc_hit_pct", json_real(hit_pct));
		snprintf(
		    arc_text, sizeof(arc_text),
		    " The ARC answered %.1f %% of its lookups (%.0f hits/s, %.0f misses/s, the "
		    "whole box's).",
		    hit_pct, hits, misses);
	}
	if (!have_dev)
		return finding(
		    "cache_served", "Served from cache", json_real(r1(hit_pct)), "%",
		    hit_pct >= CACHE_FLAG,
		    "on ZFS, ARC hits / (hits + misses) during the measured seconds, the "
		    "whole box's (the disk's reads were not measured); flagged at 50 % or more",
		    in, "The disk's reads were not measured.%s", arc_text);
	json_object_set_new(in, "disk_reads_per_s", json_real(disk));
	double share = 1 - disk / app;
	if (share < 0)
		share = 0;
	double pct = share * 100;
	const json_t *direct = json_object_get(spec, "direct");
	bool buffered = json_is_false(direct);
	if (json_is_boolean(direct))
		json_object_set_new(in, "direct", json_boolean(!buffered));
	if (buffered && pct >= CACHE_FLAG)
		return finding(
		    "cache_served", "The page cache answered", json_real(r1(pct)), "%", true,
		    "1 - disk reads per second / application reads per second over the measured "
		    "seconds, for a run without Direct I/O; flagged at 50 % or more: then the run "
		    "measured the page cache (memory) more than the disk",
		    in,
		    "The page cache answered %.1f %% of the job's reads: the disk saw %.0f reads/s "
		    "of the %.0f reads/s asked, so this run measured memory, not the disk. Run it "
		    "with Direct I/O (\"direct\": true) to measure the disk.%s",
		    pct, disk, app, arc_text);
	return finding(
	    "cache_served", "Served from cache", json_real(r1(pct)), "%", pct >= CACHE_FLAG,
	    have_arc ? "1 - disk reads per second / application reads per second over the "
	               "measured seconds (0 when the disk read more often); flagged at 50 "
	               "% or more: then the run measured a cache more than the disk. ARC "
	               "hits and misses are the whole box's"
	             : "1 - disk reads per second / application reads per second over the "
	               "measured seconds (0 when the disk read more often); flagged at 50 "
	               "% or more: then the run measured a cache more than the disk",
	    in,
	    share > 0
	        ? "%.1f %% of the job's reads did not reach the disk (%.0f disk reads/s for "
	          "%.0f reads/s asked).%s"
	        : "No read was served from a cache (%.1f %%): the disk read as often as the job "
	          "asked or more (%.0f disk reads/s for %.0f reads/s asked).%s",
	    pct, disk, app, arc_text);
}

static json_t *sys_cpu_per_io(const json_t *res)
{
	double r = 0, w = 0, rops = 0, wops = 0, sys_pct, cpus, sys_s;
	num(res, "read", "iops", &r);
	num(res, "write", "iops", &w);
	num(res, "read", "ops", &rops);
	num(res, "write", "ops", &wops);
	double iops = r + w, ops = rops + wops;
	if (iops <= 0)
		return NULL;
	const json_t *box = box_cpu_of(res);
	bool have_box = box && num(box, "system_pct", NULL, &sys_pct) &&
	                num(box, "cpus", NULL, &cpus) && cpus > 0;
	bool have_worker = num(res, "cpu", "system_s", &sys_s) && ops > 0;
	if (!have_box && !have_worker)
		return NULL;
	json_t *in = json_pack("{s:f}", "iops", iops);
	double box_us = 0, worker_us = 0;
	if (have_box) {
		box_us = sys_pct / 100 * cpus / iops * 1e6;
		json_object_set_new(in, "box_system_pct", json_real(sys_pct));
		json_object_set_new(in, "cpus", json_integer((json_int_t)cpus));
		json_object_set_new(in, "box_us_per_io", json_real(r2(box_us)));
	}
	if (have_worker) {
		worker_us = sys_s / ops * 1e6;
		json_object_set_new(in, "worker_system_s", json_real(sys_s));
		json_object_set_new(in, "ops", json_integer((json_int_t)ops));
		json_object_set_new(in, "worker_us_per_io", json_real(r2(worker_us)));
	}
	double us = have_box ? box_us : worker_us;
	char beside[120] = "";
	if (have_box && have_worker)
		snprintf(beside, sizeof(beside), " (the worker's own system time: %.1f µs per I/O)",
		         worker_us);
	return finding(
	    "sys_cpu_per_io", "System CPU per I/O", json_real(r1(us)), "µs", us > SYS_US_FLAG,
	    have_box
	        ? "the box's system CPU share x its CPUs / the job's I/Os per second, in µs: "
	          "all the kernel's time, the worker's and its threads' (ZFS, kworkers) alike; "
	          "the worker's own system seconds / its I/Os beside it; flagged above 50 µs"
	        : "the worker's system CPU seconds / its I/Os, in µs (the box's CPU was not "
	          "measured); flagged above 50 µs",
	    in, "Each I/O cost %.1f µs of system CPU%s%s.", us,
	    have_box ? " on the box" : " in the worker", beside);
}

static json_t *limit(const json_t *res)
{
	double busy = 0, queue = 0, idle = 0, cpus = 0;
	const json_t *dev = device_of(res), *box = box_cpu_of(res);
	bool have_busy = dev && num(dev, "busy_pct", NULL, &busy);
	bool have_idle = box && num(box, "idle_pct", NULL, &idle);
	if (have_busy)
		num(dev, "queue", NULL, &queue);
	if (have_idle)
		num(box, "cpus", NULL, &cpus);
	bool dev_sat = have_busy && busy >= BUSY_LIMIT, cpu_sat = have_idle && idle < IDLE_LIMIT;
	if (!dev_sat && !cpu_sat && !(have_busy && have_idle))
		return NULL; /* an unmeasured side could be the limit */
	json_t *in = json_object();
	if (have_busy) {
		json_object_set_new(in, "busy_pct", json_real(busy));
		json_object_set_new(in, "queue", json_real(queue));
	}
	if (have_idle) {
		json_object_set_new(in, "idle_pct", json_real(idle));
		if (cpus > 0)
			json_object_set_new(in, "cpus", json_integer((json_int_t)cpus));
	}
	const char *rule = "the device when the disk was busy 95 % of the time or more (its queue "
	                   "depth beside it); else the CPUs when the box was idle under 5 %; "
	                   "neither when both were measured below those";
	if (dev_sat)
		return finding(
		    "limit", "Limit", json_string("device"), NULL, true, rule, in,
		    "The disk was busy %.1f %% of the measured time with %.1f requests in "
		    "its queue on average: the device was the limit%s.",
		    busy, queue, cpu_sat ? ", and the CPUs were saturated too" : "");
	if (cpu_sat)
		return finding("limit", "Limit", json_string("cpu"), NULL, true, rule, in,
		               "The CPUs were idle %.1f %% of the measured time: the CPU was the "
		               "limit.",
		               idle);
	return finding("limit", "Limit", json_string("neither"), NULL, false, rule, in,
	               "Neither the disk (busy %.1f %%) nor the CPUs (idle %.1f %%) were "
	               "saturated: the job's threads, queue depth or latency per I/O set the pace.",
	               busy, idle);
}

static json_t *tail(const json_t *res)
{
	static const char *const dirs[2] = {"read", "write"};
	double best_ops = 0, p50 = 0, p999 = 0;
	const char *dir = NULL;
	for (int d = 0; d < 2; d++) {
		const json_t *lat = json_object_get(json_object_get(res, dirs[d]), "latency_ns");
		double ops, a, b;
		if (num(res, dirs[d], "ops", &ops) && ops > best_ops && num(lat, "p50", NULL, &a) &&
		    num(lat, "p99.9", NULL, &b) && a > 0) {
			best_ops = ops;
			dir = dirs[d];
			p50 = a;
			p999 = b;
		}
	}
	if (!dir)
		return NULL;
	double ratio = p999 / p50;
	char rule[160];
	snprintf(rule, sizeof(rule),
	         "p99.9 / p50 of the %s latency (the direction with the most operations); flagged "
	         "above 10",
	         dir);
	return finding("tail", "Tail", json_real(r1(ratio)), "x", ratio > TAIL_FLAG, rule,
	               json_pack("{s:s, s:I, s:I}", "direction", dir, "p50_ns", (json_int_t)p50,
	                         "p99.9_ns", (json_int_t)p999),
	               "One %s in a thousand took %.1fx the median or longer (p99.9 %.0f µs, p50 "
	               "%.0f µs).",
	               dir, ratio, p999 / 1e3, p50 / 1e3);
}

/* The stack above the disks: the worker's median against the disks' own (the eBPF helper's
 * buckets, device.latency) over the same seconds, in the direction with the most operations. */
static json_t *stack(const json_t *res)
{
	static const char *const dirs[2] = {"read", "write"};
	const json_t *dev = json_object_get(device_of(res), "latency");
	double best_ops = 0, app = 0, low = 0, high = 0;
	const char *dir = NULL;
	for (int d = 0; d < 2; d++) {
		const json_t *lat = json_object_get(json_object_get(res, dirs[d]), "latency_ns");
		const json_t *p50 = json_object_get(json_object_get(dev, dirs[d]), "p50_ns");
		double ops, a, lo, hi;
		if (num(res, dirs[d], "ops", &ops) && ops > best_ops && num(lat, "p50", NULL, &a) &&
		    a > 0 && num(p50, "low", NULL, &lo) && num(p50, "high", NULL, &hi)) {
			best_ops = ops;
			dir = dirs[d];
			app = a;
			low = lo;
			high = hi;
		}
	}
	if (!dir)
		return NULL;
	double above = app > high ? app - high : 0, share = above / app * 100;
	char rule[200];
	snprintf(rule, sizeof(rule),
	         "the %s median's share spent above the block layer: the worker's p50 less the "
	         "top of the disks' p50 bucket, over the worker's p50; flagged above 50 %%",
	         dir);
	json_t *inputs =
	    json_pack("{s:s, s:I, s:I, s:I}", "direction", dir, "worker_p50_ns", (json_int_t)app,
	              "disk_p50_low_ns", (json_int_t)low, "disk_p50_high_ns", (json_int_t)high);
	if (app < low)
		return finding("stack", "Above the disks", json_real(0), "%", false, rule, inputs,
		               "The %s median took %.1f µs in the worker, less than at the disks "
		               "(%.1f-%.1f µs): most of these I/Os did not wait for the disks.",
		               dir, app / 1e3, low / 1e3, high / 1e3);
	return finding("stack", "Above the disks", json_real(r1(share)), "%", share > STACK_FLAG,
	               rule, inputs,
	               "The %s median took %.1f µs in the worker and %.1f-%.1f µs at the disks: at "
	               "least %.1f µs (%.1f %%) of it was spent above the block layer (file "
	               "system, caches, system calls, the worker's threads).",
	               dir, app / 1e3, low / 1e3, high / 1e3, above / 1e3, r1(share));
}

static json_t *stability(const double *v, size_t n)
{
	double mean, sd;
	if (n < STABILITY_MIN)
		return NULL;
	mean_sd(v, n, &mean, &sd);
	if (mean <= 0)
		return NULL;
	double cv = sd / mean;
	return finding(
	    "stability", "Stability", json_real(r1(cv * 100)), "%", cv > CV_FLAG,
	    "coefficient of variation (standard deviation / mean) of the IOPS of each "
	    "measured second; flagged above 10 %",
	    json_pack("{s:I, s:f, s:f}", "seconds", (json_int_t)n, "iops_mean",
	              round(mean * 10) / 10, "iops_stddev", round(sd * 10) / 10),
	    "Per-second IOPS varied by %.1f %% (standard deviation %.0f around a mean of "
	    "%.0f over %zu s)%s",
	    cv * 100, sd, mean, n,
	    cv > CV_FLAG ? ": too unsteady to trust small differences." : ".");
}

static json_t *warmup(const double *v, size_t n)
{
	if (n < WARMUP_MIN_S)
		return NULL;
	size_t k = (n + 9) / 10;
	double first, sd_first, rest, sd_rest;
	mean_sd(v, k, &first, &sd_first);
	mean_sd(v + k, n - k, &rest, &sd_rest);
	if (rest <= 0)
		return NULL;
	double se = sd_rest * sqrt(1.0 / (double)k + 1.0 / (double)(n - k));
	double diff = first - rest, rel = diff / rest;
	bool flag = fabs(diff) > WARMUP_SE * se && fabs(rel) > WARMUP_REL;
	json_t *in =
	    json_pack("{s:I, s:I, s:f, s:f, s:f, s:f}", "seconds", (json_int_t)n, "first_seconds",
	              (json_int_t)k, "first_iops_mean", round(first * 10) / 10, "rest_iops_mean",
	              round(rest * 10) / 10, "rest_iops_stddev", round(sd_rest * 10) / 10, "stderr",
	              round(se * 100) / 100);
	const char *rule = "the mean IOPS of the first 10 % of the measured seconds (at least one) "
	                   "against the rest's: flagged when they differ by more than 2 standard "
	                   "errors (from the rest's spread) and by more than 10 %";
	if (flag)
		return finding("warmup", "Warm-up", json_real(r1(rel * 100)), "%", true, rule, in,
		               "The first %zu s ran at %.0f IOPS against %.0f after (%+.1f %%): a "
		               "warm-up effect; a longer ramp_s would leave it out.",
		               k, first, rest, rel * 100);
	return finding("warmup", "Warm-up", json_real(r1(rel * 100)), "%", false, rule, in,
	               "The first %zu s (%.0f IOPS) did not differ clearly from the rest (%.0f "
	               "IOPS): no warm-up effect.",
	               k, first, rest);
}

/* ---- the disks' health when the job was submitted (the environment's "disks") */

static json_t *disk_health(const json_t *env)
{
	const json_t *disks = json_object_get(env, "disks");
	if (!json_array_size(disks))
		return NULL;
	char list[400] = "";
	size_t i, trouble = 0;
	const json_t *d;
	json_array_foreach(disks, i, d)
	{
		const char *h = json_string_value(json_object_get(d, "health"));
		if (!h || (strcmp(h, "warning") != 0 && strcmp(h, "failing") != 0))
			continue;
		size_t n = strlen(list);
		snprintf(list + n, sizeof(list) - n, "%s%s (%s: %s)", trouble ? "; " : "",
		         json_string_value(json_object_get(d, "name")), h,
		         json_string_value(json_object_get(d, "details")));
		trouble++;
	}
	static const char rule[] = "a disk under the target whose SMART or NVMe health was "
	                           "warning or failing when the job was submitted; flagged at one";
	json_t *inputs = json_object(); /* each disk's health, by name */
	json_array_foreach(disks, i, d)
	{
		const char *name = json_string_value(json_object_get(d, "name"));
		const char *h = json_string_value(json_object_get(d, "health"));
		if (name && h)
			json_object_set_new(inputs, name, json_string(h));
	}
	if (!trouble)
		return finding("disk_health", "The disks' health", json_integer(0), NULL, false,
		               rule, inputs, "The %zu disk%s under the target reported no trouble.",
		               json_array_size(disks), json_array_size(disks) == 1 ? "" : "s");
	return finding("disk_health", "The disks' health", json_integer((json_int_t)trouble), NULL,
	               true, rule, inputs,
	               "%s. A run on a disk that is not well measures its trouble, not the "
	               "setup: replace or rule out the disk before trusting this result.",
	               list);
}

json_t *findings_compute(const json_t *spec, const json_t *environment, const json_t *result,
                         const json_t *intervals)
{
	json_t *out = json_array();
	size_t n;
	double *v = per_second(intervals, &n);
	json_t *each[] = {
	    read_amplification(spec, environment, result),
	    cache_served(spec, environment, result),
	    sys_cpu_per_io(result),
	    limit(result),
	    tail(result),
	    stack(result),
	    stability(v, n),
	    warmup(v, n),
	    disk_health(environment),
	};
	free(v);
	for (size_t i = 0; i < nitems(each); i++)
		if (each[i])
			json_array_append_new(out, each[i]);
	return out;
}

/* ---- comparisons */

/* Flattened leaves "a.b.c" -> value into flat (borrowed values). Arrays of objects with a
 * "name" (the devices) are keyed by it; other arrays are leaves. */
static void flatten(const json_t *o, const char *prefix, json_t *flat)
{
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)o, key, v)
	{
		char path[512];
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", key);
		if (json_is_object(v)) {
			flatten(v, path, flat);
		} else if (json_is_array(v) && json_array_size(v) &&
		           json_is_string(json_object_get(json_array_get(v, 0), "name"))) {
			size_t i;
			const json_t *e;
			json_array_foreach(v, i, e)
			{
				const char *name = json_string_value(json_object_get(e, "name"));
				char sub[600];
				snprintf(sub, sizeof(sub), "%s.%s", path, name ? name : "?");
				json_t *rest = json_deep_copy(e);
				json_object_del(rest, "name");
				flatten(rest, sub, flat);
				json_decref(rest);
			}
		} else {
			json_object_set(flat, path, (json_t *)v);
		}
	}
}

/* Whether the leaf at path holds a size in bytes: the spec's size, block_size and io_size,
 * the dataset's recordsize and volblocksize, the filesystem's block_size, any "*_bytes". */
static bool is_size(const char *path)
{
	const char *leaf = strrchr(path, '.');
	leaf = leaf ? leaf + 1 : path;
	static const char *const names[] = {"size", "block_size", "io_size", "recordsize",
	                                    "volblocksize"};
	for (size_t i = 0; i < nitems(names); i++)
		if (strcmp(leaf, names[i]) == 0)
			return true;
	size_t n = strlen(leaf);
	return n > 6 && strcmp(leaf + n - 6, "_bytes") == 0;
}

/* A size as the spec takes it, 8192 "8k", 131072 "128k", 2097152 "2M"; one that is no whole
 * number of KiB stays in bytes. */
static char *size_text(long long v)
{
	static const char units[] = "kMGTP";
	if (v < 1024 || v % 1024)
		return xasprintf("%lld", v);
	size_t u = 0;
	v /= 1024;
	while (u + 1 < sizeof(units) - 1 && v >= 1024 && v % 1024 == 0) {
		v /= 1024;
		u++;
	}
	return xasprintf("%lld%c", v, units[u]);
}

static char *value_text(const char *path, const json_t *v)
{
	if (!v || json_is_null(v))
		return xstrdup("(none)");
	if (json_is_string(v))
		return xstrdup(json_string_value(v));
	if (json_is_integer(v) && is_size(path))
		return size_text((long long)json_integer_value(v));
	if (json_is_integer(v))
		return xasprintf("%lld", (long long)json_integer_value(v));
	if (json_is_real(v))
		return xasprintf("%g", json_real_value(v));
	if (json_is_boolean(v))
		return xstrdup(json_is_true(v) ? "true" : "false");
	return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

/* Identity fields differ between any two runs: listed, but kept out of the line. */
static bool identity(const char *in, const char *name)
{
	if (strcmp(in, "spec") == 0)
		return strcmp(name, "name") == 0 || strcmp(name, "label") == 0 ||
		       strcmp(name, "target") == 0;
	return strcmp(name, "target.path") == 0;
}

static void append(char **s, const char *text)
{
	char *t = xasprintf("%s%s", *s, text);
	free(*s);
	*s = t;
}

static void differ(const char *in, json_t *const *flat, size_t n, size_t base, json_t *fields,
                   char **line)
{
	json_t *keys = json_object();
	for (size_t k = 0; k < n; k++) {
		const char *key;
		const json_t *v;
		json_object_foreach(flat[k], key, v)
		{
			json_object_set_new(keys, key, json_true());
		}
	}
	const char *key;
	const json_t *unused;
	json_object_foreach(keys, key, unused)
	{
		(void)unused;
		if (strcmp(in, "environment") == 0 && strcmp(key, "resolved_at") == 0)
			continue;
		const json_t *b = json_object_get(flat[base], key);
		bool differs = false;
		for (size_t k = 0; k < n && !differs; k++) {
			const json_t *v = json_object_get(flat[k], key);
			differs = !(v == b || (v && b && json_equal((json_t *)v, (json_t *)b)));
		}
		if (!differs)
			continue;
		/* "zfs.recordsize" reads "recordsize", "devices.sda.scheduler" "sda.scheduler" */
		const char *shown = key;
		static const char *const drop[] = {"zfs.", "system.", "devices."};
		for (size_t i = 0; strcmp(in, "environment") == 0 && i < nitems(drop); i++)
			if (strncmp(key, drop[i], strlen(drop[i])) == 0)
				shown = key + strlen(drop[i]);
		char *text = xasprintf("%s ", shown), *bt = value_text(key, b);
		append(&text, bt);
		free(bt);
		append(&text, " →");
		json_t *vals = json_array();
		bool first = true;
		for (size_t k = 0; k < n; k++) {
			const json_t *v = json_object_get(flat[k], key);
			json_array_append_new(vals, v ? json_incref((json_t *)v) : json_null());
			if (k == base)
				continue;
			char *vt = value_text(key, v);
			append(&text, first ? " " : " / ");
			append(&text, vt);
			free(vt);
			first = false;
		}
		json_array_append_new(fields, json_pack("{s:s, s:s, s:o, s:s}", "name", key, "in",
		                                        in, "values", vals, "text", text));
		if (!identity(in, key)) {
			if (**line)
				append(line, ", ");
			append(line, text);
		}
		free(text);
	}
	json_decref(keys);
}

json_t *findings_differences(const json_t *const *specs, const json_t *const *envs, size_t n,
                             size_t base)
{
	json_t *fields = json_array();
	char *line = xstrdup("");
	json_t **flat = xmalloc((n ? n : 1) * sizeof(*flat));
	for (int part = 0; part < 2; part++) {
		const json_t *const *src = part == 0 ? specs : envs;
		for (size_t k = 0; k < n; k++) {
			flat[k] = json_object();
			if (json_is_object(src[k]))
				flatten(src[k], "", flat[k]);
		}
		if (base < n)
			differ(part == 0 ? "spec" : "environment", flat, n, base, fields, &line);
		for (size_t k = 0; k < n; k++)
			json_decref(flat[k]);
	}
	free(flat);
	json_t *o = json_pack("{s:s, s:o}", "text", line, "fields", fields);
	free(line);
	return o;
}

/* Two-sided 95 % points of Student's t by degrees of freedom (1 to 30), then coarser. */
static double t_critical(double df)
{
	static const double t95[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306,
	                               2.262,  2.228, 2.201, 2.179, 2.160, 2.145, 2.131, 2.120,
	                               2.110,  2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064,
	                               2.060,  2.056, 2.052, 2.048, 2.045, 2.042};
	int d = (int)floor(df); /* fewer degrees: the wider point, the cautious side */
	if (d < 1)
		d = 1;
	if (d <= 30)
		return t95[d - 1];
	return d < 40 ? 2.042 : d < 60 ? 2.021 : d < 120 ? 2.000 : 1.980;
}

json_t *findings_significance(const json_t *base_stab, const json_t *stab)
{
	double nb, mb, sb, nk, mk, sk;
	if (!num(base_stab, "seconds", NULL, &nb) || !num(base_stab, "iops_mean", NULL, &mb) ||
	    !num(base_stab, "iops_stddev", NULL, &sb) || !num(stab, "seconds", NULL, &nk) ||
	    !num(stab, "iops_mean", NULL, &mk) || !num(stab, "iops_stddev", NULL, &sk) || nb < 2 ||
	    nk < 2)
		return NULL;
	double a = sk * sk / nk, b = sb * sb / nb, se = sqrt(a + b), diff = mk - mb;
	double pct = mb > 0 ? diff / mb * 100 : 0;
	json_t *o = json_pack("{s:f, s:f, s:f, s:f, s:f}", "baseline_iops_mean", mb, "iops_mean",
	                      mk, "diff", round(diff * 10) / 10, "diff_pct", round(pct * 10) / 10,
	                      "stderr", round(se * 100) / 100);
	char text[400], summary[200];
	bool beyond;
	if (se <= 0) {
		beyond = diff != 0;
		json_object_set_new(o, "t", json_null());
		json_object_set_new(o, "df", json_null());
		json_object_set_new(o, "critical_t", json_null());
		json_object_set_new(o, "beyond_noise", json_boolean(beyond));
		snprintf(
		    text, sizeof(text),
		    "%.0f IOPS per second on average against %.0f (%+.1f %%); neither run varied "
		    "from second to second, so %s.",
		    mk, mb, pct,
		    beyond ? "the difference is beyond the noise" : "there is no difference");
	} else {
		double t = diff / se;
		double den = (nk > 1 ? a * a / (nk - 1) : 0) + (nb > 1 ? b * b / (nb - 1) : 0);
		double df = den > 0 ? (a + b) * (a + b) / den : nb + nk - 2;
		double crit = t_critical(df);
		beyond = fabs(t) > crit;
		json_object_set_new(o, "t", json_real(round(t * 100) / 100));
		json_object_set_new(o, "df", json_real(round(df * 10) / 10));
		json_object_set_new(o, "critical_t", json_real(crit));
		json_object_set_new(o, "beyond_noise", json_boolean(beyond));
		snprintf(
		    text, sizeof(text),
		    "%.0f IOPS per second on average against %.0f (%+.1f %%): the difference is "
		    "%.1f standard errors (Welch's t %.2f, %.0f degrees of freedom, 95 %% point "
		    "%.2f), %s.",
		    mk, mb, pct, fabs(t), t, df, crit,
		    beyond ? "beyond the noise of these runs"
		           : "within the noise of these runs: it may be chance");
	}
	/* the same verdict in words, the statistics left to text */
	if (!beyond)
		snprintf(summary, sizeof(summary),
		         diff == 0
		             ? "The same IOPS as the baseline."
		             : "%+.1f %% IOPS against the baseline, within the noise of these "
		               "runs: no difference they can show.",
		         pct);
	else
		snprintf(
		    summary, sizeof(summary),
		    "%.1f %% %s IOPS than the baseline, clearly beyond the noise of these runs: "
		    "a real difference.",
		    fabs(pct), diff > 0 ? "more" : "fewer");
	json_object_set_new(o, "summary", json_string(summary));
	json_object_set_new(o, "text", json_string(text));
	return o;
}
