/* SPDX-License-Identifier: ISC */
/* /api/access/v1: log in, see the services, log out; /api/<service>/v1: a service's methods. */
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "api.h"
#include "access/accounts.h"
#include "routes.h"
#include "base/util.h"

/* Each service with the appliance's absolute uri and Spindle's href. */
static json_t *services_json(const struct request *r)
{
	char base[300];
	if (request_base_url(r, base, sizeof(base)) < 0)
		snprintf(base, sizeof(base), "https://localhost");
	json_t *list = json_array();
	for (size_t i = 0; i < api_services_count; i++) {
		char href[64], uri[400];
		snprintf(href, sizeof(href), "/api/%s/v1", api_services[i].name);
		snprintf(uri, sizeof(uri), "%s%s", base, href);
		json_array_append_new(
		    list, json_pack("{s:s, s:s, s:s, s:s}", "name", api_services[i].name, "version",
		                    api_services[i].version, "uri", uri, "href", href));
	}
	return list;
}

/* As a real OS8.8 appliance answers, and its clients read: "services" is the one key (the
 * guide's 2013.1 to OS8.7 wrapped the list in "access"; the login answer still does). */
void access_get(struct request *r)
{
	reply_json(r, 200, json_pack("{s:o}", "services", services_json(r)));
}

/* What a route needs, as x-spindle-authorization says in the OpenAPI document: "none",
 * "authenticated", "user:read" (several joined by " and "), "self or user:modify". */
static void route_authorization(const struct route *rt, char *buf, size_t len)
{
	char perms[256] = "";
	size_t n = 0;
	for (uint32_t bit = 1; bit && bit <= rt->perm && n < sizeof(perms); bit <<= 1) {
		const char *name = (rt->perm & bit) ? perm_name(bit) : NULL;
		if (name)
			n += (size_t)snprintf(perms + n, sizeof(perms) - n, "%s%s",
			                      n ? " and " : "", name);
	}
	if (rt->access == ROUTE_PUBLIC)
		snprintf(buf, len, "none");
	else if (rt->access == ROUTE_SELF_OR)
		snprintf(buf, len, "self or %s", perms);
	else
		snprintf(buf, len, "%s", perms[0] ? perms : "authenticated");
}

/* "/users/{name}" -> "/users/<name>", the appliance's spelling of a path parameter. */
static void appliance_path(const char *pattern, char *buf, size_t len)
{
	size_t o = 0;
	for (; *pattern && o + 1 < len; pattern++)
		buf[o++] = *pattern == '{' ? '<' : *pattern == '}' ? '>' : *pattern;
	buf[o] = '\0';
}

/* GET /api/<service>/v1, the appliance's "get service commands": the service and every
 * method under its base, from the route table. The routes of a service outside its base
 * (GET /api/openapi.json, GET /metrics) are in the OpenAPI document. */
void access_service(struct request *r)
{
	const char *name = r->route->service, *version = "";
	for (size_t i = 0; i < api_services_count; i++)
		if (strcmp(api_services[i].name, name) == 0)
			version = api_services[i].version;
	char base[64];
	size_t blen = (size_t)snprintf(base, sizeof(base), "/api/%s/v1", name);
	json_t *methods = json_array();
	for (size_t i = 0; i < api_routes_count; i++) {
		const struct route *rt = &api_routes[i];
		char path[256], authz[300];
		if (strcmp(rt->service, name) != 0 || strncmp(rt->pattern, base, blen) != 0 ||
		    rt->pattern[blen] != '/')
			continue;
		appliance_path(rt->pattern + blen, path, sizeof(path));
		route_authorization(rt, authz, sizeof(authz));
		json_array_append_new(methods, json_pack("{s:s, s:s, s:s, s:s, s:s}", "request",
		                                         router_method_name(rt->method), "path",
		                                         path, "description", rt->summary, "uri",
		                                         rt->pattern, "authorization", authz));
	}
	reply_json(r, 200,
	           json_pack("{s:{s:s, s:s, s:s, s:o}}", "service", "name", name, "version",
	                     version, "href", base, "methods", methods));
}

static void login_done(void *arg, const struct auth_login_result *res, const struct fault *f)
{
	struct request *r = arg;
	if (f) {
		reply_fault(r, f);
		return;
	}
	char expires[32];
	reply_header(r, "X-Auth-Session", res->token);
	/* The session made: GET it for its services, DELETE it to log out. */
	reply_header(r, "Location", "/api/access/v1");
	json_t *access =
	    json_pack("{s:s, s:s, s:s, s:o, s:o}", "token", res->token, "expires",
	              util_iso8601(res->expires, expires, sizeof(expires)), "user", res->user,
	              "authorizations", perm_json(res->perms), "services", services_json(r));
	if (res->device)
		json_object_set(access, "device", res->device);
	reply_json(r, 201, json_pack("{s:o}", "access", access));
}

