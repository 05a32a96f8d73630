/* SPDX-License-Identifier: ISC */
/* /api/analytics/v1: the datasets, their data (streamed while a window reaches past now),
 * and the retention settings. Worksheets are in api/worksheets.c. */
#define _GNU_SOURCE /* strptime, timegm */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api.h"
#include "analytics/datasets.h"
#include "analytics/series.h"
#include "base/util.h"
#include "base/workq.h"

#define A "/api/analytics/v1"
/* The largest answer: samples per request, and samples times keys. */
#define DATA_MAX_SAMPLES  86400
#define DATA_MAX_CELLS    2000000
#define DATA_MAX_AHEAD_S  86400 /* how far ahead of now a window may start */
#define DATA_INLINE_CELLS 4000  /* numbers written on the loop; more go to a helper thread */

/* --- datasets */

/* The dataset's path segment: percent-encoded, '/' written '|' (a path segment cannot
 * carry an encoded slash; datasets_find() reads it back). */
static char *dataset_href(const char *name)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(name);
	char *out = xmalloc(sizeof(A "/datasets/") + 3 * n);
	char *o = out + sprintf(out, "%s", A "/datasets/");
	for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
		unsigned char c = *p == '/' ? '|' : *p;
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = '\0';
	return out;
}

static json_t *dataset_json(const struct dataset *d)
{
	struct dataset_info in;
	char ctime[32];
	datasets_info(d, &in);
	json_t *avail = json_array(), *applied = json_array();
	for (size_t i = 0; in.drilldowns[i]; i++)
		if (datasets_drilldown_offered(in.statistic, in.drilldowns[i]))
			json_array_append_new(avail, json_string(in.drilldowns[i]));
	if (in.drilldown)
		json_array_append_new(applied, json_string(in.drilldown));
	char *href = dataset_href(in.name), label[32];
	/* The appliance's object name for it: "dataset-" and a number, stable as the id. */
	snprintf(label, sizeof(label), "dataset-%03lld", (long long)in.id);
	json_t *j = json_pack(
	    "{s:s, s:s, s:s, s:o, s:o, s:o, s:s, s:s, s:s, s:b, s:I, s:I, s:I, s:s}", "name",
	    in.name, "href", href, "statistic", in.statistic, "drilldown",
	    in.drilldown ? json_string(in.drilldown) : json_null(), "drilldowns", applied,
	    "available_drilldowns", avail, "grouping", in.grouping, "explanation", in.explanation,
	    "unit", in.unit, "suspended", in.suspended, "keys", (json_int_t)in.nkeys,
	    "incore_bytes", (json_int_t)in.incore_bytes, "ondisk_bytes",
	    (json_int_t)in.ondisk_bytes, "ctime", util_iso8601(in.ctime, ctime, sizeof(ctime)));
	/* The appliance's names for the same figures, and its activity flag: nothing pending
	 * here, as a dataset's changes are done when the request answers. */
	char title[300];
	datasets_title(d, title, sizeof(title));
	json_object_set_new(j, "title", json_string(title));
	json_object_set_new(j, "dataset", json_string(label));
	json_object_set_new(j, "incore", json_integer((json_int_t)in.incore_bytes));
	json_object_set_new(j, "size", json_integer((json_int_t)in.ondisk_bytes));
	json_object_set_new(j, "activity", json_string("none"));
	free(href);
	return j;
}

static void list_one(void *arg, struct dataset *d)
{
	json_array_append_new(arg, dataset_json(d));
}

