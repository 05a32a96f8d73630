/* SPDX-License-Identifier: ISC */
/* Streamed replies (stream.h): chunked and SSE bodies written as their owners produce
 * them, heartbeats, the fan-out of one message to many streams, and their end when the
 * server stops or a stream's access ends. */
#define _GNU_SOURCE
#include "http_int.h"
#include "base/log.h"
#include "base/util.h"

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

/* --- streamed replies (stream.h)
 *
 * Ending a chunked reply over TLS takes care. bufferevent_openssl always defers its "output
 * drained" callback to the loop's next turn, and evhttp's write callback runs whatever
 * completion is set at that moment without looking at the buffer. A stream ended while a
 * chunk's drain callback was still on its way had evhttp take the connection back for
 * reading with the end of the body still queued: the client never saw it. So every chunk
 * goes out with stream_written() as its completion, which learns when the output is empty
 * with no drain callback left to come, and the body is ended only then. */

struct stream {
	struct request *r;
	enum stream_format fmt;
	stream_hook hook;
	void *arg;
	struct event *beat;
	struct event *head; /* HEAD: ends the stream once its headers are out */
	struct evbuffer *buf;
	bool wrote;    /* a chunk went out since the last heartbeat tick */
	bool armed;    /* a chunk was queued; stream_written() will be called */
	bool drained;  /* stream_written() saw the output empty: no callback is on its way */
	bool ending;   /* the owner called stream_end(); the end waits for the drain */
	bool stopping; /* the owner was told STREAM_SERVER_STOPPING */
	LIST_ENTRY(stream) link;
	struct stream_fanout *fanout; /* the one it belongs to, or NULL */
	LIST_ENTRY(stream) member;
};

static const char *const heartbeats[] = {[STREAM_CHUNKS] = "\n", [STREAM_SSE] = ":\n\n"};

static void stream_leave_fanout(struct stream *s)
{
	if (s->fanout) {
		LIST_REMOVE(s, member);
		s->fanout->n--;
		s->fanout = NULL;
	}
}

static void stream_free(struct stream *s)
{
	LIST_REMOVE(s, link);
	stream_leave_fanout(s);
	event_free(s->beat);
	if (s->head)
		event_free(s->head);
	evbuffer_free(s->buf);
	s->r->stream = NULL;
	free(s);
}

static void stream_tell(struct stream *s, enum stream_event ev)
{
	if (s->hook)
		s->hook(s, ev, s->arg);
}

/* The client went away: evhttp has detached the request from its connection, and only
 * evhttp_send_reply_end() frees it then. An owner that already ended the stream is not
 * told. */
void stream_conn_closed(struct stream *s)
{
	struct request *r = s->r;
	if (!s->ending)
		stream_tell(s, STREAM_CLIENT_GONE);
	stream_free(s);
	evhttp_send_reply_end(r->ev);
	r->srv->inflight--;
	request_free(r);
}

static void stream_finish(struct stream *s)
{
	struct request *r = s->r;
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	if (conn)
		evhttp_connection_set_closecb(conn, http_conn_closed, NULL);
	stream_free(s);
	reply_track_flush(r);
	tls_conn_busy(conn, false);
	evhttp_send_reply_end(r->ev);
	r->srv->inflight--;
	request_free(r);
}

static void stream_written(struct evhttp_connection *conn, void *arg)
{
	struct stream *s = arg;
	struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
	if (evbuffer_get_length(bufferevent_get_output(bev)) > 0)
		return; /* an earlier chunk's late callback: this one's is still to come */
	s->armed = false;
	s->drained = true;
	if (s->ending)
		stream_finish(s);
}

/* s->buf holds the chunk: it goes out as one chunk (one TLS record when small). */
static void stream_send(struct stream *s)
{
	struct request *r = s->r;
	if (s->ending || r->method == METHOD_HEAD || evbuffer_get_length(s->buf) == 0) {
		evbuffer_drain(s->buf,
		               evbuffer_get_length(s->buf)); /* empty: it would end the body */
		return;
	}
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	evhttp_send_reply_chunk_with_cb(r->ev, s->buf, stream_written, s);
	tls_coalesce(conn);
	s->wrote = true;
	s->armed = conn != NULL;
	s->drained = false;
}

