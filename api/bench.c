/* /api/bench/v1: benchmark jobs, their progress and results, comparisons, presets. The
 * supervisor (server/jobs.c) checks and runs; this file translates HTTP. */
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/http.h>

#include "api.h"
#include "jobs.h"
#include "util.h"
#include "worker/spec.h"

/* A spec is small; its fields have types of their own (sizes as numbers or "8k"), which
 * the spec parser checks with a message per field, so the body is read here. */
#define BENCH_MAX_SPEC (64 * 1024)

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

/* The listing's query: ?state=&label=&start=&limit=. */
static int bench_list_filter(struct request *r, struct jobs_filter *flt, struct fault *f)
{
	static const char *const allowed[] = {"state", "label", "limit", "start", NULL};
	if (request_query_check(r, allowed, f) < 0)
		return -1;
	const char *limit = request_query(r, "limit");
	const char *start = request_query(r, "start");
	const char *state = request_query(r, "state");
	long long v;
	if (limit) {
		if (util_parse_ll(limit, 1, 1000, &v) < 0)
			return fault_set(f, ERR_INVALID_ARG,
			                 "limit: must be a whole number from 1 to 1000");
		flt->limit = (int)v;
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

void bench_jobs_list(struct request *r)
{
	struct fault f = {0};
	struct jobs_filter flt = {.limit = 100};
	json_t *list;
	if (bench_list_filter(r, &flt, &f) < 0 || jobs_list(&flt, &list, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "jobs", list));
}

void bench_jobs_get(struct request *r)
{
	static const char *const none[] = {NULL};
	struct fault f = {0};
	json_t *job;
	if (request_query_check(r, none, &f) < 0 || jobs_get(request_param(r, 0), &job, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "job", job));
}

void bench_jobs_delete(struct request *r)
{
	struct fault f = {0};
	json_t *job;
	bool cancelled;
	if (jobs_delete(request_param(r, 0), &r->who, r->peer, &cancelled, &job, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (cancelled)
		reply_json(r, 202, json_pack("{s:o}", "job", job));
	else
		reply_empty(r, 204);
}

void bench_jobs_progress(struct request *r)
{
	static const char *const none[] = {NULL};
	struct fault f = {0};
	const char *accept = request_header(r, "Accept");
	bool sse = accept && strstr(accept, "text/event-stream");
	if (request_query_check(r, none, &f) < 0 ||
	    jobs_progress(r, request_param(r, 0), sse, &f) < 0)
		reply_fault(r, &f);
}

void bench_jobs_result(struct request *r)
{
	static const char *const allowed[] = {"format", NULL};
	struct fault f = {0};
	json_t *res;
	if (request_query_check(r, allowed, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	const char *format = request_query(r, "format");
	if (format && strcmp(format, "fio") != 0 && strcmp(format, "json") != 0) {
		reply_error(r, ERR_INVALID_ARG, "format: must be json or fio");
		return;
	}
	bool fio = format && strcmp(format, "fio") == 0;
	if (jobs_result(request_param(r, 0), fio, &res, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, res);
}

void bench_compare(struct request *r)
{
	static const char *const allowed[] = {"jobs", "baseline", NULL};
	struct fault f = {0};
	json_t *cmp;
	if (request_query_check(r, allowed, &f) < 0 ||
	    jobs_compare(request_query(r, "jobs"), request_query(r, "baseline"), &cmp, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "comparison", cmp));
}

void bench_presets(struct request *r)
{
	static const char *const none[] = {NULL};
	struct fault f = {0};
	if (request_query_check(r, none, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, spec_presets_json());
}
