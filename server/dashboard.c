/* The dashboard document and its event streams. The document is rebuilt on the loop when
 * the collector announces a sample, kept as bytes (and as a ready SSE event), and served
 * from there: a poll or a push never touches /proc, the database or jansson. */
#include "dashboard.h"
#include "auth.h"
#include "collector.h"
#include "http.h"
#include "log.h"
#include "status.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/sysinfo.h>

#include <event2/event.h>

#define SSE_RETRY_MS 2000

struct sse_client {
	struct sse_client *prev, *next;
	struct request *r;
	char *token; /* re-checked before every send: a revoked session stops its stream */
};

static struct {
	struct event_base *base;
	struct event *heartbeat;
	bool subscribed;
	char nonce[9]; /* differs per daemon run, so an old ETag never matches a new document */
	struct dashboard_doc doc;
	char *body, *event; /* the document, and the same as one SSE event */
	size_t event_len;
	char etag[48];
	uint64_t seq;               /* the sample the document shows; 0: none yet */
	int64_t built_at;           /* wall second of a sample-less build */
	struct sse_client *clients; /* a doubly linked list */
	unsigned nclients;
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
	json_t *d = json_pack("{s:s?, s:s, s:I, s:{s:I, s:I}, s:I, s:I}", "time",
	                      s ? util_iso8601(s->time, when, sizeof(when)) : NULL, "version",
	                      PACKAGE_VERSION, "uptime_s", box_uptime(), "jobs", "running",
	                      (json_int_t)running, "queued", (json_int_t)queued, "leds_lit",
	                      (json_int_t)leds_lit_count(), "problems", (json_int_t)0);
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
	free(dash.event);
	dash.body = xasprintf("%s\n", text);
	dash.event = xasprintf("id: %llu\nevent: dashboard\ndata: %s\n\n",
	                       (unsigned long long)dash.doc.generation, text);
	dash.event_len = strlen(dash.event);
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
	if (c->prev)
		c->prev->next = c->next;
	else
		dash.clients = c->next;
	if (c->next)
		c->next->prev = c->prev;
	dash.nclients--;
	free(c->token);
	free(c);
}

static void sse_end(struct sse_client *c, const char *why)
{
	log_debug("events: ending the stream of %s: %s", c->r->peer, why);
	reply_stream_end(c->r);
	sse_free(c);
}

/* http.c tells us the client went away (r is freed after we return), or that the server
 * is stopping (we end the stream ourselves, saying why). */
static void sse_hook(struct request *r, enum stream_event ev, void *arg)
{
	struct sse_client *c = arg;
	if (ev == STREAM_CLIENT_GONE) {
		log_debug("events: %s went away (%u streams left)", r->peer, dash.nclients - 1);
		sse_free(c);
		return;
	}
	static const char bye[] = "event: end\ndata: {\"fault\":{\"message\":\"ERR_BUSY\","
	                          "\"details\":\"server: shutting down\",\"code\":503}}\n\n";
	reply_stream_chunk(r, bye, sizeof(bye) - 1);
	sse_end(c, "shutting down");
}

/* The session behind the stream must still be alive and allowed to read statistics. */
static bool sse_allowed(struct sse_client *c)
{
	struct identity who;
	struct fault f = {0};
	if (auth_verify(c->token, &who, &f) == 0) {
		if (who.perms & PERM_STAT_READ)
			return true;
		fault_set(&f, ERR_DENIED, "authorization: events need stat:read");
	}
	/* Tell the client why, so it logs in again instead of reconnecting blindly. */
	json_t *j = fault_json(&f);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	char *ev = xasprintf("event: end\ndata: %s\n\n", text ? text : "{}");
	reply_stream_chunk(c->r, ev, strlen(ev));
	free(ev);
	free(text);
	return false;
}

static void sse_send_all(const char *data, size_t len)
{
	struct sse_client *c, *next;
	for (c = dash.clients; c; c = next) {
		next = c->next;
		if (!sse_allowed(c)) {
			sse_end(c, "session ended or lost stat:read");
			continue;
		}
		reply_stream_chunk(c->r, data, len);
	}
}

static void dash_tick(void *arg, const struct box_sample *s)
{
	dash.seq = s->seq;
	dash_build(s);
	if (dash.nclients && dash.event)
		sse_send_all(dash.event, dash.event_len);
}

static void dash_heartbeat(evutil_socket_t fd, short what, void *arg)
{
	static const char beat[] = ": heartbeat\n\n";
	if (dash.nclients)
		sse_send_all(beat, sizeof(beat) - 1);
}

static const char *request_token(const struct request *r)
{
	const char *t = request_header(r, "X-Auth-Session");
	if (t && *t)
		return t;
	const char *a = request_header(r, "Authorization");
	if (a && strncasecmp(a, "Bearer ", 7) == 0) {
		for (a += 7; *a == ' ';)
			a++;
		return a;
	}
	return NULL;
}

int dashboard_events_attach(struct request *r, struct fault *f)
{
	const char *token = request_token(r);
	if (dash.nclients >= DASHBOARD_EVENTS_MAX) {
		f->retry_after = 5;
		return fault_set(f, ERR_BUSY, "events: %d streams are open, the most served",
		                 DASHBOARD_EVENTS_MAX);
	}
	if (!token) /* the router authenticated r, so this cannot happen */
		return fault_set(f, ERR_UNAUTHORIZED, "credentials: no token");
	const struct dashboard_doc *doc = dashboard_current();
	struct sse_client *c = xcalloc(1, sizeof(*c));
	c->r = r;
	c->token = xstrdup(token);
	c->next = dash.clients;
	if (c->next)
		c->next->prev = c;
	dash.clients = c;
	dash.nclients++;
	reply_header(r, "X-Accel-Buffering", "no"); /* a proxy in front must not hold events */
	/* Ours goes out on a fixed beat whether or not events flow, so http.c's quiet-time
	 * heartbeat is only a fallback. */
	reply_stream_start(r, 200, "text/event-stream", ":\n\n", sse_hook, c);
	char retry[32];
	int n = snprintf(retry, sizeof(retry), "retry: %d\n\n", SSE_RETRY_MS);
	reply_stream_chunk(r, retry, (size_t)n);
	if (doc && dash.event)
		reply_stream_chunk(r, dash.event, dash.event_len);
	log_debug("events: %s (%s) subscribed (%u streams)", r->peer, r->who.user, dash.nclients);
	return 0;
}

unsigned dashboard_events_clients(void)
{
	return dash.nclients;
}

void dashboard_events_close_all(void)
{
	while (dash.clients)
		sse_end(dash.clients, "shutting down");
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
	free(dash.event);
	dash.body = dash.event = NULL;
}
