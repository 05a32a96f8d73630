/* Worksheets (worksheets): saved sets of dataset views, one row each, the datasets kept
 * as the JSON text the core validated. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "migrate.h"
#include "log.h"
#include "util.h"

#define WORKSHEET_SELECT "SELECT uuid, name, owner, ctime, mtime, datasets FROM worksheets"

static const char sql_worksheet_get[] = WORKSHEET_SELECT " WHERE uuid = ?1";
/* Both orders read the (owner, name) index: no sort. */
static const char sql_worksheet_list[] = WORKSHEET_SELECT " ORDER BY owner, name";
static const char sql_worksheet_list_owner[] =
    WORKSHEET_SELECT " WHERE owner = ?1 ORDER BY owner, name";
static const char sql_worksheet_insert[] =
    "INSERT INTO worksheets (uuid, name, owner, ctime, mtime, datasets)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
/* owner and ctime are set once, at insert. */
static const char sql_worksheet_update[] =
    "UPDATE worksheets SET name = ?2, datasets = ?3, mtime = ?4 WHERE uuid = ?1";
static const char sql_worksheet_delete[] = "DELETE FROM worksheets WHERE uuid = ?1";
static const char sql_worksheet_count[] = "SELECT count(*) FROM worksheets WHERE owner = ?1";

/* One row into w; datasets is allocated (for free()). */
static void db_worksheet_row(sqlite3_stmt *st, struct db_worksheet *w)
{
	const unsigned char *ds = sqlite3_column_text(st, 5);

	memset(w, 0, sizeof(*w));
	db_col_text(st, 0, w->uuid, sizeof(w->uuid));
	db_col_text(st, 1, w->name, sizeof(w->name));
	db_col_text(st, 2, w->owner, sizeof(w->owner));
	w->ctime = sqlite3_column_int64(st, 3);
	w->mtime = sqlite3_column_int64(st, 4);
	w->datasets = xstrdup(ds ? (const char *)ds : "[]");
}

int db_worksheet_get(struct db *db, const char *uuid, struct db_worksheet *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_GET, sql_worksheet_get);
	int rc;

	if (!st || db_bind_text(db, st, 1, uuid, SIZE_MAX) == -1)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		db_worksheet_row(st, out);
	else if (rc != SQLITE_DONE)
		db_log(db, "reading a worksheet");
	db_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? DB_NOTFOUND : -1;
}

int db_worksheet_list(struct db *db, const char *owner,
                      int (*cb)(void *arg, const struct db_worksheet *w), void *arg)
{
	sqlite3_stmt *st;
	struct db_worksheet *all = NULL;
	size_t i, n = 0, cap = 0;
	int rc, ret = 0;

	if (owner) {
		st = db_stmt(db, DB_STMT_WORKSHEET_LIST_OWNER, sql_worksheet_list_owner);
		if (st && db_bind_text(db, st, 1, owner, SIZE_MAX) == -1)
			return -1;
	} else {
		st = db_stmt(db, DB_STMT_WORKSHEET_LIST, sql_worksheet_list);
	}
	if (!st)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		all = util_grow(all, &cap, n, sizeof(*all));
		db_worksheet_row(st, &all[n++]);
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading worksheets");
		ret = -1;
	}
	db_reset(st);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	for (i = 0; i < n; i++)
		free(all[i].datasets);
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
	    db_bind_text(db, st, 6, w->datasets ? w->datasets : "[]", SIZE_MAX) == -1)
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
	    db_bind_int64(db, st, 4, db_time_or_now(w->mtime)) == -1)
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

int db_worksheet_count(struct db *db, const char *owner)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_WORKSHEET_COUNT, sql_worksheet_count);
	int64_t n;

	if (!st || db_bind_text(db, st, 1, owner, SIZE_MAX) == -1 ||
	    db_query_int64(db, st, "counting worksheets", &n) != 0)
		return -1;
	return (int)n;
}
