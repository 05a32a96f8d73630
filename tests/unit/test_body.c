/* SPDX-License-Identifier: ISC */
/* Request body validation: types, ranges, unknown, missing and duplicate keys; the
 * "did you mean" suggestion for an unknown key (server/base/suggest.c). */
#include <stdio.h>
#include <string.h>

#include "net/body.h"
#include "base/suggest.h"
#include "tap.h"

static const struct field fields[] = {
    {"name", FIELD_STRING, true, 1, 8},
    {"count", FIELD_INT, false, 1, 100},
    {"on", FIELD_BOOL, false, 0, 0},
    {"tags", FIELD_STRING_ARRAY, false, 0, 3},
    {"ratio", FIELD_NUMBER, false, 0, 1},
    {"end", FIELD_STRING_OR_NULL, false, 1, 4},
    FIELDS_END,
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

/* The names of a bench job spec and some query parameters: what typos are made against. */
static const char *const known[] = {
    "name",        "label",      "target",        "pattern", "size",
    "block_size",  "readers",    "writers",       "threads", "rwmix_read",
    "engine",      "iodepth",    "iodepth_batch", "direct",  "runtime_s",
    "ramp_s",      "io_size",    "fsync_every",   "seed",    "confirm",
    "sessions",    "update_pct", "passes",        "start",   "seconds",
    "granularity", "points",     "limit",         "owner",   "format",
    NULL,
};

static const struct {
	const char *word, *want; /* want NULL: nothing suggested */
	const char *why;
} near_cases[] = {
    {"blocksize", "block_size", "a separator left out"},
    {"block-size", "block_size", "another separator"},
    {"BlockSize", "block_size", "camel case"},
    {"Block_Size", "block_size", "upper case"},
    {"blok_size", "block_size", "a letter left out"},
    {"bolck_size", "block_size", "two letters swapped"},
    {"blocksiez", "block_size", "a swap and a separator"},
    {"runtime", "runtime_s", "the unit left off"},
    {"run_tme", "runtime_s", "a letter left out and the unit left off"},
    {"reader", "readers", "singular"},
    {"iodepht", "iodepth", "swap at the end"},
    {"io_depth", "iodepth", "a separator added"},
    {"iodepth_batchs", "iodepth_batch", "a letter added"},
    {"granularty", "granularity", "query parameter"},
    {"point", "points", "query parameter, singular"},
    {"sesions", "sessions", "a doubled letter left out"},
    {"lable", "label", "swapped letters"},
    {"pattren", "pattern", "swap in the middle"},
    {"sise", "size", "one substitution in four letters"},
    {"color", NULL, "nothing like it"},
    {"bogus", NULL, "nothing like it either"},
    {"x", NULL, "one letter"},
    {"sz", NULL, "two letters are too few to guess from"},
    {"blocksizeblocksize", NULL, "twice as long"},
    {"", NULL, "empty"},
    {"___", NULL, "only separators"},
    {"name", NULL, "a known name is not a typo"},
    {"verbose", NULL, "no field is like it"},
    {"nmae", "name", "a swap in four letters"},
    {"nam", "name", "a letter left out of four"},
    {"seed_", "seed", "a trailing separator"},
};

static void suggest_table(void)
{
	for (size_t i = 0; i < sizeof(near_cases) / sizeof(near_cases[0]); i++) {
		const char *got = suggest_from(near_cases[i].word, known);
		const char *want = near_cases[i].want;
		ok(want ? got && strcmp(got, want) == 0 : got == NULL,
		   "suggest '%s' -> %s (%s)%s%s", near_cases[i].word, want ? want : "nothing",
		   near_cases[i].why, got ? ", got " : "", got ? got : "");
	}
	is_int(suggest_distance("blocksize", "block_size"), 0, "separators do not count");
	is_int(suggest_distance("ab", "ba"), 1, "a swap of neighbours is one edit");
	is_int(suggest_distance("ca", "abc"), 3, "optimal string alignment: no edit of a swap");
	is_int(suggest_distance("kitten", "sitting"), 3, "the classic pair");
	char longword[SUGGEST_NAME_MAX + 2];
	memset(longword, 'a', sizeof(longword) - 1);
	longword[sizeof(longword) - 1] = '\0';
	is_int(suggest_distance(longword, "a"), -1, "a name too long is not compared");
	/* Equally near: the first offered wins, so canonical names listed before aliases win. */
	static const char *const tie[] = {"abcd", "abce", NULL};
	is_str(suggest_from("abcf", tie), "abcd", "ties go to the first candidate");
}

/* A PUT's table naming what it refuses to change: it says so, and never suggests it. */
static void read_only(void)
{
	static const struct field put_fields[] = {
	    {"name", FIELD_READ_ONLY, false, 0, 0},
	    {"label", FIELD_STRING, false, 0, 8},
	    FIELDS_END,
	};
	static const struct {
		const char *json, *details, *what;
	} cases[] = {
	    {"{\"name\":\"b\"}", "name: cannot be changed", "a read-only field is refused"},
	    {"{\"label\":\"x\",\"name\":\"a\"}", "name: cannot be changed",
	     "with any value, after others"},
	    {"{\"nmae\":\"b\"}", "nmae: unknown property", "a typo of it is not pointed at it"},
	    {"{\"lable\":\"b\"}", "lable: unknown property; did you mean label?",
	     "while the others are"},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fault f = {0};
		json_t *j = json_loads(cases[i].json, 0, NULL);
		int rc = body_check(j, put_fields, &f);
		ok(rc < 0 &&
		       f.kind == (strstr(cases[i].details, "unknown") ? ERR_UNKNOWN_ARG
		                                                      : ERR_INVALID_ARG) &&
		       strcmp(f.details, cases[i].details) == 0,
		   "%s (%s)", cases[i].what, f.details);
		json_decref(j);
	}
	json_t *j = json_loads("{\"label\":\"x\"}", 0, NULL);
	struct fault f = {0};
	ok(body_check(j, put_fields, &f) == 0, "a body without it passes");
	json_decref(j);
}

/* A fault's field: the part of the request its details start with, when they name one. */
static void fault_fields(void)
{
	static const struct {
		const char *details, *field; /* NULL: no field */
	} cases[] = {
	    {"password: too short", "password"},
	    {"jobs[0].jobname: must be a string", "jobs[0].jobname"},
	    {"axes.threads: at most 8 values", "axes.threads"},
	    {"spindle_unknown: unknown parameter", "spindle_unknown"},
	    {"user 'x' not found", NULL},
	    {"too many failed attempts; retry later", NULL},
	    {"database error", NULL},
	    {"name:no space after the colon", NULL},
	    {": nothing before it", NULL},
	    {"9lives: not a name", NULL},
	    {"", NULL},
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fault f;
		fault_set(&f, ERR_INVALID_ARG, "%s", cases[i].details);
		json_t *j = fault_json(&f), *fo = json_object_get(j, "fault");
		const char *field = json_string_value(json_object_get(fo, "field"));
		if (cases[i].field)
			is_str(field ? field : "(none)", cases[i].field, "field of '%s'",
			       cases[i].details);
		else
			ok(!json_object_get(fo, "field"), "no field in '%s'", cases[i].details);
		is_str(json_string_value(json_object_get(fo, "details")), cases[i].details,
		       "details as they were");
		json_decref(j);
	}
	char longname[200];
	memset(longname, 'a', sizeof(longname));
	memcpy(longname + 150, ": x", 4);
	struct fault f;
	fault_set(&f, ERR_INVALID_ARG, "%s", longname);
	json_t *j = fault_json(&f);
	ok(!json_object_get(json_object_get(j, "fault"), "field"), "no field of 150 characters");
	json_decref(j);
}

int main(void)
{
	suggest_table();
	expect("{\"name\":\"a\",\"cuont\":1}", ERR_UNKNOWN_ARG,
	       "cuont: unknown property; did you mean count?", "a typo of a field is named");
	expect("{\"name\":\"a\",\"Ratio\":1}", ERR_UNKNOWN_ARG, "did you mean ratio?",
	       "a field in another case");
	expect("{\"name\":\"a\",\"colour\":1}", ERR_UNKNOWN_ARG, "colour: unknown property",
	       "an unknown field like no other");
	expect("{\"name\":\"a\"}", FAULT_NONE, NULL, "minimal");
	expect("{\"name\":\"a\",\"count\":5,\"on\":true,\"tags\":[\"x\"],\"ratio\":0.5}",
	       FAULT_NONE, NULL, "everything");
	expect("{}", ERR_MISSING_ARG, "name", "missing required");
	expect("{\"name\":\"a\",\"end\":null}", FAULT_NONE, NULL, "a string or null: null");
	expect("{\"name\":\"a\",\"end\":\"abcd\"}", FAULT_NONE, NULL, "a string or null: a string");
	expect("{\"name\":\"a\",\"end\":\"abcde\"}", ERR_INVALID_ARG, "end: must be 1 to 4",
	       "a string or null: bounded as a string");
	expect("{\"name\":\"a\",\"end\":3}", ERR_INVALID_ARG, "end: must be a string or null",
	       "a string or null: not a number");
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
	fault_fields();
	read_only();
	return done_testing();
}
