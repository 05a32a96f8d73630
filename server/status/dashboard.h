/* SPDX-License-Identifier: ISC */
/* The phone's dashboard: one compact JSON document built once per collector tick and kept
 * as bytes with its ETag, so a poll costs a header compare and a copy; and the
 * Server-Sent Events streams that push that document to live views every second. */
#ifndef SPINDLE_DASHBOARD_H
#define SPINDLE_DASHBOARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/fault.h"

struct event_base;
struct stream;

#define DASHBOARD_EVENTS_MAX 128 /* concurrent event streams */

struct dashboard_doc {
	const char *body; /* the JSON ({"dashboard":{...}}) and a newline */
	size_t len;
	const char *etag; /* quoted, strong: changes with every sample */
	uint64_t generation;
	const void *gz; /* the same gzipped (Content-Encoding: gzip), or NULL */
	size_t gz_len;
	const char *etag_gz; /* the gzipped one's: another representation, another tag */
};

#define DASHBOARD_HEARTBEAT_S 15 /* at most; a third of the connection timeout if less */

/* timeout_s: the connection timeout; a heartbeat (an SSE comment) goes to every stream
 * well within it, since each chunk re-arms it. Subscribes to the collector. */
int dashboard_init(struct event_base *base, long long timeout_s);
void dashboard_shutdown(void);

/* The current document: built from the newest sample if it is not yet (or, before the
 * first sample, once a second); gz: with its gzipped form too. */
const struct dashboard_doc *dashboard_current(bool gz);
/* Every disk of the newest sample, as the dashboard lists its busiest: {"disks":[...]},
 * built once per sample that a request reads. */
const struct dashboard_doc *dashboard_disks(bool gz);

/* Room for one more event stream? ERR_BUSY past DASHBOARD_EVENTS_MAX. */
int dashboard_events_admit(struct fault *f);
/* Feeds an opened SSE stream: the current document at once, then one "dashboard" event per
 * tick and a heartbeat. It ends when the client goes, when the session of token ends or
 * loses stat:read, or at shutdown. user: for the log. */
void dashboard_events_attach(struct stream *s, const char *token, const char *user);
/* Streams open now (also for /metrics, spindle_sse_clients). */
unsigned dashboard_events_clients(void);

#endif
