/* SPDX-License-Identifier: ISC */
/* The HTTP front on evhttp. A request enters in http_request(), is routed, authenticated
 * and authorized there, and only then reaches its handler in api/. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/hmap.h"
#include "base/log.h"
#include "base/util.h"
#include "base/suggest.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

/* --- TLS connections: the cap, and the deadline of a request arriving.
 *
 * evhttp's timeout is re-armed by every byte, so a client trickling a byte a second would
 * hold its connection forever. Each TLS connection therefore has a deadline: from the
 * first byte of a request (the TLS handshake's, for a new connection) to the moment the
 * whole request is handed to http_request(). Past it the connection is failed as a
 * timeout. The SSL object dies with its connection, so its ex_data free callback is the
 * one reliable "connection closed" hook evhttp 2.1 offers: it owns struct tls_conn. */

struct tls_conn {
	struct bufferevent *bev;
	struct event *deadline; /* NULL once the server is freed */
	bool busy;              /* a request is being answered: nothing arrives for us now */
	bool nul;               /* a NUL byte arrived: evhttp's parser cuts a header there */
	LIST_ENTRY(tls_conn) link;
};

/* Memory of many connections freed at once (a burst of handshakes, a flood cut at the
 * deadline: some 48 KiB each mid-handshake) stays with malloc, in holes of the heap that
 * it never gives back by itself. Once the open connections fall to half a peak of at
 * least TRIM_MIN_PEAK, the heap is trimmed, TRIM_DELAY_S later so that one trim serves a
 * whole wave of closes and a flood cannot make it run often. It takes some 20 ms for a
 * thousand connections' worth; on a helper thread it would hold the same arena lock the
 * loop allocates under, so it runs here. */
#define TRIM_MIN_PEAK 64
#define TRIM_DELAY_S  10

static void tls_trim(evutil_socket_t fd, short what, void *arg)
{
	struct http_server *srv = arg;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	malloc_trim(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	log_debug("https: %zu connections open (of %zu at the peak): heap trimmed in %.1f ms",
	          srv->tls_conns, srv->tls_peak,
	          (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
	srv->tls_peak = srv->tls_conns;
}

static int ssl_conn_index = -1;
/* Connections may be freed after the server (bufferevent frees are deferred to the loop),
 * so the callback looks up the live server, if any. */
static struct http_server *live_srv;

static void ssl_conn_gone(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
                          void *argp)
{
	struct tls_conn *tc = ptr;
	struct http_server *srv = live_srv;
	if (!tc)
		return;
	if (tc->deadline) {
		event_free(tc->deadline);
		LIST_REMOVE(tc, link);
	}
	free(tc);
	if (!srv)
		return;
	srv->tls_conns--;
	if (srv->tls_peak >= TRIM_MIN_PEAK && srv->tls_conns <= srv->tls_peak / 2 &&
	    !evtimer_pending(srv->trim, NULL)) {
		struct timeval later = {TRIM_DELAY_S, 0};
		evtimer_add(srv->trim, &later);
	}
	if (srv->tls_conns + 1 == (size_t)srv->opt.max_connections && srv->https.sock)
		evconnlistener_enable(evhttp_bound_socket_get_listener(srv->https.sock));
}

static struct tls_conn *tls_conn_of(struct evhttp_connection *conn)
{
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	SSL *ssl = bev ? bufferevent_openssl_get_ssl(bev) : NULL;
	return ssl ? SSL_get_ex_data(ssl, ssl_conn_index) : NULL;
}

/* ---- handshakes per address
 *
 * A full handshake costs the loop about a millisecond (an X25519 exchange and a
 * signature), and a ClientHello can be replayed without any work of the client's. Each
 * address (an IPv6 one by its /64) has a bucket of handshake_rate a second, HS_BURST_S
 * seconds' worth deep; a ClientHello past it is refused before the key exchange. The
 * table is bounded: when it is full, buckets that have filled up again are dropped, and
 * while it stays full a newcomer is not counted. */
#define HS_BURST_S     4
#define HS_MAX_ENTRIES 10000

struct hs_bucket {
	double tokens;
	uint64_t at_ns;
};

struct hs_now {
	uint64_t now_ns;
	double rate;
};

static double hs_level(const struct hs_bucket *b, const struct hs_now *n)
{
	double t = b->tokens + (double)(n->now_ns - b->at_ns) / 1e9 * n->rate;
	return t < n->rate * HS_BURST_S ? t : n->rate * HS_BURST_S;
}

static bool hs_full(void *val, void *ctx)
{
	const struct hs_now *n = ctx;
	if (hs_level(val, n) < n->rate * HS_BURST_S)
		return false;
	free(val);
	return true;
}

/* The key of a peer: its IPv4 address, or an IPv6 address's /64 prefix. */
static bool hs_key(int fd, char *key, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) < 0)
		return false;
	if (ss.ss_family == AF_INET)
		return inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, key,
		                 (socklen_t)len) != NULL;
	if (ss.ss_family != AF_INET6)
		return false;
	struct in6_addr a = ((struct sockaddr_in6 *)&ss)->sin6_addr;
	if (!IN6_IS_ADDR_V4MAPPED(&a))
		memset(a.s6_addr + 8, 0, 8);
	return inet_ntop(AF_INET6, &a, key, (socklen_t)len) != NULL;
}

