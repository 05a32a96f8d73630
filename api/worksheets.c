/* SPDX-License-Identifier: ISC */
/* /api/analytics/v1/worksheets: saved sets of dataset views. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <event2/http.h>

#include "api.h"
#include "base/util.h"
#include "analytics/worksheets.h"
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
	const char *owner = request_query(r, "owner"), *s = request_query(r, "start"),
	           *l = request_query(r, "limit");
	long long start = 0, limit = WORKSHEETS_LIST_DEFAULT;
	json_t *list, *ws;
	size_t i;
	bool more;
	struct fault f;

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
		char *link =
		    xasprintf("<" WORKSHEETS_PATH "?start=%lld&limit=%lld%s%s>; rel=\"next\"",
		              start + (long long)json_array_size(list), limit, enc ? "&owner=" : "",
		              enc ? enc : "");
		/* The page after goes in a Link header (RFC 8288): the answer's one key is
		 * "worksheets", as the appliance's. */
		reply_header(r, "Link", link);
		free(link);
		free(enc);
	}
	reply_json(r, 200, json_pack("{s:o}", "worksheets", list));
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

/* The worksheet the path names (uuid or the appliance's name=...) into uuid; a fault
 * answered otherwise. */
static int ws_of(struct request *r, char uuid[37])
{
	struct fault f;
	if (worksheets_resolve(request_param(r, 0), r->who.user, uuid, &f) < 0) {
		reply_fault(r, &f);
		return -1;
	}
	return 0;
}

/* If-Match against the worksheet as GET answers it: -1 (answered) when it is gone or has
 * changed since the client read it. */
static int ws_precondition(struct request *r, const char *uuid)
{
	json_t *ws = NULL;
	struct fault f;
	if (!request_header(r, "If-Match"))
		return 0;
	if (worksheets_get(uuid, &ws, &f) == 0)
		api_href(ws, WORKSHEET_HREF);
	return reply_unless_current(r, "worksheet", ws, &f);
}

