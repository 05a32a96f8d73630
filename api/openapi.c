/* SPDX-License-Identifier: ISC */
/* /api/openapi.json: the API document, embedded at build time from api/openapi.json. */
#include "api.h"
#include "routes.h"
#include "base/log.h"
#include "base/util.h"

#include <string.h>

extern const char openapi_json[], openapi_json_gz[], openapi_json_etag[], openapi_json_gz_etag[];
extern const size_t openapi_json_len, openapi_json_gz_len;

/* The same bytes for the life of the binary: a client keeps them and asks again with its
 * tag (no-cache: it does ask, as an upgrade changes them). */
void openapi_get(struct request *r)
{
	reply_cached(r, &(struct cached_doc){.type = "application/json",
	                                     .cache_control = "public, no-cache",
	                                     .body = openapi_json,
	                                     .len = openapi_json_len,
	                                     .etag = openapi_json_etag,
	                                     .gz = openapi_json_gz,
	                                     .gz_len = openapi_json_gz_len,
	                                     .etag_gz = openapi_json_gz_etag});
}

/* The query parameters of an operation (its path's and its own, $refs followed) that are
 * "in": "query", as a NULL-terminated malloc'd list; NULL without the operation. */
static char **op_query(json_t *doc, const char *method, const char *pattern)
{
	json_t *path = json_object_get(json_object_get(doc, "paths"), pattern);
	json_t *op = json_object_get(path, method);
	if (!op)
		return NULL;
	json_t *common = json_object_get(json_object_get(doc, "components"), "parameters");
	size_t n = 0, cap = 0;
	char **out = NULL;
	json_t *lists[] = {json_object_get(path, "parameters"), json_object_get(op, "parameters")};
	for (size_t l = 0; l < nitems(lists); l++) {
		size_t i;
		json_t *p;
		json_array_foreach(lists[l], i, p)
		{
			const char *ref = json_string_value(json_object_get(p, "$ref"));
			const char *pre = "#/components/parameters/";
			if (ref && strncmp(ref, pre, strlen(pre)) == 0)
				p = json_object_get(common, ref + strlen(pre));
			const char *name = json_string_value(json_object_get(p, "name"));
			const char *in = json_string_value(json_object_get(p, "in"));
			if (!name || !in || strcmp(in, "query") != 0)
				continue;
			out = util_grow(out, &cap, n + 1, sizeof(*out));
			out[n++] = xstrdup(name);
		}
	}
	out = util_grow(out, &cap, n + 1, sizeof(*out));
	out[n] = NULL;
	return out;
}

void openapi_route_queries(struct router *rt)
{
	json_error_t err;
	json_t *doc = json_loadb(openapi_json, openapi_json_len, 0, &err);
	if (!doc)
		fatal("api/openapi.json: line %d: %s", err.line, err.text);
	static const struct {
		unsigned method;
		const char *name;
	} names[] = {{METHOD_GET, "get"},
	             {METHOD_POST, "post"},
	             {METHOD_PUT, "put"},
	             {METHOD_DELETE, "delete"},
	             {METHOD_PATCH, "patch"}};
	for (size_t i = 0; i < api_routes_count; i++) {
		const struct route *r = &api_routes[i];
		const char *method = NULL;
		for (size_t b = 0; b < nitems(names); b++)
			if (r->method == names[b].method)
				method = names[b].name;
		char **q = method ? op_query(doc, method, r->pattern) : NULL;
		/* The handlers read only what the router let through: every route is documented
		 * (test_openapi_live holds the document to the table too). */
		if (!q)
			fatal("api: %s %s is not in api/openapi.json", method ? method : "?",
			      r->pattern);
		router_set_query(rt, i, q);
	}
	json_decref(doc);
}
