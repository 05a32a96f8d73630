/* SPDX-License-Identifier: ISC */
/* The dashboard document and its event streams. The document is rebuilt on the loop when
 * the collector announces a sample, kept as bytes (and gzipped, for polls that take it),
 * and served from there: a poll or a push never touches /proc, the database or jansson. */
#include "dashboard.h"
#include "access/auth.h"
#include "analytics/capacity.h"
#include "analytics/collector.h"
#include "analytics/datasets.h"
#include "base/gzip.h"
#include "base/log.h"
#include "bench/jobs.h"
#include "hardware/leds.h"
#include "hardware/problems.h"
#include "inventory/storage.h"
#include "analytics/series.h"
#include "net/stream.h"
#include "base/util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/sysinfo.h>

#include <event2/event.h>
#include <zlib.h>

#define SSE_RETRY_MS 2000

/* The sparklines: for each headline figure, the mean of each of the last SPARK_MINUTES
 * minutes, fed by every tick into a ring of minute accumulators (a few additions a
 * second). The same figures as the appliance datasets' totals the tiles open, so the
 * minutes before a restart are read back from their rollups at start. */
#define SPARK_MINUTES 60
enum spark_fig { SPARK_IOPS, SPARK_KB_S, SPARK_CPU, SPARK_NIC_KB_S, SPARK_FIGS };

static const struct {
	const char *key;     /* in the document */
	const char *dataset; /* whose total is the same figure, per second */
	double scale;        /* from the dataset's unit to the document's */
} spark_figs[SPARK_FIGS] = {
    [SPARK_IOPS] = {"iops", "io.ops", 1},
    [SPARK_KB_S] = {"kb_s", "io.bytes", 1.0 / 1024},
    [SPARK_CPU] = {"cpu", "cpu.utilization", 1},
    [SPARK_NIC_KB_S] = {"nic_kb_s", "nic.kilobytes", 1},
};

struct spark_minute {
	int64_t minute; /* epoch minute the slot holds */
	double sum[SPARK_FIGS];
	uint32_t n[SPARK_FIGS]; /* seconds with a value */
};

#define PROBLEMS_RECENT 5 /* the newest open problems the document lists */
#define DASH_DISKS      8 /* the busiest disks the document lists */

struct sse_client {
	LIST_ENTRY(sse_client) link;
	struct stream *s;
	char *token; /* re-checked before every send: a revoked session stops its stream */
};

/* A document served as bytes: built once per sample that a request or stream reads,
 * gzipped once per build that a poll taking gzip reads. */
struct doc {
	struct dashboard_doc d;
	char tag;   /* in its ETags: one document's tag never matches another's */
	char *body; /* the JSON and a newline */
	char etag[48];
	unsigned char *gz; /* the body gzipped, or NULL */
	char etag_gz[52];
	uint64_t seq; /* the sample the document shows; 0: none yet */
};

static struct {
	struct event_base *base;
	struct event *heartbeat;
	bool subscribed;
	char nonce[9];    /* differs per daemon run, so an old ETag never matches a new document */
	struct doc main;  /* the dashboard */
	struct doc disks; /* every disk's figures */
	struct spark_minute spark[SPARK_MINUTES]; /* slot: minute % SPARK_MINUTES */
	int64_t built_at;                         /* wall second of a sample-less build */
	LIST_HEAD(sse_clients, sse_client) clients;
	struct stream_fanout fanout; /* the same streams, to send each event to all */
} dash;

/* ---- the document */

/* Rounded half up; the values are rates and shares, never negative (a NaN becomes 0).
 * By hand, so the daemon needs no libm for it. */
static double round_pos(double v)
{
	return v > 0 && v < 9e15 ? (double)(long long)(v + 0.5) : 0;
}

/* Rounded to 1/scale; a whole number prints without ".0" (the document is for phones). */
static json_t *num(double v, double scale)
{
	double r = round_pos(v * scale);
	if (r == (double)(long long)(r / scale) * scale)
		return json_integer((json_int_t)(r / scale));
	return json_real(r / scale);
}

static json_t *bytes(double v)
{
	return json_integer((json_int_t)round_pos(v));
}

