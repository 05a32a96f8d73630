/* SPDX-License-Identifier: ISC */
/* Worksheets: the rules over db/. Everything runs on the loop thread, so everything is
 * bounded: a worksheet is at most ~1 MB of JSON (64 views of 64 drilldowns), read whole
 * only by its own GET; a listing is a page of summaries read from one index, and an
 * owner's total from the same index.
 *
 * Refusals: ERR_INVALID_ARG for values breaking a rule (details start with the field,
 * "datasets[2].seconds: ..."), ERR_UNKNOWN_ARG for keys we do not know, ERR_OBJECT_EXISTS
 * for a name the owner already uses, ERR_DENIED for another user's worksheet, ERR_OVER_LIMIT
 * past WORKSHEETS_PER_OWNER or WORKSHEET_BYTES_PER_OWNER. */
#include "worksheets.h"
#include "access/audit.h"
#include "datasets.h"
#include "base/log.h"
#include "base/suggest.h"
#include "base/util.h"
#include "db/db.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES         DB_WORKSHEET_NAME_MAX
#define DRILLDOWN_MAX_BYTES    128
#define DATASET_NAME_MAX_BYTES 128

static struct db *ws_db;

void worksheets_init(struct db *db)
{
	ws_db = db;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static bool blank(const char *s)
{
	for (; *s; s++)
		if (*s != ' ')
			return false;
	return true;
}

/* How many bytes of s, at most max, end on a UTF-8 character boundary: a fault's details
 * must stay valid UTF-8 when they quote the caller's text. */
static int utf8_cut(const char *s, size_t max)
{
	size_t n = strnlen(s, max + 1);
	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)
			n--;
	}
	return (int)n;
}

/* ---- values */

static int ws_name(const json_t *v, const char **out, struct fault *f)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (!s || n == 0 || n > NAME_MAX_BYTES || strlen(s) != n || !text_ok(s) || blank(s))
		return fault_set(f, ERR_INVALID_ARG,
		                 "name: 1 to %d bytes of text, not blank, no control characters",
		                 NAME_MAX_BYTES);
	*out = s;
	return 0;
}

/* drilldowns of dataset i: distinct strings; a new reference in *out. */
static int ws_drilldowns(const json_t *v, size_t i, json_t **out, struct fault *f)
{
	size_t j, k;
	const json_t *d;

	if (!json_is_array(v) || json_array_size(v) > WORKSHEET_DRILLDOWNS_MAX)
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets[%zu].drilldowns: must be an array of at most %d strings",
		                 i, WORKSHEET_DRILLDOWNS_MAX);
	json_array_foreach(v, j, d)
	{
		const char *s = json_string_value(d);
		size_t n = json_string_length(d);
		if (!s || n == 0 || n > DRILLDOWN_MAX_BYTES || strlen(s) != n || !text_ok(s))
			return fault_set(f, ERR_INVALID_ARG,
			                 "datasets[%zu].drilldowns[%zu]: must be 1 to %d bytes of "
			                 "text without control characters",
			                 i, j, DRILLDOWN_MAX_BYTES);
		for (k = 0; k < j; k++) {
			if (strcmp(json_string_value(json_array_get(v, k)), s) == 0)
				return fault_set(
				    f, ERR_INVALID_ARG,
				    "datasets[%zu].drilldowns[%zu]: '%s' is named twice", i, j, s);
		}
	}
	*out = json_deep_copy(v);
	return 0;
}

static bool ws_known(const char *key, const char *const *known)
{
	for (; *known; known++)
		if (strcmp(key, *known) == 0)
			return true;
	return false;
}

/* One dataset view, checked and normalised to {name, drilldowns, seconds} and, for a
 * window saved paused, its end (ISO 8601 UTC; null or absent: live). */