void worksheets_api_get(struct request *r)
{
	json_t *ws;
	struct fault f;
	char uuid[37];

	if (ws_of(r, uuid) < 0)
		return;
	if (worksheets_get(uuid, &ws, &f) < 0) {
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
	char uuid[37];

	if (ws_of(r, uuid) < 0)
		return;
	if (request_body(r, worksheet_update_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (ws_precondition(r, uuid) < 0) {
		json_decref(body);
		return;
	}
	rc = worksheets_update(uuid, body, &r->who, r->peer, &ws, &f);
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
	char uuid[37];

	if (ws_of(r, uuid) < 0 || ws_precondition(r, uuid) < 0)
		return;
	if (worksheets_delete(uuid, &r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}

/* --- a worksheet's datasets, as the appliance serves them: each view by its place,
 * dataset-000 on. Changes go through worksheets_update(), with its checks and limits. */

static void ws_dataset_href(json_t *view, const char *uuid, size_t i)
{
	char *href = xasprintf(WORKSHEETS_PATH "/%s/datasets/dataset-%03zu", uuid, i);
	json_object_set_new(view, "href", json_string(href));
	json_object_set_new(view, "dataset", json_string(strrchr(href, '/') + 1));
	free(href);
}

/* The worksheet (a new reference) and, when the path names one, the index of its view;
 * -1 with the fault answered. */
static int ws_view_of(struct request *r, char uuid[37], json_t **ws, size_t *index)
{
	struct fault f;
	if (ws_of(r, uuid) < 0)
		return -1;
	if (worksheets_get(uuid, ws, &f) < 0) {
		reply_fault(r, &f);
		return -1;
	}
	const char *name = request_param(r, 1);
	if (!name)
		return 0;
	json_t *views = json_object_get(*ws, "datasets");
	long long i;
	if (strncmp(name, "dataset-", 8) != 0 ||
	    util_parse_ll(name + 8, 0, WORKSHEET_DATASETS_MAX - 1, &i) < 0 ||
	    (size_t)i >= json_array_size(views)) {
		json_decref(*ws);
		reply_error(r, ERR_NOT_FOUND, "dataset: no dataset '%.64s' in worksheet %s", name,
		            uuid);
		return -1;
	}
	*index = (size_t)i;
	return 0;
}

void worksheets_api_datasets_list(struct request *r)
{
	char uuid[37];
	json_t *ws, *view;
	size_t i;

	if (ws_view_of(r, uuid, &ws, NULL) < 0)
		return;
	json_t *views = json_incref(json_object_get(ws, "datasets"));
	json_decref(ws);
	json_array_foreach(views, i, view)
	{
		ws_dataset_href(view, uuid, i);
	}
	reply_json(r, 200, json_pack("{s:o}", "datasets", views));
}

void worksheets_api_dataset_get(struct request *r)
{
	char uuid[37];
	json_t *ws;
	size_t i;

	if (ws_view_of(r, uuid, &ws, &i) < 0)
		return;
	json_t *view = json_incref(json_array_get(json_object_get(ws, "datasets"), i));
	json_decref(ws);
	ws_dataset_href(view, uuid, i);
	reply_json(r, 200, json_pack("{s:o}", "dataset", view));
}

/* Stores views as the worksheet's datasets and answers view i of the result. */
static void ws_views_store(struct request *r, const char *uuid, json_t *views /* stolen */,
                           size_t i, int status)
{
	struct fault f;
	json_t *ws, *body = json_pack("{s:o}", "datasets", views);
	int rc = worksheets_update(uuid, body, &r->who, r->peer, &ws, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *view = json_incref(json_array_get(json_object_get(ws, "datasets"), i));
	json_decref(ws);
	ws_dataset_href(view, uuid, i);
	if (status == 201)
		reply_header(r, "Location", json_string_value(json_object_get(view, "href")));
	reply_json(r, status, json_pack("{s:o}", "dataset", view));
}

/* What a change of the datasets starts from: a copy of the worksheet's views to change,
 * the index the path names (when index is not NULL), and the body checked against fields
 * (when fields is not NULL). -1 with the fault answered. */
static int ws_views_edit(struct request *r, const struct field *fields, char uuid[37],
                         size_t *index, json_t **views, json_t **body)
{
	json_t *ws;
	struct fault f;
	if (ws_view_of(r, uuid, &ws, index) < 0)
		return -1;
	if (fields && request_body(r, fields, body, &f) < 0) {
		json_decref(ws);
		reply_fault(r, &f);
		return -1;
	}
	*views = json_deep_copy(json_object_get(ws, "datasets"));
	json_decref(ws);
	return 0;
}

void worksheets_api_dataset_add(struct request *r)
{
	static const struct field fields[] = {
	    {"name", FIELD_STRING, true, 1, 256},
	    {"drilldowns", FIELD_ARRAY, false, 0, WORKSHEET_DRILLDOWNS_MAX},
	    {"seconds", FIELD_INT, false, 1, WORKSHEET_SECONDS_MAX},
	    {"end", FIELD_STRING_OR_NULL, false, 1, 64},
	    FIELDS_END,
	};
	char uuid[37];
	json_t *views, *body;

	if (ws_views_edit(r, fields, uuid, NULL, &views, &body) < 0)
		return;
	json_array_append_new(views, body);
	ws_views_store(r, uuid, views, json_array_size(views) - 1, 201);
}

void worksheets_api_dataset_update(struct request *r)
{
	static const struct field fields[] = {
	    {"drilldowns", FIELD_ARRAY, false, 0, WORKSHEET_DRILLDOWNS_MAX},
	    {"seconds", FIELD_INT, false, 1, WORKSHEET_SECONDS_MAX},
	    {"end", FIELD_STRING_OR_NULL, false, 1, 64},
	    FIELDS_END,
	};
	char uuid[37];
	json_t *views, *body;
	size_t i;

	if (ws_views_edit(r, fields, uuid, &i, &views, &body) < 0)
		return;
	json_object_update(json_array_get(views, i), body);
	json_decref(body);
	ws_views_store(r, uuid, views, i, 200);
}

void worksheets_api_dataset_delete(struct request *r)
{
	char uuid[37];
	json_t *views, *out;
	struct fault f;
	size_t i;

	if (ws_views_edit(r, NULL, uuid, &i, &views, NULL) < 0)
		return;
	json_array_remove(views, i);
	json_t *body = json_pack("{s:o}", "datasets", views);
	int rc = worksheets_update(uuid, body, &r->who, r->peer, &out, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	json_decref(out);
	reply_empty(r, 204);
}