static json_t *dash_cpu(const struct box_sample *s)
{
	const double *p = s->cpu_pct;
	double idle = p[CPU_IDLE] + p[CPU_IOWAIT];
	return json_pack("{s:o, s:o, s:o, s:o}", "busy_pct", num(100.0 - idle, 10), "user_pct",
	                 num(p[CPU_USER] + p[CPU_NICE], 10), "system_pct",
	                 num(p[CPU_SYSTEM] + p[CPU_IRQ] + p[CPU_SOFTIRQ], 10), "iowait_pct",
	                 num(p[CPU_IOWAIT], 10));
}

static json_t *disk_json(const struct disk_sample *d)
{
	return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "n", d->name, "r_ops_s",
	                 num(d->reads_per_s, 10), "w_ops_s", num(d->writes_per_s, 10), "r_b_s",
	                 bytes(d->read_bytes_per_s), "w_b_s", bytes(d->write_bytes_per_s), "r_ms",
	                 num(d->read_latency_ms, 1000), "w_ms", num(d->write_latency_ms, 1000),
	                 "busy_pct", num(d->busy_pct, 10));
}

/* Busiest first: the larger share of the second with I/O in flight, then more operations,
 * then by name. */
static int by_busy(const void *a, const void *b)
{
	const struct disk_sample *x = *(const struct disk_sample *const *)a;
	const struct disk_sample *y = *(const struct disk_sample *const *)b;
	if (x->busy_pct != y->busy_pct)
		return x->busy_pct < y->busy_pct ? 1 : -1;
	double ox = x->reads_per_s + x->writes_per_s, oy = y->reads_per_s + y->writes_per_s;
	if (ox != oy)
		return ox < oy ? 1 : -1;
	return strcmp(x->name, y->name);
}

/* The DASH_DISKS busiest disks, busiest first: the document stays small on a box of a
 * thousand (every disk: dashboard_disks()). One pass, keeping the best few in order. */
static json_t *dash_disks(const struct box_sample *s)
{
	const struct disk_sample *best[DASH_DISKS];
	int n = 0;
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		if (n == DASH_DISKS && by_busy(&d, &best[n - 1]) >= 0)
			continue;
		int j = n < DASH_DISKS ? n++ : n - 1;
		for (; j > 0 && by_busy(&d, &best[j - 1]) < 0; j--)
			best[j] = best[j - 1];
		best[j] = d;
	}
	json_t *arr = json_array();
	for (int i = 0; i < n; i++)
		json_array_append_new(arr, disk_json(best[i]));
	return arr;
}

/* All disks together: operations and bytes per second, and the mean latency per operation
 * (each disk's weighted by its operations). */
static json_t *dash_io(const struct box_sample *s)
{
	double r = 0, w = 0, rb = 0, wb = 0, rt = 0, wt = 0;
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		r += d->reads_per_s;
		w += d->writes_per_s;
		rb += d->read_bytes_per_s;
		wb += d->write_bytes_per_s;
		rt += d->reads_per_s * d->read_latency_ms;
		wt += d->writes_per_s * d->write_latency_ms;
	}
	return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o}", "r_ops_s", num(r, 10), "w_ops_s",
	                 num(w, 10), "r_b_s", bytes(rb), "w_b_s", bytes(wb), "r_ms",
	                 num(r > 0 ? rt / r : 0, 1000), "w_ms", num(w > 0 ? wt / w : 0, 1000));
}

/* NIC totals in KB/s; the loopback device is traffic of the box with itself, and a bond's
 * or a VLAN's bytes are its lower links' already. */
static void nic_totals(const struct box_sample *s, double *rx, double *tx)
{
	*rx = *tx = 0;
	for (int i = 0; i < s->nnics; i++) {
		if (strcmp(s->nics[i].name, "lo") == 0 || s->nics[i].stacked)
			continue;
		*rx += s->nics[i].rx_kb_per_s;
		*tx += s->nics[i].tx_kb_per_s;
	}
}

static json_t *dash_nics(const struct box_sample *s)
{
	double rx, tx;
	nic_totals(s, &rx, &tx);
	return json_pack("{s:o, s:o}", "rx", num(rx, 10), "tx", num(tx, 10));
}

/* ---- capacity, problems, sparklines */

static json_t *dash_capacity(void)
{
	json_t *arr = json_array();
	const struct capacity *c = capacity_latest();
	for (size_t i = 0; c && i < c->nfs; i++) {
		const struct capacity_fs *f = &c->fs[i];
		json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I}", "n", f->name,
		                                     "type", f->type, "size", (json_int_t)f->size,
		                                     "used", (json_int_t)f->used, "avail",
		                                     (json_int_t)f->avail));
	}
	return arr;
}

