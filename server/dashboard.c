/* The dashboard document and its event streams. The document is rebuilt on the loop when
 * the collector announces a sample, kept as bytes (and as a ready SSE event), and served
 * from there: a poll or a push never touches /proc, the database or jansson. */
#include "dashboard.h"
#include "auth.h"
#include "collector.h"
#include "log.h"
#include "jobs.h"
#include "leds.h"
#include "problems.h"
#include "stream.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/sysinfo.h>

#include <event2/event.h>

#define SSE_RETRY_MS 2000

struct sse_client {
	LIST_ENTRY(sse_client) link;
	struct stream *s;
	char *token; /* re-checked before every send: a revoked session stops its stream */
};

static struct {
	struct event_base *base;
	struct event *heartbeat;
	bool subscribed;
	char nonce[9]; /* differs per daemon run, so an old ETag never matches a new document */
	struct dashboard_doc doc;
	char *body; /* the document */
	char etag[48];
	uint64_t seq;     /* the sample the document shows; 0: none yet */
	int64_t built_at; /* wall second of a sample-less build */
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

static json_t *num(double v, double scale)
{
	return json_real(round_pos(v * scale) / scale);
}

static json_t *bytes(double v)
{
	return json_integer((json_int_t)round_pos(v));
}

static json_t *dash_cpu(const struct box_sample *s)
{
	const double *p = s->cpu_pct;
	double idle = p[CPU_IDLE] + p[CPU_IOWAIT];
	return json_pack("{s:o, s:o, s:o, s:o}", "busy", num(100.0 - idle, 10), "user",
	                 num(p[CPU_USER] + p[CPU_NICE], 10), "system",
	                 num(p[CPU_SYSTEM] + p[CPU_IRQ] + p[CPU_SOFTIRQ], 10), "iowait",
	                 num(p[CPU_IOWAIT], 10));
}

static json_t *dash_disks(const struct box_sample *s)
{
	json_t *arr = json_array();
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		json_array_append_new(
		    arr,
		    json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "n", d->name, "r_ops_s",
		              num(d->reads_per_s, 10), "w_ops_s", num(d->writes_per_s, 10), "r_b_s",
		              bytes(d->read_bytes_per_s), "w_b_s", bytes(d->write_bytes_per_s),
		              "r_ms", num(d->read_latency_ms, 1000), "w_ms",
		              num(d->write_latency_ms, 1000), "busy_pct", num(d->busy_pct, 10)));
	}
	return arr;
}

/* NIC totals; the loopback device is traffic of the box with itself. */
static json_t *dash_nics(const struct box_sample *s)
{
	double rx = 0, tx = 0;
	for (int i = 0; i < s->nnics; i++) {
		if (strcmp(s->nics[i].name, "lo") == 0)
			continue;
		rx += s->nics[i].rx_kb_per_s;
		tx += s->nics[i].tx_kb_per_s;
	}
	return json_pack("{s:o, s:o}", "rx", num(rx, 10), "tx", num(tx, 10));
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
	if (!s)
		return d;
	json_object_set_new(d, "ncpus", json_integer(s->ncpus));
	json_object_set_new(d, "cpu_pct", dash_cpu(s));
	json_object_set_new(d, "mem_bytes",
	                    json_pack("{s:I, s:I, s:I, s:I}", "total", (json_int_t)s->mem_total,
	                              "used", (json_int_t)s->mem_used, "cache",
	                              (json_int_t)(s->mem_cache + s->mem_buffers), "free",
	                              (json_int_t)s->mem_free));
	json_object_set_new(d, "disks", dash_disks(s));
	json_object_set_new(d, "nic_kb_s", dash_nics(s));
	if (s->have_arc)
		json_object_set_new(d, "arc_hit_pct", num(s->arc_hit_pct, 10));
	return d;
}

static void dash_build(const struct box_sample *s)
{
	json_t *j = json_pack("{s:o}", "dashboard", dash_json(s));
	/* Rounded above; this precision only keeps 0.1 from printing as 0.10000000000000001. */
	char *text = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(12));
	json_decref(j);
	if (!text) {
		log_warn("dashboard: cannot encode the document; keeping the last one");
		return;
	}
	dash.doc.generation++;
	snprintf(dash.etag, sizeof(dash.etag), "\"%s-%llu\"", dash.nonce,
	         (unsigned long long)dash.doc.generation);
	free(dash.body);
	dash.body = xasprintf("%s\n", text);
	free(text);
	dash.doc.body = dash.body;
	dash.doc.len = strlen(dash.body);
	dash.doc.etag = dash.etag;
}

const struct dashboard_doc *dashboard_current(void)
{
	const struct box_sample *s = collector_latest();
	if (s) {
		/* Normally the tick rebuilt it already; this covers a request racing the
		 * first subscriber call. */
		if (s->seq != dash.seq || !dash.body) {
			dash.seq = s->seq;
			dash_build(s);
		}
	} else if (!dash.body || dash.built_at != util_now()) {
		/* No sample yet: uptime and counts still move, once a second. */
		dash.built_at = util_now();
		dash_build(NULL);
	}
	return dash.body ? &dash.doc : NULL;
}

/* RFC 9110 If-None-Match: "*" or a list of entity tags, compared weakly. */
int dashboard_etag_matches(const char *inm, const char *etag)
{
	if (!inm || !etag)
		return 0;
	size_t elen = strlen(etag);
	for (const char *p = inm; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return 1;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		size_t n = strcspn(p, ", \t");
		if (n == elen && strncmp(p, etag, n) == 0)
			return 1;
		p += n;
	}
	return 0;
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
	stream_event(s, NULL, "end", bye, sizeof(bye) - 1);
	sse_end(c, "shutting down");
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
	snprintf(id, sizeof(id), "%llu", (unsigned long long)dash.doc.generation);
	size_t len = dash.doc.len - 1; /* without its newline: one line of data */
	if (one)
		stream_event(one, id, "dashboard", dash.doc.body, len);
	else
		stream_fanout_event(&dash.fanout, id, "dashboard", dash.doc.body, len, sse_allowed);
}

static void dash_tick(void *arg, const struct box_sample *s)
{
	dash.seq = s->seq;
	dash_build(s);
	if (dash.fanout.n && dash.body)
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
	f->retry_after = 5;
	return fault_set(f, ERR_BUSY, "events: %d streams are open, the most served",
	                 DASHBOARD_EVENTS_MAX);
}

void dashboard_events_attach(struct stream *s, const char *token, const char *user)
{
	const struct dashboard_doc *doc = dashboard_current();
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
	if (collector_subscribe(dash_tick, NULL) < 0)
		return -1;
	dash.subscribed = true;
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
	free(dash.body);
	dash.body = NULL;
}
