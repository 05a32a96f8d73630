/* SPDX-License-Identifier: ISC */
/* Requests and replies (http.h): what a handler reads of its request (parameters,
 * headers, validators, the query, the body, the credentials) and how it answers (JSON,
 * faults, raw bytes), with the headers every answer carries. Above the connections
 * (http_conn.c), below static files, streams and the request path. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/gzip.h"
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

#include <zlib.h>

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
		/* and, as a real appliance adds, the version of the service answering */
		evhttp_add_header(h, "X-Zfssa-Api-Version", s->version);
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

/* JSON answers to GET this long or longer go gzipped to a client that takes it. */
#define GZIP_MIN   1024
#define GZIP_LEVEL 1 /* zlib's fastest: JSON still shrinks five- to tenfold */

static void free_gz(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

/* A quoted tag of bytes: their CRC-32 and Adler-32 and length, enough to tell two answers
 * of one resource apart, at memory speed. Pure: a helper thread may call it. */
static void bytes_tag(const void *data, size_t len, bool gz, char *tag, size_t size)
{
	const Bytef *p = len ? data : (const Bytef *)"";
	uLong crc = crc32_z(crc32(0, Z_NULL, 0), p, len);
	uLong adler = adler32_z(adler32(0, Z_NULL, 0), p, len);
	snprintf(tag, size, "\"%08lx%08lx-%zx%s\"", crc & 0xffffffffUL, adler & 0xffffffffUL, len,
	         gz ? "-gz" : "");
}

static void body_tag(struct evbuffer *body, bool gz, char *tag, size_t size)
{
	size_t len = evbuffer_get_length(body);
	bytes_tag(len ? evbuffer_pullup(body, -1) : NULL, len, gz, tag, size);
}

static bool is_json(const char *content_type)
{
	return content_type && strncmp(content_type, "application/json", 16) == 0;
}

/* The 200 of a GET in JSON: tagged (a 304 to a client that has it), gzipped for one that
 * takes it and long enough to gain (its own tag, another representation), kept by a
 * browser only to ask again with the tag. Any other answer, or one a handler tagged or
 * encoded itself, goes as it is. */
static void reply_body(struct request *r, int status, struct evbuffer *body)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	if (status != 200 || (r->method != METHOD_GET && r->method != METHOD_HEAD) ||
	    !is_json(evhttp_find_header(h, "Content-Type")) || evhttp_find_header(h, "ETag") ||
	    evhttp_find_header(h, "Content-Encoding")) {
		reply_finish(r, status, body);
		return;
	}
	size_t len = evbuffer_get_length(body);
	bool big = len >= GZIP_MIN, gz = big && request_accepts_gzip(r);
	char tag[64];
	body_tag(body, gz, tag, sizeof(tag));
	evhttp_add_header(h, "ETag", tag);
	if (big)
		evhttp_add_header(h, "Vary", "Accept-Encoding");
	if (!evhttp_find_header(h, "Cache-Control"))
		evhttp_add_header(h, "Cache-Control", "private, no-cache");
	if (request_etag_matches(r, tag)) {
		evhttp_remove_header(h, "Content-Type"); /* a 304 describes no body */
		reply_finish(r, 304, NULL);
		return;
	}
	size_t zlen;
	unsigned char *z =
	    gz ? gzip_bytes(evbuffer_pullup(body, -1), len, GZIP_LEVEL, &zlen) : NULL;
	if (!z) {
		if (gz) { /* zlib failed: the plain bytes, under their own tag */
			body_tag(body, false, tag, sizeof(tag));
			evhttp_remove_header(h, "ETag");
			evhttp_add_header(h, "ETag", tag);
		}
		reply_finish(r, status, body);
		return;
	}
	struct evbuffer *out = evbuffer_new();
	evbuffer_add_reference(out, z, zlen, free_gz, NULL);
	evhttp_add_header(h, "Content-Encoding", "gzip");
	reply_finish(r, status, out);
	evbuffer_free(out);
}

void made_doc_init(struct made_doc *d, char *body, size_t len, bool gzip)
{
	d->body = body;
	d->len = len;
	d->gz = len >= GZIP_MIN && gzip ? gzip_bytes(body, len, GZIP_LEVEL, &d->gz_len) : NULL;
	bytes_tag(body, len, d->gz != NULL, d->etag, sizeof(d->etag));
}

