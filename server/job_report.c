/* What a job's result reads like to others: as stored, in fio's JSON output shape (for the
 * tools that read fio's), and beside other jobs' results (a comparison, each figure's
 * difference from a baseline job). It reads the runs through jobs.h and keeps nothing. */
#include "job_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "jobs.h"
#include "util.h"
#include "worker/hist.h"

/* ---- fio's shape */

static bool is_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) && json_number_value(v) >= 0;
}

static json_t *fio_lat(const json_t *lat, json_int_t n)
{
	json_t *pct = json_object();
	for (size_t i = 0; i < hist_npcts; i++) {
		char key[32];
		snprintf(key, sizeof(key), "%f", hist_pcts[i]);
		json_object_set(pct, key, json_object_get(lat, hist_pct_names[i]));
	}
	json_t *o =
	    json_pack("{s:O?, s:O?, s:O?, s:O?, s:I}", "min", json_object_get(lat, "min"), "max",
	              json_object_get(lat, "max"), "mean", json_object_get(lat, "mean"), "stddev",
	              json_object_get(lat, "stddev"), "N", n);
	if (n)
		json_object_set_new(o, "percentile", pct);
	else
		json_decref(pct);
	return o;
}

static json_t *fio_dir(const json_t *d, double elapsed_s)
{
	json_int_t ops = json_integer_value(json_object_get(d, "ops"));
	json_int_t bytes = json_integer_value(json_object_get(d, "bytes"));
	double bps = json_number_value(json_object_get(d, "bytes_per_s"));
	const json_t *lat = json_object_get(d, "latency_ns");
	return json_pack("{s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:i, s:i, s:{s:i, s:i, s:f, s:f, "
	                 "s:i}, s:o, s:o}",
	                 "io_bytes", bytes, "io_kbytes", bytes / 1024, "bw_bytes",
	                 (json_int_t)llround(bps), "bw", (json_int_t)llround(bps / 1024), "iops",
	                 json_number_value(json_object_get(d, "iops")), "runtime",
	                 (json_int_t)llround(elapsed_s * 1000), "total_ios", ops, "short_ios", 0,
	                 "drop_ios", 0, "slat_ns", "min", 0, "max", 0, "mean", 0.0, "stddev", 0.0,
	                 "N", 0,
	                 /* the worker times submission to completion: fio's lat; clat the same */
	                 "clat_ns", fio_lat(lat, ops), "lat_ns", fio_lat(lat, ops));
}

static json_t *fio_json(const struct db_run *run, const json_t *res)
{
	json_t *spec = run->spec ? json_loads(run->spec, 0, NULL) : json_object();
	double elapsed = json_number_value(json_object_get(res, "elapsed_s"));
	const json_t *cpu = json_object_get(res, "cpu");
	double usr = json_number_value(json_object_get(cpu, "user_s"));
	double sys = json_number_value(json_object_get(cpu, "system_s"));
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
	json_t *opts = json_pack(
	    "{s:s, s:s, s:O?, s:O?, s:O?, s:O?}", "rw", fio_rw, "filename", run->target, "bs",
	    json_object_get(spec, "block_size"), "ioengine", json_object_get(spec, "engine"),
	    "iodepth", json_object_get(spec, "iodepth"), "size", json_object_get(spec, "size"));
	json_object_set_new(opts, "direct",
	                    json_string(json_is_true(json_object_get(spec, "direct")) ? "1" : "0"));
	if (json_object_get(spec, "iodepth_batch"))
		json_object_set(opts, "iodepth_batch_submit",
		                json_object_get(spec, "iodepth_batch"));
	json_t *sync = json_object_get(res, "sync");
	json_int_t nsync = json_integer_value(json_object_get(sync, "ops"));
	json_t *job = json_pack(
	    "{s:s, s:i, s:i, s:i, s:I, s:o, s:o, s:o, s:{s:i, s:i, s:i}, s:{s:I, s:o}, s:I, "
	    "s:f, s:f, s:i, s:i, s:i}",
	    "jobname", run->name, "groupid", 0, "error", 0, "eta", 0, "elapsed",
	    (json_int_t)llround(elapsed), "job options", opts, "read",
	    fio_dir(json_object_get(res, "read"), elapsed), "write",
	    fio_dir(json_object_get(res, "write"), elapsed), "trim", "io_bytes", 0, "iops", 0,
	    "total_ios", 0, "sync", "total_ios", nsync, "lat_ns",
	    fio_lat(json_object_get(sync, "latency_ns"), nsync), "job_runtime",
	    (json_int_t)llround(elapsed * 1000), "usr_cpu",
	    elapsed > 0 ? round(usr / elapsed * 1e6) / 1e4 : 0.0, "sys_cpu",
	    elapsed > 0 ? round(sys / elapsed * 1e6) / 1e4 : 0.0, "ctx", 0, "majf", 0, "minf", 0);
	json_t *o =
	    json_pack("{s:s, s:I, s:I, s:s, s:o, s:[o]}", "fio version",
	              "spindle-worker " PACKAGE_VERSION, "timestamp", (json_int_t)run->end_time,
	              "timestamp_ms", (json_int_t)run->end_time * 1000, "time", "",
	              "global options", json_object(), "jobs", job);
	char when[32];
	json_object_set_new(o, "time",
	                    json_string(util_iso8601(run->end_time, when, sizeof(when))));
	const json_t *dev = json_object_get(res, "device");
	if (json_is_string(json_object_get(dev, "disk")) && is_num(dev, "seconds")) {
		double secs = json_number_value(json_object_get(dev, "seconds"));
		json_t *du = json_pack(
		    "{s:O, s:I, s:I, s:f}", "name", json_object_get(dev, "disk"), "read_ios",
		    (json_int_t)llround(json_number_value(json_object_get(dev, "reads_per_s")) *
		                        secs),
		    "write_ios",
		    (json_int_t)llround(json_number_value(json_object_get(dev, "writes_per_s")) *
		                        secs),
		    "util", json_number_value(json_object_get(dev, "busy_pct")));
		json_object_set_new(o, "disk_util", json_pack("[o]", du));
	}
	json_decref(spec);
	return o;
}

