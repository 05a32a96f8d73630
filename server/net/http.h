/* SPDX-License-Identifier: ISC */
/* The HTTP front: listeners (HTTPS, optional plain HTTP), limits, routing, authentication
 * and authorization before any handler runs, JSON replies and faults, static files. */
#ifndef SPINDLE_HTTP_H
#define SPINDLE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>
#include <openssl/ssl.h>

#include "access/auth.h"
#include "body.h"
#include "base/fault.h"
#include "router.h"
#include "stream.h"

struct event_base;
struct evhttp_request;
struct http_server;
struct stream;

struct http_service {
	const char *name;    /* "user" */
	const char *version; /* "1.0" -> X-Spindle-User-Api: 1.0 */
};

struct http_options {
	const char *listen;      /* HTTPS ADDR:PORT */
	const char *http_listen; /* plain, or NULL */
	const char *webroot;     /* static files at /, or NULL */
	long long max_body, max_header, max_connections, timeout_s;
	long long header_timeout_s; /* an HTTPS request's deadline, from its first byte */
	long long hsts_max_age_s;   /* Strict-Transport-Security on HTTPS answers; 0: none */
	long long handshake_rate;   /* TLS handshakes a second one address may start; 0: any */
	const struct http_service *services;
	size_t nservices;
};

struct request {
	struct evhttp_request *ev;
	struct http_server *srv;
	const struct route *route;
	struct route_match match;
	struct identity who;
	bool authenticated;
	char peer[64];
	unsigned method;
	void *query;           /* struct evkeyvalq, parsed on first use */
	struct stream *stream; /* while a streamed reply is open (stream_open) */
};

/* ssl: the server context (tls.c); NULL only when no HTTPS listener is wanted (tests). */
struct http_server *http_new(struct event_base *base, const struct router *rt,
                             const struct http_options *opt, SSL_CTX *ssl);
/* Binds the listeners; -1 with the reason logged. */
int http_start(struct http_server *srv);
/* Closes the listeners; requests in flight go on. */
void http_stop_accepting(struct http_server *srv);
/* Requests received and not yet answered (async work in flight). */
size_t http_inflight(const struct http_server *srv);
/* Replies handed over but not yet written to their sockets (may overcount: a reply whose
 * client vanished is never written, so wait for it only a little). */
size_t http_unflushed(const struct http_server *srv);
void http_free(struct http_server *srv);

/* The path parameter i (0-based, in pattern order), percent-decoded. */
const char *request_param(const struct request *r, int i);
/* A query parameter, decoded, or NULL. */
const char *request_query(struct request *r, const char *key);
/* Refuses any query parameter not in the NULL-terminated list (ERR_UNKNOWN_ARG). */
int request_query_check(struct request *r, const char *const *allowed, struct fault *f);
const char *request_header(const struct request *r, const char *key);
/* If-Match (RFC 9110 13.1.1) against current, the resource as its GET answers it (the same
 * JSON, whose bytes give its ETag): 0 without the header, for "*" or a tag of current; else
 * -1 with a 412 fault. For PUT and DELETE, so that two clients editing one object do not
 * overwrite each other unseen. */
int request_if_match(const struct request *r, const json_t *current, struct fault *f);
/* request_if_match() for an object GET answers as {"<key>": obj} (obj stolen; NULL: it is
 * not there, and missing says why): 0 to go on, else -1 with the fault answered. */
int reply_unless_current(struct request *r, const char *key, json_t *obj,
                         const struct fault *missing);
/* Does If-None-Match name etag (or "*")? RFC 9110: a list of tags, compared weakly. */
bool request_etag_matches(const struct request *r, const char *etag);
/* Does Accept-Encoding take gzip? "gzip" or "*" with a q above 0 (q=0 refuses it). */
bool request_accepts_gzip(const struct request *r);
/* The session token of X-Auth-Session or "Authorization: Bearer", or NULL. */
const char *request_token(const struct request *r);
/* "https://host:port" as the client reached us (its Host header, else the socket's
 * address), for the absolute URIs the appliance puts in answers. 0, or -1 if too long. */
int request_base_url(const struct request *r, char *buf, size_t len);
/* The password credentials of a request, as the appliance takes them on any request:
 * X-Auth-User with X-Auth-Key, or "Authorization: Basic". 1 with user and pass filled, 0
 * when there are none, -1 with ERR_MISSING_ARG or ERR_INVALID_ARG when malformed. */
int request_credentials(const struct request *r, char *user, size_t ulen, char *pass, size_t plen,
                        struct fault *f);
/* Reads the body as JSON checked against fields: 415 without application/json, 400 for
 * bad JSON, duplicate or unknown keys, wrong types or ranges. An empty body is {}. */
int request_body(struct request *r, const struct field *fields, json_t **out, struct fault *f);
/* The body (not empty, its size checked by the caller) parsed as JSON, unchecked
 * otherwise: 415 without application/json, 400 for bad JSON or duplicate keys. */
int request_body_json(struct request *r, json_t **out, struct fault *f);

/* Each request is answered exactly once by one of these; the request is freed then. */
void reply_json(struct request *r, int status, json_t *body /* stolen */);
void reply_fault(struct request *r, const struct fault *f);
void reply_error(struct request *r, enum fault_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void reply_empty(struct request *r, int status);
/* Bytes as they are (static documents); data is copied. */
void reply_raw(struct request *r, int status, const char *content_type, const void *data,
               size_t len);
/* A representation a client may keep: its bytes, and their gzip if any, each with its own
 * ETag (quoted). Answered with the tag, Vary: Accept-Encoding and cache_control; a 304 (no
 * body, no Content-Type) when If-None-Match names the tag; gzipped where the client takes
 * it. The bytes are copied. */
struct cached_doc {
	const char *type, *cache_control;
	const void *body;
	size_t len;
	const char *etag;
	const void *gz; /* or NULL */
	size_t gz_len;
	const char *etag_gz;
};
void reply_cached(struct request *r, const struct cached_doc *d);
/* A JSON answer made whole off the loop, for answers of megabytes whose gzip and tag would
 * hold it: made_doc_init() (pure: a helper thread calls it) takes body (malloc'd), gzips
 * it when gzip (the client takes it: request_accepts_gzip(), asked on the loop) and it is
 * long enough, and tags what goes; reply_made() answers it as reply_json() would (ETag, a
 * 304 for If-None-Match, Vary), handing the bytes to evhttp without a copy, and frees d's. */
struct made_doc {
	char *body;
	size_t len;
	unsigned char *gz; /* or NULL */
	size_t gz_len;
	char etag[64]; /* of what goes: the gzip's when gz */
};
void made_doc_init(struct made_doc *d, char *body, size_t len, bool gzip);
void reply_made(struct request *r, int status, struct made_doc *d);
/* Headers added before the reply. */
void reply_header(struct request *r, const char *key, const char *value);

/* Streamed replies: for answers that go on as new data comes (an analytics window reaching
 * past now, a job's progress, server-sent events). stream_open() sends the status (200) and
 * headers now and takes r over: the request stays in flight until the stream ends, and the
 * stream is then driven through stream.h. content_type NULL: the format's. */
struct stream *stream_open(struct request *r, enum stream_format fmt, const char *content_type);

#endif
