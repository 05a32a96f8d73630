/* SPDX-License-Identifier: ISC */
/* Sweeps (bench_sweeps): the base spec and the axes of each; its runs are rows of
 * bench_runs with the sweep's id, read here as its table needs them. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

static const char sql_sweep_insert[] =
    "INSERT INTO bench_sweeps (name, label, owner, ctime, spec, axes, cancelled)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
static const char sql_sweep_get[] =
    "SELECT id, name, label, owner, ctime, spec, axes, cancelled FROM bench_sweeps"
    " WHERE id = ?1";
static const char sql_sweep_list[] =
    "SELECT id, name, label, owner, ctime, spec, axes, cancelled FROM bench_sweeps"
    " WHERE ?1 = 0 OR id < ?1 ORDER BY id DESC LIMIT ?2";
static const char sql_sweep_cancel[] = "UPDATE bench_sweeps SET cancelled = 1 WHERE id = ?1";
static const char sql_sweep_delete[] = "DELETE FROM bench_sweeps WHERE id = ?1";
/* (the runs' interval lines go with them: ON DELETE CASCADE) */
static const char sql_sweep_delete_runs[] = "DELETE FROM bench_runs WHERE sweep = ?1";
/* The figures come out of the result only when asked for (?2): a listing needs states. */
static const char sql_sweep_runs[] =
    "SELECT id, state, reason,"
    " CASE WHEN ?2 THEN json_extract(result, '$.summary.iops') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.read.iops') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.write.iops') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.read.ops') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.write.ops') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.read.latency_ns.p99') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.write.latency_ns.p99') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.read.bytes_per_s') END,"
    " CASE WHEN ?2 THEN json_extract(result, '$.write.bytes_per_s') END"
    " FROM bench_runs WHERE sweep = ?1 ORDER BY id";

void db_sweep_clear(struct db_sweep *s)
{
	free(s->spec);
	free(s->axes);
	s->spec = s->axes = NULL;
}

static char *db_sweep_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return xstrdup(t ? (const char *)t : "{}");
}

static void db_sweep_row(sqlite3_stmt *st, void *row)
{
	struct db_sweep *s = row;
	memset(s, 0, sizeof(*s));
	s->id = sqlite3_column_int64(st, 0);
	db_col_text(st, 1, s->name, sizeof(s->name));
	db_col_text(st, 2, s->label, sizeof(s->label));
	db_col_text(st, 3, s->owner, sizeof(s->owner));
	s->ctime = sqlite3_column_int64(st, 4);
	s->spec = db_sweep_text(st, 5);
	s->axes = db_sweep_text(st, 6);
	s->cancelled = sqlite3_column_int(st, 7) != 0;
}

int db_sweep_insert(struct db *db, struct db_sweep *s)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_INSERT, sql_sweep_insert);

	if (!st || db_bind_text(db, st, 1, s->name, sizeof(s->name)) == -1 ||
	    db_bind_text(db, st, 2, s->label, sizeof(s->label)) == -1 ||
	    db_bind_text(db, st, 3, s->owner, sizeof(s->owner)) == -1 ||
	    db_bind_int64(db, st, 4, db_time_or_now(s->ctime)) == -1 ||
	    db_bind_text(db, st, 5, s->spec ? s->spec : "{}", SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 6, s->axes ? s->axes : "{}", SIZE_MAX) == -1 ||
	    db_bind_int64(db, st, 7, s->cancelled) == -1)
		return -1;
	if (db_write(db, st, "inserting a sweep") != 0)
		return -1;
	s->id = sqlite3_last_insert_rowid(db->conn);
	return 0;
}

int db_sweep_insert_runs(struct db *db, struct db_sweep *s, struct db_run *const *runs, size_t n)
{
	if (db_begin(db) < 0)
		return -1;
	int rc = db_sweep_insert(db, s);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		runs[i]->sweep = s->id;
		rc = db_run_insert(db, runs[i]);
	}
	rc = db_end(db, rc);
	if (rc != 0) {
		s->id = 0;
		for (size_t i = 0; i < n; i++)
			runs[i]->id = runs[i]->sweep = 0;
	}
	return rc;
}

