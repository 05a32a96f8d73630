/* SPDX-License-Identifier: ISC */
/* /api/openapi.json: the API document, embedded at build time from api/openapi.json. */
#include "api.h"

extern const char openapi_json[];
extern const size_t openapi_json_len;

void openapi_get(struct request *r)
{
	reply_raw(r, 200, "application/json", openapi_json, openapi_json_len);
}
