/* SPDX-License-Identifier: ISC */
/* The router: splits each pattern once, then matches decoded path segments.
 * A version segment "v1" also matches "v1.<minor>" (the appliance's /v1.0 form). */
#include "router.h"
#include "base/util.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ROUTER_MAX_SEGS 12

struct compiled {
	const struct route *route;
	char **query; /* the query parameters it takes (NULL-terminated), or NULL: unchecked */
	int nsegs;
	const char *segs[ROUTER_MAX_SEGS]; /* point into text; NULL = parameter */
	char *text;
};

struct router {
	size_t n;
	struct compiled *routes;
};

static const char *const method_names[] = {"GET",  "POST",  "PUT",    "DELETE",
                                           "HEAD", "PATCH", "OPTIONS"};

const char *router_method_name(unsigned method)
{
	for (unsigned i = 0; i < nitems(method_names); i++)
		if (method == 1u << i)
			return method_names[i];
	return "?";
}

unsigned router_method_parse(const char *name)
{
	for (unsigned i = 0; i < nitems(method_names); i++)
		if (strcmp(name, method_names[i]) == 0)
			return 1u << i;
	return 0;
}

char *router_methods_str(unsigned methods, char *buf, size_t len)
{
	size_t o = 0;
	buf[0] = '\0';
	for (unsigned i = 0; i < nitems(method_names); i++) {
		if (!(methods & (1u << i)))
			continue;
		int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", method_names[i]);
		if (w < 0 || (size_t)w >= len - o)
			break;
		o += (size_t)w;
	}
	return buf;
}

struct router *router_new(const struct route *routes, size_t n)
{
	struct router *rt = xcalloc(1, sizeof(*rt));
	rt->n = n;
	rt->routes = xcalloc(n, sizeof(*rt->routes));
	for (size_t i = 0; i < n; i++) {
		struct compiled *c = &rt->routes[i];
		c->route = &routes[i];
		c->text = xstrdup(routes[i].pattern);
		int nparams = 0;
		char *save = NULL;
		for (char *s = strtok_r(c->text, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
			if (c->nsegs == ROUTER_MAX_SEGS)
				fatal("route %s has too many segments", routes[i].pattern);
			c->segs[c->nsegs++] = s[0] == '{' ? NULL : s;
			nparams += s[0] == '{';
		}
		if (nparams > ROUTE_MAX_PARAMS)
			fatal("route %s has more than %d parameters", routes[i].pattern,
			      ROUTE_MAX_PARAMS);
	}
	return rt;
}

void router_free(struct router *rt)
{
	if (!rt)
		return;
	for (size_t i = 0; i < rt->n; i++) {
		free(rt->routes[i].text);
		for (char **q = rt->routes[i].query; q && *q; q++)
			free(*q);
		free(rt->routes[i].query);
	}
	free(rt->routes);
	free(rt);
}

void router_set_query(struct router *rt, size_t i, char **names)
{
	struct compiled *c = &rt->routes[i];
	for (char **q = c->query; q && *q; q++)
		free(*q);
	free(c->query);
	c->query = names;
}

const char *const *router_query(const struct router *rt, const struct route *route)
{
	/* the table is one array: a route's place in it is its index */
	size_t i = rt->n ? (size_t)(route - rt->routes[0].route) : 0;
	return i < rt->n && rt->routes[i].route == route ? (const char *const *)rt->routes[i].query
	                                                 : NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes [s, s+len) into out; -1 for a bad escape, NUL or '/', or overflow. */
static int decode_segment(const char *s, size_t len, char *out, size_t outlen)
{
	size_t o = 0;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '%') {
			if (i + 2 >= len)
				return -1;
			int hi = hexval(s[i + 1]);
			int lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				return -1;
			c = (char)(hi << 4 | lo);
			i += 2;
		}
		if (c == '\0' || c == '/' || o + 1 >= outlen)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* "v1" in a pattern matches "v1" and "v1.<digits>". */
static bool literal_matches(const char *pat, const char *seg)
{
	size_t n = strlen(pat);
	if (strncmp(pat, seg, n) != 0)
		return false;
	if (seg[n] == '\0')
		return true;
	if (pat[0] != 'v' || seg[n] != '.' || seg[n + 1] == '\0')
		return false;
	for (const char *p = pat + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	for (const char *p = seg + n + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

const struct route *router_match(const struct router *rt, unsigned method, const char *path,
                                 struct route_match *m, unsigned *allowed)
{
	char segs[ROUTER_MAX_SEGS][ROUTE_PARAM_MAX];
	int nsegs = 0;
	*allowed = 0;
	m->nparams = 0;

	if (path[0] != '/')
		return NULL;
	const char *p = path + 1;
	size_t plen = strlen(p);
	while (plen > 0) {
		const char *slash = memchr(p, '/', plen);
		size_t len = slash ? (size_t)(slash - p) : plen;
		if (len == 0 || nsegs == ROUTER_MAX_SEGS)
			return NULL;
		if (decode_segment(p, len, segs[nsegs], sizeof(segs[nsegs])) < 0)
			return NULL;
		if (strcmp(segs[nsegs], "..") == 0 || strcmp(segs[nsegs], ".") == 0)
			return NULL;
		nsegs++;
		if (!slash)
			break;
		plen -= len + 1;
		p = slash + 1;
		if (plen == 0)
			return NULL; /* a trailing slash: see router_without_slash() */
	}
	/* HEAD is GET without the body (RFC 9110 9.3.2): every GET route answers it. */
	unsigned want = method == METHOD_HEAD ? METHOD_GET : method;

	const struct route *found = NULL;
	for (size_t i = 0; i < rt->n; i++) {
		const struct compiled *c = &rt->routes[i];
		if (c->nsegs != nsegs)
			continue;
		int k;
		for (k = 0; k < nsegs; k++)
			if (c->segs[k] && !literal_matches(c->segs[k], segs[k]))
				break;
		if (k < nsegs)
			continue;
		*allowed |= c->route->method;
		if (c->route->method & METHOD_GET)
			*allowed |= METHOD_HEAD;
		if (found || !(c->route->method & want))
			continue;
		found = c->route;
		for (k = 0; k < nsegs && m->nparams < ROUTE_MAX_PARAMS; k++)
			if (!c->segs[k])
				memcpy(m->params[m->nparams++], segs[k], ROUTE_PARAM_MAX);
	}
	return found;
}

bool router_without_slash(const struct router *rt, const char *path, char *buf, size_t len)
{
	size_t n = strlen(path);
	struct route_match m;
	unsigned allowed;
	if (n < 2 || path[n - 1] != '/' || path[n - 2] == '/' || n > len)
		return false;
	memcpy(buf, path, n - 1);
	buf[n - 1] = '\0';
	return router_match(rt, METHOD_GET, buf, &m, &allowed) || allowed;
}