void stream_write(struct stream *s, const void *data, size_t len)
{
	evbuffer_add(s->buf, data, len);
	stream_send(s);
}

void stream_line(struct stream *s, const char *line, size_t len)
{
	evbuffer_add(s->buf, line, len);
	evbuffer_add(s->buf, "\n", 1);
	stream_send(s);
}

void stream_event_format(struct buf *b, const char *id, const char *event, const char *data,
                         size_t len)
{
	if (id)
		buf_printf(b, "id: %s\n", id);
	buf_printf(b, "event: %s\ndata: ", event);
	buf_add(b, data, len);
	buf_add(b, "\n\n", 2);
}

static void sse_format(struct evbuffer *e, const char *id, const char *event, const char *data,
                       size_t len)
{
	struct buf b = {0};
	stream_event_format(&b, id, event, data, len);
	evbuffer_add(e, b.p, b.len);
	buf_free(&b);
}

void stream_event(struct stream *s, const char *id, const char *event, const char *data, size_t len)
{
	sse_format(s->buf, id, event, data, len);
	stream_send(s);
}

void stream_comment(struct stream *s, const char *text)
{
	evbuffer_add_printf(s->buf, ": %s\n\n", text);
	stream_send(s);
}

static void stream_beat(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;
	if (!s->wrote)
		stream_write(s, heartbeats[s->fmt], strlen(heartbeats[s->fmt]));
	s->wrote = false;
}

void stream_end(struct stream *s)
{
	struct evhttp_connection *conn = evhttp_request_get_connection(s->r->ev);
	event_del(s->beat);
	stream_leave_fanout(s);
	if (conn && !s->armed && !s->drained) {
		/* Nothing was written after the headers. Still queued, they take the end with
		 * them; gone out, their drain callback may be on its way, so a heartbeat (bytes
		 * the format ignores) goes first and its completion ends the body. */
		struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			stream_write(s, heartbeats[s->fmt], strlen(heartbeats[s->fmt]));
	}
	s->ending = true;
	if (!conn || !s->armed)
		stream_finish(s);
	/* else stream_written() ends it once the last chunk is out */
}

void stream_set_hook(struct stream *s, stream_hook hook, void *arg)
{
	s->hook = hook;
	s->arg = arg;
}

const char *stream_peer(const struct stream *s)
{
	return s->r->peer;
}

/* HEAD on a streamed route: its owner is told to finish, as at shutdown. */
static void stream_head_done(evutil_socket_t fd, short what, void *arg)
{
	struct stream *s = arg;
	if (s->stopping || s->ending)
		return;
	s->stopping = true;
	stream_tell(s, STREAM_SERVER_STOPPING);
}

static struct stream *stream_start(struct request *r, int status, enum stream_format fmt,
                                   const char *content_type)
{
	struct http_server *srv = r->srv;
	struct stream *s = xcalloc(1, sizeof(*s));
	s->r = r;
	s->fmt = fmt;
	s->buf = evbuffer_new();
	LIST_INSERT_HEAD(&srv->streams, s, link);
	r->stream = s;

	struct evkeyvalq *h = evhttp_request_get_output_headers(r->ev);
	evhttp_add_header(h, "Content-Type", content_type);
	evhttp_add_header(h, "Cache-Control", "no-store");
	reply_common_headers(r);
	struct evhttp_connection *conn = evhttp_request_get_connection(r->ev);
	evhttp_send_reply_start(r->ev, status, http_reason_phrase(status));
	if (conn)
		evhttp_connection_set_closecb(conn, http_conn_closed, s);
	/* Each chunk re-arms the connection's timeout; a third of it leaves slack. */
	struct timeval tv = {srv->opt.timeout_s >= 3 ? srv->opt.timeout_s / 3 : 1, 0};
	s->beat = event_new(srv->base, -1, EV_PERSIST, stream_beat, s);
	event_add(s->beat, &tv);
	/* A stream opened on a kept-alive connection after the stop signal is told at once;
	 * so is one answering HEAD, which has its headers and nothing to wait for. Both as
	 * events of their own: the owner sets its hook first. */
	if (srv->stopping) {
		event_base_once(srv->base, -1, EV_TIMEOUT, streams_stop, srv, NULL);
	} else if (r->method == METHOD_HEAD) {
		s->head = evtimer_new(srv->base, stream_head_done, s); /* dies with s */
		event_active(s->head, EV_TIMEOUT, 0);
	}
	return s;
}