void analytics_datasets_list(struct request *r)
{
	static const char *const params[] = {NULL};
	struct fault f;
	if (request_query_check(r, params, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *all = json_array();
	datasets_each(list_one, all);
	reply_json(r, 200, json_pack("{s:o}", "datasets", all));
}

/* The dataset the path names: {name}, or {name}/{part} where the name holds a slash
 * written raw, as the appliance's own hrefs write arc.accesses[hit/miss]. */
static struct dataset *dataset_of(struct request *r)
{
	char name[2 * ROUTE_PARAM_MAX];
	const char *part = request_param(r, 1);
	snprintf(name, sizeof(name), "%s%s%s", request_param(r, 0), part ? "/" : "",
	         part ? part : "");
	struct dataset *d = datasets_find(name);
	if (!d)
		reply_error(r, ERR_NOT_FOUND, "name: no dataset '%.128s'", name);
	return d;
}

void analytics_dataset_get(struct request *r)
{
	struct dataset *d = dataset_of(r);
	if (d)
		reply_json(r, 200, json_pack("{s:o}", "dataset", dataset_json(d)));
}

void analytics_datasets_create(struct request *r)
{
	static const struct field fields[] = {
	    {"statistic", FIELD_STRING, true, 1, 128},
	    {"drilldown", FIELD_STRING, false, 1, 64},
	    FIELDS_END,
	};
	json_t *body;
	struct fault f;
	struct dataset *d;
	if (request_body(r, fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	/* the appliance names the whole dataset as its statistic: "io.ops[disk=sda][latency]" */
	int rc = datasets_create(json_string_value(json_object_get(body, "statistic")),
	                         json_string_value(json_object_get(body, "drilldown")), r->who.user,
	                         r->peer, &d, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *j = dataset_json(d);
	reply_header(r, "Location", json_string_value(json_object_get(j, "href")));
	reply_json(r, 201, json_pack("{s:o}", "dataset", j));
}

void analytics_dataset_update(struct request *r)
{
	static const struct field fields[] = {
	    {"suspended", FIELD_BOOL, true, 0, 0},
	    FIELDS_END,
	};
	json_t *body;
	struct fault f;
	struct dataset *d = dataset_of(r);
	if (!d)
		return;
	if (request_body(r, fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	bool suspended = json_is_true(json_object_get(body, "suspended"));
	json_decref(body);
	if (datasets_suspend(d, suspended, r->who.user, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, json_pack("{s:o}", "dataset", dataset_json(d)));
}

void analytics_dataset_delete(struct request *r)
{
	struct fault f;
	struct dataset *d = dataset_of(r);
	if (!d)
		return;
	if (datasets_delete(d, r->who.user, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}

/* --- settings */

static json_t *settings_json(void)
{
	struct series_retention ret;
	datasets_retention(&ret);
	return json_pack("{s:{s:I, s:I, s:I}}", "settings", "retain_second_data",
	                 (json_int_t)ret.second_h, "retain_minute_data", (json_int_t)ret.minute_h,
	                 "retain_hour_data", (json_int_t)ret.hour_h);
}

void analytics_settings_get(struct request *r)
{
	static const char *const params[] = {NULL};
	struct fault f;
	if (request_query_check(r, params, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, settings_json());
}

void analytics_settings_update(struct request *r)
{
	static const struct field fields[] = {
	    {"retain_second_data", FIELD_INT, false, 1, DATASETS_RETAIN_MAX},
	    {"retain_minute_data", FIELD_INT, false, 1, DATASETS_RETAIN_MAX},
	    {"retain_hour_data", FIELD_INT, false, 1, DATASETS_RETAIN_MAX},
	    FIELDS_END,
	};
	json_t *body, *v;
	struct fault f;
	struct series_retention ret;
	if (request_body(r, fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	datasets_retention(&ret);
	if ((v = json_object_get(body, "retain_second_data")))
		ret.second_h = json_integer_value(v);
	if ((v = json_object_get(body, "retain_minute_data")))
		ret.minute_h = json_integer_value(v);
	if ((v = json_object_get(body, "retain_hour_data")))
		ret.hour_h = json_integer_value(v);
	json_decref(body);
	if (datasets_set_retention(&ret, r->who.user, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, settings_json());
}

/* --- data */

struct data_req {
	struct request *r; /* until the answer or the stream starts */
	struct stream *s;  /* the stream; NULL once the client is gone or it ended */
	int64_t dataset;   /* by id: a dataset deleted meanwhile ends the stream */
	struct series_query q;
	const char *gran_name;
	int64_t wstart;  /* the window's first bucket (q.start moves to the bucket queried) */
	int64_t wend;    /* start + seconds: once now passes it, the last bucket goes as is */
	size_t next;     /* the first bucket not sent yet */
	size_t total;    /* buckets in the window */
	bool pending;    /* a query in flight */
	bool subscribed; /* to the series store's commits */
	bool single;     /* a one-second request: "data" is the sample, not a list */
	size_t written;  /* samples written so far */
	bool in_pump;    /* data_pump() is on the stack: a query done at once returns to it */
	bool failed;     /* a bucket could not be read: the stream ends */
	struct buf out;
};

static int dump_cb(const char *buffer, size_t size, void *data)
{
	buf_add(data, buffer, size);
	return 0;
}

/* A value as JSON, with the 3 decimals kept and no trailing zeros: printed from its
 * fixed-point form, which is both exact and fast. */
static char *put_num(char *o, double v)
{
	if (v > SERIES_MAX_VALUE)
		v = SERIES_MAX_VALUE;
	if (v < -SERIES_MAX_VALUE)
		v = -SERIES_MAX_VALUE;
	double m = v * 1000;
	int64_t f = (int64_t)(m >= 0 ? m + 0.5 : m - 0.5);
	char digits[24];
	int n = 0;
	if (f < 0) {
		*o++ = '-';
		f = -f;
	}
	int64_t whole = f / 1000, frac = f % 1000;
	do {
		digits[n++] = (char)('0' + whole % 10);
		whole /= 10;
	} while (whole);
	while (n)
		*o++ = digits[--n];
	if (frac) {
		*o++ = '.';
		*o++ = (char)('0' + frac / 100);
		if (frac % 100) {
			*o++ = (char)('0' + frac / 10 % 10);
			if (frac % 10)
				*o++ = (char)('0' + frac % 10);
		}
	}
	return o;
}

struct keyval {
	size_t series;
	double value;
	const char *key;
};

static int by_value_desc(const void *a, const void *b)
{
	const struct keyval *x = a, *y = b;
	if (x->value != y->value)
		return x->value < y->value ? 1 : -1;
	return strcmp(x->key, y->key);
}

static void release_series(struct series_query *q)
{
	for (size_t i = 0; i < q->nseries; i++)
		series_unref(q->series[i]);
	free(q->series);
	free(q->out);
	q->series = NULL;
	q->out = NULL;
	q->nseries = 0;
}

/* The appliance's time format, UTC: 20130912T21:42:38. */
static char *compact_time(int64_t t, char *buf, size_t len)
{
	time_t tt = (time_t)t;
	struct tm tm;
	gmtime_r(&tt, &tm);
	strftime(buf, len, "%Y%m%dT%H:%M:%S", &tm);
	return buf;
}

/* Appends the samples of q's buckets to out, each on a line of its own, a comma starting
 * all lines but the first sample's (*written counts them). Touches nothing but its arguments: a
 * helper thread may run it for a large answer (the series' keys are immutable and referenced). */
static void write_samples(struct buf *out, size_t *written, const struct series_query *q)
{
	struct keyval *kv = xcalloc(q->nseries, sizeof(*kv));
	char **prefix = xcalloc(q->nseries, sizeof(*prefix));
	size_t longest = 0;
	for (size_t i = 1; i < q->nseries; i++) {
		/* {"key":"<key, escaped>","value": once per key, not per sample */
		json_t *k = json_string(series_key(q->series[i]));
		char *esc = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
		prefix[i] = xasprintf("{\"key\":%s,\"value\":", esc ? esc : "\"\"");
		if (strlen(prefix[i]) > longest)
			longest = strlen(prefix[i]);
		free(esc);
		json_decref(k);
	}
	for (size_t b = 0; b < q->nbuckets; b++) {
		const struct series_agg *tot = &q->out[b];
		size_t n = 0;
		for (size_t i = 1; i < q->nseries; i++) {
			const struct series_agg *a = &q->out[i * q->nbuckets + b];
			if (a->count)
				kv[n++] = (struct keyval){i, a->sum / (double)a->count,
				                          series_key(q->series[i])};
		}
		if (!tot->count && !n)
			continue; /* nothing was collected then */
		qsort(kv, n, sizeof(*kv), by_value_desc);
		/* room for the sample: its fixed part, and per key its prefix, a number, "}," */
		char *o = buf_room(out, 320 + n * (longest + 32)), when[32], iso[32];
		int64_t t = q->start + (int64_t)b * q->width;
		if (*written)
			*o++ = ','; /* at the line's start: a line is whole once it is sent */
		(*written)++;
		/* As the appliance: "sample" the sample's index (here the second it starts, counted
		 * from the epoch), "samples" the count of seconds sampled through its end,
		 * "startTime" in its format. Spindle's own: the epoch time, the ISO time and
		 * the seconds that held a value. */
		o += sprintf(o,
		             "{\"sample\":%lld,\"startTime\":\"%s\",\"samples\":%lld,\"time\":%lld,"
		             "\"time_iso\":\"%s\",\"count\":%lld,\"data\":{",
		             (long long)t, compact_time(t, when, sizeof(when)),
		             (long long)(t + q->width), (long long)t,
		             util_iso8601(t, iso, sizeof(iso)), (long long)tot->count);
		if (tot->count) {
			o = put_num(o + sprintf(o, "\"value\":"), tot->sum / (double)tot->count);
			o = put_num(o + sprintf(o, ",\"min\":"), tot->min);
			o = put_num(o + sprintf(o, ",\"max\":"), tot->max);
		} else {
			o += sprintf(o, "\"value\":null,\"min\":null,\"max\":null");
		}
		o += sprintf(o, ",\"data\":[");
		for (size_t i = 0; i < n; i++) {
			size_t len = strlen(prefix[kv[i].series]);
			memcpy(o, prefix[kv[i].series], len);
			o = put_num(o + len, kv[i].value);
			*o++ = '}';
			if (i + 1 < n)
				*o++ = ',';
		}
		o += sprintf(o, "]}}\n");
		out->len = (size_t)(o - out->p);
		out->p[out->len] = '\0';
	}
	for (size_t i = 0; i < q->nseries; i++)
		free(prefix[i]);
	free(prefix);
	free(kv);
}

/* Closes the document: the list (or, for one second, the sample, null if none was taken).
 * A real appliance's answer ends there: "data" is its only key. */
static void data_close(struct data_req *dr)
{
	if (dr->single && !dr->written)
		buf_add(&dr->out, "null", 4);
	if (dr->single)
		buf_add(&dr->out, "}\n", 2);
	else
		buf_add(&dr->out, "]}\n", 3);
}

static void data_commit(void *arg, int64_t t);

static void data_unsubscribe(struct data_req *dr)
{
	if (dr->subscribed)
		series_unsubscribe(data_commit, dr);
	dr->subscribed = false;
}

static void data_free(struct data_req *dr)
{
	data_unsubscribe(dr);
	release_series(&dr->q);
	buf_free(&dr->out);
	free(dr);
}

static void data_flush(struct data_req *dr)
{
	if (dr->s && dr->out.len)
		stream_write(dr->s, dr->out.p, dr->out.len);
	dr->out.len = 0;
}

/* The stream is over (window complete, dataset gone, shutting down): close the document. */
static void data_stream_end(struct data_req *dr)
{
	data_unsubscribe(dr);
	if (dr->s) {
		data_close(dr);
		data_flush(dr);
		stream_end(dr->s);
		dr->s = NULL;
	}
	if (!dr->pending)
		data_free(dr);
}

static void data_pump(struct data_req *dr);

static void bucket_done(void *arg, int status)
{
	struct data_req *dr = arg;
	dr->pending = false;
	if (status < 0) {
		dr->failed = true;
	} else if (dr->s) {
		write_samples(&dr->out, &dr->written, &dr->q);
		data_flush(dr);
		dr->next++;
	}
	if (!dr->in_pump)
		data_pump(dr);
}

/* Sends the buckets completed since the last call, one query each (most are answered from
 * memory at once); ends the stream after the last one. */
static void data_pump(struct data_req *dr)
{
	dr->in_pump = true;
	while (!dr->pending) {
		int64_t bstart = dr->wstart + (int64_t)dr->next * dr->q.width;
		const struct dataset *d = datasets_find_id(dr->dataset);
		if (!dr->s || dr->failed || dr->next >= dr->total || !d) {
			dr->in_pump = false;
			data_stream_end(dr); /* may free dr */
			return;
		}
		bool last = dr->next + 1 == dr->total;
		int64_t bend = last ? dr->q.end : bstart + dr->q.width;
		if (bend > series_now() && !(last && dr->wend <= series_now()))
			break; /* not complete yet: the next commit asks again */
		/* The dataset's keys now: a disk that appeared meanwhile shows up. */
		release_series(&dr->q);
		dr->q.nseries = datasets_series(d, &dr->q.series);
		dr->q.start = bstart;
		dr->q.nbuckets = 1;
		dr->q.out = xcalloc(dr->q.nseries, sizeof(*dr->q.out));
		dr->pending = true;
		series_query(&dr->q, bucket_done, dr);
	}
	dr->in_pump = false;
}

static void data_commit(void *arg, int64_t t)
{
	data_pump(arg);
}

static void data_stream_event(struct stream *s, enum stream_event ev, void *arg)
{
	struct data_req *dr = arg;
	if (ev == STREAM_CLIENT_GONE) {
		dr->s = NULL; /* freed by http.c when this returns */
		data_unsubscribe(dr);
		if (!dr->pending)
			data_free(dr);
		return;
	}
	data_stream_end(dr);
}

/* The samples are written: answer them whole, or start the stream with them. */
static void data_answer(void *arg)
{
	struct data_req *dr = arg;
	struct request *r = dr->r;
	dr->next = dr->q.nbuckets;
	if (dr->next >= dr->total) {
		data_close(dr);
		reply_header(r, "Cache-Control", "no-store");
		reply_raw(r, 200, "application/json", dr->out.p, dr->out.len);
		data_free(dr);
		return;
	}
	/* A window reaching past now: each sample follows as it is taken. Heartbeats are
	 * blank lines, which JSON ignores. */
	dr->s = stream_open(r, STREAM_CHUNKS, "application/json");
	dr->r = NULL;
	stream_set_hook(dr->s, data_stream_event, dr);
	data_flush(dr);
	series_subscribe(data_commit, dr);
	dr->subscribed = true;
	data_pump(dr);
}

static void data_format(void *arg)
{
	struct data_req *dr = arg;
	write_samples(&dr->out, &dr->written, &dr->q);
}

/* The first part of the window is in. A large answer (a day of 64 disks by minute is
 * 92,000 numbers) is written on a helper thread: the loop never spends long on one
 * request; the request is not touched meanwhile. */
static void data_ready(void *arg, int status)
{
	struct data_req *dr = arg;
	dr->pending = false;
	if (status < 0) {
		reply_error(dr->r, ERR_BUSY, "data: the stored samples cannot be read now");
		data_free(dr);
		return;
	}
	struct workq *wq = auth_workq();
	if (dr->q.nseries * dr->q.nbuckets > DATA_INLINE_CELLS && wq &&
	    workq_submit(wq, data_format, data_answer, dr) == 0)
		return;
	data_format(dr);
	data_answer(dr);
}

/* "-N" (N seconds ago), "now", epoch seconds or ISO 8601; -1 with the fault. */
static int parse_start(const char *s, int64_t now, int64_t *out, bool *relative, struct fault *f)
{
	long long v;
	*relative = false;
	if (strcmp(s, "now") == 0) {
		*relative = true;
		*out = now;
		return 0;
	}
	if (s[0] == '-') {
		if (util_parse_ll(s + 1, 0, (long long)DATASETS_RETAIN_MAX * 3600, &v) < 0)
			return fault_set(f, ERR_INVALID_ARG,
			                 "start: '-N' takes a whole number of seconds up to %lld",
			                 (long long)DATASETS_RETAIN_MAX * 3600);
		*relative = true;
		*out = now - v;
		return 0;
	}
	if (util_parse_ll(s, 0, (long long)UINT32_MAX, &v) == 0) {
		*out = v;
		return 0;
	}
	int64_t t;
	if (util_parse_iso8601(s, &t) == 0 && t >= 0) {
		*out = t;
		return 0;
	}
	/* The appliance's form, UTC: 20130912T21:42:38 */
	struct tm tm;
	memset(&tm, 0, sizeof(tm));
	const char *end = strlen(s) == 17 ? strptime(s, "%Y%m%dT%H:%M:%S", &tm) : NULL;
	if (end && !*end && (t = (int64_t)timegm(&tm)) >= 0) {
		*out = t;
		return 0;
	}
	return fault_set(f, ERR_INVALID_ARG,
	                 "start: not now, 20130912T21:42:38, ISO 8601 (2026-11-30T01:02:03Z), "
	                 "epoch seconds or -N: "
	                 "'%.64s'",
	                 s);
}

static const char *gran_name(int64_t g)
{
	return g == 1 ? "second" : g == 60 ? "minute" : "hour";
}

/* The samples a window gives at granularity g, asked for in points (0: one per g). */
static int64_t data_buckets(int64_t start, long long seconds, long long points, int64_t g)
{
	int64_t a = start - start % g, e = start + seconds;
	int64_t ngran = (e - a + g - 1) / g;
	int64_t per = points && points < ngran ? (ngran + points - 1) / points : 1;
	return (ngran + per - 1) / per;
}

#define DATA_KEYS_MAX 256 /* keys= names at most this many */

/* keys=a,b,c: only those of the dataset's keys (the total always), in ser[1..], which keeps
 * the rest referenced no more. 0 with *nser the new count, or -1 with f naming the key that
 * the dataset has not seen. */
static int data_keys(const char *keys, const struct dataset_info *in, struct series **ser,
                     size_t *nser, struct fault *f)
{
	if (!in->drilldown)
		return fault_set(f, ERR_INVALID_ARG,
		                 "keys: %s is not broken down: it has no keys to choose", in->name);
	char *list = xstrdup(keys);
	const char *want[DATA_KEYS_MAX];
	size_t n = 0;
	int rc = 0;
	for (char *save = NULL, *k = strtok_r(list, ",", &save); k;
	     k = strtok_r(NULL, ",", &save)) {
		if (n == DATA_KEYS_MAX) {
			rc = fault_set(f, ERR_INVALID_ARG, "keys: at most %d", DATA_KEYS_MAX);
			break;
		}
		want[n++] = k;
	}
	if (!rc && n == 0)
		rc = fault_set(f, ERR_INVALID_ARG,
		               "keys: one or more of the dataset's keys, by commas");
	for (size_t i = 0; !rc && i < n; i++) {
		size_t j = 1;
		while (j < *nser && strcmp(series_key(ser[j]), want[i]) != 0)
			j++;
		if (j == *nser)
			rc = fault_set(
			    f, ERR_INVALID_ARG,
			    "keys: %s has no key '%.64s' (a second of its data lists the keys "
			    "it has now)",
			    in->name, want[i]);
	}
	if (!rc) {
		size_t kept = 1;
		for (size_t j = 1; j < *nser; j++) {
			bool in_list = false;
			for (size_t i = 0; i < n && !in_list; i++)
				in_list = strcmp(series_key(ser[j]), want[i]) == 0;
			if (in_list)
				ser[kept++] = ser[j];
			else
				series_unref(ser[j]);
		}
		*nser = kept;
	}
	free(list);
	return rc ? -1 : 0;
}

void analytics_dataset_data(struct request *r)
{
	static const char *const params[] = {"start", "seconds", "granularity", "points",
	                                     "meta",  "keys",    NULL};
	struct fault f;
	if (request_query_check(r, params, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	struct dataset *d = dataset_of(r);
	if (!d)
		return;

	int64_t now = series_now(), start = 0;
	long long seconds = 1, points = 0; /* the appliance's default: one second */
	bool relative = false;
	const char *s = request_query(r, "start"), *sec = request_query(r, "seconds");
	const char *g = request_query(r, "granularity"), *p = request_query(r, "points");
	if (s && parse_start(s, now, &start, &relative, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (sec && util_parse_ll(sec, 1, (long long)DATASETS_RETAIN_MAX * 3600, &seconds) < 0) {
		reply_error(r, ERR_INVALID_ARG, "seconds: a whole number from 1 to %lld",
		            (long long)DATASETS_RETAIN_MAX * 3600);
		return;
	}
	if (!sec && relative)
		seconds = now - start > 0 ? now - start : 1; /* -N alone: the last N seconds */
	if (!s)
		start = now - seconds; /* seconds alone: the last so many */
	if (start > now + DATA_MAX_AHEAD_S) {
		reply_error(r, ERR_INVALID_ARG, "start: more than %d seconds ahead of now",
		            DATA_MAX_AHEAD_S);
		return;
	}
	const char *m = request_query(r, "meta");
	if (m && strcmp(m, "true") != 0 && strcmp(m, "false") != 0) {
		reply_error(r, ERR_INVALID_ARG, "meta: true or false, not '%.32s'", m);
		return;
	}
	bool meta = m && strcmp(m, "true") == 0;
	if (p && util_parse_ll(p, 1, DATA_MAX_SAMPLES, &points) < 0) {
		reply_error(r, ERR_INVALID_ARG, "points: a whole number from 1 to %d",
		            DATA_MAX_SAMPLES);
		return;
	}
	struct series_retention ret;
	datasets_retention(&ret);
	struct dataset_info in;
	datasets_info(d, &in);
	struct series **ser;
	size_t nser = datasets_series(d, &ser);
	const char *keys = request_query(r, "keys");
	if (keys && data_keys(keys, &in, ser, &nser, &f) < 0) {
		for (size_t i = 0; i < nser; i++)
			series_unref(ser[i]);
		free(ser);
		reply_fault(r, &f);
		return;
	}
	int64_t gran;
	if (!g) {
		/* The finest granularity that gives at most an hour's worth of points, still holds
		 * the window's start, and whose answer fits one (samples x keys): an hour of a
		 * thousand disks' seconds is refused asked for, but answered by the minute. */
		gran = 3600;
		if (seconds <= 3600 * 60 && start >= now - ret.minute_h * 3600 &&
		    (int64_t)nser * data_buckets(start, seconds, points, 60) <= DATA_MAX_CELLS)
			gran = 60;
		if (seconds <= 3600 && start >= now - ret.second_h * 3600 &&
		    (int64_t)nser * data_buckets(start, seconds, points, 1) <= DATA_MAX_CELLS)
			gran = 1;
	} else if (strcmp(g, "second") == 0) {
		gran = 1;
	} else if (strcmp(g, "minute") == 0) {
		gran = 60;
	} else if (strcmp(g, "hour") == 0) {
		gran = 3600;
	} else {
		for (size_t i = 0; i < nser; i++)
			series_unref(ser[i]);
		free(ser);
		reply_error(r, ERR_INVALID_ARG, "granularity: second, minute or hour, not '%.32s'",
		            g);
		return;
	}

	int64_t a = start - start % gran, e = start + seconds;
	int64_t ngran = (e - a + gran - 1) / gran;
	int64_t per = points && points < ngran ? (ngran + points - 1) / points : 1;
	int64_t nbuckets = (ngran + per - 1) / per;
	if (nbuckets > DATA_MAX_SAMPLES || (int64_t)nser * nbuckets > DATA_MAX_CELLS) {
		for (size_t i = 0; i < nser; i++)
			series_unref(ser[i]);
		free(ser);
		reply_error(
		    r, ERR_INVALID_ARG,
		    "seconds: %lld samples of %s with %zu keys is more than one answer holds; "
		    "ask for fewer points, a coarser granularity or fewer keys (keys=)",
		    (long long)nbuckets, gran_name(gran), nser - 1);
		return;
	}

	struct data_req *dr = xcalloc(1, sizeof(*dr));
	dr->r = r;
	dr->dataset = in.id;
	dr->gran_name = gran_name(gran);
	dr->total = (size_t)nbuckets;
	/* The appliance answers one second with the sample itself. */
	dr->single = seconds == 1 && nbuckets == 1;
	dr->q.series = ser;
	dr->q.nseries = nser;
	dr->q.start = dr->wstart = a;
	dr->q.gran = gran;
	dr->q.width = per * gran;
	dr->q.end = a + ngran * gran; /* the last sample stops where the window does */
	/* What is complete now comes in one query; the rest streams. A window that ends by
	 * now is answered whole, its last bucket with what it holds so far. */
	dr->wend = e;
	int64_t done = e <= now ? nbuckets : (now - a) / dr->q.width;
	dr->q.nbuckets = (size_t)(done < 0 ? 0 : done > nbuckets ? nbuckets : done);
	dr->q.out = xcalloc(nser * (dr->q.nbuckets ? dr->q.nbuckets : 1), sizeof(*dr->q.out));

	/* A real appliance answers {"data": ...} and nothing beside it (pollers iterate the
	 * top level's values). What a chart needs to lay the samples out goes in "meta", before
	 * "data" so a stream can start with it, only when asked for with meta=true. */
	if (meta) {
		char iso[32], when[32];
		json_t *head = json_pack("{s:{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}}", "meta",
		                         "dataset", in.name, "unit", in.unit, "granularity",
		                         dr->gran_name, "sample_seconds", (json_int_t)dr->q.width,
		                         "start", util_iso8601(a, iso, sizeof(iso)), "startTime",
		                         compact_time(a, when, sizeof(when)), "sample",
		                         (json_int_t)a, "points", (json_int_t)nbuckets);
		/* {"meta":{...}} becomes {"meta":{...},"data":[ */
		json_dump_callback(head, dump_cb, &dr->out, JSON_COMPACT | JSON_PRESERVE_ORDER);
		json_decref(head);
		dr->out.len--;
		buf_add(&dr->out, ",", 1);
	} else {
		buf_add(&dr->out, "{", 1);
	}
	/* "data":[ on a line of its own, the stream's first */
	if (dr->single)
		buf_add(&dr->out, "\"data\":\n", 8);
	else
		buf_add(&dr->out, "\"data\":[\n", 9);

	dr->pending = true;
	series_query(&dr->q, data_ready, dr);
}
