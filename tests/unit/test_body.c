/* Request body validation: types, ranges, unknown, missing and duplicate keys. */
#include <stdio.h>
#include <string.h>

#include "body.h"
#include "tap.h"

static const struct field fields[] = {
    {"name", FIELD_STRING, true, 1, 8},   {"count", FIELD_INT, false, 1, 100},
    {"on", FIELD_BOOL, false, 0, 0},      {"tags", FIELD_STRING_ARRAY, false, 0, 3},
    {"ratio", FIELD_NUMBER, false, 0, 1}, FIELDS_END,
};

static void expect(const char *json, enum fault_kind kind, const char *details_has,
                   const char *what)
{
	struct fault f = {0};
	json_t *j = NULL;
	int rc = body_parse(json, strlen(json), &j, &f);
	if (rc == 0)
		rc = body_check(j, fields, &f);
	json_decref(j);
	if (kind == FAULT_NONE) {
		ok(rc == 0, "%s: accepted", what);
		return;
	}
	ok(rc < 0 && f.kind == kind, "%s: refused as %s", what, fault_name(kind));
	if (details_has)
		ok(strstr(f.details, details_has) != NULL, "%s: details name '%s' (%s)", what,
		   details_has, f.details);
}

int main(void)
{
	expect("{\"name\":\"a\"}", FAULT_NONE, NULL, "minimal");
	expect("{\"name\":\"a\",\"count\":5,\"on\":true,\"tags\":[\"x\"],\"ratio\":0.5}",
	       FAULT_NONE, NULL, "everything");
	expect("{}", ERR_MISSING_ARG, "name", "missing required");
	expect("{\"name\":\"a\",\"bogus\":1}", ERR_UNKNOWN_ARG, "bogus", "unknown key");
	expect("{\"name\":1}", ERR_INVALID_ARG, "name", "wrong type string");
	expect("{\"name\":\"\"}", ERR_INVALID_ARG, "name", "too short");
	expect("{\"name\":\"123456789\"}", ERR_INVALID_ARG, "name", "too long");
	expect("{\"name\":\"a\",\"count\":0}", ERR_INVALID_ARG, "count", "below range");
	expect("{\"name\":\"a\",\"count\":101}", ERR_INVALID_ARG, "count", "above range");
	expect("{\"name\":\"a\",\"count\":99999999999999999999}", ERR_INVALID_ARG, NULL,
	       "integer overflow");
	expect("{\"name\":\"a\",\"count\":1.5}", ERR_INVALID_ARG, "count", "real for integer");
	expect("{\"name\":\"a\",\"count\":\"5\"}", ERR_INVALID_ARG, "count", "string for integer");
	expect("{\"name\":\"a\",\"on\":1}", ERR_INVALID_ARG, "on", "integer for bool");
	expect("{\"name\":\"a\",\"tags\":\"x\"}", ERR_INVALID_ARG, "tags", "string for array");
	expect("{\"name\":\"a\",\"tags\":[1]}", ERR_INVALID_ARG, "tags[0]", "array item type");
	expect("{\"name\":\"a\",\"tags\":[\"\"]}", ERR_INVALID_ARG, "tags[0]", "empty item");
	expect("{\"name\":\"a\",\"tags\":[\"a\",\"b\",\"c\",\"d\"]}", ERR_INVALID_ARG, "tags",
	       "too many items");
	expect("{\"name\":\"a\",\"ratio\":2}", ERR_INVALID_ARG, "ratio", "number range");
	expect("{\"name\":\"a\",\"name\":\"b\"}", ERR_INVALID_ARG, "duplicate", "duplicate keys");
	expect("{\"name\":\"a\"", ERR_INVALID_ARG, "body", "truncated JSON");
	expect("[1,2]", ERR_INVALID_ARG, "object", "not an object");
	expect("", ERR_INVALID_ARG, "body", "empty");
	expect("{\"name\":\"a\\u0000b\"}", ERR_INVALID_ARG, NULL, "NUL in a string");
	expect("{\"name\":\"a\"} trailing", ERR_INVALID_ARG, NULL, "trailing garbage");

	/* An unknown key of 300 two-byte characters is cut inside the details; the fault must
	 * still encode (valid UTF-8), or the client gets a 400 with no body. */
	char key[700], json[800];
	size_t o = 0;
	for (int i = 0; i < 300; i++) {
		key[o++] = (char)0xc3;
		key[o++] = (char)0xa9; /* e-acute */
	}
	key[o] = '\0';
	snprintf(json, sizeof(json), "{\"name\":\"a\",\"%s\":1}", key);
	struct fault f = {0};
	json_t *j = NULL;
	ok(body_parse(json, strlen(json), &j, &f) == 0 && body_check(j, fields, &f) < 0 &&
	       f.kind == ERR_UNKNOWN_ARG,
	   "long multibyte unknown key refused");
	json_decref(j);
	json_t *fj = fault_json(&f);
	ok(fj && json_string_value(json_object_get(json_object_get(fj, "fault"), "details")),
	   "its fault encodes as JSON");
	json_decref(fj);
	fault_set(&f, ERR_INVALID_ARG, "%s", "ab\xff\xfe");
	is_str(f.details, "ab??", "invalid bytes in details become '?'");
	return done_testing();
}