static int ws_dataset(const json_t *d, size_t i, json_t **out, struct fault *f)
{
	const char *key, *name;
	const json_t *v;
	json_t *drill = NULL;
	json_int_t seconds = WORKSHEET_SECONDS_DEFAULT;
	int64_t end = 0;
	struct dataset *ds;
	struct dataset_info info;

	if (!json_is_object(d))
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets[%zu]: must be an object {name, drilldowns, seconds}", i);
	json_object_foreach((json_t *)d, key, v)
	{
		static const char *const known[] = {"name", "drilldowns", "seconds", "end", NULL};
		if (!ws_known(key, known)) {
			const char *near = suggest_from(key, known);
			return fault_set(f, ERR_UNKNOWN_ARG,
			                 "datasets[%zu].%.*s: unknown property%s%s%s", i,
			                 utf8_cut(key, 100), key, near ? "; did you mean " : "",
			                 near ? near : "", near ? "?" : "");
		}
	}
	v = json_object_get(d, "name");
	if (!v)
		return fault_set(f, ERR_MISSING_ARG, "datasets[%zu].name: required", i);
	name = json_string_value(v);
	if (!name || json_string_length(v) == 0 || json_string_length(v) > DATASET_NAME_MAX_BYTES ||
	    strlen(name) != json_string_length(v))
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets[%zu].name: must be a dataset name such as io.ops[disk]",
		                 i);
	ds = datasets_find(name);
	if (!ds)
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets[%zu].name: no dataset '%s' (see "
		                 "GET /api/analytics/v1/datasets)",
		                 i, name);
	/* The catalog's spelling: it also finds '|' for '/', as in a URL. */
	datasets_info(ds, &info);
	name = info.name;
	v = json_object_get(d, "seconds");
	if (v) {
		seconds = json_is_integer(v) ? json_integer_value(v) : -1;
		if (seconds < 1 || seconds > WORKSHEET_SECONDS_MAX)
			return fault_set(f, ERR_INVALID_ARG,
			                 "datasets[%zu].seconds: must be an integer from 1 to %d",
			                 i, WORKSHEET_SECONDS_MAX);
	}
	v = json_object_get(d, "end");
	if (v && !json_is_null(v) &&
	    (!json_is_string(v) || util_parse_iso8601(json_string_value(v), &end) < 0 || end <= 0))
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets[%zu].end: must be a time in ISO 8601 UTC "
		                 "(2026-12-06T10:00:00Z), or null for live",
		                 i);
	v = json_object_get(d, "drilldowns");
	if (v) {
		if (ws_drilldowns(v, i, &drill, f) < 0)
			return -1;
	} else {
		drill = json_array();
	}
	*out = json_pack("{s:s, s:o, s:I}", "name", name, "drilldowns", drill, "seconds", seconds);
	if (end > 0) {
		char iso[32];
		json_object_set_new(*out, "end", json_string(util_iso8601(end, iso, sizeof(iso))));
	}
	return 0;
}

/* datasets, checked, as compact JSON text for the store (for free()), and how many. */
static int ws_datasets(const json_t *v, char **out, int64_t *count, struct fault *f)
{
	size_t i;
	const json_t *d;
	json_t *norm;

	if (!json_is_array(v) || json_array_size(v) > WORKSHEET_DATASETS_MAX)
		return fault_set(f, ERR_INVALID_ARG,
		                 "datasets: must be an array of at most %d items",
		                 WORKSHEET_DATASETS_MAX);
	norm = json_array();
	json_array_foreach(v, i, d)
	{
		json_t *one = NULL;
		if (ws_dataset(d, i, &one, f) < 0) {
			json_decref(norm);
			return -1;
		}
		json_array_append_new(norm, one);
	}
	*out = json_dumps(norm, JSON_COMPACT);
	*count = (int64_t)json_array_size(norm);
	json_decref(norm);
	if (!*out)
		return fault_set(f, ERR_INTERNAL, "datasets: cannot encode");
	return 0;
}

/* Keys the HTTP layer let through are checked again here: a wrong type would be a crash. */
static int ws_known_keys(const json_t *body, struct fault *f)
{
	const char *key;
	const json_t *v;

	if (!json_is_object(body))
		return fault_set(f, ERR_INVALID_ARG, "body: must be a JSON object");
	json_object_foreach((json_t *)body, key, v)
	{
		static const char *const known[] = {"name", "datasets", NULL};
		if (!ws_known(key, known)) {
			const char *near = suggest_from(key, known);
			return fault_set(f, ERR_UNKNOWN_ARG, "%.*s: unknown property%s%s%s",
			                 utf8_cut(key, 200), key, near ? "; did you mean " : "",
			                 near ? near : "", near ? "?" : "");
		}
	}
	return 0;
}

