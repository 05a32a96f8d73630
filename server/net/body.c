/* SPDX-License-Identifier: ISC */
/* Request body validation against a field table. */
#include "body.h"
#include "base/suggest.h"

#include <string.h>

static const char *type_name(enum field_type t)
{
	switch (t) {
	case FIELD_STRING:
		return "a string";
	case FIELD_STRING_OR_NULL:
		return "a string or null";
	case FIELD_INT:
		return "an integer";
	case FIELD_BOOL:
		return "true or false";
	case FIELD_NUMBER:
		return "a number";
	case FIELD_STRING_ARRAY:
		return "an array of strings";
	case FIELD_OBJECT:
		return "an object";
	case FIELD_ARRAY:
		return "an array";
	case FIELD_READ_ONLY:
		break;
	}
	return "?";
}

static bool bounded(const struct field *fd)
{
	return fd->min != 0 || fd->max != 0;
}

static int check_value(const json_t *v, const struct field *fd, struct fault *f)
{
	switch (fd->type) {
	case FIELD_STRING_OR_NULL:
		if (json_is_null(v))
			return 0;
		/* fall through */
	case FIELD_STRING: {
		if (!json_is_string(v))
			break;
		long long len = (long long)json_string_length(v);
		if (bounded(fd) && (len < fd->min || len > fd->max))
			return fault_set(f, ERR_INVALID_ARG,
			                 "%s: must be %lld to %lld characters long", fd->name,
			                 fd->min, fd->max);
		if (strlen(json_string_value(v)) != (size_t)len)
			return fault_set(f, ERR_INVALID_ARG, "%s: must not contain NUL", fd->name);
		return 0;
	}
	case FIELD_INT: {
		if (!json_is_integer(v))
			break;
		long long n = (long long)json_integer_value(v);
		if (bounded(fd) && (n < fd->min || n > fd->max))
			return fault_set(f, ERR_INVALID_ARG, "%s: must be from %lld to %lld",
			                 fd->name, fd->min, fd->max);
		return 0;
	}
	case FIELD_NUMBER: {
		if (!json_is_number(v))
			break;
		double n = json_number_value(v);
		if (bounded(fd) && (n < (double)fd->min || n > (double)fd->max))
			return fault_set(f, ERR_INVALID_ARG, "%s: must be from %lld to %lld",
			                 fd->name, fd->min, fd->max);
		return 0;
	}
	case FIELD_BOOL:
		if (!json_is_boolean(v))
			break;
		return 0;
	case FIELD_OBJECT:
		if (!json_is_object(v))
			break;
		return 0;
	case FIELD_READ_ONLY:
		return fault_set(f, ERR_INVALID_ARG, "%s: cannot be changed", fd->name);
	case FIELD_ARRAY:
	case FIELD_STRING_ARRAY: {
		if (!json_is_array(v))
			break;
		long long n = (long long)json_array_size(v);
		if (bounded(fd) && (n < fd->min || n > fd->max))
			return fault_set(f, ERR_INVALID_ARG, "%s: must have %lld to %lld items",
			                 fd->name, fd->min, fd->max);
		if (fd->type == FIELD_ARRAY)
			return 0;
		size_t i;
		json_t *item;
		json_array_foreach(v, i, item)
		{
			size_t len = json_string_length(item);
			if (!json_is_string(item) || len == 0 || len > 256 ||
			    strlen(json_string_value(item)) != len)
				return fault_set(f, ERR_INVALID_ARG,
				                 "%s[%zu]: must be a string of 1 to 256 characters",
				                 fd->name, i);
		}
		return 0;
	}
	}
	return fault_set(f, ERR_INVALID_ARG, "%s: must be %s", fd->name, type_name(fd->type));
}

/* An unknown key, with the known one it is probably a typo of. */
static int body_unknown(const char *key, const struct field *fields, struct fault *f)
{
	struct suggest s;
	suggest_init(&s, key);
	for (const struct field *fd = fields; fd->name; fd++)
		if (fd->type != FIELD_READ_ONLY) /* no use pointing at what cannot be sent */
			suggest_try(&s, fd->name);
	if (suggest_best(&s))
		return fault_set(f, ERR_UNKNOWN_ARG, "%.200s: unknown property; did you mean %s?",
		                 key, suggest_best(&s));
	return fault_set(f, ERR_UNKNOWN_ARG, "%.200s: unknown property", key);
}

int body_check(const json_t *obj, const struct field *fields, struct fault *f)
{
	if (!json_is_object(obj))
		return fault_set(f, ERR_INVALID_ARG, "body: must be a JSON object");
	const char *key;
	const json_t *v;
	json_object_foreach((json_t *)obj, key, v)
	{
		const struct field *fd = fields;
		while (fd->name && strcmp(fd->name, key) != 0)
			fd++;
		if (!fd->name)
			return body_unknown(key, fields, f);
		if (check_value(v, fd, f) < 0)
			return -1;
	}
	for (const struct field *fd = fields; fd->name; fd++)
		if (fd->required && !json_object_get(obj, fd->name))
			return fault_set(f, ERR_MISSING_ARG, "%s: required", fd->name);
	return 0;
}

int body_parse(const char *data, size_t len, json_t **out, struct fault *f)
{
	json_error_t err;
	json_t *j = json_loadb(data, len, JSON_REJECT_DUPLICATES, &err);
	if (!j)
		return fault_set(f, ERR_INVALID_ARG, "body: %s (line %d, column %d)", err.text,
		                 err.line, err.column);
	if (!json_is_object(j)) {
		json_decref(j);
		return fault_set(f, ERR_INVALID_ARG, "body: must be a JSON object");
	}
	*out = j;
	return 0;
}
