/* SPDX-License-Identifier: ISC */
/* What a job's result reads like to others: as stored, in fio's JSON output shape (for the
 * tools that read fio's), and beside other jobs' results (a comparison, each figure's
 * difference from a baseline job). It reads the runs through jobs.h and keeps nothing. */
#include "job_report.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "job_fio.h"
#include "job_findings.h"
#include "jobs.h"
#include "base/util.h"
#include "worker/hist.h"

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
		*out = job_fio_json(run, res);
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

/* What changed between the runs, what each found, and whether each run's mean per-second
 * IOPS differs from the baseline's beyond their spread (from the results' "stability"). */
static void compare_explain(json_t *out, const int64_t *id, size_t n, size_t base,
                            json_t *const *results, json_t *const *specs, json_t *const *envs)
{
	json_object_set_new(out, "differences",
	                    findings_differences((const json_t *const *)specs,
	                                         (const json_t *const *)envs, n, base));
	json_t *found = json_array(), *notes = json_array();
	const json_t *bstab = json_object_get(results[base], "stability");
	for (size_t k = 0; k < n; k++) {
		const json_t *fk = json_object_get(results[k], "findings");
		json_array_append_new(found,
		                      json_is_array(fk) ? json_incref((json_t *)fk) : json_array());
		if (k == base)
			continue;
		json_t *note =
		    findings_significance(bstab, json_object_get(results[k], "stability"));
		if (!note)
			note =
			    json_pack("{s:o, s:s, s:s++}", "beyond_noise", json_null(), "summary",
			              "Not known: a run too short to tell its noise.", "text",
			              "no note: the baseline or this job lacks IOPS for two or ",
			              "more measured seconds, so its noise is not known");
		json_object_set_new(note, "job", json_integer((json_int_t)id[k]));
		json_array_append_new(notes, note);
	}
	json_object_set_new(out, "findings", found);
	json_object_set_new(out, "significance", notes);
}

int job_report_compare(const int64_t *id, size_t n, size_t base, json_t **out, struct fault *f)
{
	if (n == 0 || n > JOB_REPORT_COMPARE_MAX || base >= n)
		return fault_set(f, ERR_INVALID_ARG,
		                 "jobs: from 1 to %d jobs, the baseline one of them",
		                 JOB_REPORT_COMPARE_MAX);
	json_t *results[JOB_REPORT_COMPARE_MAX] = {0};
	json_t *specs[JOB_REPORT_COMPARE_MAX] = {0}, *envs[JOB_REPORT_COMPARE_MAX] = {0};
	json_t *list = json_array();
	int rc = 0;
	struct db_run *run = xmalloc(sizeof(*run));
	for (size_t k = 0; k < n && rc == 0; k++) {
		if (jobs_run_get(id[k], run, f) < 0) {
			rc = -1;
			break;
		}
		results[k] = run->result ? json_loads(run->result, 0, NULL) : NULL;
		specs[k] = run->spec ? json_loads(run->spec, 0, NULL) : NULL;
		envs[k] = run->environment ? json_loads(run->environment, 0, NULL) : NULL;
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
		compare_explain(*out, id, n, base, results, specs, envs);
	} else {
		json_decref(list);
	}
	for (size_t k = 0; k < n; k++) {
		json_decref(results[k]);
		json_decref(specs[k]);
		json_decref(envs[k]);
	}
	return rc;
}
