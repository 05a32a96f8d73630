/* SPDX-License-Identifier: ISC */
/* /api/bench/v1: benchmark jobs, their progress and results, comparisons, presets. The
 * supervisor (server/bench/jobs.c, job_report.c) checks and runs; this file translates HTTP:
 * ids in paths and queries, hrefs, the progress stream. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "api.h"
#include "db/db.h"
#include "bench/job_fio.h"
#include "bench/job_report.h"
#include "bench/jobs.h"
#include "bench/sweeps.h"
#include "base/util.h"
#include "worker/spec.h"

/* A spec is small; its fields have types of their own (sizes as numbers or "8k"), which
 * the spec parser checks with a message per field, so the body is read here. */
#define BENCH_MAX_SPEC (64 * 1024)
#define JOB_HREF       "/api/bench/v1/jobs/{id}"

static json_t *bench_jobs_hrefs(json_t *jobs)
{
	for (size_t i = 0; i < json_array_size(jobs); i++)
		api_href(json_array_get(jobs, i), JOB_HREF);
	return jobs;
}

/* The job or sweep (what) the path names: an id is a positive integer; anything else is a
 * bad request naming it (a well-formed id that names nothing is the handler's 404). */
static int bench_path_id(struct request *r, const char *what, int64_t *id, struct fault *f)
{
	const char *s = request_param(r, 0);
	long long v;
	if (!s || util_parse_ll(s, 1, INT64_MAX, &v) < 0)
		return fault_set(f, ERR_INVALID_ARG,
		                 "id: '%.64s' is not a %s id (a positive integer)", s ? s : "",
		                 what);
	*id = v;
	return 0;
}

static int bench_read_spec(struct request *r, json_t **out, struct fault *f)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	size_t len = evbuffer_get_length(in);
	if (len == 0)
		return fault_set(f, ERR_MISSING_ARG, "pattern: required: a job spec");
	if (len > BENCH_MAX_SPEC)
		return fault_set(f, ERR_OVER_LIMIT, "body: a job spec is at most %d bytes",
		                 BENCH_MAX_SPEC);
	return request_body_json(r, out, f);
}

void bench_jobs_create(struct request *r)
{
	json_t *spec, *job;
	struct fault f = {0};
	if (bench_read_spec(r, &spec, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	int rc = jobs_submit(spec, &r->who, r->peer, &job, &f);
	json_decref(spec);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	api_href(job, JOB_HREF);
	reply_header(r, "Location", json_string_value(json_object_get(job, "href")));
	reply_json(r, 201, json_pack("{s:o}", "job", job));
}

/* "queued, running, ... or interrupted", for the message of a state no job has. */
static const char *bench_state_names(char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < JOB_NSTATES && n < len; i++) {
		const char *sep = i == 0 ? "" : i + 1 == JOB_NSTATES ? " or " : ", ";
		int w = snprintf(buf + n, len - n, "%s%s", sep, jobs_state_name((enum job_state)i));
		if (w < 0)
			break;
		n += (size_t)w;
	}
	return buf;
}

/* The pages of Spindle's own lists (jobs, sweeps), newest first: ?limit= (from 1 to max)
 * and ?next=, the cursor an answer gave (the id below which the page starts; 0: the
 * first page). */
static int page_query(struct request *r, long long max, long long *limit, long long *before,
                      struct fault *f)
{
	const char *l = request_query(r, "limit"), *next = request_query(r, "next");
	if (l && util_parse_ll(l, 1, max, limit) < 0)
		return fault_set(f, ERR_INVALID_ARG, "limit: must be a whole number from 1 to %lld",
		                 max);
	if (next && util_parse_ll(next, 2, INT64_MAX, before) < 0)
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "next: not a cursor of this list (send the next an answer gave, as "
		    "it gave it)");
	return 0;
}

/* A page read with one more item than asked: that one is dropped, and tells there is a
 * page after; its cursor (the last id kept) or null. */
static json_t *page_cut(json_t *list, long long limit)
{
	if (json_array_size(list) <= (size_t)limit)
		return json_null();
	json_array_remove(list, (size_t)limit);
	char cursor[24];
	snprintf(cursor, sizeof(cursor), "%lld",
	         (long long)json_integer_value(
	             json_object_get(json_array_get(list, (size_t)limit - 1), "id")));
	return json_string(cursor);
}

