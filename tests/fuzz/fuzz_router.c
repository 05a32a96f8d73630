/* SPDX-License-Identifier: ISC */
/* The router and the query string, as a request is taken apart: the input is a request
 * target, parsed with evhttp_uri_parse_with_flags(EVHTTP_URI_NONCONFORMANT) as libevent
 * parses the request line; its path goes through router_match against the real route
 * table (api/routes.c) for every method, as http_request() does, and through
 * evhttp_uridecode as serve_static() does; its query through evhttp_parse_query_str as
 * query_of() does, and its values through the handlers' number and time parsers. The raw
 * input is matched as a path too, whatever libevent makes of it.
 * A match is a route of that method (GET for HEAD), and none of its parameters is empty,
 * holds '/' or NUL, or is "." or "..". Where nothing answers, router_without_slash() finds
 * the spelling without a trailing slash, as http_request() then does. */
#include <string.h>
#include <sys/queue.h>

#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "fuzz.h"
#include "api/routes.h"
#include "net/router.h"
#include "base/util.h"

static struct router *rt;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	rt = router_new(api_routes, api_routes_count);
	return 0;
}

static void match(const char *path)
{
	for (unsigned i = 0; i <= 7; i++) {
		unsigned method = i < 7 ? 1u << i : 0, allowed = ~0u;
		struct route_match m;
		const struct route *r = router_match(rt, method, path, &m, &allowed);
		char methods[64];
		router_methods_str(allowed, methods, sizeof(methods));
		fuzz_assert(allowed < (1u << 7));
		if (!r) {
			if (!allowed) {
				char canonical[1024];
				if (router_without_slash(rt, path, canonical, sizeof(canonical)))
					fuzz_assert(strlen(canonical) + 1 == strlen(path));
			}
			continue;
		}
		/* HEAD is answered by the path's GET route */
		fuzz_assert(r->method == (method == METHOD_HEAD ? METHOD_GET : method));
		fuzz_assert(allowed & method);
		fuzz_assert(m.nparams >= 0 && m.nparams <= ROUTE_MAX_PARAMS);
		for (int k = 0; k < m.nparams; k++) {
			const char *p = m.params[k];
			size_t n = strnlen(p, ROUTE_PARAM_MAX);
			fuzz_assert(n > 0 && n < ROUTE_PARAM_MAX);
			fuzz_assert(!strchr(p, '/'));
			fuzz_assert(strcmp(p, ".") != 0 && strcmp(p, "..") != 0);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a request line is text: libevent hands on what comes before a NUL */
	char *target = xstrndup((const char *)data, size);
	match(target);

	struct evhttp_uri *uri = evhttp_uri_parse_with_flags(target, EVHTTP_URI_NONCONFORMANT);
	if (uri) {
		const char *path = evhttp_uri_get_path(uri);
		if (path && *path) {
			match(path);
			char *decoded = evhttp_uridecode(path, 0, NULL);
			free(decoded);
		}
		const char *q = evhttp_uri_get_query(uri);
		struct evkeyvalq query;
		TAILQ_INIT(&query);
		/* a query that does not parse is dropped whole, as query_of() does */
		if (q && evhttp_parse_query_str(q, &query) < 0)
			evhttp_clear_headers(&query);
		struct evkeyval *kv;
		TAILQ_FOREACH(kv, &query, next)
		{
			/* the handlers' parsers of query values (start=, seconds=, limit=, ...) */
			fuzz_assert(kv->key && kv->value);
			long long n;
			int64_t t;
			if (util_parse_ll(kv->value, -1000, 1000, &n) == 0)
				fuzz_assert(n >= -1000 && n <= 1000);
			util_parse_iso8601(kv->value, &t);
		}
		static const char *const keys[] = {"start", "seconds",  "granularity", "points",
		                                   "jobs",  "baseline", "limit"};
		for (size_t i = 0; i < nitems(keys); i++)
			evhttp_find_header(&query, keys[i]);
		evhttp_clear_headers(&query);
		evhttp_uri_free(uri);
	}
	free(target);
	return 0;
}
