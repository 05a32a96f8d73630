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
#include "base/hmap.h"
#include "base/util.h"
#include "base/workq.h"
#include "net/inflight.h"

#define A "/api/analytics/v1"
/* The largest answer: samples per request, and samples times keys shown; the numbers read
 * for one (samples times every key: top= ranks them, "other" sums those not shown). */
#define DATA_MAX_SAMPLES  86400
#define DATA_MAX_CELLS    2000000
#define DATA_MAX_WORK     8000000
#define DATA_CHUNK_CELLS  131072 /* numbers one query holds: bounds an answer's memory */
#define DATA_MAX_AHEAD_S  86400  /* how far ahead of now a window may start */
#define DATA_INLINE_CELLS 4000   /* numbers read on the loop; more: a heavy read (below) */
#define DATA_KEYS_MAX     256    /* keys= names at most this many */
#define DATA_TOP_MAX      1000

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
	char *name, *unit; /* the dataset's, for meta (it may go while a query runs) */
	bool meta;         /* meta=true */
	int64_t wstart;    /* the window's first bucket (q.start moves to the buckets queried) */
	int64_t width;     /* seconds per bucket */
	int64_t qend;      /* where the last bucket stops: the window's end, on the granularity */
	int64_t wend;      /* start + seconds: once now passes it, the last bucket goes as is */
	size_t next;       /* the first bucket not written yet */
	size_t done;       /* buckets complete when asked: answered at once, a chunk at a time */
	size_t total;      /* buckets in the window */
	size_t chunk;      /* buckets per query: DATA_CHUNK_CELLS numbers, at least one bucket */
	/* keys= or top=N: the keys shown (referenced, sorted by address), the others' values
	 * summed in each sample's "other"; NULL shows them all. keys lists them for meta, in
	 * the order asked or ranked. */
	struct series **shown;
	size_t nshown;
	json_t *keys;
	size_t top; /* top=N: the N keys ranked highest over the window, by their mean or max */
	bool by_max;
	bool pending;    /* a query in flight */
	bool subscribed; /* to the series store's commits */
	bool single;     /* a one-second request: "data" is the sample, not a list */
	size_t written;  /* samples written so far */
	bool in_pump;    /* data_pump() is on the stack: a query done at once returns to it */
	bool failed;     /* a bucket could not be read: the stream ends */
	/* A heavy read (more than DATA_INLINE_CELLS numbers): each query's out is cleared, its
	 * samples written and the answer gzipped and tagged on a helper thread, the loop only
	 * passing them on; it holds one of its user's --analytics-heavy-reads places until
	 * answered (or its stream starts). */
	bool heavy;
	bool counted;  /* the place is held */
	char user[65]; /* whose place */
	bool gzip;     /* the client takes gzip */
	bool sealed;   /* doc is the whole answer, made on a helper thread */
	struct made_doc doc;
	void (*qdone)(void *arg, int status); /* the query's, once out is cleared */
	size_t out_bytes;                     /* what q.out has room for */
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

static int by_address(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (struct series *const *)a;
	uintptr_t y = (uintptr_t) * (struct series *const *)b;
	return x < y ? -1 : x > y;
}

/* Appends the samples of q's buckets to out, each on a line of its own, a comma starting
 * all lines but the first sample's (*written counts them); with shown (nshown of them,
 * sorted by address), only those keys, the others' values summed in "other". Touches
 * nothing but its arguments: a helper thread may run it for a large answer (the series'
 * keys are immutable and referenced). */
