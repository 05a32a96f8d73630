/* SPDX-License-Identifier: ISC */
/* /api/status/v1: the phone's dashboard (polled, with ETag), the same as a live
 * Server-Sent Events stream, and every disk's figures of the second. */
#include "api.h"
#include "status/dashboard.h"

/* A document of the dashboard's, with its ETag (a 304 when the client has it) and gzip
 * where the client takes it: the phone's dashboard is then well under 2 KB. */
static void reply_doc(struct request *r, const struct dashboard_doc *(*get)(bool gz),
                      const char *what)
{
	const struct dashboard_doc *doc = get(request_accepts_gzip(r));
	if (!doc) {
		reply_error(r, ERR_INTERNAL, "%s: not available", what);
		return;
	}
	/* private: the answer depends on a token a shared cache would not see. */
	reply_cached(r, &(struct cached_doc){.type = "application/json",
	                                     .cache_control = "private, max-age=1",
	                                     .body = doc->body,
	                                     .len = doc->len,
	                                     .etag = doc->etag,
	                                     .gz = doc->gz,
	                                     .gz_len = doc->gz_len,
	                                     .etag_gz = doc->etag_gz});
}

void status_dashboard(struct request *r)
{
	reply_doc(r, dashboard_current, "dashboard");
}

/* Every disk's figures of the newest second, as the dashboard lists its busiest few. */
void status_disks(struct request *r)
{
	reply_doc(r, dashboard_disks, "disks");
}

void status_events(struct request *r)
{
	struct fault f = {0};
	if (dashboard_events_admit(&f) < 0) {
		reply_fault(r, &f);
		return;
	}
	const char *token = request_token(r); /* the router authenticated r with it */
	const char *user = r->who.user;
	if (!token) {
		reply_error(r, ERR_UNAUTHORIZED, "credentials: events need a session token");
		return;
	}
	reply_header(r, "X-Accel-Buffering", "no"); /* a proxy in front must not hold events */
	dashboard_events_attach(stream_open(r, STREAM_SSE, NULL), token, user);
}
