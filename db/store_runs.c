/* SPDX-License-Identifier: ISC */
/* Benchmark runs (bench_runs, bench_intervals): a row per job with its spec, state, the
 * worker's start and result lines; the interval lines apart, appended in batches. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

static const char sql_run_insert[] =
    "INSERT INTO bench_runs (name, label, owner, state, target, ctime, spec, environment,"
    " sweep, imported) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, NULLIF(?9, 0), ?10)";
static const char sql_run_update[] =
    "UPDATE bench_runs SET state = ?2, target = ?3, start_time = ?4, end_time = ?5,"
    " reason = ?6, start = ?7, result = ?8, spec = ?9, environment = ?10 WHERE id = ?1";
static const char sql_run_get[] =
    "SELECT id, name, label, owner, state, target, ctime, start_time, end_time, reason, spec,"
    " start, result, environment, sweep, imported FROM bench_runs WHERE id = ?1";
/* The primary key gives the order; state and label narrow it down. Of the result only
 * its summary, which a listing shows. */
static const char sql_run_list[] =
    "SELECT id, name, label, owner, state, target, ctime, start_time, end_time, reason, spec,"
    " NULL, CASE WHEN result IS NULL THEN NULL"
    " ELSE json_object('summary', json_extract(result, '$.summary')) END,"
    " NULL, sweep, imported FROM bench_runs WHERE (?1 IS NULL OR state = ?1)"
    " AND (?2 IS NULL OR label = ?2) AND ctime >= ?3 AND (?5 = 0 OR sweep = ?5)"
    " AND (?6 = 0 OR id < ?6) ORDER BY id DESC LIMIT ?4";
static const char sql_run_delete[] = "DELETE FROM bench_runs WHERE id = ?1";
static const char sql_run_interrupt[] =
    "UPDATE bench_runs SET state = 'interrupted', reason = ?1, end_time = ?2"
    " WHERE state = 'running'";
static const char sql_run_queued[] = "SELECT id FROM bench_runs WHERE state = 'queued' ORDER BY id";
static const char sql_run_interval_add[] =
    "INSERT OR REPLACE INTO bench_intervals (run, seq, line) VALUES (?1, ?2, ?3)";
static const char sql_run_intervals[] =
    "SELECT seq, line FROM bench_intervals WHERE run = ?1 ORDER BY seq";

void db_run_clear(struct db_run *r)
{
	free(r->spec);
	free(r->start);
	free(r->result);
	free(r->environment);
	r->spec = r->start = r->result = r->environment = NULL;
}

static char *db_run_text(sqlite3_stmt *st, int col)
{
	const unsigned char *t = sqlite3_column_text(st, col);
	return t ? xstrdup((const char *)t) : NULL;
}

static void db_run_row(sqlite3_stmt *st, struct db_run *r)
{
	memset(r, 0, sizeof(*r));
	r->id = sqlite3_column_int64(st, 0);
	db_col_text(st, 1, r->name, sizeof(r->name));
	db_col_text(st, 2, r->label, sizeof(r->label));
	db_col_text(st, 3, r->owner, sizeof(r->owner));
	db_col_text(st, 4, r->state, sizeof(r->state));
	db_col_text(st, 5, r->target, sizeof(r->target));
	r->ctime = sqlite3_column_int64(st, 6);
	r->start_time = sqlite3_column_int64(st, 7);
	r->end_time = sqlite3_column_int64(st, 8);
	db_col_text(st, 9, r->reason, sizeof(r->reason));
	r->spec = db_run_text(st, 10);
	r->start = db_run_text(st, 11);
	r->result = db_run_text(st, 12);
	r->environment = db_run_text(st, 13);
	r->sweep = sqlite3_column_int64(st, 14);
	r->imported = sqlite3_column_int(st, 15) != 0;
}

int db_run_insert(struct db *db, struct db_run *r)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_INSERT, sql_run_insert);

	if (!st || db_bind_text(db, st, 1, r->name, sizeof(r->name)) == -1 ||
	    db_bind_text(db, st, 2, r->label, sizeof(r->label)) == -1 ||
	    db_bind_text(db, st, 3, r->owner, sizeof(r->owner)) == -1 ||
	    db_bind_text(db, st, 4, r->state, sizeof(r->state)) == -1 ||
	    db_bind_text(db, st, 5, r->target, sizeof(r->target)) == -1 ||
	    db_bind_int64(db, st, 6, db_time_or_now(r->ctime)) == -1 ||
	    db_bind_text(db, st, 7, r->spec ? r->spec : "{}", SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 8, r->environment, SIZE_MAX) == -1 ||
	    db_bind_int64(db, st, 9, r->sweep) == -1 ||
	    db_bind_int64(db, st, 10, r->imported) == -1)
		return -1;
	if (db_write(db, st, "inserting a benchmark run") != 0)
		return -1;
	r->id = sqlite3_last_insert_rowid(db->conn);
	return 0;
}