static int hs_client_hello(SSL *ssl, int *alert, void *arg)
{
	(void)arg;
	struct http_server *srv = live_srv;
	char key[INET6_ADDRSTRLEN];
	if (!srv || srv->opt.handshake_rate <= 0 || !hs_key(SSL_get_fd(ssl), key, sizeof(key)))
		return SSL_CLIENT_HELLO_SUCCESS;
	struct hs_now n = {util_mono_ns(), (double)srv->opt.handshake_rate};
	size_t klen = strlen(key);
	struct hs_bucket *b = hmap_get(&srv->hs, key, klen);
	if (!b) {
		if (srv->hs.n >= HS_MAX_ENTRIES)
			hmap_filter(&srv->hs, hs_full, &n);
		if (srv->hs.n >= HS_MAX_ENTRIES)
			return SSL_CLIENT_HELLO_SUCCESS;
		b = xmalloc(sizeof(*b));
		*b = (struct hs_bucket){n.rate * HS_BURST_S, n.now_ns};
		hmap_put(&srv->hs, key, klen, b);
	}
	b->tokens = hs_level(b, &n);
	b->at_ns = n.now_ns;
	if (b->tokens < 1) {
		log_debug("https: %s starts more than %lld handshakes a second: refused", key,
		          srv->opt.handshake_rate);
		*alert = SSL_AD_HANDSHAKE_FAILURE;
		return SSL_CLIENT_HELLO_ERROR;
	}
	b->tokens -= 1;
	return SSL_CLIENT_HELLO_SUCCESS;
}

/* Failed as evhttp fails a connection that timed out: it frees it, and tc with it. */
static void tls_conn_expired(evutil_socket_t fd, short what, void *arg)
{
	struct tls_conn *tc = arg;
	log_debug("https: a request did not arrive whole within %lld s; closing",
	          live_srv ? live_srv->opt.header_timeout_s : 0);
	bufferevent_trigger_event(tc->bev, BEV_EVENT_READING | BEV_EVENT_TIMEOUT, 0);
}

static void tls_conn_arm(struct tls_conn *tc)
{
	if (tc->deadline && !tc->busy && !evtimer_pending(tc->deadline, NULL)) {
		struct timeval tv = {live_srv->opt.header_timeout_s, 0};
		evtimer_add(tc->deadline, &tv);
	}
}

/* Whether the bytes that just arrived in buf hold a NUL. No request of ours holds one
 * (bodies are JSON, which has none raw), and evhttp would cut a header at it
 * ("X-Auth-User: admin\0junk" read as admin), so a connection it arrives on has its
 * request refused. */
static bool input_has_nul(struct evbuffer *buf, const struct evbuffer_cb_info *info)
{
	struct evbuffer_ptr at;
	/* (the new bytes are the last n_added, whatever was drained since the last call) */
	size_t from = evbuffer_get_length(buf) - info->n_added;
	return evbuffer_ptr_set(buf, &at, from, EVBUFFER_PTR_SET) == 0 &&
	       evbuffer_search(buf, "", 1, &at).pos >= 0;
}

/* Bytes of a new request: its clock starts; a NUL marks the connection. */
static void tls_conn_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct tls_conn *tc = arg;
	if (!info->n_added)
		return;
	tls_conn_arm(tc);
	if (!tc->nul && input_has_nul(buf, info))
		tc->nul = true;
}

/* A request arrived whole (busy) or was answered (idle: what is buffered starts the clock
 * of the next one). */
void tls_conn_busy(struct evhttp_connection *conn, bool busy)
{
	struct tls_conn *tc = tls_conn_of(conn);
	if (!tc || !tc->deadline)
		return;
	tc->busy = busy;
	if (busy)
		evtimer_del(tc->deadline);
	else if (evbuffer_get_length(bufferevent_get_input(tc->bev)) > 0)
		tls_conn_arm(tc);
}

static struct bufferevent *https_bevcb(struct event_base *base, void *arg)
{
	struct http_server *srv = arg;
	SSL *ssl = SSL_new(srv->ssl);
	if (!ssl)
		return NULL;
	struct bufferevent *bev = bufferevent_openssl_socket_new(
	    base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	if (!bev) {
		SSL_free(ssl);
		return NULL;
	}
	struct tls_conn *tc = xcalloc(1, sizeof(*tc));
	tc->bev = bev;
	tc->deadline = evtimer_new(base, tls_conn_expired, tc);
	LIST_INSERT_HEAD(&srv->tls, tc, link);
	SSL_set_ex_data(ssl, ssl_conn_index, tc);
	if (++srv->tls_conns > srv->tls_peak)
		srv->tls_peak = srv->tls_conns;
	tls_conn_arm(tc); /* the handshake is the first request's start */
	evbuffer_add_cb(bufferevent_get_input(bev), tls_conn_input, tc);
	if (srv->tls_conns >= (size_t)srv->opt.max_connections && srv->https.sock) {
		/* At the cap: stop accepting; the kernel backlog holds newcomers until one closes.
		 */
		evconnlistener_disable(evhttp_bound_socket_get_listener(srv->https.sock));
		log_warn("connection cap of %lld reached; not accepting until one closes",
		         srv->opt.max_connections);
	}
	return bev;
}

/* --- plain connections: the NUL mark.
 *
 * A plain connection has no SSL object whose ex_data would tell when it is freed, and
 * evhttp 2.1 has no hook for a new connection, so no state of ours lives beside it.
 * Only the connections a NUL arrived on are remembered, in srv->nul_plain keyed by
 * their bufferevent, and forgotten when their request is refused (which closes them),
 * when they close after a request (http_conn_closed), or when a new connection's bufferevent
 * turns up at the same address (plain_bevcb: the one remembered is long gone, and a
 * mark must not pass to a stranger). One that sends a NUL and goes before any request
 * is complete stays until then; past PLAIN_NUL_MAX such marks a NUL fails its
 * connection at once instead (closed, unanswered), so the set stays bounded. */
#define PLAIN_NUL_MAX 4096

static void plain_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
	struct bufferevent *bev = arg; /* alive: this callback dies with its buffer */
	struct http_server *srv = live_srv;
	if (!info->n_added || !srv || hmap_get(&srv->nul_plain, (char *)&bev, sizeof(bev)) ||
	    !input_has_nul(buf, info))
		return;
	if (srv->nul_plain.n >= PLAIN_NUL_MAX) {
		log_debug("http: a NUL byte arrived with %zu connections so marked; closing",
		          srv->nul_plain.n);
		bufferevent_trigger_event(bev, BEV_EVENT_READING | BEV_EVENT_ERROR, 0);
		return;
	}
	hmap_put(&srv->nul_plain, (char *)&bev, sizeof(bev), bev);
}

