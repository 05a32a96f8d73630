/* SPDX-License-Identifier: ISC */
/* Router: patterns, parameters, decoding, versions, 404 vs 405, HEAD, trailing slashes. */
#include <string.h>

#include "net/router.h"
#include "tap.h"

static void h(struct request *r)
{
	(void)r;
}

static const struct route routes[] = {
    {METHOD_GET, "/api/user/v1/users", "user", ROUTE_AUTH, 0, h, "list"},
    {METHOD_POST, "/api/user/v1/users", "user", ROUTE_AUTH, 0, h, "create"},
    {METHOD_GET, "/api/user/v1/users/{name}", "user", ROUTE_AUTH, 0, h, "get"},
    {METHOD_DELETE, "/api/user/v1/users/{name}/tokens/{id}", "user", ROUTE_AUTH, 0, h, "tok"},
    {METHOD_GET, "/api/openapi.json", "system", ROUTE_PUBLIC, 0, h, "doc"},
    {METHOD_GET, "/api/analytics/v1/datasets/{name}/data", "analytics", ROUTE_AUTH, 0, h, "d"},
};

int main(void)
{
	struct router *rt = router_new(routes, sizeof(routes) / sizeof(routes[0]));
	struct route_match m;
	unsigned allowed;
	const struct route *r;

	r = router_match(rt, METHOD_GET, "/api/user/v1/users", &m, &allowed);
	ok(r == &routes[0], "GET list");
	is_int(m.nparams, 0, "no params");
	r = router_match(rt, METHOD_POST, "/api/user/v1/users", &m, &allowed);
	ok(r == &routes[1], "POST create");
	r = router_match(rt, METHOD_PUT, "/api/user/v1/users", &m, &allowed);
	ok(r == NULL, "PUT on a collection does not match");
	is_int(allowed, METHOD_GET | METHOD_POST | METHOD_HEAD, "allowed methods reported for 405");
	char buf[64];
	is_str(router_methods_str(allowed, buf, sizeof(buf)), "GET, POST, HEAD",
	       "Allow header text");

	r = router_match(rt, METHOD_GET, "/api/user/v1/users/alice", &m, &allowed);
	ok(r == &routes[2], "GET one");
	is_int(m.nparams, 1, "one param");
	is_str(m.params[0], "alice", "param value");

	r = router_match(rt, METHOD_GET, "/api/user/v1.0/users/alice", &m, &allowed);
	ok(r == &routes[2], "v1.0 matches v1");
	r = router_match(rt, METHOD_GET, "/api/user/v1.x/users/alice", &m, &allowed);
	ok(r == NULL && allowed == 0, "v1.x does not");
	r = router_match(rt, METHOD_GET, "/api/user/v2/users/alice", &m, &allowed);
	ok(r == NULL && allowed == 0, "v2 does not");

	r = router_match(rt, METHOD_GET, "/api/user/v1/users/a%20b", &m, &allowed);
	ok(r == &routes[2], "percent-encoded param");
	is_str(m.params[0], "a b", "param decoded");
	r = router_match(rt, METHOD_GET, "/api/user/v1/us%65rs/x", &m, &allowed);
	ok(r == &routes[2], "literal segments compare decoded");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/a%2Fb", &m, &allowed);
	ok(r == NULL && allowed == 0, "encoded slash never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/a%00b", &m, &allowed);
	ok(r == NULL, "encoded NUL never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/%zz", &m, &allowed);
	ok(r == NULL, "bad escape never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/%4", &m, &allowed);
	ok(r == NULL, "truncated escape never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/..", &m, &allowed);
	ok(r == NULL, "'..' never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/%2e%2e", &m, &allowed);
	ok(r == NULL, "encoded '..' never matches");
	r = router_match(rt, METHOD_GET, "/api/user/v1//users", &m, &allowed);
	ok(r == NULL, "empty segment never matches");
	/* One canonical form, without a trailing slash; the other is pointed at it. */
	r = router_match(rt, METHOD_GET, "/api/user/v1/users/", &m, &allowed);
	ok(r == NULL && allowed == 0, "a trailing slash never matches");
	r = router_match(rt, METHOD_POST, "/api/user/v1/users/", &m, &allowed);
	ok(r == NULL && allowed == 0, "not for a POST either");
	ok(router_without_slash(rt, "/api/user/v1/users/", buf, sizeof(buf)) &&
	       strcmp(buf, "/api/user/v1/users") == 0,
	   "the path without it is named");
	ok(router_without_slash(rt, "/api/user/v1/users/bob/tokens/x/", buf, sizeof(buf)),
	   "a route of another method counts");
	ok(!router_without_slash(rt, "/api/user/v1/nothing/", buf, sizeof(buf)),
	   "a path that names nothing either way is not");
	ok(!router_without_slash(rt, "/api/user/v1/users//", buf, sizeof(buf)),
	   "two slashes are not one too many");
	ok(!router_without_slash(rt, "/api/user/v1/users", buf, sizeof(buf)),
	   "the canonical path is not pointed anywhere");
	ok(!router_without_slash(rt, "/", buf, sizeof(buf)), "nor the root");
	ok(!router_without_slash(rt, "/api/user/v1/users/", buf, 10), "nor into a small buffer");

	/* HEAD: GET without the body. */
	r = router_match(rt, METHOD_HEAD, "/api/user/v1/users/alice", &m, &allowed);
	ok(r == &routes[2], "HEAD matches the GET route");
	is_str(m.params[0], "alice", "with its parameters");
	r = router_match(rt, METHOD_HEAD, "/api/user/v1/users/bob/tokens/abc", &m, &allowed);
	ok(r == NULL && allowed == METHOD_DELETE, "HEAD where there is no GET is a 405");
	r = router_match(rt, METHOD_GET, "api/user/v1/users", &m, &allowed);
	ok(r == NULL, "relative path never matches");

	r = router_match(rt, METHOD_DELETE, "/api/user/v1/users/bob/tokens/abc", &m, &allowed);
	ok(r == &routes[3], "two params");
	is_int(m.nparams, 2, "two params counted");
	is_str(m.params[0], "bob", "first param");
	is_str(m.params[1], "abc", "second param");

	r = router_match(rt, METHOD_GET, "/api/openapi.json", &m, &allowed);
	ok(r == &routes[4], "dotted literal");
	r = router_match(rt, METHOD_GET, "/api/nothing/v1/here", &m, &allowed);
	ok(r == NULL && allowed == 0, "unknown path: 404, nothing allowed");
	r = router_match(rt, METHOD_GET, "/api/analytics/v1/datasets/io.ops%5Bdisk%5D/data", &m,
	                 &allowed);
	ok(r == &routes[5], "dataset names with brackets");
	is_str(m.params[0], "io.ops[disk]", "dataset name decoded");

	char longseg[400];
	memset(longseg, 'a', sizeof(longseg));
	memcpy(longseg, "/api/user/v1/users/", 19);
	longseg[sizeof(longseg) - 1] = '\0';
	r = router_match(rt, METHOD_GET, longseg, &m, &allowed);
	ok(r == NULL, "a parameter longer than the limit never matches");

	is_str(router_method_name(METHOD_DELETE), "DELETE", "method names");
	is_int(router_method_parse("PUT"), METHOD_PUT, "method parse");
	is_int(router_method_parse("BREW"), 0, "unknown method");
	router_free(rt);
	return done_testing();
}
