/* SPDX-License-Identifier: ISC */
/* The worker's protocol, checked line by line: a switch on the line's type, every member
 * of it checked for type and range, and anything else refused, as a relay checks each
 * message of its peer before use. */
#include "job_proto.h"
#include "base/util.h"
#include "worker/hist.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool is_uint(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_integer(v) && json_integer_value(v) >= 0;
}

static bool is_num(const json_t *o, const char *k)
{
	const json_t *v = json_object_get(o, k);
	return json_is_number(v) && json_number_value(v) >= 0;
}

/* An interval's histogram: {"bins":[idx,count,...]}, ascending indices of fio's coarse
 * buckets (hist.h HIST_FIO_COARSE_NR) with positive counts that add up to the interval's
 * ops. */
static int proto_interval_hist(const json_t *h, json_int_t ops, const char *name, char *err,
                               size_t len)
{
	const json_t *bins = json_object_get(h, "bins");
	if (!json_is_object(h) || json_object_size(h) != 1 || !json_is_array(bins) ||
	    json_array_size(bins) % 2 || json_array_size(bins) > 2 * HIST_FIO_COARSE_NR) {
		snprintf(err, len, "interval: %s.hist must be {\"bins\": [index, count, ...]}",
		         name);
		return -1;
	}
	json_int_t last = -1, total = 0;
	for (size_t i = 0; i < json_array_size(bins); i += 2) {
		const json_t *ji = json_array_get(bins, i), *jc = json_array_get(bins, i + 1);
		if (!json_is_integer(ji) || !json_is_integer(jc) ||
		    json_integer_value(ji) <= last ||
		    json_integer_value(ji) >= HIST_FIO_COARSE_NR || json_integer_value(jc) <= 0 ||
		    json_integer_value(jc) > ops) {
			snprintf(err, len,
			         "interval: %s.hist.bins: pair %zu is not an ascending index below "
			         "%u with a positive count",
			         name, i / 2, HIST_FIO_COARSE_NR);
			return -1;
		}
		last = json_integer_value(ji);
		total += json_integer_value(jc);
	}
	if (total != ops) {
		snprintf(err, len, "interval: %s.hist.bins count %lld I/Os, ops is %lld", name,
		         (long long)total, (long long)ops);
		return -1;
	}
	return 0;
}

static int proto_dir_interval(const json_t *d, const char *name, char *err, size_t len)
{
	static const char *const uints[] = {"ops", "bytes", "lat_max_ns", "lat_p99_ns"};
	static const char *const nums[] = {"iops", "bytes_per_s", "lat_mean_ns"};
	const json_t *hist = json_object_get(d, "hist");
	if (!json_is_object(d) || json_object_size(d) != 7 + (hist ? 1u : 0u)) {
		snprintf(err, len,
		         "interval: %s must be an object of 7 figures (and its latency histogram)",
		         name);
		return -1;
	}
	for (size_t i = 0; i < nitems(uints); i++)
		if (!is_uint(d, uints[i])) {
			snprintf(err, len, "interval: %s.%s must be a count", name, uints[i]);
			return -1;
		}
	for (size_t i = 0; i < nitems(nums); i++)
		if (!is_num(d, nums[i])) {
			snprintf(err, len, "interval: %s.%s must be a number", name, nums[i]);
			return -1;
		}
	if (hist && proto_interval_hist(hist, json_integer_value(json_object_get(d, "ops")), name,
	                                err, len))
		return -1;
	return 0;
}

static int proto_interval(int64_t last_seq, const json_t *o, char *err, size_t len)
{
	const json_t *seq = json_object_get(o, "seq");
	const char *phase = json_string_value(json_object_get(o, "phase"));
	const json_t *eta = json_object_get(o, "eta_s");
	const json_t *pass = json_object_get(o, "pass");
	if (!json_is_integer(seq) || json_integer_value(seq) != last_seq + 1) {
		snprintf(err, len, "interval: seq must be %lld", (long long)last_seq + 1);
		return -1;
	}
	if (!is_num(o, "t_s") || !is_num(o, "elapsed_s") || !is_num(o, "progress_pct") ||
	    json_number_value(json_object_get(o, "progress_pct")) > 100) {
		snprintf(err, len, "interval: t_s, elapsed_s and progress_pct must be numbers");
		return -1;
	}
	if (!phase || (strcmp(phase, "ramp") != 0 && strcmp(phase, "measure") != 0)) {
		snprintf(err, len, "interval: phase must be ramp or measure");
		return -1;
	}
	if (!(json_is_null(eta) || is_num(o, "eta_s")) || (pass && !json_is_string(pass))) {
		snprintf(err, len, "interval: eta_s must be a number or null, pass a string");
		return -1;
	}
	size_t keys = 9 + (pass ? 1 : 0);
	if (json_object_size(o) != keys) {
		snprintf(err, len, "interval: unexpected members");
		return -1;
	}
	if (proto_dir_interval(json_object_get(o, "read"), "read", err, len) ||
	    proto_dir_interval(json_object_get(o, "write"), "write", err, len))
		return -1;
	return 0;
}