int db_sweep_get(struct db *db, int64_t id, struct db_sweep *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_GET, sql_sweep_get);
	int rc;

	if (!st || db_bind_int64(db, st, 1, id) == -1)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		db_sweep_row(st, out);
	else if (rc != SQLITE_DONE)
		db_log(db, "reading a sweep");
	db_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? DB_NOTFOUND : -1;
}

int db_sweep_list(struct db *db, int64_t before, int limit,
                  int (*cb)(void *arg, const struct db_sweep *s), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_LIST, sql_sweep_list);
	void *rows = NULL;
	size_t n = 0;
	int ret;

	if (!st || db_bind_int64(db, st, 1, before) == -1 || db_bind_int64(db, st, 2, limit) == -1)
		return -1;
	ret = db_read_rows(db, st, sizeof(struct db_sweep), db_sweep_row, "reading sweeps", &rows,
	                   &n);
	struct db_sweep *all = rows;
	for (size_t i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	for (size_t i = 0; i < n; i++)
		db_sweep_clear(&all[i]);
	free(all);
	return ret;
}

int db_sweep_set_cancelled(struct db *db, int64_t id)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_CANCEL, sql_sweep_cancel);

	if (!st || db_bind_int64(db, st, 1, id) == -1 ||
	    db_write(db, st, "cancelling a sweep") != 0)
		return -1;
	return sqlite3_changes(db->conn) ? 0 : DB_NOTFOUND;
}

static int db_sweep_delete_tx(struct db *db, int64_t id)
{
	sqlite3_stmt *runs = db_stmt(db, DB_STMT_SWEEP_DELETE_RUNS, sql_sweep_delete_runs);
	if (!runs || db_bind_int64(db, runs, 1, id) == -1 ||
	    db_write(db, runs, "deleting the runs of a sweep") != 0)
		return -1;
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_DELETE, sql_sweep_delete);
	if (!st || db_bind_int64(db, st, 1, id) == -1 || db_write(db, st, "deleting a sweep") != 0)
		return -1;
	return sqlite3_changes(db->conn) ? 0 : DB_NOTFOUND;
}

int db_sweep_delete(struct db *db, int64_t id)
{
	if (db_begin(db) == -1)
		return -1;
	int rc = db_sweep_delete_tx(db, id);
	if (rc == DB_NOTFOUND) { /* nothing was deleted: roll back all the same */
		db_end(db, -1);
		return DB_NOTFOUND;
	}
	return db_end(db, rc);
}

static void db_sweep_run_row(sqlite3_stmt *st, void *row)
{
	struct db_sweep_run *r = row;
	r->id = sqlite3_column_int64(st, 0);
	db_col_text(st, 1, r->state, sizeof(r->state));
	db_col_text(st, 2, r->reason, sizeof(r->reason));
	for (int i = 0; i < DB_SWEEP_NFIGS; i++)
		r->fig[i] = sqlite3_column_type(st, 3 + i) == SQLITE_NULL
		                ? NAN
		                : sqlite3_column_double(st, 3 + i);
}

int db_sweep_runs(struct db *db, int64_t sweep, bool figures,
                  int (*cb)(void *arg, const struct db_sweep_run *r), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SWEEP_RUNS, sql_sweep_runs);
	void *rows = NULL;
	size_t n = 0;
	int ret;

	if (!st || db_bind_int64(db, st, 1, sweep) == -1 || db_bind_int64(db, st, 2, figures) == -1)
		return -1;
	ret = db_read_rows(db, st, sizeof(struct db_sweep_run), db_sweep_run_row,
	                   "reading the runs of a sweep", &rows, &n);
	struct db_sweep_run *all = rows;
	for (size_t i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}
