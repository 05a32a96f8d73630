/* SPDX-License-Identifier: ISC */
/* /api/log/v1: the audit log. */
#include "api.h"
#include "access/audit.h"
#include "base/util.h"

static void audit_answer(void *arg, json_t *out)
{
	struct request *r = arg;
	if (!out) {
		reply_error(r, ERR_INTERNAL, "audit log: cannot be read");
		return;
	}
	reply_json(r, 200, out);
}

void log_audit_list(struct request *r)
{
	int64_t start = 0;
	long long limit = 100;
	const char *s = request_query(r, "start"), *l = request_query(r, "limit");
	long long epoch;
	if (s && util_parse_ll(s, 0, INT64_MAX, &epoch) == 0)
		start = epoch;
	else if (s && util_parse_iso8601(s, &start) < 0) {
		reply_error(r, ERR_INVALID_ARG,
		            "start: not ISO 8601 (2026-11-30T01:02:03Z) "
		            "or epoch seconds: '%.64s'",
		            s);
		return;
	}
	if (l && util_parse_ll(l, 1, 1000, &limit) < 0) {
		reply_error(r, ERR_INVALID_ARG, "limit: must be a whole number from 1 to 1000");
		return;
	}
	audit_list_async(start, (int)limit, audit_answer, r);
}
