/* SPDX-License-Identifier: ISC */
/* Routes: method + path pattern ("/api/user/v1/users/{name}") -> handler, with the
 * authorization it needs. The router matches; http.c authenticates and dispatches. */
#ifndef SPINDLE_ROUTER_H
#define SPINDLE_ROUTER_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

enum http_method {
	METHOD_GET = 1 << 0,
	METHOD_POST = 1 << 1,
	METHOD_PUT = 1 << 2,
	METHOD_DELETE = 1 << 3,
	METHOD_HEAD = 1 << 4,
	METHOD_PATCH = 1 << 5,
	METHOD_OPTIONS = 1 << 6,
};

enum route_access {
	ROUTE_PUBLIC,  /* no credentials needed */
	ROUTE_AUTH,    /* a valid session; perm (if non-zero) checked before the handler */
	ROUTE_SELF_OR, /* a valid session; allowed if {name} is the caller, else needs perm */
};

struct request;
typedef void (*route_handler)(struct request *r);

struct route {
	unsigned method;     /* one enum http_method bit */
	const char *pattern; /* segments; "{x}" matches one non-empty segment */
	const char *service; /* for X-Spindle-<Service>-Api: "user", "system", ... */
	enum route_access access;
	uint32_t perm; /* enum perm bits required (all of them) */
	route_handler handler;
	const char *summary; /* one line, for logs and the route listing */
};

/* Small enough that a request's context stays under glibc's small-bin size (~1 KiB): a
 * larger calloc per request made malloc consolidate its fast bins every time. */
#define ROUTE_MAX_PARAMS 3
#define ROUTE_PARAM_MAX  192

struct route_match {
	int nparams;
	char params[ROUTE_MAX_PARAMS][ROUTE_PARAM_MAX]; /* percent-decoded, in pattern order */
};

struct router;

struct router *router_new(const struct route *routes, size_t n);
void router_free(struct router *rt);
/* The query parameters the i-th route takes: names (NULL-terminated, malloc'd, strings
 * too) is the router's now. Any other is refused before the handler runs (http.c); a
 * route without a list is left to its handler. */
void router_set_query(struct router *rt, size_t i, char **names);
const char *const *router_query(const struct router *rt, const struct route *route);
/* path is the raw (still percent-encoded) path without the query. Returns the route,
 * or NULL: then *allowed holds the methods the path does answer (0: unknown path). A
 * segment that decodes to contain '/' or NUL, or a ".." segment, never matches. HEAD
 * matches the GET route of the path (and is allowed wherever GET is). Paths are
 * canonical without a trailing slash: with one, nothing matches. */
const struct route *router_match(const struct router *rt, unsigned method, const char *path,
                                 struct route_match *m, unsigned *allowed);
/* True when path ends in one '/' and without it names a route (of any method); buf then
 * holds that path, for the 404 that points there. */
bool router_without_slash(const struct router *rt, const char *path, char *buf, size_t len);
/* "GET, PUT" into buf. */
char *router_methods_str(unsigned methods, char *buf, size_t len);
const char *router_method_name(unsigned method);
unsigned router_method_parse(const char *name);

#endif
