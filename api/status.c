/* SPDX-License-Identifier: ISC */
/* /api/status/v1: the phone's dashboard (polled, with ETag), the same as a live
 * Server-Sent Events stream, and every disk's figures of the second. */
#include "api.h"
#include "status/dashboard.h"

static const char *const no_query[] = {NULL};

/* A document of the dashboard's, with its ETag (a 304 when the client has it) and gzip
 * where the client takes it: the phone's dashboard is then well under 2 KB. */
static void reply_doc(struct request *r, const struct dashboard_doc *(*get)(bool gz),
                      const char *what)
{
	struct fault f;
	if (request_query_check(r, no_query, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	bool gz = request_accepts_gzip(r);
	const struct dashboard_doc *doc = get(gz);
	if (!doc) {
		reply_error(r, ERR_INTERNAL, "%s: not available", what);
		return;
	}
	gz = gz && doc->gz;
	const char *etag = gz ? doc->etag_gz : doc->etag;
	reply_header(r, "ETag", etag);
	/* private: the answer depends on a token a shared cache would not see. */
	reply_header(r, "Cache-Control", "private, max-age=1");
	reply_header(r, "Vary", "Accept-Encoding");
	if (request_etag_matches(r, etag)) {
		reply_raw(r, 304, "application/json", "", 0);
		return;
	}
	if (gz) {
		reply_header(r, "Content-Encoding", "gzip");
		reply_raw(r, 200, "application/json", doc->gz, doc->gz_len);
		return;
	}
	reply_raw(r, 200, "application/json", doc->body, doc->len);
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
	if (request_query_check(r, no_query, &f) < 0 || dashboard_events_admit(&f) < 0) {
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