/* The pools as zpool lists them, with their size; else as the kernel's kstats name them. */
static json_t *dash_pools(void)
{
	size_t n;
	const struct storage_pool *p = storage_pools(&n);
	if (n) {
		json_t *arr = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(arr, json_pack("{s:s, s:s, s:I, s:I, s:I}", "n",
			                                     p[i].name, "state", p[i].health,
			                                     "size", (json_int_t)p[i].size, "used",
			                                     (json_int_t)p[i].allocated, "avail",
			                                     (json_int_t)p[i].available));
		return arr;
	}
	const struct capacity *c = capacity_latest();
	if (!c || !c->npools)
		return NULL;
	json_t *arr = json_array();
	for (size_t i = 0; i < c->npools; i++)
		json_array_append_new(arr, json_pack("{s:s, s:s}", "n", c->pools[i].name, "state",
		                                     c->pools[i].state));
	return arr;
}

/* The figures of one sample, as the datasets' totals: NaN where the sample has none. */
static void spark_values(const struct box_sample *s, double v[SPARK_FIGS])
{
	double ops = 0, byte_s = 0, rx, tx, cpu_all = 0;
	for (int i = 0; i < s->ndisks; i++) {
		ops += s->disks[i].reads_per_s + s->disks[i].writes_per_s;
		byte_s += s->disks[i].read_bytes_per_s + s->disks[i].write_bytes_per_s;
	}
	nic_totals(s, &rx, &tx);
	for (int m = 0; m < CPU_MODES; m++)
		cpu_all += s->cpu_pct[m];
	v[SPARK_IOPS] = ops;
	v[SPARK_KB_S] = byte_s / 1024;
	v[SPARK_CPU] = cpu_all > 0 ? 100 - s->cpu_pct[CPU_IDLE] : NAN; /* no /proc/stat */
	v[SPARK_NIC_KB_S] = rx + tx;
}

static struct spark_minute *spark_slot(int64_t minute)
{
	struct spark_minute *m = &dash.spark[minute % SPARK_MINUTES];
	if (m->minute != minute) {
		memset(m, 0, sizeof(*m));
		m->minute = minute;
	}
	return m;
}

static void spark_add(const struct box_sample *s)
{
	double v[SPARK_FIGS];
	spark_values(s, v);
	/* The sample ends at s->time: its second starts one before (as the datasets file it). */
	struct spark_minute *m = spark_slot((s->time - 1) / 60);
	for (int f = 0; f < SPARK_FIGS; f++) {
		if (!isnan(v[f])) {
			m->sum[f] += v[f];
			m->n[f]++;
		}
	}
}

/* The last SPARK_MINUTES minutes up to now's, oldest first: each minute's mean, rounded;
 * null for a minute without a value. */
static json_t *dash_spark(int64_t now)
{
	json_t *o = json_object();
	int64_t last = (now - 1) / 60;
	for (int f = 0; f < SPARK_FIGS; f++) {
		json_t *a = json_array();
		for (int64_t minute = last - SPARK_MINUTES + 1; minute <= last; minute++) {
			const struct spark_minute *m = &dash.spark[minute % SPARK_MINUTES];
			json_array_append_new(
			    a, m->minute == minute && m->n[f]
			           ? json_integer((json_int_t)round_pos(m->sum[f] / m->n[f]))
			           : json_null());
		}
		json_object_set_new(o, spark_figs[f].key, a);
	}
	return o;
}

/* Seeding the ring from what the analytics stored before this start: one query of the
 * four datasets' totals by minute, up to now. The ticks only add seconds after it, so the
 * two add up (the current minute too) without counting a second twice. */
struct spark_seed {
	struct series_query q;
	struct series *series[SPARK_FIGS];
	int fig[SPARK_FIGS];
	struct series_agg out[SPARK_FIGS * SPARK_MINUTES];
};

