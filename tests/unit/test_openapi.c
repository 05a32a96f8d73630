/* SPDX-License-Identifier: ISC */
/* api/openapi.json against the route table (api/routes.c): every route is documented,
 * nothing is documented that does not exist, and every operation is complete. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "tap.h"
#include "api/routes.h"
#include "access/auth.h"
#include "net/router.h"

#ifndef OPENAPI_JSON
#error "build with -DOPENAPI_JSON='\"/abs/path/api/openapi.json\"'"
#endif

/* The keys of a path item that are operations; the rest (parameters, summary, ...) are not. */
static const char *const op_keys[] = {"get",     "put",  "post",  "delete",
                                      "options", "head", "patch", "trace"};

static json_t *doc;

static bool is_op_key(const char *key)
{
	for (size_t i = 0; i < sizeof(op_keys) / sizeof(op_keys[0]); i++)
		if (strcmp(key, op_keys[i]) == 0)
			return true;
	return false;
}

/* "GET" -> "get" into buf. */
static const char *lower(const char *s, char *buf, size_t len)
{
	size_t i;
	for (i = 0; s[i] && i + 1 < len; i++)
		buf[i] = (s[i] >= 'A' && s[i] <= 'Z') ? (char)(s[i] - 'A' + 'a') : s[i];
	buf[i] = '\0';
	return buf;
}

/* Follows a local "$ref" ("#/components/x/y", RFC 6901 escapes) to what it names;
 * returns v itself when it is not a reference, NULL when the reference is broken. */
static json_t *deref(json_t *v)
{
	for (int hops = 0; hops < 8; hops++) {
		const char *ref = json_string_value(json_object_get(v, "$ref"));
		if (!json_is_object(v) || !ref)
			return v;
		if (strncmp(ref, "#/", 2) != 0)
			return NULL;
		v = doc;
		for (const char *p = ref + 2; v && *p;) {
			char key[256];
			size_t n = 0;
			for (; *p && *p != '/' && n + 1 < sizeof(key); p++) {
				if (p[0] == '~' && (p[1] == '0' || p[1] == '1')) {
					key[n++] = p[1] == '0' ? '~' : '/';
					p++;
				} else {
					key[n++] = *p;
				}
			}
			key[n] = '\0';
			if (*p == '/')
				p++;
			v = json_object_get(v, key);
		}
		if (!v)
			return NULL;
	}
	return NULL; /* a loop of references */
}

/* Every "$ref" anywhere in v resolves; counts the broken ones and names them. */
static int broken_refs(json_t *v)
{
	int bad = 0;

	if (json_is_object(v)) {
		const char *ref = json_string_value(json_object_get(v, "$ref"));
		if (ref && !deref(v)) {
			diag("broken $ref %s", ref);
			bad++;
		}
		for (void *it = json_object_iter(v); it; it = json_object_iter_next(v, it))
			bad += broken_refs(json_object_iter_value(it));
	} else if (json_is_array(v)) {
		for (size_t i = 0; i < json_array_size(v); i++)
			bad += broken_refs(json_array_get(v, i));
	}
	return bad;
}

static const struct route *route_find(const char *method, const char *path)
{
	for (size_t i = 0; i < api_routes_count; i++) {
		char m[16];
		const struct route *rt = &api_routes[i];
		if (strcmp(rt->pattern, path) == 0 &&
		    strcmp(lower(router_method_name(rt->method), m, sizeof(m)), method) == 0)
			return rt;
	}
	return NULL;
}

/* What x-spindle-authorization must say for this route: "none", "authenticated",
 * "user:read", "self or user:modify" (several authorizations joined by " and "). */
static void route_authz(const struct route *rt, char *buf, size_t len)
{
	char perms[256] = "";
	size_t n = 0;

	for (uint32_t bit = 1; bit && bit <= rt->perm; bit <<= 1) {
		const char *name;
		if (!(rt->perm & bit))
			continue;
		name = perm_name(bit);
		n += (size_t)snprintf(perms + n, sizeof(perms) - n, "%s%s", n ? " and " : "",
		                      name ? name : "?");
		if (n >= sizeof(perms))
			break;
	}
	switch (rt->access) {
	case ROUTE_PUBLIC:
		snprintf(buf, len, "none");
		break;
	case ROUTE_AUTH:
		snprintf(buf, len, "%s", perms[0] ? perms : "authenticated");
		break;
	case ROUTE_SELF_OR:
		snprintf(buf, len, "self or %s", perms);
		break;
	default:
		snprintf(buf, len, "?");
	}
}

/* A required path parameter named name, in the operation's or the path item's list. */
static bool param_declared(json_t *item, json_t *op, const char *name)
{
	json_t *lists[2] = {json_object_get(op, "parameters"), json_object_get(item, "parameters")};

	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < json_array_size(lists[l]); i++) {
			json_t *d = deref(json_array_get(lists[l], i));
			if (json_is_string(json_object_get(d, "in")) &&
			    strcmp(json_string_value(json_object_get(d, "in")), "path") == 0 &&
			    json_is_string(json_object_get(d, "name")) &&
			    strcmp(json_string_value(json_object_get(d, "name")), name) == 0 &&
			    json_is_true(json_object_get(d, "required")))
				return true;
		}
	return false;
}