/* The listing's query: ?state=&label=&start=&sweep= and the page's. */
static int bench_list_filter(struct request *r, struct jobs_filter *flt, struct fault *f)
{
	const char *start = request_query(r, "start");
	const char *state = request_query(r, "state");
	const char *sweep = request_query(r, "sweep");
	long long v, limit = flt->limit, before = 0;
	if (page_query(r, 1000, &limit, &before, f) < 0)
		return -1;
	flt->limit = (int)limit;
	flt->before = before;
	if (sweep) {
		if (util_parse_ll(sweep, 1, INT64_MAX, &v) < 0)
			return fault_set(f, ERR_INVALID_ARG,
			                 "sweep: must be a sweep id, a whole number from 1");
		flt->sweep = v;
	}
	if (start) {
		int64_t t;
		if (util_parse_ll(start, 0, INT64_MAX, &v) == 0)
			flt->start = v;
		else if (util_parse_iso8601(start, &t) == 0)
			flt->start = t;
		else
			return fault_set(f, ERR_INVALID_ARG,
			                 "start: must be an ISO 8601 UTC time or epoch seconds");
	}
	if (state) {
		char names[128];
		if (jobs_state_parse(state, &flt->state) < 0)
			return fault_set(f, ERR_INVALID_ARG, "state: must be %s",
			                 bench_state_names(names, sizeof(names)));
		flt->by_state = true;
	}
	flt->label = request_query(r, "label");
	return 0;
}

/* Newest first, a page of ?limit= (100) at a time; "next" is the cursor of the page after
 * it (null on the last): ?next= with the same filters reads it. */
void bench_jobs_list(struct request *r)
{
	struct fault f = {0};
	struct jobs_filter flt = {.limit = 100};
	json_t *list;
	if (bench_list_filter(r, &flt, &f) < 0)
		goto fail;
	int limit = flt.limit;
	flt.limit++; /* one more tells whether a page follows */
	if (jobs_list(&flt, &list, &f) < 0)
		goto fail;
	json_t *next = page_cut(list, limit);
	reply_json(r, 200, json_pack("{s:o, s:o}", "jobs", bench_jobs_hrefs(list), "next", next));
	return;
fail:
	reply_fault(r, &f);
}

void bench_jobs_get(struct request *r)
{
	struct fault f = {0};
	json_t *job;
	int64_t id;
	if (bench_path_id(r, "job", &id, &f) < 0 || jobs_get(id, &job, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "job", api_href(job, JOB_HREF)));
}

