/* SPDX-License-Identifier: ISC */
/* An open streamed reply, as the modules that feed it see it: bytes, NDJSON lines or
 * Server-Sent Events that go out as they come, a heartbeat while nothing does, word when the
 * client leaves, and fan-out of one event to many streams. api/ opens a stream on a request
 * (stream_open() in http.h) and hands it to the module that owns the data; that module
 * needs this header only, never HTTP. Implemented in http.c, which owns the wire.
 *
 * A stream stays open until its owner ends it or its client goes. Every write is copied;
 * writes after the end are ignored. */
#ifndef SPINDLE_STREAM_H
#define SPINDLE_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/queue.h>

struct stream;
struct buf;

enum stream_format {
	STREAM_CHUNKS, /* bytes as written (JSON, NDJSON); the heartbeat is a blank line */
	STREAM_SSE,    /* text/event-stream; the heartbeat is a comment line */
};

enum stream_event {
	STREAM_CLIENT_GONE,     /* the connection closed: s is freed when the hook returns */
	STREAM_SERVER_STOPPING, /* shutting down (or a HEAD request): end it soon */
	STREAM_ACCESS_ENDED,    /* its user was deleted, or its password, authorizations or
	                         * session changed or ended: end it now, saying so */
};
typedef void (*stream_hook)(struct stream *s, enum stream_event ev, void *arg);

/* The owner's hook; set it before returning to the loop. */
void stream_set_hook(struct stream *s, stream_hook hook, void *arg);
/* Who is at the other end, for logs. */
const char *stream_peer(const struct stream *s);

void stream_write(struct stream *s, const void *data, size_t len);
/* One line and its "\n", sent together. */
void stream_line(struct stream *s, const char *line, size_t len);
/* One Server-Sent Event: "id:" (when id is not NULL), "event:", "data:" and a blank line.
 * data is one line of text. */
void stream_event(struct stream *s, const char *id, const char *event, const char *data,
                  size_t len);
/* The same event appended to b, framed as stream_event() frames it: for an answer given
 * whole that holds what a stream would (a finished job's progress). */
void stream_event_format(struct buf *b, const char *id, const char *event, const char *data,
                         size_t len);
/* An SSE comment (": text"), which clients ignore. */
void stream_comment(struct stream *s, const char *text);
/* Ends the body once everything written has gone out; the hook is not called any more and
 * s must not be used after this call. */
void stream_end(struct stream *s);

/* Streams that receive the same events (live views). Zero-initialised is empty. A stream
 * leaves its fan-out when it ends or its client goes. */
struct stream_fanout {
	LIST_HEAD(stream_members, stream) members;
	unsigned n;
};
/* keep: called for each member, with the member's hook argument, before it is sent an
 * event (NULL: all are); false skips it, and keep may end the stream it is given. */
typedef bool (*stream_keep)(struct stream *s, void *hook_arg);

void stream_fanout_join(struct stream_fanout *f, struct stream *s);
/* The event is formatted once for all. */
void stream_fanout_event(struct stream_fanout *f, const char *id, const char *event,
                         const char *data, size_t len, stream_keep keep);
void stream_fanout_comment(struct stream_fanout *f, const char *text, stream_keep keep);
/* Ends every member (shutdown). */
void stream_fanout_end(struct stream_fanout *f);

#endif