/* Every {x} in path is declared, and every declared path parameter is in path. */
static bool path_params_ok(const char *path, json_t *item, json_t *op)
{
	bool good = true;
	json_t *lists[2] = {json_object_get(op, "parameters"), json_object_get(item, "parameters")};

	for (const char *s = strchr(path, '{'); s; s = strchr(s + 1, '{')) {
		char name[64];
		const char *e = strchr(s, '}');
		if (!e || (size_t)(e - s - 1) >= sizeof(name) || e == s + 1) {
			diag("malformed template in %s", path);
			return false;
		}
		memcpy(name, s + 1, (size_t)(e - s - 1));
		name[e - s - 1] = '\0';
		if (!param_declared(item, op, name)) {
			diag("{%s} is not declared as a required path parameter", name);
			good = false;
		}
	}
	for (int l = 0; l < 2; l++)
		for (size_t i = 0; i < json_array_size(lists[l]); i++) {
			json_t *d = deref(json_array_get(lists[l], i));
			const char *in = json_string_value(json_object_get(d, "in"));
			const char *name = json_string_value(json_object_get(d, "name"));
			char tmpl[80];
			if (!d || !in || !name) {
				diag("a parameter without in/name");
				good = false;
				continue;
			}
			snprintf(tmpl, sizeof(tmpl), "{%s}", name);
			if (strcmp(in, "path") == 0 && !strstr(path, tmpl)) {
				diag("path parameter %s is not in the path", name);
				good = false;
			}
		}
	return good;
}

/* Public routes: security is [] or allows {} (anonymous). The others: a non-empty list
 * of known schemes that never allows anonymous access. */
static bool security_ok(const struct route *rt, json_t *op)
{
	json_t *sec = json_object_get(op, "security");
	json_t *schemes = json_object_get(json_object_get(doc, "components"), "securitySchemes");
	bool anonymous = false;

	if (!json_is_array(sec)) {
		diag("no per-operation security");
		return false;
	}
	for (size_t i = 0; i < json_array_size(sec); i++) {
		json_t *req = json_array_get(sec, i);
		if (!json_is_object(req))
			return false;
		if (json_object_size(req) == 0)
			anonymous = true;
		for (void *it = json_object_iter(req); it; it = json_object_iter_next(req, it)) {
			if (!json_object_get(schemes, json_object_iter_key(it))) {
				diag("unknown security scheme %s", json_object_iter_key(it));
				return false;
			}
		}
	}
	if (rt->access == ROUTE_PUBLIC)
		return json_array_size(sec) == 0 || anonymous;
	return json_array_size(sec) > 0 && !anonymous;
}

static bool has_success(json_t *responses)
{
	for (void *it = json_object_iter(responses); it; it = json_object_iter_next(responses, it))
		if (json_object_iter_key(it)[0] == '2')
			return true;
	return false;
}

static void check_operation(const char *path, const char *method, json_t *item, json_t *op,
                            const struct route *rt, json_t *op_ids)
{
	json_t *responses = json_object_get(op, "responses");
	const char *id = json_string_value(json_object_get(op, "operationId"));
	const char *authz = json_string_value(json_object_get(op, "x-spindle-authorization"));
	const char *tag = json_string_value(json_array_get(json_object_get(op, "tags"), 0));
	char want[300];

	ok(id && *id && !json_object_get(op_ids, id) && json_is_object(responses) &&
	       has_success(responses),
	   "%s %s: unique operationId and a 2xx response", method, path);
	if (id)
		json_object_set_new(op_ids, id, json_true());
	ok(path_params_ok(path, item, op), "%s %s: path parameters declared", method, path);
	if (!rt)
		return;

	ok(security_ok(rt, op), "%s %s: security matches the route's access", method, path);
	route_authz(rt, want, sizeof(want));
	is_str(authz, want, "%s %s: x-spindle-authorization", method, path);
	is_str(tag, rt->service, "%s %s: tagged with its service", method, path);
	if (rt->access != ROUTE_PUBLIC)
		ok(json_object_get(responses, "401") != NULL, "%s %s: documents 401", method, path);
	if (rt->perm)
		ok(json_object_get(responses, "403") != NULL, "%s %s: documents 403", method, path);
}

int main(void)
{
	json_error_t err;
	json_t *paths, *op_ids;

	doc = json_load_file(OPENAPI_JSON, JSON_REJECT_DUPLICATES, &err);
	if (!ok(doc != NULL, "%s parses", OPENAPI_JSON)) {
		diag("%s:%d: %s", err.source, err.line, err.text);
		printf("Bail out! no document\n");
		return 1;
	}
	is_str(json_string_value(json_object_get(doc, "openapi")), "3.1.0", "openapi is 3.1.0");
	paths = json_object_get(doc, "paths");
	ok(json_is_object(paths), "paths is an object");

	/* Route table -> document. */
	for (size_t i = 0; i < api_routes_count; i++) {
		const struct route *rt = &api_routes[i];
		char m[16];
		lower(router_method_name(rt->method), m, sizeof(m));
		ok(json_is_object(json_object_get(json_object_get(paths, rt->pattern), m)),
		   "route %s %s is documented", router_method_name(rt->method), rt->pattern);
	}

	/* Document -> route table, and each operation complete. */
	op_ids = json_object();
	for (void *pi = json_object_iter(paths); pi; pi = json_object_iter_next(paths, pi)) {
		const char *path = json_object_iter_key(pi);
		json_t *item = json_object_iter_value(pi);
		for (void *oi = json_object_iter(item); oi; oi = json_object_iter_next(item, oi)) {
			const char *key = json_object_iter_key(oi);
			json_t *op = json_object_iter_value(oi);
			const struct route *rt;
			if (!is_op_key(key))
				continue;
			rt = route_find(key, path);
			ok(rt != NULL, "documented %s %s is in the route table", key, path);
			check_operation(path, key, item, op, rt, op_ids);
		}
	}
	json_decref(op_ids);

	is_int(broken_refs(doc), 0, "every $ref resolves");
	json_decref(doc);
	return done_testing();
}