int db_run_update(struct db *db, const struct db_run *r)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_UPDATE, sql_run_update);

	if (!st || db_bind_int64(db, st, 1, r->id) == -1 ||
	    db_bind_text(db, st, 2, r->state, sizeof(r->state)) == -1 ||
	    db_bind_text(db, st, 3, r->target, sizeof(r->target)) == -1 ||
	    db_bind_int64(db, st, 4, r->start_time) == -1 ||
	    db_bind_int64(db, st, 5, r->end_time) == -1 ||
	    db_bind_text(db, st, 6, r->reason, sizeof(r->reason)) == -1 ||
	    db_bind_text(db, st, 7, r->start, SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 8, r->result, SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 9, r->spec ? r->spec : "{}", SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 10, r->environment, SIZE_MAX) == -1)
		return -1;
	if (db_write(db, st, "updating a benchmark run") != 0)
		return -1;
	return sqlite3_changes(db->conn) ? 0 : DB_NOTFOUND;
}

int db_run_get(struct db *db, int64_t id, struct db_run *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_GET, sql_run_get);
	int rc;

	if (!st || db_bind_int64(db, st, 1, id) == -1)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		db_run_row(st, out);
	else if (rc != SQLITE_DONE)
		db_log(db, "reading a benchmark run");
	db_reset(st);
	if (rc == SQLITE_ROW)
		return 0;
	return rc == SQLITE_DONE ? DB_NOTFOUND : -1;
}

int db_run_list(struct db *db, const char *state, const char *label, int64_t start, int64_t sweep,
                int64_t before, int limit, int (*cb)(void *arg, const struct db_run *r), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_LIST, sql_run_list);
	struct db_run *all = NULL;
	size_t i, n = 0, cap = 0;
	int rc, ret = 0;

	if (!st || db_bind_text(db, st, 1, state, 16) == -1 ||
	    db_bind_text(db, st, 2, label, DB_RUN_LABEL_MAX) == -1 ||
	    db_bind_int64(db, st, 3, start) == -1 || db_bind_int64(db, st, 4, limit) == -1 ||
	    db_bind_int64(db, st, 5, sweep) == -1 || db_bind_int64(db, st, 6, before) == -1)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		all = util_grow(all, &cap, n, sizeof(*all));
		db_run_row(st, &all[n++]);
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading benchmark runs");
		ret = -1;
	}
	db_reset(st);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	for (i = 0; i < n; i++)
		db_run_clear(&all[i]);
	free(all);
	return ret;
}

int db_run_delete(struct db *db, int64_t id)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_DELETE, sql_run_delete);

	if (!st || db_bind_int64(db, st, 1, id) == -1 ||
	    db_write(db, st, "deleting a benchmark run") != 0)
		return -1;
	return sqlite3_changes(db->conn) ? 0 : DB_NOTFOUND;
}

int db_run_interrupt_running(struct db *db, const char *reason, int64_t now)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_INTERRUPT, sql_run_interrupt);

	if (!st || db_bind_text(db, st, 1, reason, 511) == -1 ||
	    db_bind_int64(db, st, 2, db_time_or_now(now)) == -1 ||
	    db_write(db, st, "marking interrupted benchmark runs") != 0)
		return -1;
	return sqlite3_changes(db->conn);
}

int db_run_queued(struct db *db, int (*cb)(void *arg, int64_t id), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_QUEUED, sql_run_queued);
	int64_t *ids = NULL;
	size_t i, n = 0, cap = 0;
	int rc, ret = 0;

	if (!st)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		ids = util_grow(ids, &cap, n, sizeof(*ids));
		ids[n++] = sqlite3_column_int64(st, 0);
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading queued benchmark runs");
		ret = -1;
	}
	db_reset(st);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, ids[i]);
	free(ids);
	return ret;
}

static int db_run_intervals_add_tx(struct db *db, int64_t run, int64_t first_seq,
                                   const char *const *lines, size_t n)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_INTERVAL_ADD, sql_run_interval_add);

	for (size_t i = 0; st && i < n; i++) {
		if (db_bind_int64(db, st, 1, run) == -1 ||
		    db_bind_int64(db, st, 2, first_seq + (int64_t)i) == -1 ||
		    db_bind_text(db, st, 3, lines[i], SIZE_MAX) == -1 ||
		    db_write(db, st, "recording benchmark intervals") != 0)
			return -1;
	}
	return st ? 0 : -1;
}

int db_run_save(struct db *db, int64_t run, const struct db_run *r, int64_t first_seq,
                const char *const *lines, size_t n)
{
	int rc = 0;

	if (n == 0 && !r)
		return 0;
	if (db_begin(db) == -1)
		return -1;
	if (n)
		rc = db_run_intervals_add_tx(db, run, first_seq, lines, n);
	if (rc == 0 && r)
		rc = db_run_update(db, r);
	return db_end(db, rc);
}

int db_run_intervals(struct db *db, int64_t run,
                     int (*cb)(void *arg, int64_t seq, const char *line), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_RUN_INTERVALS, sql_run_intervals);
	struct {
		int64_t seq;
		char *line;
	} *all = NULL;
	size_t i, n = 0, cap = 0;
	int rc, ret = 0;

	if (!st || db_bind_int64(db, st, 1, run) == -1)
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		all = util_grow(all, &cap, n, sizeof(*all));
		all[n].seq = sqlite3_column_int64(st, 0);
		all[n].line = db_run_text(st, 1);
		n++;
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading benchmark intervals");
		ret = -1;
	}
	db_reset(st);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, all[i].seq, all[i].line ? all[i].line : "{}");
	for (i = 0; i < n; i++)
		free(all[i].line);
	free(all);
	return ret;
}
