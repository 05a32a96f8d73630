/* SPDX-License-Identifier: ISC */
/* The HTTP front's connections, the lowest of its parts (http_int.h): the cap on TLS
 * connections and the deadline of a request arriving, handshakes per address, the NUL
 * mark on both listeners, and the TLS records of a reply. It calls nothing of the parts
 * above it. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/log.h"
#include "base/util.h"
#include "base/hmap.h"

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

struct bufferevent *https_bevcb(struct event_base *base, void *arg)
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

struct bufferevent *plain_bevcb(struct event_base *base, void *arg)
{
	struct http_server *srv = arg;
	struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (!bev)
		return NULL;
	plain_forget(srv, bev);
	evbuffer_add_cb(bufferevent_get_input(bev), plain_input, bev);
	return bev;
}

/* --- the wire under evhttp: TLS records */

/* The TLS session of a connection, or NULL on the plain listener. */
SSL *conn_ssl(struct evhttp_connection *conn)
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

/* --- what the layers above ask of a connection */

bool conn_nul_take(struct http_server *srv, struct evhttp_connection *conn)
{
	const struct tls_conn *tc = tls_conn_of(conn);
	if (tc)
		return tc->nul;
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	if (!bev || !srv->nul_plain.n || !hmap_get(&srv->nul_plain, (char *)&bev, sizeof(bev)))
		return false;
	plain_forget(srv, bev); /* (its refusal closes the connection) */
	return true;
}

void conn_closing(struct evhttp_connection *conn)
{
	SSL *ssl = conn_ssl(conn);
	if (ssl && SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN)) {
		SSL_shutdown(ssl);
		ERR_clear_error(); /* a peer already gone is no fault of the next connection */
	}
	if (!ssl)
		plain_forget(live_srv, evhttp_connection_get_bufferevent(conn));
}

/* --- set up and torn down with the server */

void http_conn_setup(struct http_server *srv)
{
	LIST_INIT(&srv->tls);
	srv->trim = evtimer_new(srv->base, tls_trim, srv);
	if (ssl_conn_index < 0)
		ssl_conn_index = SSL_get_ex_new_index(0, NULL, NULL, NULL, ssl_conn_gone);
	if (srv->ssl)
		SSL_CTX_set_client_hello_cb(srv->ssl, hs_client_hello, NULL);
	live_srv = srv;
}

void http_conn_teardown(struct http_server *srv)
{
	/* SSL objects freed later must not touch their events: those die with the base. */
	for (struct tls_conn *tc; (tc = LIST_FIRST(&srv->tls));) {
		LIST_REMOVE(tc, link);
		event_free(tc->deadline);
		tc->deadline = NULL;
	}
	live_srv = NULL;
	event_free(srv->trim);
}
