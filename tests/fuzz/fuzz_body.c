/* SPDX-License-Identifier: ISC */
/* The request body validator as request_body() runs it: body_parse of any bytes, then
 * body_check against the field tables of the user routes, and against one table that holds
 * every field type with and without bounds (the user tables have no bool, number, object
 * or array). A refused body always gets a 400 fault whose details encode as JSON. */
#include <string.h>

#include "fuzz.h"
#include "api/api.h"
#include "net/body.h"
#include "base/fault.h"

static const struct field every_type[] = {
    {"s", FIELD_STRING, false, 0, 0},
    {"s8", FIELD_STRING, false, 1, 8},
    {"i", FIELD_INT, false, 0, 0},
    {"i5", FIELD_INT, false, -5, 5},
    {"n", FIELD_NUMBER, false, 0, 0},
    {"n1", FIELD_NUMBER, false, -1, 1},
    {"b", FIELD_BOOL, true, 0, 0},
    {"sa", FIELD_STRING_ARRAY, false, 0, 0},
    {"sa4", FIELD_STRING_ARRAY, false, 1, 4},
    {"o", FIELD_OBJECT, false, 0, 0},
    {"a", FIELD_ARRAY, false, 0, 0},
    {"a3", FIELD_ARRAY, false, 1, 3},
    FIELDS_END,
};

static void fault_ok(const struct fault *f)
{
	fuzz_assert(f->kind == ERR_INVALID_ARG || f->kind == ERR_UNKNOWN_ARG ||
	            f->kind == ERR_MISSING_ARG);
	fuzz_assert(f->details[0] != '\0');
	json_t *details = json_string(f->details); /* NULL: not valid UTF-8 */
	fuzz_assert(details != NULL);
	json_decref(details);
	json_t *j = fault_json(f);
	fuzz_assert(j != NULL);
	json_decref(j);
}

static void check(const json_t *body, const struct field *fields)
{
	struct fault f;
	memset(&f, 0, sizeof(f));
	if (body_check(body, fields, &f) < 0)
		fault_ok(&f);
	else
		fuzz_assert(f.kind == FAULT_NONE);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *body = NULL;
	struct fault f;
	memset(&f, 0, sizeof(f));
	if (body_parse((const char *)data, size, &body, &f) < 0) {
		fuzz_assert(body == NULL);
		fault_ok(&f);
		return 0;
	}
	fuzz_assert(json_is_object(body));
	check(body, user_create_fields);
	check(body, user_update_fields);
	check(body, token_fields);
	check(body, every_type);
	json_decref(body);
	return 0;
}