/* ---- objects */

static json_t *ws_json(const struct db_worksheet *w)
{
	char ctime[32], mtime[32];
	json_error_t err;
	json_t *ds = json_loads(w->datasets ? w->datasets : "[]", 0, &err);

	if (!json_is_array(ds)) {
		/* Only this file writes the column; a bad value is damage, not input. */
		log_warn("worksheet %s: stored datasets unreadable (%s); shown empty", w->uuid,
		         err.text);
		json_decref(ds);
		ds = json_array();
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o}", "uuid", w->uuid, "name", w->name,
	                 "owner", w->owner, "ctime", util_iso8601(w->ctime, ctime, sizeof(ctime)),
	                 "mtime", util_iso8601(w->mtime, mtime, sizeof(mtime)), "datasets", ds);
}

/* A listing's view of a worksheet: what the store keeps beside the datasets. */
static json_t *ws_summary_json(const struct db_worksheet *w)
{
	char ctime[32], mtime[32];

	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "uuid", w->uuid, "name", w->name,
	                 "owner", w->owner, "ctime", util_iso8601(w->ctime, ctime, sizeof(ctime)),
	                 "mtime", util_iso8601(w->mtime, mtime, sizeof(mtime)), "dataset_count",
	                 (json_int_t)w->dataset_count);
}

/* The bytes a worksheet takes against WORKSHEET_BYTES_PER_OWNER. */
static int64_t ws_bytes(const struct db_worksheet *w)
{
	return (int64_t)(strlen(w->name) + strlen(w->datasets ? w->datasets : "[]"));
}

/* Refuses a change that would take owner's worksheets past WORKSHEET_BYTES_PER_OWNER
 * (or past WORKSHEETS_PER_OWNER when adding one). old_bytes: what the changed worksheet
 * takes now (0: a new one). What does not grow is allowed, even for an owner over the cap
 * (worksheets stored before it existed). */
static int ws_within_limits(const char *owner, int64_t old_bytes, int64_t new_bytes, bool adding,
                            const char *field, struct fault *f)
{
	int64_t count, bytes;

	if (db_worksheet_usage(ws_db, owner, &count, &bytes) != 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (adding && count >= WORKSHEETS_PER_OWNER)
		return fault_set(f, ERR_OVER_LIMIT,
		                 "name: %s has %d worksheets, the most one may own", owner,
		                 WORKSHEETS_PER_OWNER);
	if (new_bytes > old_bytes && bytes - old_bytes + new_bytes > WORKSHEET_BYTES_PER_OWNER)
		return fault_set(
		    f, ERR_OVER_LIMIT,
		    "%s: %s's worksheets would take %lld bytes, over the cap of %d bytes "
		    "per owner (%lld now; this worksheet %lld)",
		    field, owner, (long long)(bytes - old_bytes + new_bytes),
		    WORKSHEET_BYTES_PER_OWNER, (long long)bytes, (long long)new_bytes);
	return 0;
}

static int ws_uuid(char out[37], struct fault *f)
{
	unsigned char b[16];
	char hex[33];

	if (util_random(b, sizeof(b)) < 0)
		return fault_set(f, ERR_INTERNAL, "uuid: no random bytes");
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	util_hex(b, sizeof(b), hex);
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
	return 0;
}

/* RFC 4122: hex digits are case-insensitive on input; we store and answer lower case. */
static bool ws_uuid_norm(const char *in, char out[37])
{
	size_t i;
	for (i = 0; i < 36 && in[i]; i++) {
		char c = in[i];
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? c != '-' : !isxdigit((unsigned char)c))
			return false;
		out[i] = (char)tolower((unsigned char)c);
	}
	out[i] = '\0';
	return i == 36 && in[i] == '\0';
}