int job_report_result(int64_t id, bool fio, json_t **out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	if (jobs_run_get(id, run, f) < 0) {
		free(run);
		return -1;
	}
	json_t *res = run->result ? json_loads(run->result, 0, NULL) : NULL;
	int rc = 0;
	if (!res) {
		rc = fault_set(f, ERR_NOT_FOUND, "job: job %lld has no result (it is %s)",
		               (long long)run->id, run->state);
	} else if (fio) {
		*out = fio_json(run, res);
		json_decref(res);
	} else {
		*out = json_pack("{s:o}", "result", res);
	}
	db_run_clear(run);
	free(run);
	return rc;
}

/* ---- comparison */

static const struct {
	const char *path; /* dotted, into the result */
	const char *unit;
} compare_figures[] = {
    {"summary.iops", "operations per second"},
    {"read.iops", "operations per second"},
    {"write.iops", "operations per second"},
    {"read.bytes_per_s", "bytes per second"},
    {"write.bytes_per_s", "bytes per second"},
    {"read.latency_ns.mean", "nanoseconds"},
    {"read.latency_ns.p50", "nanoseconds"},
    {"read.latency_ns.p99", "nanoseconds"},
    {"read.latency_ns.p99.9", "nanoseconds"},
    {"write.latency_ns.mean", "nanoseconds"},
    {"write.latency_ns.p50", "nanoseconds"},
    {"write.latency_ns.p99", "nanoseconds"},
    {"write.latency_ns.p99.9", "nanoseconds"},
    {"cpu.user_s", "seconds"},
    {"cpu.system_s", "seconds"},
    {"device.ops_per_s", "operations per second"},
    {"device.busy_pct", "percent"},
    {"box_cpu.user_pct", "percent"},
    {"box_cpu.system_pct", "percent"},
    {"iozone.write", "bytes per second"},
    {"iozone.rewrite", "bytes per second"},
    {"iozone.read", "bytes per second"},
    {"iozone.reread", "bytes per second"},
    {"iozone.random_read", "bytes per second"},
    {"iozone.random_write", "bytes per second"},
};

/* "read.latency_ns.p99.9": members are matched longest first, as keys hold dots. */
static const json_t *json_path(const json_t *o, const char *path)
{
	while (o && *path) {
		const char *key;
		const json_t *v, *best = NULL;
		size_t bestlen = 0;
		json_object_foreach((json_t *)o, key, v)
		{
			size_t n = strlen(key);
			if (n > bestlen && strncmp(path, key, n) == 0 &&
			    (path[n] == '\0' || path[n] == '.')) {
				best = v;
				bestlen = n;
			}
		}
		if (!best)
			return NULL;
		o = best;
		path += bestlen + (path[bestlen] == '.');
	}
	return o;
}

int job_report_compare(const int64_t *id, size_t n, size_t base, json_t **out, struct fault *f)
{
	if (n == 0 || n > JOB_REPORT_COMPARE_MAX || base >= n)
		return fault_set(f, ERR_INVALID_ARG,
		                 "jobs: from 1 to %d jobs, the baseline one of them",
		                 JOB_REPORT_COMPARE_MAX);
	json_t *results[JOB_REPORT_COMPARE_MAX] = {0};
	json_t *list = json_array();
	int rc = 0;
	struct db_run *run = xmalloc(sizeof(*run));
	for (size_t k = 0; k < n && rc == 0; k++) {
		if (jobs_run_get(id[k], run, f) < 0) {
			rc = -1;
			break;
		}
		results[k] = run->result ? json_loads(run->result, 0, NULL) : NULL;
		if (!results[k] || json_is_true(json_object_get(results[k], "partial")))
			rc = fault_set(f, ERR_INVALID_ARG,
			               "jobs: job %lld has no complete result (it is %s)",
			               (long long)id[k], run->state);
		else
			json_array_append_new(list, jobs_run_json(run));
		db_run_clear(run);
	}
	free(run);
	if (rc == 0) {
		json_t *figs = json_array();
		for (size_t i = 0; i < nitems(compare_figures); i++) {
			json_t *vals = json_array(), *diffs = json_array();
			bool any = false;
			const json_t *bv = json_path(results[base], compare_figures[i].path);
			double b = json_number_value(bv);
			for (size_t k = 0; k < n; k++) {
				const json_t *v = json_path(results[k], compare_figures[i].path);
				if (json_is_number(v)) {
					any = true;
					json_array_append(vals, (json_t *)v);
					json_array_append_new(
					    diffs,
					    json_is_number(bv) && b != 0
					        ? json_real(
					              round((json_number_value(v) - b) / b * 1000) /
					              10)
					        : json_null());
				} else {
					json_array_append_new(vals, json_null());
					json_array_append_new(diffs, json_null());
				}
			}
			if (any)
				json_array_append_new(figs,
				                      json_pack("{s:s, s:s, s:o, s:o}", "name",
				                                compare_figures[i].path, "unit",
				                                compare_figures[i].unit, "values",
				                                vals, "diff_pct", diffs));
			else {
				json_decref(vals);
				json_decref(diffs);
			}
		}
		*out = json_pack("{s:I, s:o, s:o}", "baseline", (json_int_t)id[base], "jobs", list,
		                 "figures", figs);
	} else {
		json_decref(list);
	}
	for (size_t k = 0; k < n; k++)
		json_decref(results[k]);
	return rc;
}