static int proto_dir_result(const json_t *d, const char *name, char *err, size_t len)
{
	if (!json_is_object(d) || !is_uint(d, "ops") || !is_uint(d, "bytes") ||
	    !is_num(d, "iops") || !is_num(d, "bytes_per_s") ||
	    !json_is_object(json_object_get(d, "latency_ns"))) {
		snprintf(err, len, "result: %s must hold ops, bytes, iops, bytes_per_s, latency_ns",
		         name);
		return -1;
	}
	const json_t *lat = json_object_get(d, "latency_ns");
	for (size_t i = 0; i < hist_npcts; i++)
		if (!is_uint(lat, hist_pct_names[i])) {
			snprintf(err, len, "result: %s.latency_ns.%s must be a count", name,
			         hist_pct_names[i]);
			return -1;
		}
	struct hist *h = xmalloc(sizeof(*h));
	char why[200];
	int rc = hist_from_json(h, json_object_get(d, "hist"), why, sizeof(why));
	if (rc == 0 && h->count != (uint64_t)json_integer_value(json_object_get(d, "ops"))) {
		snprintf(why, sizeof(why), "its count is not ops");
		rc = -1;
	}
	free(h);
	if (rc) {
		snprintf(err, len, "result: %s.hist: %s", name, why);
		return -1;
	}
	return 0;
}

static int proto_result(const json_t *o, char *err, size_t len)
{
	const json_t *cpu = json_object_get(o, "cpu");
	if (!is_num(o, "elapsed_s") || !json_is_object(cpu) || !is_num(cpu, "user_s") ||
	    !is_num(cpu, "system_s")) {
		snprintf(err, len, "result: elapsed_s and cpu.user_s, cpu.system_s are required");
		return -1;
	}
	if (proto_dir_result(json_object_get(o, "read"), "read", err, len) ||
	    proto_dir_result(json_object_get(o, "write"), "write", err, len))
		return -1;
	return 0;
}

static int proto_start(const json_t *o, char *err, size_t len)
{
	const json_t *t = json_object_get(o, "target");
	const json_t *v = json_object_get(o, "version");
	if (!json_is_integer(v) || json_integer_value(v) != 1) {
		snprintf(err, len, "start: version must be 1");
		return -1;
	}
	if (!json_is_object(json_object_get(o, "spec")) || !json_is_object(t) ||
	    !is_uint(t, "size") || !json_is_object(json_object_get(o, "threads"))) {
		snprintf(err, len, "start: spec, target.size and threads are required");
		return -1;
	}
	return 0;
}

int job_proto_line(const struct job_proto_state *st, const char *line, size_t len,
                   struct job_proto_line *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof(*out));
	json_error_t jerr;
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, &jerr);
	const char *type = json_string_value(json_object_get(o, "type"));
	if (!o || !json_is_object(o) || !type) {
		snprintf(err, errlen, "not a JSON object with a type: %.100s",
		         o ? "no type" : jerr.text);
		goto bad;
	}
	if (st->ended) {
		snprintf(err, errlen, "a %s line after the end", type);
		goto bad;
	}
	if (strcmp(type, "start") == 0) {
		if (st->have_start) {
			snprintf(err, errlen, "a second start line");
			goto bad;
		}
		if (proto_start(o, err, errlen))
			goto bad;
		out->type = JOB_PROTO_START;
	} else if (strcmp(type, "interval") == 0) {
		if (!st->have_start) {
			snprintf(err, errlen, "an interval before the start line");
			goto bad;
		}
		if (proto_interval(st->seq, o, err, errlen))
			goto bad;
		out->type = JOB_PROTO_INTERVAL;
	} else if (strcmp(type, "result") == 0) {
		if (!st->have_start) {
			snprintf(err, errlen, "a result before the start line");
			goto bad;
		}
		if (proto_result(o, err, errlen))
			goto bad;
		out->type = JOB_PROTO_RESULT;
	} else if (strcmp(type, "error") == 0) {
		if (!json_string_value(json_object_get(o, "message"))) {
			snprintf(err, errlen, "an error line without a message");
			goto bad;
		}
		/* a partial result that is not well formed is dropped, not a violation */
		const json_t *partial = json_object_get(o, "partial");
		char why[256];
		if (st->have_start && json_is_object(partial) &&
		    proto_result(partial, why, sizeof(why)) == 0)
			out->partial = partial;
		out->type = JOB_PROTO_ERROR;
	} else {
		snprintf(err, errlen, "unknown line type '%.40s'", type);
		goto bad;
	}
	out->obj = o;
	return 0;
bad:
	json_decref(o);
	return -1;
}