static int ws_load(const char *param, struct db_worksheet *w, struct fault *f)
{
	char uuid[37];
	/* Not echoed: a path segment may hold any bytes, a fault only UTF-8. */
	if (!ws_uuid_norm(param, uuid))
		return fault_set(f, ERR_NOT_FOUND, "uuid: not a worksheet uuid");
	int rc = db_worksheet_get(ws_db, uuid, w);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "uuid: no worksheet %s", uuid);
	if (rc != 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	return 0;
}

/* The owner, or someone who may manage every account, may change a worksheet. */
static int ws_may_change(const struct db_worksheet *w, const struct identity *actor,
                         const char *peer, const char *action, struct fault *f)
{
	if (strcmp(w->owner, actor->user) == 0 || (actor->perms & PERM_USER_MODIFY))
		return 0;
	fault_set(f, ERR_DENIED, "owner: worksheet %s belongs to %s", w->uuid, w->owner);
	audit_log(actor->user, peer, action, w->uuid, false, "%s", f->details);
	return -1;
}

/* ---- the API of this module */

static int ws_list_cb(void *arg, const struct db_worksheet *w)
{
	json_array_append_new(arg, ws_summary_json(w));
	return 0;
}

int worksheets_list(const char *owner, int64_t start, int limit, json_t **out, bool *more,
                    struct fault *f)
{
	json_t *arr = json_array();

	*out = NULL;
	*more = false;
	if (start < 0 || limit < 1 || limit > WORKSHEETS_LIST_MAX) {
		json_decref(arr);
		return fault_set(f, ERR_INVALID_ARG, "%s: out of range",
		                 start < 0 ? "start" : "limit");
	}
	/* One more than asked tells whether another page follows. */
	if (db_worksheet_list(ws_db, owner, start, limit + 1, ws_list_cb, arr) != 0) {
		json_decref(arr);
		return fault_set(f, ERR_INTERNAL, "database error");
	}
	if (json_array_size(arr) > (size_t)limit) {
		json_array_remove(arr, (size_t)limit);
		*more = true;
	}
	*out = arr;
	return 0;
}

struct ws_by_name {
	const char *name;
	char *uuid; /* 37 bytes; set when found */
	bool found;
};

static int ws_name_cb(void *arg, const struct db_worksheet *w)
{
	struct ws_by_name *q = arg;
	if (strcmp(w->name, q->name) != 0)
		return 0;
	snprintf(q->uuid, 37, "%s", w->uuid);
	q->found = true;
	return 1; /* found: stop */
}

int worksheets_resolve(const char *param, const char *user, char uuid[37], struct fault *f)
{
	if (strncmp(param, "name=", 5) != 0) {
		snprintf(uuid, 37, "%.36s", param);
		return strlen(param) > 36
		           ? fault_set(f, ERR_NOT_FOUND, "uuid: not a worksheet uuid")
		           : 0;
	}
	/* Names are unique per owner: the caller's own first, then anyone's (the first by
	 * owner), as the appliance's names are unique on the box. */
	struct ws_by_name q = {param + 5, uuid, false};
	if (db_worksheet_list(ws_db, user, 0, WORKSHEETS_PER_OWNER, ws_name_cb, &q) < 0 ||
	    (!q.found && db_worksheet_list(ws_db, NULL, 0, INT32_MAX, ws_name_cb, &q) < 0))
		return fault_set(f, ERR_INTERNAL, "database error");
	if (!q.found)
		return fault_set(f, ERR_NOT_FOUND, "name: no worksheet named '%.*s'",
		                 utf8_cut(param + 5, 100), param + 5);
	return 0;
}

int worksheets_get(const char *uuid, json_t **out, struct fault *f)
{
	struct db_worksheet w;

	*out = NULL;
	if (ws_load(uuid, &w, f) < 0)
		return -1;
	*out = ws_json(&w);
	free(w.datasets);
	return 0;
}

