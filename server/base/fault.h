/* SPDX-License-Identifier: ISC */
/* The one error value of the API: becomes {"fault":{"message","details","code"}}. */
#ifndef SPINDLE_FAULT_H
#define SPINDLE_FAULT_H

#include <stdarg.h>
#include <stdbool.h>
#include <jansson.h>

enum fault_kind {
	FAULT_NONE = 0,
	ERR_INVALID_ARG,      /* 400 */
	ERR_UNKNOWN_ARG,      /* 400 */
	ERR_MISSING_ARG,      /* 400 */
	ERR_UNAUTHORIZED,     /* 401 */
	ERR_DENIED,           /* 403 */
	ERR_NOT_FOUND,        /* 404 */
	ERR_METHOD,           /* 405 */
	ERR_OBJECT_EXISTS,    /* 409: the name is taken */
	ERR_CONFIRM_REQUIRED, /* 409 */
	ERR_STATE_CHANGED, /* 409: the state forbids it now (the guide's "conflict in system state")
	                    */
	ERR_PRECONDITION,  /* 412: If-Match names another version than the current one */
	ERR_OVER_LIMIT,    /* 413 */
	ERR_UNSUPPORTED_MEDIA, /* 415 */
	ERR_TOO_MANY,          /* 429 */
	ERR_INTERNAL,          /* 500 */
	ERR_BACKEND,           /* 502 */
	ERR_BUSY,              /* 503 */
	ERR_TIMEOUT,           /* 504 */
	ERR_NO_SPACE,          /* 507: a write could not be stored (the state filesystem is full) */
};

struct fault {
	enum fault_kind kind;
	int retry_after; /* seconds, for ERR_TOO_MANY / ERR_BUSY; 0 = none */
	char details[256];
};

/* Sets the fault and returns -1, so callers can `return fault_set(...)`. */
int fault_set(struct fault *f, enum fault_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int fault_vset(struct fault *f, enum fault_kind kind, const char *fmt, va_list ap);
int fault_status(enum fault_kind kind);
const char *fault_name(enum fault_kind kind);
/* A write to the store failed: ERR_NO_SPACE when for want of space ("<what>: not stored:
 * the state filesystem is full"), else ERR_INTERNAL ("<what>: database error"). -1. */
int fault_store(struct fault *f, bool no_space, const char *what);
/* New reference: {"fault":{...}}. */
json_t *fault_json(const struct fault *f);

#endif