static void plain_forget(struct http_server *srv, struct bufferevent *bev)
{
	if (srv && bev && srv->nul_plain.n)
		hmap_del(&srv->nul_plain, (char *)&bev, sizeof(bev));
}

static bool plain_nul(const struct http_server *srv, struct evhttp_connection *conn)
{
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	return bev && srv->nul_plain.n && hmap_get(&srv->nul_plain, (char *)&bev, sizeof(bev));
}

static struct bufferevent *plain_bevcb(struct event_base *base, void *arg)
{
	struct http_server *srv = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	plain_forget(srv, bev);
	evbuffer_add_cb(bufferevent_get_input(bev), plain_input, bev);
	return bev;
}

/* --- requests */

static const struct service_hdr *service_of(const struct http_server *srv, const char *name)
{
	for (size_t i = 0; name && i < srv->nservices; i++)
		if (strcmp(srv->services[i].name, name) == 0)
			return &srv->services[i];
	return NULL;
}

void request_free(struct request *r)
{
	if (r->query) {
		evhttp_clear_headers(r->query);
		free(r->query);
	}
	free(r);
}

static SSL *conn_ssl(struct evhttp_connection *conn);

static void add_common_headers(struct request *r, const char *service)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "X-Spindle-Version", PACKAGE_VERSION);
	/* a JSON answer is never to be sniffed into something a browser would run */
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	if (r->srv->hsts[0] && conn_ssl(evhttp_request_get_connection(r->ev)))
		evhttp_add_header(h, "Strict-Transport-Security", r->srv->hsts);
	/* The appliance's global version header ("nas.2013.1.1"): product.version. */
	evhttp_add_header(h, "X-Zfssa-Version", "spindle." PACKAGE_VERSION);
	const struct service_hdr *s = service_of(r->srv, service);
	if (s) {
		evhttp_add_header(h, s->header, s->version);
		evhttp_add_header(h, s->zfssa, s->version);
	}
}

static const char *path_service(const char *path, char *buf, size_t len)
{
	/* "/api/<service>/..." names its service even when no route matched. */
	if (strncmp(path, "/api/", 5) != 0)
		return NULL;
	const char *s = path + 5, *e = strchr(s, '/');
	size_t n = e ? (size_t)(e - s) : strlen(s);
	if (n == 0 || n >= len)
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return buf;
}

void reply_common_headers(struct request *r)
{
	const char *service = r->route ? r->route->service : NULL;
	char svc[32];
	if (!service) {
		const char *uri = evhttp_request_get_uri(r->ev);
		service = path_service(uri ? uri : "", svc, sizeof(svc));
	}
	add_common_headers(r, service);
}

/* evhttp calls this once the reply's last byte is written (not when its connection dies
 * first: then the count stays up, which is why shutdown bounds its wait for it). */
static void reply_flushed(struct evhttp_request *req, void *arg)
{
	struct http_server *srv = arg;
	if (srv->unflushed > 0)
		srv->unflushed--;
}

void reply_track_flush(struct request *r)
{
	r->srv->unflushed++;
	evhttp_request_set_on_complete_cb(r->ev, reply_flushed, r->srv);
}

/* --- the wire under evhttp: TLS records and the TLS close */

/* The TLS session of a connection, or NULL on the plain listener. */
static SSL *conn_ssl(struct evhttp_connection *conn)
{
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	return bev ? bufferevent_openssl_get_ssl(bev) : NULL;
}

/* bufferevent_openssl makes one TLS record (and one send()) of each evbuffer chunk, and
 * evhttp hands over a reply as separate chunks: headers, body, chunk framing. Joining the
 * head of the output into one chunk puts a small answer in one record and one segment. */
void tls_coalesce(struct evhttp_connection *conn)
{
	if (!conn_ssl(conn))
		return;
	struct evbuffer *out = bufferevent_get_output(evhttp_connection_get_bufferevent(conn));
	size_t len = evbuffer_get_length(out);
	evbuffer_pullup(out, (ev_ssize_t)(len < TLS_RECORD_MAX ? len : TLS_RECORD_MAX));
}