int worksheets_create(const json_t *body, const struct identity *actor, const char *peer,
                      json_t **out, struct fault *f)
{
	struct db_worksheet w;
	const char *name;
	const json_t *ds = json_object_get(body, "datasets");
	int rc;

	*out = NULL;
	if (ws_known_keys(body, f) < 0)
		return -1;
	if (!json_object_get(body, "name"))
		return fault_set(f, ERR_MISSING_ARG, "name: required");
	if (ws_name(json_object_get(body, "name"), &name, f) < 0)
		return -1;
	memset(&w, 0, sizeof(w));
	if (ds && ws_datasets(ds, &w.datasets, &w.dataset_count, f) < 0)
		return -1;
	snprintf(w.name, sizeof(w.name), "%s", name);
	snprintf(w.owner, sizeof(w.owner), "%s", actor->user);
	w.bytes = ws_bytes(&w);
	if (ws_within_limits(w.owner, 0, w.bytes, true, ds ? "datasets" : "name", f) < 0 ||
	    ws_uuid(w.uuid, f) < 0) {
		free(w.datasets);
		return -1;
	}
	w.ctime = w.mtime = util_now();
	rc = db_worksheet_insert(ws_db, &w);
	if (rc == DB_EXISTS) {
		free(w.datasets);
		return fault_set(f, ERR_OBJECT_EXISTS, "name: %s already has a worksheet '%s'",
		                 actor->user, name);
	}
	if (rc != 0) {
		free(w.datasets);
		return fault_store(f, db_full(ws_db), "worksheet");
	}
	audit_log(actor->user, peer, "worksheet.create", w.uuid, true, "name: %s", w.name);
	*out = ws_json(&w);
	free(w.datasets);
	return 0;
}

int worksheets_update(const char *uuid, const json_t *body, const struct identity *actor,
                      const char *peer, json_t **out, struct fault *f)
{
	struct db_worksheet w;
	const json_t *v;
	char *datasets = NULL;
	int64_t old_bytes;
	int rc;

	*out = NULL;
	if (ws_known_keys(body, f) < 0 || ws_load(uuid, &w, f) < 0)
		return -1;
	old_bytes = w.bytes;
	if (ws_may_change(&w, actor, peer, "worksheet.update", f) < 0)
		goto fail;
	v = json_object_get(body, "name");
	if (v) {
		const char *name;
		if (ws_name(v, &name, f) < 0)
			goto fail;
		snprintf(w.name, sizeof(w.name), "%s", name);
	}
	v = json_object_get(body, "datasets");
	if (v) {
		if (ws_datasets(v, &datasets, &w.dataset_count, f) < 0)
			goto fail;
		free(w.datasets);
		w.datasets = datasets;
	}
	w.bytes = ws_bytes(&w);
	if (ws_within_limits(w.owner, old_bytes, w.bytes, false, v ? "datasets" : "name", f) < 0)
		goto fail;
	w.mtime = util_now();
	rc = db_worksheet_update(ws_db, &w);
	if (rc == DB_EXISTS) {
		fault_set(f, ERR_OBJECT_EXISTS, "name: %s already has a worksheet '%s'", w.owner,
		          w.name);
		goto fail;
	}
	if (rc == DB_NOTFOUND) {
		fault_set(f, ERR_NOT_FOUND, "uuid: no worksheet %s", w.uuid);
		goto fail;
	}
	if (rc != 0) {
		fault_store(f, db_full(ws_db), "worksheet");
		goto fail;
	}
	audit_log(actor->user, peer, "worksheet.update", w.uuid, true, "name: %s", w.name);
	*out = ws_json(&w);
	free(w.datasets);
	return 0;
fail:
	free(w.datasets);
	return -1;
}

int worksheets_delete(const char *uuid, const struct identity *actor, const char *peer,
                      struct fault *f)
{
	struct db_worksheet w;
	int rc;

	if (ws_load(uuid, &w, f) < 0)
		return -1;
	free(w.datasets);
	if (ws_may_change(&w, actor, peer, "worksheet.delete", f) < 0)
		return -1;
	rc = db_worksheet_delete(ws_db, w.uuid);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "uuid: no worksheet %s", w.uuid);
	if (rc != 0)
		return fault_store(f, db_full(ws_db), "worksheet");
	audit_log(actor->user, peer, "worksheet.delete", w.uuid, true, "name: %s", w.name);
	return 0;
}
