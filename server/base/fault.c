/* SPDX-License-Identifier: ISC */
/* Faults: the API's one error shape. */
#include "fault.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util.h"
#include "utf8.h"

static const struct {
	const char *name;
	int status;
} fault_table[] = {
    [FAULT_NONE] = {"OK", 200},
    [ERR_INVALID_ARG] = {"ERR_INVALID_ARG", 400},
    [ERR_UNKNOWN_ARG] = {"ERR_UNKNOWN_ARG", 400},
    [ERR_MISSING_ARG] = {"ERR_MISSING_ARG", 400},
    [ERR_UNAUTHORIZED] = {"ERR_UNAUTHORIZED", 401},
    [ERR_DENIED] = {"ERR_DENIED", 403},
    [ERR_NOT_FOUND] = {"ERR_NOT_FOUND", 404},
    [ERR_METHOD] = {"ERR_METHOD", 405},
    [ERR_OBJECT_EXISTS] = {"ERR_OBJECT_EXISTS", 409},
    [ERR_CONFIRM_REQUIRED] = {"ERR_CONFIRM_REQUIRED", 409},
    [ERR_STATE_CHANGED] = {"ERR_STATE_CHANGED", 409},
    [ERR_PRECONDITION] = {"ERR_PRECONDITION_FAILED", 412},
    [ERR_OVER_LIMIT] = {"ERR_OVER_LIMIT", 413},
    [ERR_UNSUPPORTED_MEDIA] = {"ERR_UNSUPPORTED_MEDIA", 415},
    [ERR_TOO_MANY] = {"ERR_TOO_MANY", 429},
    [ERR_INTERNAL] = {"ERR_INTERNAL", 500},
    [ERR_BACKEND] = {"ERR_BACKEND", 502},
    [ERR_BUSY] = {"ERR_BUSY", 503},
    [ERR_TIMEOUT] = {"ERR_TIMEOUT", 504},
    [ERR_NO_SPACE] = {"ERR_NO_SPACE", 507},
};

int fault_vset(struct fault *f, enum fault_kind kind, const char *fmt, va_list ap)
{
	f->kind = kind;
	f->retry_after = 0;
	vsnprintf(f->details, sizeof(f->details), fmt, ap);
	/* details quote what the client sent and may be cut mid-character */
	utf8_clean(f->details, 0);
	return -1;
}

int fault_set(struct fault *f, enum fault_kind kind, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fault_vset(f, kind, fmt, ap);
	va_end(ap);
	return -1;
}

int fault_status(enum fault_kind kind)
{
	if ((unsigned)kind >= sizeof(fault_table) / sizeof(fault_table[0]))
		return 500;
	return fault_table[kind].status;
}

const char *fault_name(enum fault_kind kind)
{
	if ((unsigned)kind >= sizeof(fault_table) / sizeof(fault_table[0]))
		return "ERR_INTERNAL";
	return fault_table[kind].name;
}

int fault_store(struct fault *f, bool no_space, const char *what)
{
	if (no_space)
		return fault_set(f, ERR_NO_SPACE, "%s: not stored: the state filesystem is full",
		                 what);
	return fault_set(f, ERR_INTERNAL, "%s: database error", what);
}

/* The part of the request at fault, as details start with it ("jobs[0].jobname: ..."): a
 * name, a path into the body or a parameter, then ": ". 0 when details name none. */
static size_t fault_field_len(const char *d)
{
	if (!isalpha((unsigned char)d[0]))
		return 0;
	size_t n = 1;
	while (n <= 128 && d[n] && (isalnum((unsigned char)d[n]) || strchr("_.[]-", d[n])))
		n++;
	return d[n] == ':' && d[n + 1] == ' ' ? n : 0;
}

json_t *fault_json(const struct fault *f)
{
	/* details are clean UTF-8 when set through fault_set; one set by hand may not be */
	json_t *details = json_string(f->details);
	json_t *o = json_pack("{s:s, s:o, s:i}", "message", fault_name(f->kind), "details",
	                      details ? details : json_string("(not valid UTF-8)"), "code",
	                      fault_status(f->kind));
	size_t n = details ? fault_field_len(f->details) : 0;
	if (n)
		json_object_set_new(o, "field", json_stringn(f->details, n));
	return json_pack("{s:o}", "fault", o);
}