/* evhttp calls this just before it frees a connection, with everything it wrote handed to
 * the socket; bufferevent_openssl would then close the socket without a TLS close_notify,
 * which OpenSSL 3 clients report as a truncation. One SSL_shutdown() call queues the alert
 * without waiting for the peer's. arg: the connection's open stream, or NULL. */
void http_conn_closed(struct evhttp_connection *conn, void *arg)
{
	SSL *ssl = conn_ssl(conn);
	if (ssl && SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN)) {
		SSL_shutdown(ssl);
		ERR_clear_error(); /* a peer already gone is no fault of the next connection */
	}
	if (!ssl)
		plain_forget(live_srv, evhttp_connection_get_bufferevent(conn));
	if (arg)
		stream_conn_closed(arg);
}

/* The reason phrases libevent 2.1 lacks (it would say "Client Error" or "Server Error"). */
const char *http_reason_phrase(int status)
{
	switch (status) {
	case 429:
		return "Too Many Requests";
	case 507:
		return "Insufficient Storage";
	default:
		return NULL; /* evhttp's own */
	}
}

void reply_finish(struct request *r, int status, struct evbuffer *body)
{
	reply_common_headers(r);
	/* evhttp leaves out Content-Length for HEAD but would still send a body: the length
	 * is the GET's, the body goes. */
	if (r->method == METHOD_HEAD && status != 204 && status != 304) {
		char len[24];
		snprintf(len, sizeof(len), "%zu", body ? evbuffer_get_length(body) : (size_t)0);
		evhttp_remove_header(evhttp_request_get_output_headers(r->ev), "Content-Length");
		evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Length", len);
	}
	if (r->method == METHOD_HEAD)
		body = NULL;
	reply_track_flush(r);
	/* NULL once the client is gone; evhttp_send_reply() then frees the request, and it never
	 * frees a live connection before the reply is written. */
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	evhttp_send_reply(r->ev, status, http_reason_phrase(status), body);
	tls_coalesce(conn);
	tls_conn_busy(conn, false);
	r->srv->inflight--;
	request_free(r);
}

static int dump_to_evbuffer(const char *buffer, size_t size, void *data)
{
	return evbuffer_add(data, buffer, size);
}

void reply_json(struct request *r, int status, json_t *body)
{
	struct evbuffer *buf = evbuffer_new();
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Cache-Control", "no-store");
	if (body) {
		json_dump_callback(body, dump_to_evbuffer, buf, JSON_COMPACT);
		evbuffer_add(buf, "\n", 1);
		json_decref(body);
	}
	reply_finish(r, status, buf);
	evbuffer_free(buf);
}

void reply_fault(struct request *r, const struct fault *f)
{
	int status = fault_status(f->kind);
	if (f->kind == ERR_TOO_MANY || f->kind == ERR_BUSY) {
		char secs[16];
		snprintf(secs, sizeof(secs), "%d", f->retry_after > 0 ? f->retry_after : 1);
		reply_header(r, "Retry-After", secs);
	}
	if (f->kind == ERR_UNAUTHORIZED)
		reply_header(r, "WWW-Authenticate", "Bearer realm=\"spindle\"");
	if (status >= 500)
		log_warn("%s %s -> %d %s: %s", router_method_name(r->method),
		         evhttp_request_get_uri(r->ev), status, fault_name(f->kind), f->details);
	else
		log_debug("%s %s -> %d %s: %s", router_method_name(r->method),
		          evhttp_request_get_uri(r->ev), status, fault_name(f->kind), f->details);
	reply_json(r, status, fault_json(f));
}

void reply_error(struct request *r, enum fault_kind kind, const char *fmt, ...)
{
	struct fault f;
	va_list ap;
	va_start(ap, fmt);
	fault_vset(&f, kind, fmt, ap);
	va_end(ap);
	reply_fault(r, &f);
}

void reply_empty(struct request *r, int status)
{
	evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Cache-Control", "no-store");
	reply_finish(r, status, NULL);
}

void reply_raw(struct request *r, int status, const char *content_type, const void *data,
               size_t len)
{
	struct evbuffer *buf = evbuffer_new();
	evbuffer_add(buf, data, len);
	evhttp_add_header(evhttp_request_get_output_headers(r->ev), "Content-Type", content_type);
	reply_finish(r, status, buf);
	evbuffer_free(buf);
}

void reply_header(struct request *r, const char *key, const char *value)
{
	evhttp_add_header(evhttp_request_get_output_headers(r->ev), key, value);
}

const char *request_param(const struct request *r, int i)
{
	return i < r->match.nparams ? r->match.params[i] : NULL;
}

const char *request_header(const struct request *r, const char *key)
{
	return evhttp_find_header(evhttp_request_get_input_headers(r->ev), key);
}

/* RFC 9110 If-None-Match: "*" or a list of entity tags, compared weakly. */
bool request_etag_matches(const struct request *r, const char *etag)
{
	const char *inm = request_header(r, "If-None-Match");
	if (!inm || !etag)
		return false;
	size_t elen = strlen(etag);
	for (const char *p = inm; *p;) {
		while (*p == ' ' || *p == '\t' || *p == ',')
			p++;
		if (*p == '*')
			return true;
		if (strncmp(p, "W/", 2) == 0)
			p += 2;
		size_t n = strcspn(p, ", \t");
		if (n == elen && strncmp(p, etag, n) == 0)
			return true;
		p += n;
	}
	return false;
}

