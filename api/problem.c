/* SPDX-License-Identifier: ISC */
/* /api/problem/v1: the open problems (server/hardware/problems.c), in the guide's shape. */
#include "api.h"
#include "hardware/problems.h"

void problem_list(struct request *r)
{
	reply_json(r, 200, problems_list_json());
}

void problem_get(struct request *r)
{
	json_t *p = problems_get_json(request_param(r, 0));
	if (!p) {
		struct fault f;
		fault_set(&f, ERR_NOT_FOUND, "problem: no open problem '%.64s'",
		          request_param(r, 0));
		reply_fault(r, &f);
		return;
	}
	reply_json(r, 200, p);
}