static void spark_seeded(void *arg, int status)
{
	struct spark_seed *sd = arg;
	size_t filled = 0;
	for (size_t i = 0; status == 0 && i < sd->q.nseries; i++) {
		int f = sd->fig[i];
		for (size_t b = 0; b < sd->q.nbuckets; b++) {
			const struct series_agg *a = &sd->out[i * sd->q.nbuckets + b];
			int64_t minute = sd->q.start / 60 + (int64_t)b;
			if (!a->count || dash.spark[minute % SPARK_MINUTES].minute > minute)
				continue; /* nothing stored, or an hour went by meanwhile */
			struct spark_minute *m = spark_slot(minute);
			m->sum[f] += a->sum * spark_figs[f].scale;
			m->n[f] += (uint32_t)a->count;
			filled++;
		}
	}
	for (size_t i = 0; i < sd->q.nseries; i++)
		series_unref(sd->series[i]);
	log_debug("dashboard: sparklines seeded with %zu minute values of the analytics", filled);
	free(sd);
}

static void spark_seed(void)
{
	struct spark_seed *sd = xcalloc(1, sizeof(*sd));
	for (int f = 0; f < SPARK_FIGS; f++) {
		struct dataset *d = datasets_find(spark_figs[f].dataset);
		struct series **all = NULL;
		size_t n = d ? datasets_series(d, &all) : 0;
		for (size_t i = 0; i < n; i++) {
			if (i == 0) { /* the total */
				sd->fig[sd->q.nseries] = f;
				sd->series[sd->q.nseries++] = all[0];
			} else {
				series_unref(all[i]);
			}
		}
		free(all);
	}
	if (!sd->q.nseries) {
		free(sd);
		return;
	}
	/* Seconds before now only: the collector's first sample is of a later one. */
	int64_t now = util_now();
	sd->q.series = sd->series;
	sd->q.start = (now / 60 - (SPARK_MINUTES - 1)) * 60;
	sd->q.gran = 60;
	sd->q.width = 60;
	sd->q.nbuckets = SPARK_MINUTES;
	sd->q.end = now;
	sd->q.out = sd->out;
	series_query(&sd->q, spark_seeded, sd);
}

static json_int_t box_uptime(void)
{
	struct sysinfo si;
	return sysinfo(&si) == 0 ? (json_int_t)si.uptime : 0;
}

static json_t *dash_json(const struct box_sample *s)
{
	char when[32];
	unsigned running = 0, queued = 0;
	jobs_counts(&running, &queued);
	json_t *d =
	    json_pack("{s:s?, s:s, s:I, s:{s:I, s:I}, s:I, s:I}", "time",
	              s ? util_iso8601(s->time, when, sizeof(when)) : NULL, "version",
	              PACKAGE_VERSION, "uptime_s", box_uptime(), "jobs", "running",
	              (json_int_t)running, "queued", (json_int_t)queued, "leds_lit",
	              (json_int_t)leds_lit_count(), "problems", (json_int_t)problems_count());
	json_object_set_new(d, "problems_recent", problems_recent_json(PROBLEMS_RECENT));
	json_object_set_new(d, "capacity", dash_capacity());
	json_t *pools = dash_pools();
	if (pools)
		json_object_set_new(d, "pools", pools);
	json_object_set_new(d, "spark", dash_spark(s ? s->time : util_now()));
	if (!s)
		return d;
	json_object_set_new(d, "ncpus", json_integer(s->ncpus));
	json_object_set_new(d, "cpu", dash_cpu(s));
	json_object_set_new(d, "mem_bytes",
	                    json_pack("{s:I, s:I, s:I, s:I}", "total", (json_int_t)s->mem_total,
	                              "used", (json_int_t)s->mem_used, "cache",
	                              (json_int_t)(s->mem_cache + s->mem_buffers), "free",
	                              (json_int_t)s->mem_free));
	json_object_set_new(d, "io", dash_io(s));
	json_object_set_new(d, "ndisks", json_integer(s->ndisks));
	json_object_set_new(d, "disks", dash_disks(s));
	json_object_set_new(d, "nic_kb_s", dash_nics(s));
	if (s->have_arc)
		json_object_set_new(d, "arc_hit_pct", num(s->arc_hit_pct, 10));
	return d;
}

/* The document gzipped (some 50 us at zlib's default level for the dashboard: with its
 * sparklines and a busy box's figures it is several KB as text, well under 2 as gzip). */
static void doc_gzip(struct doc *c)
{
	free(c->gz);
	c->gz = NULL;
	c->d.gz = NULL;
	size_t len;
	unsigned char *out = gzip_bytes(c->d.body, c->d.len, Z_DEFAULT_COMPRESSION, &len);
	if (!out)
		return;
	c->gz = out;
	c->d.gz = out;
	c->d.gz_len = len;
	snprintf(c->etag_gz, sizeof(c->etag_gz), "\"%s%c-%llu-gz\"", dash.nonce, c->tag,
	         (unsigned long long)c->d.generation);
	c->d.etag_gz = c->etag_gz;
}