void bench_jobs_delete(struct request *r)
{
	struct fault f = {0};
	json_t *job;
	bool cancelled;
	int64_t id;
	if (bench_path_id(r, "job", &id, &f) < 0 ||
	    jobs_delete(id, &r->who, r->peer, &cancelled, &job, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (cancelled)
		reply_json(r, 202, json_pack("{s:o}", "job", api_href(job, JOB_HREF)));
	else
		reply_empty(r, 204);
}

/* A job that has ended is answered whole; one queued or running gets a stream that goes on
 * until it ends. */
void bench_jobs_progress(struct request *r)
{
	struct fault f = {0};
	const char *accept = request_header(r, "Accept");
	bool sse = accept && strstr(accept, "text/event-stream");
	const char *ctype = sse ? "text/event-stream" : "application/x-ndjson";
	int64_t id;
	if (bench_path_id(r, "job", &id, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (!jobs_watchable(id)) {
		struct buf body = {0};
		if (jobs_replay(id, sse, &body, &f) < 0)
			reply_fault(r, &f);
		else
			reply_raw(r, 200, ctype, body.p, body.len);
		buf_free(&body);
		return;
	}
	if (jobs_watch_admit(&f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_header(r, "X-Accel-Buffering", "no"); /* a proxy in front must not hold lines */
	jobs_watch(id, stream_open(r, sse ? STREAM_SSE : STREAM_CHUNKS, ctype), sse);
}

/* ?format=json (as stored) or fio (fio's json+ document): JSON either way; fio's log files
 * are bench_jobs_fio_log's. */
void bench_jobs_result(struct request *r)
{
	struct fault f = {0};
	json_t *res;
	const char *format = request_query(r, "format");
	if (format && strcmp(format, "fio-log") == 0) {
		reply_error(r, ERR_INVALID_ARG,
		            "format: fio's log files are GET %s/jobs/{id}/fio-log?log=iops|bw|lat|"
		            "clat_hist (text/plain) now",
		            "/api/bench/v1");
		return;
	}
	if (format && strcmp(format, "fio") != 0 && strcmp(format, "json") != 0) {
		reply_error(r, ERR_INVALID_ARG, "format: must be json or fio");
		return;
	}
	bool fio = format && strcmp(format, "fio") == 0;
	int64_t id;
	if (bench_path_id(r, "job", &id, &f) < 0 || job_report_result(id, fio, &res, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, res);
}

/* ?log=iops|bw|lat|clat_hist: one of fio's log files of the job's measured intervals, as
 * text (its own route, so the result's answers are JSON only). */
void bench_jobs_fio_log(struct request *r)
{
	struct fault f = {0};
	const char *log = request_query(r, "log");
	enum job_fio_log which = JOB_FIO_LOG_IOPS;
	if (!log) {
		reply_error(r, ERR_MISSING_ARG, "log: required: iops, bw, lat or clat_hist");
		return;
	}
	if (job_fio_log_parse(log, &which) < 0) {
		reply_error(r, ERR_INVALID_ARG, "log: must be iops, bw, lat or clat_hist");
		return;
	}
	int64_t id;
	struct buf body = {0};
	if (bench_path_id(r, "job", &id, &f) < 0 || job_fio_log(id, which, &body, &f) < 0)
		reply_fault(r, &f);
	else
		reply_raw(r, 200, "text/plain; charset=utf-8", body.p, body.len);
	buf_free(&body);
}

/* ?jobs=a,b,c: each a job id, named once; ?baseline=: one of them (the first when absent). */
static int bench_compare_query(struct request *r, int64_t *ids, size_t *n, size_t *base,
                               struct fault *f)
{
	const char *list = request_query(r, "jobs");
	const char *baseline = request_query(r, "baseline");
	if (!list || !*list)
		return fault_set(f, ERR_MISSING_ARG, "jobs: required: job ids, a,b,c");
	char buf[1024];
	snprintf(buf, sizeof(buf), "%s", list);
	char *save = NULL;
	*n = 0;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		long long v;
		if (util_parse_ll(t, 1, INT64_MAX, &v) < 0)
			return fault_set(f, ERR_INVALID_ARG, "jobs: '%.40s' is not a job id", t);
		if (*n == JOB_REPORT_COMPARE_MAX)
			return fault_set(f, ERR_INVALID_ARG, "jobs: at most %d jobs",
			                 JOB_REPORT_COMPARE_MAX);
		for (size_t k = 0; k < *n; k++)
			if (ids[k] == v)
				return fault_set(f, ERR_INVALID_ARG, "jobs: %lld is named twice",
				                 v);
		ids[(*n)++] = v;
	}
	if (*n == 0)
		return fault_set(f, ERR_INVALID_ARG, "jobs: no job ids");
	*base = 0;
	if (baseline) {
		long long v;
		size_t k = *n;
		if (util_parse_ll(baseline, 1, INT64_MAX, &v) == 0)
			for (k = 0; k < *n && ids[k] != v; k++)
				;
		if (k == *n)
			return fault_set(f, ERR_INVALID_ARG, "baseline: must be one of the jobs");
		*base = k;
	}
	return 0;
}

void bench_compare(struct request *r)
{
	struct fault f = {0};
	int64_t ids[JOB_REPORT_COMPARE_MAX];
	size_t n = 0, base = 0;
	json_t *cmp;
	if (bench_compare_query(r, ids, &n, &base, &f) < 0 ||
	    job_report_compare(ids, n, base, &cmp, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	bench_jobs_hrefs(json_object_get(cmp, "jobs"));
	reply_json(r, 200, json_pack("{s:o}", "comparison", cmp));
}

void bench_presets(struct request *r)
{
	reply_json(r, 200, spec_presets_json());
}

/* POST /jobs/import: fio's JSON output (json or json+) stored as a finished run, marked
 * imported, so it lists, reads and compares like a run made here. The body is read here:
 * a json+ document with its bins runs well past max_body, so it has a limit of its own. */
void bench_jobs_import(struct request *r)
{
	struct fault f = {0};
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	size_t len = evbuffer_get_length(in);
	json_t *doc = NULL, *job = NULL;
	struct db_run *run = xcalloc(1, sizeof(*run));
	if (len == 0) {
		fault_set(&f, ERR_MISSING_ARG,
		          "body: required: fio's JSON output (--output-format=json or json+)");
		goto fail;
	}
	if (len > JOB_FIO_IMPORT_MAX) {
		fault_set(&f, ERR_OVER_LIMIT, "body: a fio result to import is at most %u bytes",
		          JOB_FIO_IMPORT_MAX);
		goto fail;
	}
	if (request_body_json(r, &doc, &f) < 0 || job_fio_import(doc, run, &f) < 0)
		goto fail;
	if (jobs_import(run, &r->who, r->peer, &job, &f) < 0)
		goto fail;
	json_decref(doc);
	db_run_clear(run);
	free(run);
	api_href(job, JOB_HREF);
	reply_header(r, "Location", json_string_value(json_object_get(job, "href")));
	reply_json(r, 201, json_pack("{s:o}", "job", job));
	return;
fail:
	json_decref(doc);
	db_run_clear(run);
	free(run);
	reply_fault(r, &f);
}

/* ---- sweeps: one spec over a matrix of values (server/bench/sweeps.c) */

#define SWEEP_HREF     "/api/bench/v1/sweeps/{id}"
#define SWEEP_BODY_MAX (256 * 1024) /* a spec and axes of a few values each */

/* The sweep's href, and each row of its table the href of its job. */
static json_t *bench_sweep_hrefs(json_t *sweep)
{
	json_t *table = json_object_get(sweep, "table");
	for (size_t i = 0; i < json_array_size(table); i++)
		api_href(json_array_get(table, i), "/api/bench/v1/jobs/{job}");
	return api_href(sweep, SWEEP_HREF);
}

static void sweep_submitted(void *arg, json_t *sweep, const struct fault *f)
{
	struct request *r = arg;
	if (!sweep) {
		reply_fault(r, f);
		return;
	}
	bench_sweep_hrefs(sweep);
	reply_header(r, "Location", json_string_value(json_object_get(sweep, "href")));
	reply_json(r, 201, json_pack("{s:o}", "sweep", sweep));
}

void bench_sweeps_create(struct request *r)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	struct fault f = {0};
	json_t *body;
	if (evbuffer_get_length(in) == 0) {
		reply_error(r, ERR_MISSING_ARG, "body: required: {\"spec\": ..., \"axes\": ...}");
		return;
	}
	if (evbuffer_get_length(in) > SWEEP_BODY_MAX) {
		reply_error(r, ERR_OVER_LIMIT, "body: a sweep is at most %d bytes", SWEEP_BODY_MAX);
		return;
	}
	if (request_body_json(r, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	sweeps_submit(body, &r->who, r->peer, sweep_submitted, r);
	json_decref(body);
}

/* ?limit=&next=: newest first, a page at a time, as the job list pages. */
void bench_sweeps_list(struct request *r)
{
	struct fault f = {0};
	long long lim = 50, bef = 0;
	json_t *list;
	/* one more than asked tells whether a page follows */
	if (page_query(r, 200, &lim, &bef, &f) < 0 ||
	    sweeps_list(bef, (int)lim + 1, &list, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *cursor = page_cut(list, lim);
	for (size_t i = 0; i < json_array_size(list); i++)
		bench_sweep_hrefs(json_array_get(list, i));
	reply_json(r, 200, json_pack("{s:o, s:o}", "sweeps", list, "next", cursor));
}

void bench_sweeps_get(struct request *r)
{
	struct fault f = {0};
	json_t *sweep;
	int64_t id;
	if (bench_path_id(r, "sweep", &id, &f) < 0 || sweeps_get(id, &sweep, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "sweep", bench_sweep_hrefs(sweep)));
}

static void sweep_deleted(void *arg, json_t *sweep, const struct fault *f)
{
	struct request *r = arg;
	if (f)
		reply_fault(r, f);
	else if (sweep) /* cancelled: it ends as its runs do */
		reply_json(r, 202, json_pack("{s:o}", "sweep", bench_sweep_hrefs(sweep)));
	else
		reply_empty(r, 204);
}

void bench_sweeps_delete(struct request *r)
{
	struct fault f = {0};
	int64_t id;
	if (bench_path_id(r, "sweep", &id, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	sweeps_delete(id, &r->who, r->peer, sweep_deleted, r);
}
