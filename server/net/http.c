/* SPDX-License-Identifier: ISC */
/* The HTTP front on evhttp. A request enters in http_request(), is routed, authenticated
 * and authorized there, and only then reaches its handler in api/. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/log.h"
#include "base/loopwork.h"
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

/* The handler, once the query holds only parameters the route takes (the document's). */
static void dispatch(struct request *r)
{
	struct fault f;
	const char *const *names = router_query(r->srv->rt, r->route);
	if (names && request_query_check(r, names, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	/* A handler holds the loop as long as it runs: timed with the loop's periodic work. */
	struct loopwork w;
	loopwork_begin(&w);
	r->route->handler(r);
	loopwork_end(&w);
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
	dispatch(r);
}

/* Authenticates and authorizes r, then runs its handler, or answers the fault. A token
 * is checked at once; a password (Basic, X-Auth-User/X-Auth-Key) is checked on a helper
 * thread the first time and remembered (auth_credentials), so r may wait for it. */
static void authorize(struct request *r)
{
	const struct route *rt = r->route;
	struct fault f;
	if (rt->access == ROUTE_PUBLIC) {
		dispatch(r);
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
	dispatch(r);
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

	if (conn_nul_take(srv, conn)) {
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
		if (allowed && r->method == METHOD_OPTIONS) {
			/* What the resource allows, and nothing for a browser's preflight: the API
			 * answers its own origin only (no CORS headers, by design). */
			char methods[80];
			reply_header(
			    r, "Allow",
			    router_methods_str(allowed | METHOD_OPTIONS, methods, sizeof(methods)));
			reply_empty(r, 204);
		} else if (allowed) {
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
	/* evhttp answers a body over its own cap itself, before any callback runs (in the JSON
	 * fault: http_errors.c), so its cap sits well above max_body: bodies in between get the
	 * fault from request_body(), and memory per connection stays bounded. Lingering: a
	 * body over the cap is read and dropped before the answer, so that a client still
	 * sending it reads the 413 rather than a reset connection. */
	evhttp_set_max_body_size(l->http, (ev_ssize_t)http_transport_cap(srv->opt.max_body));
	evhttp_set_flags(l->http, EVHTTP_SERVER_LINGERING_CLOSE);
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
	http_errors_limits(opt->max_header, opt->max_body);
	if (opt->hsts_max_age_s > 0)
		snprintf(srv->hsts, sizeof(srv->hsts), "max-age=%lld", opt->hsts_max_age_s);
	srv->ssl = ssl;
	LIST_INIT(&srv->streams);
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
	http_conn_setup(srv);
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
	http_conn_teardown(srv);
	event_free(srv->access);
	free(srv->services);
	free(srv->webroot_real);
	hmap_clear(&srv->hs, free);
	hmap_clear(&srv->nul_plain, NULL);
	free(srv);
}
