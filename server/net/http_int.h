/* SPDX-License-Identifier: ISC */
/* What the parts of the HTTP front share (http.h is its face), from the top down, each
 * calling only those below it: http.c (the request path, the listeners), http_static.c
 * (the browser UI's files) and http_stream.c (streamed replies and their fan-out),
 * http_reply.c (requests and replies), http_conn.c (connections). Everything here runs on
 * the loop thread. */
#ifndef SPINDLE_HTTP_INT_H
#define SPINDLE_HTTP_INT_H

#include "http.h"
#include "base/hmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <openssl/ssl.h>

/* libevent 2.1's type of a request whose method it does not know (http-internal.h). */
#define EVHTTP_REQ_UNKNOWN (1 << 15)

/* The largest plaintext of one TLS record (RFC 8446 5.1). */
#define TLS_RECORD_MAX 16384

struct service_hdr {
	const char *name;
	char header[64]; /* X-Spindle-<Service>-Api */
	char zfssa[64];  /* X-Zfssa-<Service>-Api: the appliance's, which its clients read */
	const char *version;
};

struct listener {
	struct evhttp *http;
	struct evhttp_bound_socket *sock;
	struct http_server *srv;
	bool tls;
};

struct http_server {
	struct event_base *base;
	const struct router *rt;
	struct http_options opt;
	SSL_CTX *ssl;
	struct listener https, plain;
	struct service_hdr *services;
	size_t nservices;
	LIST_HEAD(stream_list, stream) streams; /* open streamed replies */
	size_t inflight;
	size_t unflushed;     /* replies handed to evhttp and not yet written out */
	bool stopping;        /* no longer accepting: streams are told to finish */
	char hsts[48];        /* "max-age=N", or empty */
	struct hmap hs;       /* address -> struct hs_bucket: handshakes it may start */
	struct event *access; /* streams_access, every second */
	uint64_t access_seen; /* auth_changes() when the streams were last checked */
	size_t tls_conns;     /* open TLS connections, for the cap */
	size_t tls_peak;      /* the most open since the heap was last trimmed */
	struct event *trim;
	LIST_HEAD(tls_list, tls_conn) tls; /* those with a deadline event */
	struct hmap nul_plain; /* plain connections a NUL byte arrived on (see plain_input) */
	char *webroot_real;
};

/* --- http_conn.c: connections */

/* With the server: the TLS connections' list and trim timer, the SSL ex_data index that
 * tells when a connection is freed, the ClientHello callback; and the end of them. */
void http_conn_setup(struct http_server *srv);
void http_conn_teardown(struct http_server *srv);
/* evhttp's bufferevents for a new connection on each listener (evhttp_set_bevcb). */
struct bufferevent *https_bevcb(struct event_base *base, void *arg);
struct bufferevent *plain_bevcb(struct event_base *base, void *arg);
/* A request arrived whole (busy) or was answered (idle: what is buffered starts the clock
 * of the next one). */
void tls_conn_busy(struct evhttp_connection *conn, bool busy);
/* Whether a NUL byte arrived on the connection, on either listener. A plain connection's
 * mark goes with the answer: the refusal closes the connection. */
bool conn_nul_take(struct http_server *srv, struct evhttp_connection *conn);
/* evhttp is about to free the connection: the TLS close_notify is queued, a plain
 * connection's NUL mark goes. */
void conn_closing(struct evhttp_connection *conn);
/* The TLS session of a connection, or NULL on the plain listener. */
SSL *conn_ssl(struct evhttp_connection *conn);
/* bufferevent_openssl makes one TLS record (and one send()) of each evbuffer chunk, and
 * evhttp hands over a reply as separate chunks: headers, body, chunk framing. Joining the
 * head of the output into one chunk puts a small answer in one record and one segment. */
void tls_coalesce(struct evhttp_connection *conn);

/* --- http_reply.c: requests and replies */

void request_free(struct request *r);
unsigned method_of(struct evhttp_request *req);
/* The headers every answer carries: versions, nosniff, HSTS, the service's. */
void reply_common_headers(struct request *r);
/* The reply counts as unflushed until evhttp has written its last byte. */
void reply_track_flush(struct request *r);
/* The reason phrases libevent 2.1 lacks (it would say "Client Error" or "Server Error"). */
const char *http_reason_phrase(int status);
/* The limits http_errors.c names in the faults evhttp answers itself. */
void http_errors_limits(long long max_header, long long max_body);
/* Hands the reply to evhttp with the common headers, and frees the request. */
void reply_finish(struct request *r, int status, struct evbuffer *body);

/* --- http_stream.c: streamed replies */

/* evhttp calls this just before it frees a connection (set on every request's): the TLS
 * close_notify, the NUL mark forgotten, and the connection's open stream (arg) told. */
void http_conn_closed(struct evhttp_connection *conn, void *arg);
/* The client went away: evhttp has detached the request from its connection, and only
 * evhttp_send_reply_end() frees it then. An owner that already ended the stream is not
 * told. */
void stream_conn_closed(struct stream *s);
/* Every second, once users, roles, passwords or sessions have changed: a stream whose
 * identity no longer holds is told to end (its owner says why), as a new request with the
 * same credentials would be refused. */
void streams_access(evutil_socket_t fd, short what, void *arg);
/* At shutdown: every stream's owner is told to finish it. */
void streams_stop(evutil_socket_t fd, short what, void *arg);

/* --- http_static.c: the browser UI's files */

void serve_static(struct request *r, const char *path);

#endif