/* RFC 9110 12.5.3: "gzip" (or "x-gzip"), else "*", with a q above 0. A coding named
 * explicitly wins over "*" whatever their order. */
bool request_accepts_gzip(const struct request *r)
{
	const char *ae = request_header(r, "Accept-Encoding");
	int gzip = -1, star = -1; /* -1: not named; 0: refused; 1: accepted */
	for (const char *p = ae ? ae : ""; *p;) {
		p += strspn(p, " \t,");
		size_t n = strcspn(p, " \t;,");
		bool is_gzip = (n == 4 && strncasecmp(p, "gzip", 4) == 0) ||
		               (n == 6 && strncasecmp(p, "x-gzip", 6) == 0);
		bool is_star = n == 1 && *p == '*';
		p += n;
		double q = 1;
		/* parameters up to the next coding: only q counts */
		while (*p && *p != ',') {
			p += strspn(p, " \t;");
			if ((p[0] == 'q' || p[0] == 'Q') && p[1] == '=') {
				char *end;
				q = strtod(p + 2, &end);
				p = end > p + 2 ? end : p + 2;
			} else {
				p += strcspn(p, ";,");
			}
		}
		if (is_gzip && gzip != 0)
			gzip = q > 0;
		else if (is_star && star != 0)
			star = q > 0;
	}
	return gzip >= 0 ? gzip == 1 : star == 1;
}

static struct evkeyvalq *query_of(struct request *r)
{
	if (!r->query) {
		r->query = xcalloc(1, sizeof(struct evkeyvalq));
		TAILQ_INIT((struct evkeyvalq *)r->query);
		const char *q = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(r->ev));
		if (q && evhttp_parse_query_str(q, r->query) < 0)
			evhttp_clear_headers(r->query);
	}
	return r->query;
}

const char *request_query(struct request *r, const char *key)
{
	return evhttp_find_header(query_of(r), key);
}

int request_query_check(struct request *r, const char *const *allowed, struct fault *f)
{
	struct evkeyval *kv;
	TAILQ_FOREACH(kv, query_of(r), next)
	{
		const char *const *a = allowed;
		while (*a && strcmp(*a, kv->key) != 0)
			a++;
		if (*a)
			continue;
		const char *near = suggest_from(kv->key, allowed);
		if (near)
			return fault_set(f, ERR_UNKNOWN_ARG,
			                 "%.200s: unknown query parameter; did you mean %s?",
			                 kv->key, near);
		return fault_set(f, ERR_UNKNOWN_ARG, "%.200s: unknown query parameter", kv->key);
	}
	return 0;
}

int request_body_json(struct request *r, json_t **out, struct fault *f)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	const char *ct = request_header(r, "Content-Type");
	size_t n = strlen("application/json");
	if (!ct || strncasecmp(ct, "application/json", n) != 0 ||
	    (ct[n] != '\0' && ct[n] != ';' && ct[n] != ' '))
		return fault_set(f, ERR_UNSUPPORTED_MEDIA,
		                 "Content-Type: must be application/json, not '%.100s'",
		                 ct ? ct : "(none)");
	return body_parse((const char *)evbuffer_pullup(in, -1), evbuffer_get_length(in), out, f);
}

int request_body(struct request *r, const struct field *fields, json_t **out, struct fault *f)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(r->ev);
	size_t len = evbuffer_get_length(in);
	json_t *j;
	if (len == 0) {
		j = json_object();
	} else {
		if ((long long)len > r->srv->opt.max_body)
			return fault_set(f, ERR_OVER_LIMIT, "body: larger than %lld bytes",
			                 r->srv->opt.max_body);
		if (request_body_json(r, &j, f) < 0)
			return -1;
	}
	if (body_check(j, fields, f) < 0) {
		json_decref(j);
		return -1;
	}
	*out = j;
	return 0;
}

static unsigned method_of(struct evhttp_request *req)
{
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_GET:
		return METHOD_GET;
	case EVHTTP_REQ_POST:
		return METHOD_POST;
	case EVHTTP_REQ_PUT:
		return METHOD_PUT;
	case EVHTTP_REQ_DELETE:
		return METHOD_DELETE;
	case EVHTTP_REQ_HEAD:
		return METHOD_HEAD;
	case EVHTTP_REQ_PATCH:
		return METHOD_PATCH;
	case EVHTTP_REQ_OPTIONS:
		return METHOD_OPTIONS;
	default:
		return 0;
	}
}

/* A Host header fit to put in a URL: a name or an address, and a port. */
static bool host_valid(const char *h)
{
	size_t n = strlen(h);
	if (n == 0 || n > 255)
		return false;
	for (const char *p = h; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || strchr(".-:[]", *p)))
			return false;
	return true;
}