/* A login: credentials from X-Auth-User/X-Auth-Key or Basic authorization, or a JSON body
 * with user and password (and a device to keep signed in), or a device's signed challenge. */
static const struct field login_fields[] = {
    {"user", FIELD_STRING, false, 1, 64},
    {"password", FIELD_STRING, false, 1, 1024},
    {"device", FIELD_OBJECT, false, 0, 0},
    {"device_id", FIELD_STRING, false, 1, 64},
    {"challenge", FIELD_STRING, false, 1, 128},
    {"signature", FIELD_STRING, false, 1, 256},
    FIELDS_END,
};

static const struct field device_fields[] = {
    {"name", FIELD_STRING, true, 1, 64},
    {"public_key", FIELD_STRING, true, 1, 256},
    FIELDS_END,
};

/* A device login: device_id, challenge and signature, and nothing else. */
static int device_login_body(const json_t *body, struct fault *f)
{
	static const char *const need[] = {"challenge", "signature"};
	static const char *const not [] = {"user", "password", "device"};
	for (size_t i = 0; i < nitems(not ); i++)
		if (json_object_get(body, not [i]))
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "%s: a device login (device_id) takes no user, password or "
			    "device",
			    not [i]);
	for (size_t i = 0; i < nitems(need); i++)
		if (!json_object_get(body, need[i]))
			return fault_set(
			    f, ERR_MISSING_ARG,
			    "%s: required with device_id (sign \"spindle-device-login\\n"
			    "<device_id>\\n<challenge>\" with the device's key)",
			    need[i]);
	return 0;
}

void access_login(struct request *r)
{
	char user[65] = "", pass[1025] = "";
	struct fault f;
	int rc = request_credentials(r, user, sizeof(user), pass, sizeof(pass), &f);
	json_t *body = NULL;
	if (rc < 0 || request_body(r, login_fields, &body, &f) < 0) {
		OPENSSL_cleanse(pass, sizeof(pass));
		reply_fault(r, &f);
		return;
	}
	const char *device_id = json_string_value(json_object_get(body, "device_id"));
	const char *u = rc > 0 ? user : json_string_value(json_object_get(body, "user"));
	const char *p = rc > 0 ? pass : json_string_value(json_object_get(body, "password"));
	const json_t *dev = json_object_get(body, "device");
	/* Credentials in the headers win, as they always have (a client that sends its
	 * password with every request may send a body too); the body may add a device. */
	if (device_id && rc == 0) {
		if (device_login_body(body, &f) < 0)
			goto refuse;
		auth_device_login(device_id, json_string_value(json_object_get(body, "challenge")),
		                  json_string_value(json_object_get(body, "signature")), r->peer,
		                  login_done, r);
		json_decref(body);
		return;
	}
	if (!u || !p) {
		fault_set(&f, ERR_MISSING_ARG,
		          "%s: required (or send X-Auth-User and X-Auth-Key, or Basic "
		          "authorization, or log in as a device with device_id)",
		          u ? "password" : "user");
		goto refuse;
	}
	static const char *const stray[] = {"challenge", "signature"};
	for (size_t i = 0; rc == 0 && i < nitems(stray); i++)
		if (json_object_get(body, stray[i])) {
			fault_set(&f, ERR_INVALID_ARG, "%s: belongs to a device login (device_id)",
			          stray[i]);
			goto refuse;
		}
	struct auth_device_req req;
	if (dev) {
		struct fault df;
		if (body_check(dev, device_fields, &df) < 0) {
			fault_set(&f, df.kind, "device.%s", df.details);
			goto refuse;
		}
		req.name = json_string_value(json_object_get(dev, "name"));
		req.public_key = json_string_value(json_object_get(dev, "public_key"));
	}
	auth_login(u, p, r->peer, dev ? &req : NULL, login_done, r);
	OPENSSL_cleanse(pass, sizeof(pass));
	json_decref(body);
	return;
refuse:
	OPENSSL_cleanse(pass, sizeof(pass));
	json_decref(body);
	reply_fault(r, &f);
}

/* POST /api/access/v1/challenge: what a device signs to log in, for 2 minutes. */
void access_challenge(struct request *r)
{
	struct fault f;
	json_t *out;
	if (auth_device_challenge(&out, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_header(r, "Cache-Control", "no-store");
	reply_json(r, 200, out);
}

void access_logout(struct request *r)
{
	struct fault f;
	if (!r->who.jti[0]) { /* credentials with the request: there is no session to end */
		reply_empty(r, 204);
		return;
	}
	if (auth_logout(&r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}
