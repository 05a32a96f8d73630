/* SPDX-License-Identifier: ISC */
/* The audit trail (audit): append and read by time. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"

static const char sql_audit_insert[] =
    "INSERT INTO audit (time, user, address, action, target, details, ok)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
/* audit_time orders by (time, rowid), so this reads the index without sorting. */
static const char sql_audit_list[] =
    "SELECT id, time, user, address, action, target, details, ok FROM audit"
    " WHERE time >= ?1 ORDER BY time, id LIMIT ?2";

static const char sql_audit_prune[] =
    "DELETE FROM audit WHERE id IN"
    " (SELECT id FROM audit WHERE time < ?1 ORDER BY time, id LIMIT 5000)";

int db_audit_prune(struct db *db, int64_t before)
{
	int total = 0, n;

	do {
		sqlite3_stmt *st = db_stmt(db, DB_STMT_AUDIT_PRUNE, sql_audit_prune);
		if (!st || db_bind_int64(db, st, 1, before) == -1 ||
		    db_write(db, st, "pruning the audit log") != 0)
			return -1;
		n = sqlite3_changes(db->conn);
		total += n;
	} while (n == 5000);
	return total;
}

int db_audit_insert(struct db *db, const struct db_audit *a)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_AUDIT_INSERT, sql_audit_insert);

	if (!st || db_bind_int64(db, st, 1, db_time_or_now(a->time)) == -1 ||
	    db_bind_text(db, st, 2, a->user, sizeof(a->user)) == -1 ||
	    db_bind_text(db, st, 3, a->address, sizeof(a->address)) == -1 ||
	    db_bind_text(db, st, 4, a->action, sizeof(a->action)) == -1 ||
	    db_bind_text(db, st, 5, a->target, sizeof(a->target)) == -1 ||
	    db_bind_text(db, st, 6, a->details, sizeof(a->details)) == -1 ||
	    db_bind_int64(db, st, 7, a->ok ? 1 : 0) == -1 ||
	    db_write(db, st, "inserting an audit entry") != 0)
		return -1;
	return 0;
}

int db_audit_insert_many(struct db *db, const struct db_audit *a, size_t n)
{
	int rc = db_begin(db);
	for (size_t i = 0; rc == 0 && i < n; i++)
		rc = db_audit_insert(db, &a[i]);
	return db_end(db, rc);
}

static void db_audit_list_row(sqlite3_stmt *st, void *row)
{
	struct db_audit *a = row;
	a->id = sqlite3_column_int64(st, 0);
	a->time = sqlite3_column_int64(st, 1);
	db_col_text(st, 2, a->user, sizeof(a->user));
	db_col_text(st, 3, a->address, sizeof(a->address));
	db_col_text(st, 4, a->action, sizeof(a->action));
	db_col_text(st, 5, a->target, sizeof(a->target));
	db_col_text(st, 6, a->details, sizeof(a->details));
	a->ok = sqlite3_column_int(st, 7) != 0;
}

int db_audit_list(struct db *db, int64_t start, int limit,
                  int (*cb)(void *arg, const struct db_audit *a), void *arg)
{
	sqlite3_stmt *st;
	struct db_audit *all = NULL;
	size_t i, n = 0;
	int ret;

	/* LIMIT -1 would mean no limit in SQL; here it means nothing. */
	if (limit <= 0)
		return 0;
	st = db_stmt(db, DB_STMT_AUDIT_LIST, sql_audit_list);
	if (!st || db_bind_int64(db, st, 1, start) == -1 || db_bind_int64(db, st, 2, limit) == -1)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	ret = db_read_rows(db, st, sizeof(*all), db_audit_list_row, "reading the audit trail",
	                   (void **)&all, &n);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}
