/* Faults: the API's one error shape. */
#include "fault.h"

#include <stdarg.h>
#include <stdio.h>

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
    [ERR_OVER_LIMIT] = {"ERR_OVER_LIMIT", 413},
    [ERR_UNSUPPORTED_MEDIA] = {"ERR_UNSUPPORTED_MEDIA", 415},
    [ERR_TOO_MANY] = {"ERR_TOO_MANY", 429},
    [ERR_INTERNAL] = {"ERR_INTERNAL", 500},
    [ERR_BACKEND] = {"ERR_BACKEND", 502},
    [ERR_BUSY] = {"ERR_BUSY", 503},
    [ERR_TIMEOUT] = {"ERR_TIMEOUT", 504},
};

int fault_set(struct fault *f, enum fault_kind kind, const char *fmt, ...)
{
	va_list ap;
	f->kind = kind;
	f->retry_after = 0;
	va_start(ap, fmt);
	vsnprintf(f->details, sizeof(f->details), fmt, ap);
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

json_t *fault_json(const struct fault *f)
{
	return json_pack("{s:{s:s, s:s, s:i}}", "fault", "message", fault_name(f->kind), "details",
	                 f->details, "code", fault_status(f->kind));
}