int request_base_url(const struct request *r, char *buf, size_t len)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	const char *scheme = conn_ssl(conn) ? "https" : "http";
	const char *host = request_header(r, "Host");
	if (host && host_valid(host))
		return snprintf(buf, len, "%s://%s", scheme, host) < (int)len ? 0 : -1;
	/* No usable Host (HTTP/1.0): the address the client reached. */
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char addr[INET6_ADDRSTRLEN] = "localhost";
	unsigned port = 0;
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	if (bev && getsockname(bufferevent_getfd(bev), (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *in = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &in->sin_addr, addr, sizeof(addr));
			port = ntohs(in->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &in6->sin6_addr, addr, sizeof(addr));
			port = ntohs(in6->sin6_port);
		}
	}
	bool v6 = strchr(addr, ':') != NULL;
	int n = port ? snprintf(buf, len, "%s://%s%s%s:%u", scheme, v6 ? "[" : "", addr,
	                        v6 ? "]" : "", port)
	             : snprintf(buf, len, "%s://%s", scheme, addr);
	return n < (int)len ? 0 : -1;
}

/* The token from X-Auth-Session or "Authorization: Bearer". */
const char *request_token(const struct request *r)
{
	const char *t = request_header(r, "X-Auth-Session");
	if (t && *t)
		return t;
	const char *a = request_header(r, "Authorization");
	if (a && strncasecmp(a, "Bearer ", 7) == 0) {
		a += 7;
		while (*a == ' ')
			a++;
		return *a ? a : NULL;
	}
	return NULL;
}

/* "Authorization: Basic base64(user:password)" into user and password. */
static int basic_credentials(const char *h, char *user, size_t ulen, char *pass, size_t plen)
{
	if (strncasecmp(h, "Basic ", 6) != 0)
		return -1;
	h += 6;
	while (*h == ' ')
		h++;
	size_t n = strlen(h);
	if (n == 0 || n % 4 || n > 2048)
		return -1;
	unsigned char out[1600];
	int len = EVP_DecodeBlock(out, (const unsigned char *)h, (int)n);
	if (len < 0)
		return -1;
	while (len > 0 && h[--n] == '=') /* EVP_DecodeBlock counts the padding as zeros */
		len--;
	out[len] = '\0';
	if (memchr(out, '\0', (size_t)len))
		return -1;
	char *colon = strchr((char *)out, ':');
	if (!colon || (size_t)(colon - (char *)out) >= ulen || strlen(colon + 1) >= plen)
		return -1;
	*colon = '\0';
	snprintf(user, ulen, "%s", (char *)out);
	snprintf(pass, plen, "%s", colon + 1);
	OPENSSL_cleanse(out, sizeof(out));
	return 0;
}

int request_credentials(const struct request *r, char *user, size_t ulen, char *pass, size_t plen,
                        struct fault *f)
{
	const char *hu = request_header(r, "X-Auth-User"), *hk = request_header(r, "X-Auth-Key");
	const char *basic = request_header(r, "Authorization");
	if (hu || hk) {
		if (!hu || !hk)
			return fault_set(f, ERR_MISSING_ARG, "%s: required with %s",
			                 hu ? "X-Auth-Key" : "X-Auth-User",
			                 hu ? "X-Auth-User" : "X-Auth-Key");
		if (strlen(hu) >= ulen || strlen(hk) >= plen)
			return fault_set(f, ERR_INVALID_ARG, "%s: too long",
			                 strlen(hu) >= ulen ? "X-Auth-User" : "X-Auth-Key");
		snprintf(user, ulen, "%s", hu);
		snprintf(pass, plen, "%s", hk);
		return 1;
	}
	if (basic && strncasecmp(basic, "Basic ", 6) == 0) {
		if (basic_credentials(basic, user, ulen, pass, plen) < 0)
			return fault_set(f, ERR_INVALID_ARG,
			                 "Authorization: not Basic base64(user:password)");
		return 1;
	}
	return 0;
}

/* The credential header r carries twice or more, else NULL: which of two counts is a
 * guess that a proxy in front and this server may make differently, so neither does. */
static const char *repeated_credential(const struct request *r)
{
	static const char *const names[] = {"Authorization", "X-Auth-User", "X-Auth-Key",
	                                    "X-Auth-Session"};
	unsigned seen[sizeof(names) / sizeof(names[0])] = {0};
	const struct evkeyvalq *h = evhttp_request_get_input_headers(r->ev);
	for (const struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next)
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (strcasecmp(kv->key, names[i]) == 0 && ++seen[i] > 1)
				return names[i];
	return NULL;
}

/* Whether the authenticated r->who may call the route. */
static int permitted(struct request *r, struct fault *f)
{
	const struct route *rt = r->route;
	r->authenticated = true;
	if ((r->who.perms & rt->perm) == rt->perm)
		return 0;
	if (rt->access == ROUTE_SELF_OR && r->match.nparams > 0 &&
	    strcmp(r->match.params[0], r->who.user) == 0)
		return 0;
	return fault_set(f, ERR_DENIED, "authorization: %s needs %s", rt->pattern,
	                 perm_name(rt->perm & ~r->who.perms));
}

