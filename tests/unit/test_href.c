/* SPDX-License-Identifier: ISC */
/* api_href (api/href.c): {member} placeholders filled from the object, each value one
 * percent-encoded path segment. */
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "api/api.h"
#include "base/util.h"

static const struct {
	const char *obj, *path, *href, *what;
} cases[] = {
    {"{\"name\":\"admin\"}", "/api/user/v1/users/{name}", "/api/user/v1/users/admin",
     "a string member"},
    {"{\"user\":\"mon\",\"id\":\"53954936b6fe\"}", "/api/user/v1/users/{user}/tokens/{id}",
     "/api/user/v1/users/mon/tokens/53954936b6fe", "two members"},
    {"{\"id\":42}", "/api/bench/v1/jobs/{id}", "/api/bench/v1/jobs/42", "an integer member"},
    {"{\"id\":-7}", "/x/{id}", "/x/-7", "a negative one"},
    {"{}", "/api/role/v1/roles/{name}", "/api/role/v1/roles/", "an absent member: nothing"},
    {"{\"name\":true}", "/r/{name}", "/r/", "nor a member of another type"},
    {"{\"name\":\"a.b_c-d~e\"}", "/r/{name}", "/r/a.b_c-d~e", "unreserved characters stay"},
    {"{\"name\":\"a b?c#d%e&f\"}", "/r/{name}", "/r/a%20b%3Fc%23d%25e%26f",
     "the rest are percent-encoded"},
    {"{\"name\":\"arc.accesses[hit/miss]\"}", "/d/{name}", "/d/arc.accesses%5Bhit%7Cmiss%5D",
     "a slash is written '|' (then encoded)"},
    {"{\"name\":\"caf\\u00e9\"}", "/r/{name}", "/r/caf%C3%A9", "UTF-8 byte by byte"},
    {"{\"name\":\"x\"}", "/api/user/v1/users", "/api/user/v1/users", "no placeholder"},
    {"{\"name\":\"x\"}", "/a/{name", "/a/{name", "an unclosed brace is text"},
    {"{\"a\":\"1\",\"b\":\"2\"}", "/{a}{b}/{a}", "/12/1", "placeholders side by side"},
};

int main(void)
{
	for (size_t i = 0; i < nitems(cases); i++) {
		json_t *obj = json_loads(cases[i].obj, 0, NULL);
		json_t *got = api_href(obj, cases[i].path);
		ok(got == obj, "%s: the object comes back", cases[i].what);
		is_str(json_string_value(json_object_get(obj, "href")), cases[i].href, "%s",
		       cases[i].what);
		json_decref(obj);
	}
	json_t *obj = json_pack("{ss ss}", "name", "x", "href", "/old");
	api_href(obj, "/new/{name}");
	is_str(json_string_value(json_object_get(obj, "href")), "/new/x",
	       "an href there already is replaced");
	json_decref(obj);

	/* names that may hold a '/': each reads back to itself, never to another's */
	static const struct {
		const char *name, *href;
	} nested[] = {
	    {"home/alice", "/f/home%7Calice"}, {"a|b", "/f/a~%7Cb"}, {"a/|b", "/f/a%7C~%7Cb"},
	    {"a|/b", "/f/a~%7C%7Cb"},          {"~", "/f/~~"},       {"~|/", "/f/~~~%7C%7C"},
	    {"50% x:y", "/f/50%25%20x%3Ay"},   {"..", "/f/.."},
	};
	for (size_t i = 0; i < nitems(nested); i++) {
		obj = json_pack("{ss}", "name", nested[i].name);
		api_href_nested(obj, "/f/{name}");
		const char *href = json_string_value(json_object_get(obj, "href"));
		is_str(href, nested[i].href, "nested %s: its href", nested[i].name);
		char seg[64], back[64];
		size_t n = 0; /* the segment as the router gives it: percent-decoded */
		for (const char *p = href + 3; *p && n + 1 < sizeof(seg); p++) {
			unsigned hi, lo;
			if (*p == '%' && sscanf(p + 1, "%1x%1x", &hi, &lo) == 2) {
				seg[n++] = (char)(hi << 4 | lo);
				p += 2;
			} else {
				seg[n++] = *p;
			}
		}
		seg[n] = '\0';
		ok(api_nested_name(seg, back, sizeof(back)) == 0 &&
		       strcmp(back, nested[i].name) == 0,
		   "nested %s: read back to itself", nested[i].name);
		json_decref(obj);
	}
	char out[8];
	ok(api_nested_name("a~b", out, sizeof(out)) < 0,
	   "a '~' before another character names nothing");
	ok(api_nested_name("a~", out, sizeof(out)) < 0, "nor a '~' at the end");
	ok(api_nested_name("abcdefgh", out, sizeof(out)) < 0, "a name too long for out is refused");
	ok(api_nested_name("abcdefg", out, sizeof(out)) == 0 && strcmp(out, "abcdefg") == 0,
	   "one that just fits is read");
	return done_testing();
}
