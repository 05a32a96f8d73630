/* SPDX-License-Identifier: ISC */
/* What the handlers of api/ share about query strings. */
#include "api.h"

bool api_query_none(struct request *r)
{
	static const char *const none[] = {NULL};
	struct fault f;
	if (request_query_check(r, none, &f) < 0) {
		reply_fault(r, &f);
		return false;
	}
	return true;
}
