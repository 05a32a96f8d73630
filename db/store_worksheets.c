/* SPDX-License-Identifier: ISC */
/* Worksheets (worksheets): saved sets of dataset views, one row each, the datasets kept
 * as the JSON text the core validated, their count and the row's bytes beside them so a
 * listing or an owner's total never reads that text. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

/* What a listing shows, in the order of the worksheets_summary index (migrate.c step 6). */
#define WORKSHEET_SUMMARY "uuid, name, owner, ctime, mtime, dataset_count, bytes"

static const char sql_worksheet_get[] =
    "SELECT " WORKSHEET_SUMMARY ", datasets FROM worksheets WHERE uuid = ?1";
/* Both read the summary index alone, in its order: no sort, no datasets text. */
static const char sql_worksheet_list[] =
    "SELECT " WORKSHEET_SUMMARY " FROM worksheets ORDER BY owner, name LIMIT ?1 OFFSET ?2";
static const char sql_worksheet_list_owner[] =
    "SELECT " WORKSHEET_SUMMARY " FROM worksheets WHERE owner = ?1"
    " ORDER BY owner, name LIMIT ?2 OFFSET ?3";
static const char sql_worksheet_insert[] =
    "INSERT INTO worksheets (uuid, name, owner, ctime, mtime, datasets, dataset_count, bytes)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
/* owner and ctime are set once, at insert. */
static const char sql_worksheet_update[] =
    "UPDATE worksheets SET name = ?2, datasets = ?3, mtime = ?4, dataset_count = ?5,"
    " bytes = ?6 WHERE uuid = ?1";
static const char sql_worksheet_delete[] = "DELETE FROM worksheets WHERE uuid = ?1";
static const char sql_worksheet_usage[] =
    "SELECT count(*), coalesce(sum(bytes), 0) FROM worksheets WHERE owner = ?1";

/* The summary columns of one row into w (datasets NULL). */
static void db_worksheet_summary_row(sqlite3_stmt *st, void *row)
{
	struct db_worksheet *w = row;

	memset(w, 0, sizeof(*w));
	db_col_text(st, 0, w->uuid, sizeof(w->uuid));
	db_col_text(st, 1, w->name, sizeof(w->name));
	db_col_text(st, 2, w->owner, sizeof(w->owner));
	w->ctime = sqlite3_column_int64(st, 3);
	w->mtime = sqlite3_column_int64(st, 4);
	w->dataset_count = sqlite3_column_int64(st, 5);
	w->bytes = sqlite3_column_int64(st, 6);
}

int db_worksheet_get(struct db *db, const char *uuid, struct db_worksheet *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_GET, sql_worksheet_get);
	int rc;

	if (!st || db_bind_text(db, st, 1, uuid, SIZE_MAX) == -1)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		const unsigned char *ds = sqlite3_column_text(st, 7);
		db_worksheet_summary_row(st, out);
		out->datasets = xstrdup(ds ? (const char *)ds : "[]");
	} else if (rc != SQLITE_DONE) {
		db_log(db, "reading a worksheet");
	}
	db_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? DB_NOTFOUND : -1;
}

int db_worksheet_list(struct db *db, const char *owner, int64_t offset, int limit,
                      int (*cb)(void *arg, const struct db_worksheet *w), void *arg)
{
	sqlite3_stmt *st;
	struct db_worksheet *all = NULL;
	size_t i, n = 0;
	int at = 1, ret;

	if (limit <= 0)
		return 0;
	if (owner) {
		st = db_stmt(db, DB_STMT_WORKSHEET_LIST_OWNER, sql_worksheet_list_owner);
		if (st && db_bind_text(db, st, at++, owner, SIZE_MAX) == -1)
			return -1;
	} else {
		st = db_stmt(db, DB_STMT_WORKSHEET_LIST, sql_worksheet_list);
	}
	if (!st || db_bind_int64(db, st, at, limit) == -1 ||
	    db_bind_int64(db, st, at + 1, offset) == -1)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	ret = db_read_rows(db, st, sizeof(*all), db_worksheet_summary_row, "reading worksheets",
	                   (void **)&all, &n);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}

int db_worksheet_insert(struct db *db, const struct db_worksheet *w)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_INSERT, sql_worksheet_insert);
	int rc;

	if (!st || db_bind_text(db, st, 1, w->uuid, sizeof(w->uuid)) == -1 ||
	    db_bind_text(db, st, 2, w->name, sizeof(w->name)) == -1 ||
	    db_bind_text(db, st, 3, w->owner, sizeof(w->owner)) == -1 ||
	    db_bind_int64(db, st, 4, db_time_or_now(w->ctime)) == -1 ||
	    db_bind_int64(db, st, 5, db_time_or_now(w->mtime)) == -1 ||
	    db_bind_text(db, st, 6, w->datasets ? w->datasets : "[]", SIZE_MAX) == -1 ||
	    db_bind_int64(db, st, 7, w->dataset_count) == -1 ||
	    db_bind_int64(db, st, 8, w->bytes) == -1)
		return -1;
	rc = db_write(db, st, "inserting a worksheet");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	return rc == 0 ? 0 : -1;
}

int db_worksheet_update(struct db *db, const struct db_worksheet *w)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_UPDATE, sql_worksheet_update);
	int rc;

	if (!st || db_bind_text(db, st, 1, w->uuid, sizeof(w->uuid)) == -1 ||
	    db_bind_text(db, st, 2, w->name, sizeof(w->name)) == -1 ||
	    db_bind_text(db, st, 3, w->datasets ? w->datasets : "[]", SIZE_MAX) == -1 ||
	    db_bind_int64(db, st, 4, db_time_or_now(w->mtime)) == -1 ||
	    db_bind_int64(db, st, 5, w->dataset_count) == -1 ||
	    db_bind_int64(db, st, 6, w->bytes) == -1)
		return -1;
	rc = db_write(db, st, "updating a worksheet");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

int db_worksheet_delete(struct db *db, const char *uuid)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_DELETE, sql_worksheet_delete);

	if (!st || db_bind_text(db, st, 1, uuid, SIZE_MAX) == -1 ||
	    db_write(db, st, "deleting a worksheet") != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

int db_worksheet_usage(struct db *db, const char *owner, int64_t *count, int64_t *bytes)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_USAGE, sql_worksheet_usage);
	int rc;

	if (!st || db_bind_text(db, st, 1, owner, SIZE_MAX) == -1)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*count = sqlite3_column_int64(st, 0);
		*bytes = sqlite3_column_int64(st, 1);
	} else {
		db_log(db, "measuring worksheets");
	}
	db_reset(st);
	return rc == SQLITE_ROW ? 0 : -1;
}