struct stream *stream_open(struct request *r, enum stream_format fmt, const char *content_type)
{
	return stream_start(r, 200, fmt,
	                    content_type        ? content_type
	                    : fmt == STREAM_SSE ? "text/event-stream"
	                                        : "application/json");
}

/* evhttp calls this just before it frees a connection, with everything it wrote handed to
 * the socket; bufferevent_openssl would then close the socket without a TLS close_notify,
 * which OpenSSL 3 clients report as a truncation. One SSL_shutdown() call queues the alert
 * without waiting for the peer's. arg: the connection's open stream, or NULL. */
void http_conn_closed(struct evhttp_connection *conn, void *arg)
{
	conn_closing(conn);
	if (arg)
		stream_conn_closed(arg);
}

/* --- fan-out */

void stream_fanout_join(struct stream_fanout *f, struct stream *s)
{
	stream_leave_fanout(s);
	LIST_INSERT_HEAD(&f->members, s, member);
	s->fanout = f;
	f->n++;
}

static void fanout_send(struct stream_fanout *f, struct evbuffer *msg, stream_keep keep)
{
	struct stream *s = LIST_FIRST(&f->members), *next;
	for (; s; s = next) {
		next = LIST_NEXT(s, member); /* keep may end s, never another */
		if (keep && !keep(s, s->arg))
			continue;
		evbuffer_add(s->buf, evbuffer_pullup(msg, -1), evbuffer_get_length(msg));
		stream_send(s);
	}
}

void stream_fanout_event(struct stream_fanout *f, const char *id, const char *event,
                         const char *data, size_t len, stream_keep keep)
{
	struct evbuffer *msg = evbuffer_new();
	sse_format(msg, id, event, data, len);
	fanout_send(f, msg, keep);
	evbuffer_free(msg);
}

void stream_fanout_comment(struct stream_fanout *f, const char *text, stream_keep keep)
{
	struct evbuffer *msg = evbuffer_new();
	evbuffer_add_printf(msg, ": %s\n\n", text);
	fanout_send(f, msg, keep);
	evbuffer_free(msg);
}

void stream_fanout_end(struct stream_fanout *f)
{
	while (!LIST_EMPTY(&f->members))
		stream_end(LIST_FIRST(&f->members));
}

/* Streams do not end by themselves: at shutdown their owners are told to finish them.
 * A hook may end any streams, so the walk restarts from the head after each call. It runs
 * as an event of its own: the streams' last bytes then go out before the drain check
 * (main.c) sees nothing in flight and leaves the loop. */
void streams_stop(evutil_socket_t fd, short what, void *arg)
{
	struct http_server *srv = arg;
	struct stream *s = LIST_FIRST(&srv->streams);
	while (s) {
		if (s->stopping || s->ending) {
			s = LIST_NEXT(s, link);
			continue;
		}
		s->stopping = true;
		stream_tell(s, STREAM_SERVER_STOPPING);
		s = LIST_FIRST(&srv->streams);
	}
}

/* Every second, once users, roles, passwords or sessions have changed: a stream whose
 * identity no longer holds is told to end (its owner says why), as a new request with the
 * same credentials would be refused. */
void streams_access(evutil_socket_t fd, short what, void *arg)
{
	struct http_server *srv = arg;
	uint64_t changes = auth_changes();
	if (changes == srv->access_seen)
		return;
	srv->access_seen = changes;
	struct stream *s = LIST_FIRST(&srv->streams);
	while (s) {
		if (s->stopping || s->ending || !s->r->authenticated ||
		    auth_identity_current(&s->r->who)) {
			s = LIST_NEXT(s, link);
			continue;
		}
		log_info("streams: %s's stream to %s ends: its access changed", s->r->who.user,
		         s->r->peer);
		s->stopping = true;
		stream_tell(s, STREAM_ACCESS_ENDED);
		s = LIST_FIRST(&srv->streams); /* the owner may have ended others */
	}
}
