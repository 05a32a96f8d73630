/* SPDX-License-Identifier: ISC */
/* The answers evhttp gives itself, in the API's shape. libevent 2.1 answers a request it
 * cannot take (a malformed request line or header, headers past --max-header, a body past
 * what the transport allows) through evhttp_send_error(), with an HTML page, and offers no
 * hook there (2.2's evhttp_set_errorcb is not in Debian 12). The library calls that
 * function through its PLT, so the definition below takes its place in this program: the
 * same status, with the JSON fault every handler answers, and Connection: close as
 * libevent's own. A test (tests/api/test_http_limits.py) holds it to that, so a libevent
 * that stopped calling it so would be seen. */
#include "http_int.h"
#include "base/fault.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>

static struct {
	long long max_header, max_body;
} limits;

void http_errors_limits(long long max_header, long long max_body)
{
	limits.max_header = max_header;
	limits.max_body = max_body;
}

/* Headers past --max-header: evhttp refuses them as it refuses malformed ones (400), having
 * counted what it parsed, or left unparsed a line longer than the limit. */
static bool headers_too_long(struct evhttp_request *req)
{
	if ((long long)req->headers_size > limits.max_header)
		return true;
	struct evhttp_connection *conn = evhttp_request_get_connection(req);
	struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
	return bev &&
	       (long long)evbuffer_get_length(bufferevent_get_input(bev)) > limits.max_header;
}

void evhttp_send_error(struct evhttp_request *req, int error, const char *reason)
{
	(void)reason;
	struct fault f;
	if ((error == HTTP_ENTITYTOOLARGE && req->body_size == 0 && req->ntoread <= 0) ||
	    (error == HTTP_BADREQUEST && headers_too_long(req)))
		fault_set(&f, ERR_OVER_LIMIT,
		          "headers: more than %lld bytes of request line and headers "
		          "(--max-header)",
		          limits.max_header);
	else if (error == HTTP_ENTITYTOOLARGE)
		fault_set(&f, ERR_OVER_LIMIT,
		          "body: more than %lld bytes; a request body is at most %lld "
		          "(--max-body)",
		          limits.max_body * 4 > (4 << 20) ? limits.max_body * 4 : (4 << 20),
		          limits.max_body);
	else if (error == HTTP_EXPECTATIONFAILED)
		fault_set(&f, ERR_INVALID_ARG, "Expect: only 100-continue is understood");
	else
		fault_set(&f, ERR_INVALID_ARG,
		          "request: not a well-formed HTTP/1.1 request (its request line or "
		          "a header)");
	/* a request line never parsed left no version: the answer is HTTP/1.1 */
	if (!req->major || !req->minor) {
		req->major = 1;
		req->minor = 1;
	}
	struct evkeyvalq *h = evhttp_request_get_output_headers(req);
	evhttp_clear_headers(h);
	evhttp_add_header(h, "Content-Type", "application/json");
	evhttp_add_header(h, "Cache-Control", "no-store");
	evhttp_add_header(h, "X-Content-Type-Options", "nosniff");
	evhttp_add_header(h, "X-Spindle-Version", PACKAGE_VERSION);
	evhttp_add_header(h, "Connection", "close");
	struct evbuffer *body = evbuffer_new();
	if (!body) {
		evhttp_send_reply(req, fault_status(f.kind), NULL, NULL);
		return;
	}
	json_t *j = fault_json(&f);
	char *text = json_dumps(j, JSON_COMPACT);
	json_decref(j);
	if (text) {
		evbuffer_add(body, text, strlen(text));
		evbuffer_add(body, "\n", 1);
		free(text);
	}
	evhttp_send_reply(req, fault_status(f.kind), http_reason_phrase(fault_status(f.kind)),
	                  body);
	evbuffer_free(body);
}