/* Makes j (consumed) the document's bytes; on failure the last ones stay. */
static void doc_set(struct doc *c, json_t *j)
{
	/* Rounded above; this precision only keeps 0.1 from printing as 0.10000000000000001. */
	char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
	json_decref(j);
	if (!text) {
		log_warn("dashboard: cannot encode a document; keeping the last one");
		return;
	}
	c->d.generation++;
	snprintf(c->etag, sizeof(c->etag), "\"%s%c-%llu\"", dash.nonce, c->tag,
	         (unsigned long long)c->d.generation);
	free(c->body);
	c->body = xasprintf("%s\n", text);
	free(text);
	c->d.body = c->body;
	c->d.len = strlen(c->body);
	c->d.etag = c->etag;
	free(c->gz); /* gzipped again when a poll takes it */
	c->gz = NULL;
	c->d.gz = NULL;
}

static const struct dashboard_doc *doc_served(struct doc *c, bool gz)
{
	if (gz && c->body && !c->d.gz)
		doc_gzip(c);
	return c->body ? &c->d : NULL;
}

static void doc_free(struct doc *c)
{
	free(c->body);
	free(c->gz);
	c->body = NULL;
	c->gz = NULL;
	memset(&c->d, 0, sizeof(c->d));
	c->seq = 0;
}

const struct dashboard_doc *dashboard_current(bool gz)
{
	const struct box_sample *s = collector_latest();
	if (s) {
		if (s->seq != dash.main.seq || !dash.main.body) {
			dash.main.seq = s->seq;
			doc_set(&dash.main, json_pack("{s:o}", "dashboard", dash_json(s)));
		}
	} else if (!dash.main.body || dash.built_at != util_now()) {
		/* No sample yet: uptime and counts still move, once a second. */
		dash.built_at = util_now();
		doc_set(&dash.main, json_pack("{s:o}", "dashboard", dash_json(NULL)));
	}
	return doc_served(&dash.main, gz);
}

const struct dashboard_doc *dashboard_disks(bool gz)
{
	const struct box_sample *s = collector_latest();
	if (!dash.disks.body || (s && s->seq != dash.disks.seq)) {
		json_t *arr = json_array();
		for (int i = 0; s && i < s->ndisks; i++)
			json_array_append_new(arr, disk_json(&s->disks[i]));
		dash.disks.seq = s ? s->seq : 0;
		doc_set(&dash.disks, json_pack("{s:o}", "disks", arr));
	}
	return doc_served(&dash.disks, gz);
}

/* ---- event streams */

static void sse_free(struct sse_client *c)
{
	LIST_REMOVE(c, link);
	free(c->token);
	free(c);
}

static void sse_end(struct sse_client *c, const char *why)
{
	log_debug("events: ending the stream of %s: %s", stream_peer(c->s), why);
	stream_end(c->s);
	sse_free(c);
}

/* The stream tells us the client went away (s is freed after we return), or that the
 * server is stopping (we end the stream ourselves, saying why). */
static void sse_hook(struct stream *s, enum stream_event ev, void *arg)
{
	struct sse_client *c = arg;
	if (ev == STREAM_CLIENT_GONE) {
		log_debug("events: %s went away (%u streams left)", stream_peer(s),
		          dash.fanout.n - 1);
		sse_free(c);
		return;
	}
	static const char bye[] = "{\"fault\":{\"message\":\"ERR_BUSY\","
	                          "\"details\":\"server: shutting down\",\"code\":503}}";
	static const char gone[] =
	    "{\"fault\":{\"message\":\"ERR_UNAUTHORIZED\",\"details\":\"credentials: the user, "
	    "its password or authorizations changed, or its session ended\",\"code\":401}}";
	bool access = ev == STREAM_ACCESS_ENDED;
	stream_event(s, NULL, "end", access ? gone : bye,
	             access ? sizeof(gone) - 1 : sizeof(bye) - 1);
	sse_end(c, access ? "its access changed" : "shutting down");
}

/* Before every send: the session behind the stream must still be alive and allowed to read
 * statistics. Otherwise the client is told why (so it logs in again instead of reconnecting
 * blindly) and the stream ends. */
