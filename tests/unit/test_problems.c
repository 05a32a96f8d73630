/* SPDX-License-Identifier: ISC */
/* server/hardware/problems.c: raising by key keeps one problem with one uuid, clearing removes it,
 * clear_others keeps the named ones, and the sources' one-liners raise and clear. */
#include <string.h>

#include "tap.h"
#include "hardware/problems.h"

static const struct problem_text text = {"SP-TEST", "Fault", "It matters.", "Do this."};

static json_t *first(void)
{
	json_t *all = problems_list_json();
	json_t *p = json_incref(json_array_get(json_object_get(all, "problems"), 0));
	json_decref(all);
	return p;
}

int main(void)
{
	is_int(problems_count(), 0, "none at first");
	struct problem_component c = {.chassis = "system", .label = "HDD 1", .href = "/x"};
	problems_raise("disk/a", PROBLEM_MAJOR, &text, &c, "disk %s is faulted", "a");
	json_t *p = first();
	char uuid[40];
	snprintf(uuid, sizeof(uuid), "%s", json_string_value(json_object_get(p, "uuid")));
	is_int(strlen(uuid), 36, "a uuid");
	is_str(json_string_value(json_object_get(p, "description")), "disk a is faulted",
	       "the description");
	is_str(json_string_value(json_object_get(p, "impact")), "It matters.", "the impact");
	is_str(json_string_value(json_object_get(p, "severity")), "Major", "the severity");
	ok(json_is_false(json_object_get(p, "repairable")), "not repairable");
	json_t *comp = json_array_get(json_object_get(p, "components"), 0);
	is_str(json_string_value(json_object_get(comp, "href")), "/x", "the component's href");
	json_decref(p);

	problems_raise("disk/a", PROBLEM_CRITICAL, &text, NULL, "disk a is worse");
	is_int(problems_count(), 1, "raised again: still one");
	p = first();
	is_str(json_string_value(json_object_get(p, "uuid")), uuid, "with the same uuid");
	is_str(json_string_value(json_object_get(p, "severity")), "Critical", "its new severity");
	ok(json_is_null(
	       json_object_get(json_array_get(json_object_get(p, "components"), 0), "href")),
	   "no component href: null");
	json_decref(p);

	json_t *one = problems_get_json(uuid);
	ok(one && json_object_get(one, "problem"), "one by its uuid");
	json_decref(one);
	ok(problems_get_json("00000000-0000-4000-8000-000000000000") == NULL, "an unknown uuid");

	problems_raise("disk/b", PROBLEM_MAJOR, &text, NULL, "b");
	problems_raise("led/x", PROBLEM_MINOR, &text, NULL, "x");
	const char *keep[] = {"disk/b"};
	problems_clear_others("disk/", keep, 1);
	is_int(problems_count(), 2, "clear_others drops disk/a, keeps disk/b and led/x");
	ok(problems_get_json(uuid) == NULL, "disk/a is gone");
	problems_clear("disk/b");
	problems_clear("led/x");
	problems_clear("never-raised");
	is_int(problems_count(), 0, "cleared by key");

	problems_collector("/proc/meminfo");
	is_int(problems_count(), 1, "the collector raises");
	problems_collector("");
	is_int(problems_count(), 0, "and clears");
	problems_job_ended(7, "j", "failed", "exit 3");
	problems_job_ended(8, "k", "interrupted", "");
	is_int(problems_count(), 1, "a failed job raises; an interrupted one leaves it");
	problems_job_ended(9, "l", "done", "");
	is_int(problems_count(), 0, "a job that ends well clears it");
	problems_shutdown();
	return done_testing();
}