static void write_samples(struct buf *out, size_t *written, const struct series_query *q,
                          struct series *const *shown, size_t nshown)
{
	struct keyval *kv = xcalloc(q->nseries, sizeof(*kv));
	char **prefix = xcalloc(q->nseries, sizeof(*prefix));
	bool *hide = xcalloc(q->nseries, sizeof(*hide));
	size_t longest = 0;
	for (size_t i = 1; i < q->nseries; i++) {
		if (shown && !bsearch(&q->series[i], shown, nshown, sizeof(*shown), by_address)) {
			hide[i] = true;
			continue;
		}
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
		double other = 0;
		for (size_t i = 1; i < q->nseries; i++) {
			const struct series_agg *a = &q->out[i * q->nbuckets + b];
			if (!a->count)
				continue;
			if (hide[i])
				other += a->sum / (double)a->count;
			else
				kv[n++] = (struct keyval){i, a->sum / (double)a->count,
				                          series_key(q->series[i])};
		}
		if (!tot->count && !n)
			continue; /* nothing was collected then */
		qsort(kv, n, sizeof(*kv), by_value_desc);
		/* room for the sample: its fixed part, and per key its prefix, a number, "}," */
		char *o = buf_room(out, 360 + n * (longest + 32)), when[32], iso[32];
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
		if (shown)
			o = put_num(o + sprintf(o, ",\"other\":"), other);
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
	free(hide);
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

/* The user's place is given back: the answer is made, or it streams (a sample a second). */
static void data_uncount(struct data_req *dr)
{
	if (dr->counted)
		inflight_put(dr->user);
	dr->counted = false;
}

static void data_free(struct data_req *dr)
{
	data_unsubscribe(dr);
	data_uncount(dr);
	free(dr->doc.body);
	free(dr->doc.gz);
	release_series(&dr->q);
	for (size_t i = 0; i < dr->nshown; i++)
		series_unref(dr->shown[i]);
	free(dr->shown);
	json_decref(dr->keys);
	free(dr->name);
	free(dr->unit);
	buf_free(&dr->out);
	free(dr);
}

static void data_flush(struct data_req *dr)
{
	if (dr->s && dr->out.len)
		stream_write(dr->s, dr->out.p, dr->out.len);
	dr->out.len = 0;
}

/* The query's out, zeroed: on a helper thread for a large one, whose megabytes (4 at
 * most) the loop would take a millisecond or more to clear. */
static void data_alloc(void *arg)
{
	struct data_req *dr = arg;
	size_t n = dr->q.nseries * (dr->q.nbuckets ? dr->q.nbuckets : 1) * sizeof(*dr->q.out);
	/* One allocation for all the chunks: a new one of megabytes each chunk was an mmap and
	 * a munmap on a helper thread, whose hold of the process's memory map, stretched by its
	 * low priority on a busy machine, stalled the loop's own page faults for tens of ms. */
	if (!dr->q.out || n > dr->out_bytes) { /* (release_series() frees it when keys change) */
		free(dr->q.out);
		dr->q.out = xmalloc(n);
		dr->out_bytes = n;
	}
	/* written here, not left to calloc's fresh pages: the loop would take their faults */
	memset(dr->q.out, 0, n);
}

static void data_run(void *arg)
{
	struct data_req *dr = arg;
	series_query_zeroed(&dr->q, dr->qdone, dr);
}

/* Asks for k buckets of the window from bucket first on, with the keys in q.series. */
static void data_query(struct data_req *dr, size_t first, size_t k,
                       void (*done)(void *arg, int status))
{
	dr->q.start = dr->wstart + (int64_t)first * dr->width;
	dr->q.width = dr->width;
	dr->q.end = dr->qend;
	dr->q.nbuckets = k;
	dr->qdone = done;
	dr->pending = true;
	struct workq *wq = auth_workq();
	if (dr->q.nseries * k > DATA_INLINE_CELLS && wq &&
	    workq_submit(wq, data_alloc, data_run, dr) == 0)
		return;
	data_alloc(dr);
	data_run(dr);
}

/* Whether bucket i of the window is complete: its last second committed, or, the last
 * one, the window's end passed. */
static bool data_complete(const struct data_req *dr, size_t i)
{
	bool last = i + 1 == dr->total;
	int64_t bend = last ? dr->qend : dr->wstart + (int64_t)(i + 1) * dr->width;
	return bend <= series_now() || (last && dr->wend <= series_now());
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
		write_samples(&dr->out, &dr->written, &dr->q, dr->shown, dr->nshown);
		data_flush(dr);
		dr->next += dr->q.nbuckets;
	}
	if (!dr->in_pump)
		data_pump(dr);
}

/* Sends the buckets completed since the last call, a chunk per query (most are answered
 * from memory at once); ends the stream after the last one. */
static void data_pump(struct data_req *dr)
{
	dr->in_pump = true;
	while (!dr->pending) {
		const struct dataset *d = datasets_find_id(dr->dataset);
		if (!dr->s || dr->failed || dr->next >= dr->total || !d) {
			dr->in_pump = false;
			data_stream_end(dr); /* may free dr */
			return;
		}
		size_t k = 0;
		while (k < dr->chunk && dr->next + k < dr->total && data_complete(dr, dr->next + k))
			k++;
		if (!k)
			break; /* not complete yet: the next commit asks again */
		/* The dataset's keys now: a disk that appeared meanwhile shows up (in "other"
		 * when only some are shown). */
		release_series(&dr->q);
		dr->q.nseries = datasets_series(d, &dr->q.series);
		data_query(dr, dr->next, k, bucket_done);
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

static void data_ready(void *arg, int status);

/* A chunk of the samples is written: ask for the next, answer them whole, or start the
 * stream with them. */
static void data_answer(void *arg)
{
	struct data_req *dr = arg;
	struct request *r = dr->r;
	dr->next += dr->q.nbuckets;
	if (dr->next < dr->done) {
		size_t k = dr->done - dr->next;
		data_query(dr, dr->next, k < dr->chunk ? k : dr->chunk, data_ready);
		return;
	}
	if (dr->next >= dr->total) {
		reply_header(r, "Cache-Control", "no-store");
		if (dr->sealed) {
			reply_made(r, 200, &dr->doc);
		} else {
			data_close(dr);
			reply_raw(r, 200, "application/json", dr->out.p, dr->out.len);
		}
		data_free(dr);
		return;
	}
	/* A window reaching past now: each sample follows as it is taken. Heartbeats are
	 * blank lines, which JSON ignores. A sample a second is no heavy read. */
	data_uncount(dr);
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
	write_samples(&dr->out, &dr->written, &dr->q, dr->shown, dr->nshown);
	if (!dr->heavy || dr->next + dr->q.nbuckets < dr->total)
		return;
	/* The last chunk of an answer given whole: closed, gzipped and tagged here too, so
	 * that the loop only hands its bytes over. */
	data_close(dr);
	made_doc_init(&dr->doc, dr->out.p, dr->out.len, dr->gzip);
	dr->out = (struct buf){0};
	dr->sealed = true;
}

/* A query before the answer started is done: true when the disk could not be read (the
 * request is answered so, and dr freed). */
static bool data_unread(struct data_req *dr, int status)
{
	dr->pending = false;
	if (status >= 0)
		return false;
	reply_error(dr->r, ERR_BUSY, "data: the stored samples cannot be read now");
	data_free(dr);
	return true;
}

/* A chunk of the window is in. A heavy read's (a day of 64 disks by minute is 92,000
 * numbers) is written on a helper thread, however small this chunk: the loop never spends
 * long on one request; the request is not touched meanwhile. */
static void data_ready(void *arg, int status)
{
	struct data_req *dr = arg;
	if (data_unread(dr, status))
		return;
	struct workq *wq = auth_workq();
	if (dr->heavy && wq && workq_submit(wq, data_format, data_answer, dr) == 0)
		return;
	data_format(dr);
	data_answer(dr);
}

/* The answer's start: meta when asked for (with the keys shown, once known), then
 * "data", and the first chunk asked for. */
static void data_start(struct data_req *dr)
{
	/* A real appliance answers {"data": ...} and nothing beside it (pollers iterate the
	 * top level's values). What a chart needs to lay the samples out goes in "meta", before
	 * "data" so a stream can start with it, only when asked for with meta=true. */
	if (dr->meta) {
		char iso[32], when[32];
		json_t *head = json_pack(
		    "{s:{s:s, s:s, s:s, s:I, s:s, s:s, s:I, s:I}}", "meta", "dataset", dr->name,
		    "unit", dr->unit, "granularity", dr->gran_name, "sample_seconds",
		    (json_int_t)dr->width, "start", util_iso8601(dr->wstart, iso, sizeof(iso)),
		    "startTime", compact_time(dr->wstart, when, sizeof(when)), "sample",
		    (json_int_t)dr->wstart, "points", (json_int_t)dr->total);
		if (dr->keys) {
			json_object_set(json_object_get(head, "meta"), "keys", dr->keys);
			json_object_set_new(
			    json_object_get(head, "meta"), "other_keys",
			    json_integer((json_int_t)(dr->q.nseries - 1 - dr->nshown)));
		}
		if (dr->top) {
			json_object_set_new(json_object_get(head, "meta"), "top",
			                    json_integer((json_int_t)dr->top));
			json_object_set_new(json_object_get(head, "meta"), "by",
			                    json_string(dr->by_max ? "max" : "mean"));
		}
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
	data_query(dr, 0, dr->done < dr->chunk ? dr->done : dr->chunk, data_ready);
}

/* The keys shown (n of them, referenced, in the order asked or ranked): noted for meta,
 * and sorted by address for write_samples. */
static void data_show(struct data_req *dr, struct series **shown, size_t n)
{
	dr->keys = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(dr->keys, json_string(series_key(shown[i])));
	qsort(shown, n, sizeof(*shown), by_address);
	dr->shown = shown;
	dr->nshown = n;
}

/* top=N: the window's mean (or max) of each key is in, one bucket of the whole: the N
 * highest are shown, ties by name. Keys without a value there are not. */
static void data_ranked(void *arg, int status)
{
	struct data_req *dr = arg;
	if (data_unread(dr, status))
		return;
	struct keyval *kv = xcalloc(dr->q.nseries, sizeof(*kv));
	size_t n = 0;
	for (size_t i = 1; i < dr->q.nseries; i++) {
		const struct series_agg *a = &dr->q.out[i];
		if (a->count)
			kv[n++] =
			    (struct keyval){i, dr->by_max ? a->max : a->sum / (double)a->count,
			                    series_key(dr->q.series[i])};
	}
	qsort(kv, n, sizeof(*kv), by_value_desc);
	if (n > dr->top)
		n = dr->top;
	struct series **shown = xcalloc(n ? n : 1, sizeof(*shown));
	for (size_t i = 0; i < n; i++) {
		shown[i] = dr->q.series[kv[i].series];
		series_ref(shown[i]);
	}
	free(kv);
	data_show(dr, shown, n);
	data_start(dr);
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

/* Whether an answer of nb samples fits: its samples, its numbers (akeys keys shown, and
 * the total), and the numbers read for it (every one of nser series: top= ranks them all,
 * "other" sums those not shown). */
static bool data_fits(int64_t nb, size_t nser, size_t akeys)
{
	return nb <= DATA_MAX_SAMPLES && nb * (int64_t)(akeys + 1) <= DATA_MAX_CELLS &&
	       nb * (int64_t)nser <= DATA_MAX_WORK;
}

/* keys=a,b,c: those of the dataset's keys (in ser[1..nser)), referenced, in the order
 * asked, each once. 0 with *shown and *nshown, or -1 with f naming the key the dataset
 * has not seen. */
static int data_keys(const char *keys, const struct dataset_info *in, struct series *const *ser,
                     size_t nser, struct series ***shown, size_t *nshown, struct fault *f)
{
	if (!in->drilldown)
		return fault_set(f, ERR_INVALID_ARG,
		                 "keys: %s is not broken down: it has no keys to choose", in->name);
	char *list = xstrdup(keys);
	struct series **out = xcalloc(DATA_KEYS_MAX, sizeof(*out));
	struct hmap at = {0}; /* key -> its index in ser (the total, ser[0], is no key) */
	bool *taken = xcalloc(nser, sizeof(*taken));
	for (size_t j = 1; j < nser; j++)
		hmap_index_put(&at, series_key(ser[j]), j);
	size_t n = 0, asked = 0;
	int rc = 0;
	for (char *save = NULL, *k = strtok_r(list, ",", &save); k && !rc;
	     k = strtok_r(NULL, ",", &save)) {
		if (++asked > DATA_KEYS_MAX) {
			rc = fault_set(f, ERR_INVALID_ARG, "keys: at most %d", DATA_KEYS_MAX);
			break;
		}
		long j = hmap_index_get(&at, k);
		if (j < 0) {
			rc =
			    fault_set(f, ERR_INVALID_ARG,
			              "keys: %s has no key '%.64s' (a second of its data lists the "
			              "keys it has now)",
			              in->name, k);
			break;
		}
		if (!taken[j]) {
			taken[j] = true;
			series_ref(ser[j]);
			out[n++] = ser[j];
		}
	}
	hmap_clear(&at, NULL);
	free(taken);
	if (!rc && n == 0)
		rc = fault_set(f, ERR_INVALID_ARG,
		               "keys: one or more of the dataset's keys, by commas");
	free(list);
	if (rc) {
		for (size_t i = 0; i < n; i++)
			series_unref(out[i]);
		free(out);
		return -1;
	}
	*shown = out;
	*nshown = n;
	return 0;
}

static void unref_all(struct series **ser, size_t n)
{
	for (size_t i = 0; i < n; i++)
		series_unref(ser[i]);
	free(ser);
}

void analytics_dataset_data(struct request *r)
{
	struct fault f;
	struct dataset *d = dataset_of(r);
	if (!d)
		return;

	int64_t now = series_now(), start = 0;
	long long seconds = 1, points = 0, top = 0; /* the appliance's default: one second */
	bool relative = false;
	const char *s = request_query(r, "start"), *sec = request_query(r, "seconds");
	const char *g = request_query(r, "granularity"), *p = request_query(r, "points");
	const char *keys = request_query(r, "keys"), *tp = request_query(r, "top");
	const char *by = request_query(r, "by");
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
	if (g && strcmp(g, "second") != 0 && strcmp(g, "minute") != 0 && strcmp(g, "hour") != 0) {
		reply_error(r, ERR_INVALID_ARG, "granularity: second, minute or hour, not '%.32s'",
		            g);
		return;
	}
	if (tp && util_parse_ll(tp, 1, DATA_TOP_MAX, &top) < 0) {
		reply_error(r, ERR_INVALID_ARG, "top: a whole number from 1 to %d", DATA_TOP_MAX);
		return;
	}
	if (by && !tp) {
		reply_error(r, ERR_INVALID_ARG, "by: orders top=N; give top as well");
		return;
	}
	if (by && strcmp(by, "mean") != 0 && strcmp(by, "max") != 0) {
		reply_error(r, ERR_INVALID_ARG, "by: mean or max, not '%.32s'", by);
		return;
	}
	if (tp && keys) {
		reply_error(r, ERR_INVALID_ARG,
		            "top: keys= names the keys shown, top=N ranks them: not both");
		return;
	}
	struct series_retention ret;
	datasets_retention(&ret);
	struct dataset_info in;
	datasets_info(d, &in);
	if (tp && !in.drilldown) {
		reply_error(r, ERR_INVALID_ARG,
		            "top: %s is not broken down: it has no keys to rank", in.name);
		return;
	}
	struct series **ser, **shown = NULL;
	size_t nser = datasets_series(d, &ser), nshown = 0;
	if (keys && data_keys(keys, &in, ser, nser, &shown, &nshown, &f) < 0) {
		unref_all(ser, nser);
		reply_fault(r, &f);
		return;
	}
	/* the keys an answer shows */
	size_t akeys = keys ? nshown : top && (size_t)top < nser - 1 ? (size_t)top : nser - 1;
	int64_t gran;
	if (!g) {
		/* The finest granularity that gives at most an hour's worth of points, still holds
		 * the window's start, and whose answer fits one: an hour of a thousand disks'
		 * seconds is refused asked for, but answered by the minute (or, for the few
		 * largest, top=N, by the second). */
		gran = 3600;
		if (seconds <= 3600 * 60 && start >= now - ret.minute_h * 3600 &&
		    data_fits(data_buckets(start, seconds, points, 60), nser, akeys))
			gran = 60;
		if (seconds <= 3600 && start >= now - ret.second_h * 3600 &&
		    data_fits(data_buckets(start, seconds, points, 1), nser, akeys))
			gran = 1;
	} else {
		gran = strcmp(g, "second") == 0 ? 1 : strcmp(g, "minute") == 0 ? 60 : 3600;
	}

	int64_t a = start - start % gran, e = start + seconds;
	int64_t ngran = (e - a + gran - 1) / gran;
	int64_t per = points && points < ngran ? (ngran + points - 1) / points : 1;
	int64_t nbuckets = (ngran + per - 1) / per;
	if (!data_fits(nbuckets, nser, akeys)) {
		unref_all(ser, nser);
		unref_all(shown, nshown);
		reply_error(
		    r, ERR_INVALID_ARG,
		    "seconds: %lld samples of %s with %zu keys is more than one answer holds; "
		    "ask for fewer points, a coarser granularity, fewer keys (keys=) or the "
		    "largest few (top=N)",
		    (long long)nbuckets, gran_name(gran), nser - 1);
		return;
	}

	/* A read of more numbers than the loop reads itself is heavy: a user has at most
	 * --analytics-heavy-reads of them in flight, so that one account's sessions cannot
	 * keep the helper threads (and the loop's turns between them) from everyone else. */
	bool heavy = (int64_t)nser * nbuckets > DATA_INLINE_CELLS;
	if (heavy && inflight_take(r->who.user) < 0) {
		unref_all(ser, nser);
		unref_all(shown, nshown);
		fault_set(
		    &f, ERR_TOO_MANY,
		    "data: %s has %d heavy reads (more than %d numbers) in flight, as many as "
		    "--analytics-heavy-reads lets one user have; ask again once one is "
		    "answered, or for fewer samples or keys",
		    r->who.user, inflight_limit(), DATA_INLINE_CELLS);
		f.retry_after = 1;
		reply_fault(r, &f);
		return;
	}

	struct data_req *dr = xcalloc(1, sizeof(*dr));
	dr->r = r;
	dr->heavy = heavy;
	dr->counted = heavy;
	snprintf(dr->user, sizeof(dr->user), "%s", r->who.user);
	dr->gzip = request_accepts_gzip(r);
	dr->dataset = in.id;
	dr->name = xstrdup(in.name);
	dr->unit = xstrdup(in.unit);
	dr->meta = meta;
	dr->gran_name = gran_name(gran);
	dr->total = (size_t)nbuckets;
	/* The appliance answers one second with the sample itself. */
	dr->single = seconds == 1 && nbuckets == 1;
	dr->q.series = ser;
	dr->q.nseries = nser;
	dr->q.gran = gran;
	dr->wstart = a;
	dr->width = per * gran;
	dr->qend = a + ngran * gran; /* the last sample stops where the window does */
	dr->wend = e;
	/* What is complete now is answered at once, a chunk of buckets per query (memory
	 * stays bounded whatever the window); the rest streams. A window that ends by now is
	 * answered whole, its last bucket with what it holds so far. */
	int64_t done = e <= now ? nbuckets : (now - a) / dr->width;
	dr->done = (size_t)(done < 0 ? 0 : done > nbuckets ? nbuckets : done);
	dr->chunk = DATA_CHUNK_CELLS / nser ? DATA_CHUNK_CELLS / nser : 1;
	if (keys)
		data_show(dr, shown, nshown);
	dr->top = (size_t)top;
	dr->by_max = by && strcmp(by, "max") == 0;
	if (!top) {
		data_start(dr);
		return;
	}
	/* top=N: the keys ranked first, over the part of the window complete now, or for a
	 * window wholly ahead, the same span just before now. */
	int64_t span = dr->qend - a, from = a;
	if (dr->done && (int64_t)dr->done * dr->width < span)
		span = (int64_t)dr->done * dr->width;
	else if (!dr->done)
		from = now - now % gran - span;
	dr->q.start = from;
	dr->q.width = span;
	dr->q.end = from + span;
	dr->q.nbuckets = 1;
	dr->q.out = xcalloc(nser, sizeof(*dr->q.out));
	dr->out_bytes = nser * sizeof(*dr->q.out);
	dr->pending = true;
	series_query(&dr->q, data_ranked, dr);
}