static bool sse_allowed(struct stream *s, void *arg)
{
	struct sse_client *c = arg;
	struct identity who;
	struct fault f = {0};
	if (auth_verify(c->token, &who, &f) == 0) {
		if (who.perms & PERM_STAT_READ)
			return true;
		fault_set(&f, ERR_DENIED, "authorization: events need stat:read");
	}
	json_t *j = fault_json(&f);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	stream_event(s, NULL, "end", text ? text : "{}", text ? strlen(text) : 2);
	free(text);
	sse_end(c, "session ended or lost stat:read");
	return false;
}

static void dash_send(struct stream *one)
{
	char id[24];
	const struct dashboard_doc *doc = &dash.main.d;
	snprintf(id, sizeof(id), "%llu", (unsigned long long)doc->generation);
	size_t len = doc->len - 1; /* without its newline: one line of data */
	if (one)
		stream_event(one, id, "dashboard", doc->body, len);
	else
		stream_fanout_event(&dash.fanout, id, "dashboard", doc->body, len, sse_allowed);
}

/* Each sample feeds the sparklines; the document itself is built for the event streams,
 * if any, or by the next poll: a box nobody watches builds none. */
static void dash_tick(void *arg, const struct box_sample *s)
{
	spark_add(s);
	if (dash.fanout.n && dashboard_current(false))
		dash_send(NULL);
}

static void dash_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	if (dash.fanout.n)
		stream_fanout_comment(&dash.fanout, "heartbeat", sse_allowed);
}

int dashboard_events_admit(struct fault *f)
{
	if (dash.fanout.n < DASHBOARD_EVENTS_MAX)
		return 0;
	fault_set(f, ERR_BUSY, "events: %d streams are open, the most served",
	          DASHBOARD_EVENTS_MAX);
	f->retry_after = 5; /* (after fault_set, which clears it) */
	return -1;
}

void dashboard_events_attach(struct stream *s, const char *token, const char *user)
{
	const struct dashboard_doc *doc = dashboard_current(false);
	struct sse_client *c = xcalloc(1, sizeof(*c));
	c->s = s;
	c->token = xstrdup(token);
	LIST_INSERT_HEAD(&dash.clients, c, link);
	stream_set_hook(s, sse_hook, c);
	stream_fanout_join(&dash.fanout, s);
	char retry[32];
	int n = snprintf(retry, sizeof(retry), "retry: %d\n\n", SSE_RETRY_MS);
	stream_write(s, retry, (size_t)n);
	if (doc)
		dash_send(s);
	log_debug("events: %s (%s) subscribed (%u streams)", stream_peer(s), user, dash.fanout.n);
}

unsigned dashboard_events_clients(void)
{
	return dash.fanout.n;
}

/* Ends every event stream (shutdown: they would otherwise hold it for its whole grace). */
static void dashboard_events_close_all(void)
{
	while (!LIST_EMPTY(&dash.clients))
		sse_end(LIST_FIRST(&dash.clients), "shutting down");
}

int dashboard_init(struct event_base *base, long long timeout_s)
{
	unsigned char rnd[4];
	dash.base = base;
	if (util_random(rnd, sizeof(rnd)) < 0)
		return -1;
	util_hex(rnd, sizeof(rnd), dash.nonce);
	dash.main.tag = 'd';
	dash.disks.tag = 'k';
	if (collector_subscribe(dash_tick, NULL) < 0)
		return -1;
	dash.subscribed = true;
	spark_seed();
	long long beat = timeout_s / 3;
	if (beat > DASHBOARD_HEARTBEAT_S)
		beat = DASHBOARD_HEARTBEAT_S;
	struct timeval tv = {beat > 0 ? (time_t)beat : 1, 0};
	dash.heartbeat = event_new(base, -1, EV_PERSIST, dash_heartbeat, NULL);
	if (!dash.heartbeat || event_add(dash.heartbeat, &tv) < 0)
		return -1;
	return 0;
}

void dashboard_shutdown(void)
{
	dashboard_events_close_all();
	if (dash.subscribed)
		collector_unsubscribe(dash_tick, NULL);
	dash.subscribed = false;
	if (dash.heartbeat)
		event_free(dash.heartbeat);
	dash.heartbeat = NULL;
	doc_free(&dash.main);
	doc_free(&dash.disks);
}