static void credentials_checked(void *arg, const struct identity *who, const struct fault *err)
{
	struct request *r = arg;
	struct fault f;
	if (err) {
		reply_fault(r, err);
		return;
	}
	r->who = *who;
	if (permitted(r, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	r->route->handler(r);
}

/* Authenticates and authorizes r, then runs its handler, or answers the fault. A token
 * is checked at once; a password (Basic, X-Auth-User/X-Auth-Key) is checked on a helper
 * thread the first time and remembered (auth_credentials), so r may wait for it. */
static void authorize(struct request *r)
{
	const struct route *rt = r->route;
	struct fault f;
	if (rt->access == ROUTE_PUBLIC) {
		rt->handler(r);
		return;
	}
	const char *token = request_token(r);
	if (!token) {
		char user[65], pass[1025];
		int rc = request_credentials(r, user, sizeof(user), pass, sizeof(pass), &f);
		if (rc > 0) {
			auth_credentials(user, pass, r->peer, credentials_checked, r);
			OPENSSL_cleanse(pass, sizeof(pass));
			return;
		}
		if (rc == 0)
			fault_set(&f, ERR_UNAUTHORIZED,
			          "credentials: send X-Auth-Session, Authorization: Bearer or "
			          "Basic, or X-Auth-User and X-Auth-Key");
		reply_fault(r, &f);
		return;
	}
	if (auth_verify(token, &r->who, &f) < 0 || permitted(r, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	rt->handler(r);
}

static void http_request(struct evhttp_request *req, void *arg)
{
	struct listener *l = arg;
	struct http_server *srv = l->srv;
	struct request *r = xcalloc(1, sizeof(*r));
	r->ev = req;
	r->srv = srv;
	r->method = method_of(req);
	srv->inflight++;

	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	char *addr = NULL;
	ev_uint16_t port = 0;
	if (conn)
		evhttp_connection_get_peer(conn, &addr, &port);
	snprintf(r->peer, sizeof(r->peer), "%s", addr ? addr : "");
	if (conn) { /* the first request is the first moment evhttp shows us its connection */
		evhttp_connection_set_closecb(conn, http_conn_closed, NULL);
		tls_conn_busy(conn, true);
	}

	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
	if (!path || !*path) {
		reply_error(r, ERR_INVALID_ARG, "path: malformed request target");
		return;
	}
	if (strncmp(path, "/api/", 5) != 0 && strcmp(path, "/api") != 0 &&
	    strcmp(path, "/metrics") != 0 && strcmp(path, "/metrics/") != 0) {
		serve_static(r, path);
		return;
	}

	const struct tls_conn *tc = tls_conn_of(conn);
	if (tc ? tc->nul : plain_nul(srv, conn)) {
		/* (the connection closes with this answer: its mark goes now) */
		if (!tc)
			plain_forget(srv, evhttp_connection_get_bufferevent(conn));
		reply_header(r, "Connection", "close");
		reply_error(r, ERR_INVALID_ARG,
		            "request: holds a NUL byte, which no header or body "
		            "of this API may");
		return;
	}
	const char *twice = repeated_credential(r);
	if (twice) {
		reply_error(r, ERR_INVALID_ARG, "%s: sent more than once; send it once", twice);
		return;
	}
	unsigned allowed;
	char canonical[1024];
	r->route = router_match(srv->rt, r->method, path, &r->match, &allowed);
	if (!r->route) {
		if (allowed) {
			char methods[64];
			reply_header(r, "Allow",
			             router_methods_str(allowed, methods, sizeof(methods)));
			reply_error(r, ERR_METHOD, "method: %s allows %s", path, methods);
		} else if (router_without_slash(srv->rt, path, canonical, sizeof(canonical))) {
			/* One spelling per resource: a 308 would be followed by some clients and
			 * not others (and never by curl without -L), hiding the mistake. */
			reply_error(r, ERR_NOT_FOUND,
			            "path: %.200s: no such resource; no trailing slash: use %.200s",
			            path, canonical);
		} else {
			reply_error(r, ERR_NOT_FOUND, "path: %.200s: no such resource", path);
		}
		return;
	}
	authorize(r);
}

/* --- listeners */

static long long http_transport_cap(long long max_body)
{
	long long cap = 4 * max_body;
	return cap < (4 << 20) ? (4 << 20) : cap;
}

static int bind_listener(struct http_server *srv, struct listener *l, const char *addr, bool tls)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;
	if (util_split_addr(addr, host, sizeof(host), &port) < 0) {
		log_err("listen address '%s' is not ADDR:PORT", addr);
		return -1;
	}
	l->srv = srv;
	l->tls = tls;
	l->http = evhttp_new(srv->base);
	if (!l->http)
		return -1;
	struct timeval tv = {srv->opt.timeout_s, 0};
	evhttp_set_timeout_tv(l->http, &tv);
	/* evhttp answers a body over its own cap with a bare HTML 413 before any callback
	 * runs (2.1 has no hook), so its cap sits well above max_body: bodies in between get
	 * the JSON fault from request_body(), and memory per connection stays bounded. */
	evhttp_set_max_body_size(l->http, (ev_ssize_t)http_transport_cap(srv->opt.max_body));
	evhttp_set_max_headers_size(l->http, (ev_ssize_t)srv->opt.max_header);
	/* Every method reaches the router, which answers the JSON 405; a method evhttp does not
	 * know (or a lowercase one) has the type EVHTTP_REQ_UNKNOWN_ in libevent 2.1, and
	 * without that bit evhttp would answer an HTML 501 itself. */
	evhttp_set_allowed_methods(
	    l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	                 EVHTTP_REQ_HEAD | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS |
	                 EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT | EVHTTP_REQ_UNKNOWN);
	evhttp_set_default_content_type(l->http, "application/json");
	evhttp_set_gencb(l->http, http_request, l);
	evhttp_set_bevcb(l->http, tls ? https_bevcb : plain_bevcb, srv);
	l->sock = evhttp_bind_socket_with_handle(l->http, host, (ev_uint16_t)port);
	if (!l->sock) {
		log_err("cannot listen on %s (%s): %s", addr, tls ? "https" : "http",
		        strerror(errno));
		return -1;
	}
	/* Accepted sockets inherit TCP_NODELAY on Linux. Without it Nagle holds the second
	 * segment of an answer (a TLS record, a chunk) until the client's delayed ACK, 40 ms. */
	int one = 1;
	if (setsockopt(evhttp_bound_socket_get_fd(l->sock), IPPROTO_TCP, TCP_NODELAY, &one,
	               sizeof(one)) < 0)
		log_warn("TCP_NODELAY on %s: %s", addr, strerror(errno));
	/* The URL to open: ./quickstart run leaves it to this line to say where we are. */
	const char *scheme = tls ? "https" : "http";
	if (strcmp(host, "0.0.0.0") == 0 || strcmp(host, "::") == 0)
		log_info("listening on %s://%s%s%s:%u (every address; on this machine "
		         "%s://localhost:%u)",
		         scheme, host[0] == ':' ? "[" : "", host, host[0] == ':' ? "]" : "", port,
		         scheme, port);
	else
		log_info("listening on %s://%s%s%s:%u", scheme, strchr(host, ':') ? "[" : "", host,
		         strchr(host, ':') ? "]" : "", port);
	return 0;
}

struct http_server *http_new(struct event_base *base, const struct router *rt,
                             const struct http_options *opt, SSL_CTX *ssl)
{
	struct http_server *srv = xcalloc(1, sizeof(*srv));
	srv->base = base;
	srv->rt = rt;
	srv->opt = *opt;
	if (opt->hsts_max_age_s > 0)
		snprintf(srv->hsts, sizeof(srv->hsts), "max-age=%lld", opt->hsts_max_age_s);
	srv->ssl = ssl;
	LIST_INIT(&srv->streams);
	LIST_INIT(&srv->tls);
	srv->trim = evtimer_new(base, tls_trim, srv);
	srv->access = event_new(base, -1, EV_PERSIST, streams_access, srv);
	struct timeval second = {1, 0};
	event_add(srv->access, &second);
	srv->nservices = opt->nservices;
	srv->services = xcalloc(opt->nservices, sizeof(*srv->services));
	for (size_t i = 0; i < opt->nservices; i++) {
		struct service_hdr *s = &srv->services[i];
		s->name = opt->services[i].name;
		s->version = opt->services[i].version;
		char first = s->name[0] >= 'a' && s->name[0] <= 'z' ? s->name[0] - 32 : s->name[0];
		snprintf(s->header, sizeof(s->header), "X-Spindle-%c%s-Api", first, s->name + 1);
		snprintf(s->zfssa, sizeof(s->zfssa), "X-Zfssa-%c%s-Api", first, s->name + 1);
	}
	if (opt->webroot) {
		char real[PATH_MAX];
		if (realpath(opt->webroot, real))
			srv->webroot_real = xstrdup(real);
		else
			log_warn("webroot %s: %s; the browser UI is not served", opt->webroot,
			         strerror(errno));
	}
	if (ssl_conn_index < 0)
		ssl_conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, ssl_conn_gone);
	if (ssl)
		SSL_CTX_set_client_hello_cb(ssl, hs_client_hello, NULL);
	live_srv = srv;
	return srv;
}

int http_start(struct http_server *srv)
{
	if (srv->ssl && srv->opt.listen &&
	    bind_listener(srv, &srv->https, srv->opt.listen, true) < 0)
		return -1;
	if (srv->opt.http_listen &&
	    bind_listener(srv, &srv->plain, srv->opt.http_listen, false) < 0)
		return -1;
	return 0;
}

void http_stop_accepting(struct http_server *srv)
{
	struct listener *ls[] = {&srv->https, &srv->plain};
	for (size_t i = 0; i < nitems(ls); i++) {
		if (ls[i]->sock) {
			evhttp_del_accept_socket(ls[i]->http, ls[i]->sock);
			ls[i]->sock = NULL;
		}
	}
	srv->stopping = true;
	if (!LIST_EMPTY(&srv->streams))
		event_base_once(srv->base, -1, EV_TIMEOUT, streams_stop, srv, NULL);
}

size_t http_inflight(const struct http_server *srv)
{
	return srv->inflight;
}

size_t http_unflushed(const struct http_server *srv)
{
	return srv->unflushed;
}

void http_free(struct http_server *srv)
{
	if (!srv)
		return;
	http_stop_accepting(srv);
	if (srv->https.http)
		evhttp_free(srv->https.http);
	if (srv->plain.http)
		evhttp_free(srv->plain.http);
	/* SSL objects freed later must not touch their events: those die with the base. */
	for (struct tls_conn *tc; (tc = LIST_FIRST(&srv->tls));) {
		LIST_REMOVE(tc, link);
		event_free(tc->deadline);
		tc->deadline = NULL;
	}
	live_srv = NULL;
	event_free(srv->trim);
	event_free(srv->access);
	free(srv->services);
	free(srv->webroot_real);
	hmap_clear(&srv->hs, free);
	hmap_clear(&srv->nul_plain, NULL);
	free(srv);
}