static void free_taken(const void *data, size_t len, void *arg)
{
	(void)len;
	(void)arg;
	free((void *)data);
}

void reply_made(struct request *r, int status, struct made_doc *d)
{
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "ETag", d->etag);
	if (d->len >= GZIP_MIN)
		evhttp_add_header(h, "Vary", "Accept-Encoding");
	if (!evhttp_find_header(h, "Cache-Control"))
		evhttp_add_header(h, "Cache-Control", "private, no-cache");
	struct evbuffer *out = evbuffer_new();
	if (status == 200 && request_etag_matches(r, d->etag)) {
		evhttp_remove_header(h, "Content-Type"); /* a 304 describes no body */
		status = 304;
	} else if (d->gz) {
		evhttp_add_header(h, "Content-Encoding", "gzip");
		evbuffer_add_reference(out, d->gz, d->gz_len, free_taken, NULL);
		d->gz = NULL;
	} else {
		evbuffer_add_reference(out, d->body, d->len, free_taken, NULL);
		d->body = NULL;
	}
	free(d->body);
	free(d->gz);
	d->body = NULL;
	d->gz = NULL;
	reply_finish(r, status, status == 304 ? NULL : out);
	evbuffer_free(out);
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
	/* what a GET's 200 says is kept only to be asked for again (reply_body); the rest of
	 * the API's answers, never */
	if (!evhttp_find_header(h, "Cache-Control") &&
	    (status != 200 || (r->method != METHOD_GET && r->method != METHOD_HEAD)))
		evhttp_add_header(h, "Cache-Control", "no-store");
	if (body) {
		json_dump_callback(body, dump_to_evbuffer, buf, JSON_COMPACT);
		evbuffer_add(buf, "\n", 1);
		json_decref(body);
	}
	reply_body(r, status, buf);
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
	reply_body(r, status, buf);
	evbuffer_free(buf);
}

void reply_cached(struct request *r, const struct cached_doc *d)
{
	bool gz = d->gz && request_accepts_gzip(r);
	const char *etag = gz ? d->etag_gz : d->etag;
	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "ETag", etag);
	evhttp_add_header(h, "Cache-Control", d->cache_control);
	evhttp_add_header(h, "Vary", "Accept-Encoding");
	if (request_etag_matches(r, etag)) {
		reply_finish(r, 304, NULL); /* RFC 9110 15.4.5: what a 200 would, but no body */
		return;
	}
	if (gz)
		evhttp_add_header(h, "Content-Encoding", "gzip");
	reply_raw(r, 200, d->type, gz ? d->gz : d->body, gz ? d->gz_len : d->len);
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
int request_if_match(const struct request *r, const json_t *current, struct fault *f)
{
	const char *im = request_header(r, "If-Match");
	if (!im)
		return 0;
	/* the tag a GET gives it, plain; a gzipped GET's is the same with "-gz" */
	struct evbuffer *buf = evbuffer_new();
	json_dump_callback(current, dump_to_evbuffer, buf, JSON_COMPACT);
	evbuffer_add(buf, "\n", 1);
	char tag[64];
	body_tag(buf, false, tag, sizeof(tag));
	evbuffer_free(buf);
	size_t tlen = strlen(tag) - 1; /* without the closing quote */
	for (const char *p = im; *p;) {
		p += strspn(p, " \t,");
		if (*p == '*')
			return 0;
		size_t n = strcspn(p, ", \t"); /* (a weak tag, W/..., never matches: RFC 9110) */
		if ((n == tlen + 1 && strncmp(p, tag, n) == 0) ||
		    (n == tlen + 4 && strncmp(p, tag, tlen) == 0 &&
		     strncmp(p + tlen, "-gz\"", 4) == 0))
			return 0;
		p += n;
	}
	return fault_set(f, ERR_PRECONDITION,
	                 "If-Match: %.100s is not the current version (%s): GET it again and "
	                 "reapply the change",
	                 im, tag);
}

int reply_unless_current(struct request *r, const char *key, json_t *obj,
                         const struct fault *missing)
{
	struct fault f;
	if (!obj) {
		reply_fault(r, missing);
		return -1;
	}
	json_t *doc = json_pack("{s:o}", key, obj);
	int rc = request_if_match(r, doc, &f);
	json_decref(doc);
	if (rc < 0)
		reply_fault(r, &f);
	return rc;
}

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

unsigned method_of(struct evhttp_request *req)
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
