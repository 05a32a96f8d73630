/* SPDX-License-Identifier: ISC */
/* Request bodies: a table of the fields an endpoint takes, checked in one call, so every
 * type error, unknown key, missing field or out-of-range number is refused with the field
 * named, before a handler looks at the values. */
#ifndef SPINDLE_BODY_H
#define SPINDLE_BODY_H

#include <stdbool.h>
#include <jansson.h>
#include "base/fault.h"

enum field_type {
	FIELD_STRING,         /* min/max: length in bytes */
	FIELD_STRING_OR_NULL, /* the same, or null (a value to clear) */
	FIELD_INT,            /* min/max: value */
	FIELD_BOOL,
	FIELD_NUMBER,       /* integer or real; min/max: value */
	FIELD_STRING_ARRAY, /* min/max: number of items; items 1..256 bytes */
	FIELD_OBJECT,
	FIELD_ARRAY, /* min/max: number of items */
	/* A property of the object that no request changes (a user's or a role's name in a
	 * PUT): refused, saying so, rather than as an unknown property. */
	FIELD_READ_ONLY,
};

struct field {
	const char *name;
	enum field_type type;
	bool required;
	long long min, max; /* 0, 0: no bound */
};

#define FIELDS_END                                                                                 \
	{                                                                                          \
		NULL, 0, false, 0, 0                                                               \
	}

/* 0 when obj is an object whose keys are all in fields with the right types and ranges,
 * and has every required one; -1 with the fault naming the first offending field. */
int body_check(const json_t *obj, const struct field *fields, struct fault *f);

/* Parses a request body: JSON_REJECT_DUPLICATES, an object at the top. -1 with
 * ERR_INVALID_ARG saying where it broke. */
int body_parse(const char *data, size_t len, json_t **out, struct fault *f);

#endif
