/* /api/analytics/v1/worksheets: saved sets of dataset views. */
#include <stdint.h>
#include <stdlib.h>
#include <event2/http.h>

#include "api.h"
#include "util.h"
#include "worksheets.h"
#include "db/db.h"

#define WORKSHEETS_PATH "/api/analytics/v1/worksheets"

/* Only the shapes here; worksheets.c checks the values, item by item. */
static const struct field worksheet_create_fields[] = {
    {"name", FIELD_STRING, true, 1, DB_WORKSHEET_NAME_MAX},
    {"datasets", FIELD_ARRAY, false, 0, WORKSHEET_DATASETS_MAX},
    FIELDS_END,
};

static const struct field worksheet_update_fields[] = {
    {"name", FIELD_STRING, false, 1, DB_WORKSHEET_NAME_MAX},
    {"datasets", FIELD_ARRAY, false, 0, WORKSHEET_DATASETS_MAX},
    FIELDS_END,
};

#define WORKSHEET_HREF WORKSHEETS_PATH "/{uuid}"

static void reply_worksheet(struct request *r, int status, json_t *ws /* stolen */)
{
	api_href(ws, WORKSHEET_HREF);
	if (status == 201)
		reply_header(r, "Location", json_string_value(json_object_get(ws, "href")));
	reply_json(r, status, json_pack("{s:o}", "worksheet", ws));
}

/* ?owner=&start=&limit=: a page of summaries, and in "next" the page after it (null on
 * the last), as the audit log and the job list page with start and limit. */
void worksheets_api_list(struct request *r)
{
	static const char *const allowed[] = {"owner", "start", "limit", NULL};
	const char *owner = request_query(r, "owner"), *s = request_query(r, "start"),
	           *l = request_query(r, "limit");
	long long start = 0, limit = WORKSHEETS_LIST_DEFAULT;
	json_t *list, *ws, *next = json_null();
	size_t i;
	bool more;
	struct fault f;

	if (request_query_check(r, allowed, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (s && util_parse_ll(s, 0, INT32_MAX, &start) < 0) {
		reply_error(r, ERR_INVALID_ARG,
		            "start: must be a whole number from 0 to %d, the index of the first "
		            "worksheet to list",
		            INT32_MAX);
		return;
	}
	if (l && util_parse_ll(l, 1, WORKSHEETS_LIST_MAX, &limit) < 0) {
		reply_error(r, ERR_INVALID_ARG, "limit: must be a whole number from 1 to %d",
		            WORKSHEETS_LIST_MAX);
		return;
	}
	if (worksheets_list(owner, start, (int)limit, &list, &more, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	json_array_foreach(list, i, ws)
	{
		api_href(ws, WORKSHEET_HREF);
	}
	if (more) {
		char *enc = owner ? evhttp_encode_uri(owner) : NULL;
		char *href = xasprintf(WORKSHEETS_PATH "?start=%lld&limit=%lld%s%s",
		                       start + (long long)json_array_size(list), limit,
		                       enc ? "&owner=" : "", enc ? enc : "");
		next = json_string(href);
		free(href);
		free(enc);
	}
	reply_json(r, 200, json_pack("{s:o, s:o}", "worksheets", list, "next", next));
}

void worksheets_api_create(struct request *r)
{
	json_t *body, *ws;
	struct fault f;
	int rc;

	if (request_body(r, worksheet_create_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	rc = worksheets_create(body, &r->who, r->peer, &ws, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_worksheet(r, 201, ws);
}

void worksheets_api_get(struct request *r)
{
	json_t *ws;
	struct fault f;

	if (worksheets_get(request_param(r, 0), &ws, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_worksheet(r, 200, ws);
}

void worksheets_api_update(struct request *r)
{
	json_t *body, *ws;
	struct fault f;
	int rc;

	if (request_body(r, worksheet_update_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	rc = worksheets_update(request_param(r, 0), body, &r->who, r->peer, &ws, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_worksheet(r, 200, ws);
}

void worksheets_api_delete(struct request *r)
{
	struct fault f;

	if (worksheets_delete(request_param(r, 0), &r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}
