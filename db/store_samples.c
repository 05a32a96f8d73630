/* SPDX-License-Identifier: ISC */
/* Analytics: the dataset catalog and settings (on the main connection), and the samples
 * (on connections of their own, synchronous=NORMAL: a power cut may cost the last
 * commits, never consistency, and the accounts keep their FULL durability).
 *
 * Sample rows are keyed k = series << 32 | start (epoch seconds), the table's own rowid:
 * rows of one series lie together in time order and need no second index. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

/* --- catalog and settings (main connection, loop thread) */

static const char sql_dataset_list[] =
    "SELECT id, name, statistic, drilldown, suspended, ctime FROM analytics_datasets"
    " ORDER BY id";
static const char sql_dataset_insert[] =
    "INSERT INTO analytics_datasets (name, statistic, drilldown, suspended, ctime)"
    " VALUES (?1, ?2, ?3, ?4, ?5)";
static const char sql_dataset_suspend[] =
    "UPDATE analytics_datasets SET suspended = ?2 WHERE id = ?1";
static const char sql_dataset_delete[] = "DELETE FROM analytics_datasets WHERE id = ?1";
static const char sql_setting_get[] = "SELECT value FROM analytics_settings WHERE name = ?1";
static const char sql_setting_set[] = "INSERT INTO analytics_settings (name, value) VALUES (?1, ?2)"
                                      " ON CONFLICT (name) DO UPDATE SET value = excluded.value";

static void db_dataset_list_row(sqlite3_stmt *st, void *row)
{
	struct db_dataset *d = row;
	d->id = sqlite3_column_int64(st, 0);
	db_col_text(st, 1, d->name, sizeof(d->name));
	db_col_text(st, 2, d->statistic, sizeof(d->statistic));
	db_col_text(st, 3, d->drilldown, sizeof(d->drilldown));
	d->suspended = sqlite3_column_int(st, 4) != 0;
	d->ctime = sqlite3_column_int64(st, 5);
}

int db_dataset_list(struct db *db, int (*cb)(void *arg, const struct db_dataset *d), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DATASET_LIST, sql_dataset_list);
	struct db_dataset *all = NULL;
	size_t i, n = 0;
	int ret;

	if (!st)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	ret = db_read_rows(db, st, sizeof(*all), db_dataset_list_row,
	                   "reading the analytics datasets", (void **)&all, &n);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}

int db_dataset_insert(struct db *db, struct db_dataset *d)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DATASET_INSERT, sql_dataset_insert);
	int rc;

	d->ctime = db_time_or_now(d->ctime);
	if (!st || db_bind_text(db, st, 1, d->name, sizeof(d->name)) == -1 ||
	    db_bind_text(db, st, 2, d->statistic, sizeof(d->statistic)) == -1 ||
	    db_bind_text(db, st, 3, d->drilldown, sizeof(d->drilldown)) == -1 ||
	    db_bind_int64(db, st, 4, d->suspended ? 1 : 0) == -1 ||
	    db_bind_int64(db, st, 5, d->ctime) == -1)
		return -1;
	rc = db_write(db, st, "inserting an analytics dataset");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc != 0)
		return -1;
	d->id = sqlite3_last_insert_rowid(db->conn);
	return 0;
}

static int db_dataset_changed(struct db *db, sqlite3_stmt *st, const char *what)
{
	if (db_write(db, st, what) != 0)
		return -1;
	return sqlite3_changes(db->conn) ? 0 : DB_NOTFOUND;
}

int db_dataset_set_suspended(struct db *db, int64_t id, bool suspended)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DATASET_SUSPEND, sql_dataset_suspend);

	if (!st || db_bind_int64(db, st, 1, id) == -1 ||
	    db_bind_int64(db, st, 2, suspended ? 1 : 0) == -1)
		return -1;
	return db_dataset_changed(db, st, "suspending an analytics dataset");
}

int db_dataset_delete(struct db *db, int64_t id)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DATASET_DELETE, sql_dataset_delete);

	if (!st || db_bind_int64(db, st, 1, id) == -1)
		return -1;
	return db_dataset_changed(db, st, "deleting an analytics dataset");
}

int db_analytics_setting_get(struct db *db, const char *name, int64_t *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ANALYTICS_SETTING_GET, sql_setting_get);

	if (!st || db_bind_text(db, st, 1, name, 64) == -1)
		return -1;
	return db_query_int64(db, st, "reading an analytics setting", out);
}

int db_analytics_settings_set(struct db *db, const char *const *names, const int64_t *values,
                              size_t n)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ANALYTICS_SETTING_SET, sql_setting_set);
	int ret;

	if (!st || db_begin(db) == -1)
		return -1;
	ret = 0;
	for (size_t i = 0; ret == 0 && i < n; i++) {
		if (db_bind_text(db, st, 1, names[i], 64) == -1 ||
		    db_bind_int64(db, st, 2, values[i]) == -1 ||
		    db_write(db, st, "writing an analytics setting") != 0)
			ret = -1;
	}
	return db_end(db, ret);
}

/* --- samples (connections of their own)
 *
 * analytics_recent holds the flushes as they come, one row each, in time order (a flush
 * dirties a page or two, not one per series); analytics_seconds the packed hours. */

enum samples_stmt {
	SS_BEGIN_WRITE,
	SS_BEGIN_READ,
	SS_COMMIT,
	SS_ROLLBACK,
	SS_SERIES_INSERT,
	SS_SERIES_DELETE,
	SS_SERIES_LIST,
	SS_RECENT_ADD,
	SS_RECENT_RANGE,
	SS_RECENT_DELETE,
	SS_RECENT_HOURS,
	SS_PUT,                                   /* + level */
	SS_RANGE = SS_PUT + DB_SAMPLES_LEVELS,    /* + level */
	SS_DELETE = SS_RANGE + DB_SAMPLES_LEVELS, /* + level */
	SS_BYTES = SS_DELETE + DB_SAMPLES_LEVELS, /* + level */
	SS_COUNT = SS_BYTES + DB_SAMPLES_LEVELS
};

static const char *const samples_sql[SS_COUNT] = {
    [SS_BEGIN_WRITE] = "BEGIN IMMEDIATE",
    [SS_BEGIN_READ] = "BEGIN",
    [SS_COMMIT] = "COMMIT",
    [SS_ROLLBACK] = "ROLLBACK",
    [SS_SERIES_INSERT] = "INSERT OR IGNORE INTO analytics_series (id, dataset, key)"
                         " VALUES (?1, ?2, ?3)",
    [SS_SERIES_DELETE] = "DELETE FROM analytics_series WHERE id = ?1",
    [SS_SERIES_LIST] = "SELECT id, dataset, key FROM analytics_series ORDER BY id",
    [SS_RECENT_ADD] = "INSERT INTO analytics_recent (start, span, data) VALUES (?1, ?2, ?3)",
    [SS_RECENT_RANGE] = "SELECT id, start, span, data FROM analytics_recent"
                        " WHERE start >= ?1 AND start < ?2 ORDER BY id",
    [SS_RECENT_DELETE] = "DELETE FROM analytics_recent WHERE start >= ?1 AND start < ?2"
                         " AND id <= ?3",
    [SS_RECENT_HOURS] = "SELECT DISTINCT start - start % 3600 FROM analytics_recent ORDER BY 1",
    [SS_PUT + DB_SAMPLES_SECONDS] =
        "INSERT OR REPLACE INTO analytics_seconds (k, data) VALUES (?1, ?3)",
    [SS_PUT + DB_SAMPLES_MINUTES] =
        "INSERT OR REPLACE INTO analytics_minutes (k, data) VALUES (?1, ?3)",
    [SS_PUT + DB_SAMPLES_HOURS] =
        "INSERT OR REPLACE INTO analytics_hours (k, data) VALUES (?1, ?3)",
    [SS_RANGE + DB_SAMPLES_SECONDS] =
        "SELECT k, 3600, data FROM analytics_seconds WHERE k >= ?1 AND k < ?2 ORDER BY k",
    [SS_RANGE + DB_SAMPLES_MINUTES] =
        "SELECT k, 0, data FROM analytics_minutes WHERE k >= ?1 AND k < ?2 ORDER BY k",
    [SS_RANGE + DB_SAMPLES_HOURS] =
        "SELECT k, 0, data FROM analytics_hours WHERE k >= ?1 AND k < ?2 ORDER BY k",
    [SS_DELETE + DB_SAMPLES_SECONDS] = "DELETE FROM analytics_seconds WHERE k >= ?1 AND k < ?2",
    [SS_DELETE + DB_SAMPLES_MINUTES] = "DELETE FROM analytics_minutes WHERE k >= ?1 AND k < ?2",
    [SS_DELETE + DB_SAMPLES_HOURS] = "DELETE FROM analytics_hours WHERE k >= ?1 AND k < ?2",
    /* length() of a blob comes from the record header: no overflow page is read */
    [SS_BYTES + DB_SAMPLES_SECONDS] =
        "SELECT count(*), total(length(data)) FROM analytics_seconds WHERE k >= ?1 AND k < ?2",
    [SS_BYTES + DB_SAMPLES_MINUTES] =
        "SELECT count(*), total(length(data)) FROM analytics_minutes WHERE k >= ?1 AND k < ?2",
    [SS_BYTES + DB_SAMPLES_HOURS] =
        "SELECT count(*), total(length(data)) FROM analytics_hours WHERE k >= ?1 AND k < ?2",
};

struct db_samples {
	sqlite3 *conn;
	bool readonly;
	bool full; /* the last error logged was for want of space */
	sqlite3_stmt *st[SS_COUNT];
};

static void samples_log(struct db_samples *ds, const char *what)
{
	ds->full = db_conn_full(ds->conn);
	log_err("db: samples: %s: %s (%d)", what, sqlite3_errmsg(ds->conn),
	        sqlite3_extended_errcode(ds->conn));
}

static sqlite3_stmt *samples_stmt(struct db_samples *ds, enum samples_stmt id)
{
	if (!ds->st[id] &&
	    sqlite3_prepare_v3(ds->conn, samples_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
	                       &ds->st[id], NULL) != SQLITE_OK) {
		samples_log(ds, "preparing a statement");
		ds->st[id] = NULL;
	}
	return ds->st[id];
}

struct db_samples *db_samples_open(const char *path, bool readonly, char *err, size_t errlen)
{
	struct db_samples *ds = xcalloc(1, sizeof(*ds));
	int flags = (readonly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) |
	            SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
	int rc = sqlite3_open_v2(path, &ds->conn, flags, NULL);

	ds->readonly = readonly;
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		         ds->conn ? sqlite3_errmsg(ds->conn) : sqlite3_errstr(rc));
		goto fail;
	}
	sqlite3_busy_timeout(ds->conn, 5000);
	/* WAL is the database's own mode already (db_open); NORMAL is this connection's. */
	if (sqlite3_exec(ds->conn, "PRAGMA synchronous = NORMAL", NULL, NULL, NULL) != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(ds->conn));
		goto fail;
	}
	return ds;
fail:
	log_err("db: samples: %s", err);
	sqlite3_close(ds->conn);
	free(ds);
	return NULL;
}

void db_samples_close(struct db_samples *ds)
{
	if (!ds)
		return;
	for (int i = 0; i < SS_COUNT; i++)
		sqlite3_finalize(ds->st[i]);
	if (sqlite3_close(ds->conn) != SQLITE_OK)
		samples_log(ds, "closing");
	free(ds);
}

/* Runs a statement without rows (bindings already made) and resets it. */
static int samples_exec(struct db_samples *ds, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	if (rc == SQLITE_DONE || rc == SQLITE_ROW)
		return 0;
	samples_log(ds, what);
	return -1;
}

bool db_samples_full(const struct db_samples *ds)
{
	return ds->full;
}

int db_samples_begin(struct db_samples *ds)
{
	sqlite3_stmt *st = samples_stmt(ds, ds->readonly ? SS_BEGIN_READ : SS_BEGIN_WRITE);
	return st ? samples_exec(ds, st, "begin") : -1;
}

int db_samples_end(struct db_samples *ds, int ret)
{
	sqlite3_stmt *st;
	if (ret == 0) {
		st = samples_stmt(ds, SS_COMMIT);
		if (st && samples_exec(ds, st, "commit") == 0)
			return 0;
		ret = -1;
	}
	if (!sqlite3_get_autocommit(ds->conn)) {
		st = samples_stmt(ds, SS_ROLLBACK);
		if (st)
			samples_exec(ds, st, "rollback");
	}
	return ret;
}

/* The key of (series, t): t is clamped to what 32 bits hold, so ranges stay in the series. */
static int64_t samples_key(int64_t series, int64_t t)
{
	if (t < 0)
		t = 0;
	if (t > (int64_t)UINT32_MAX + 1)
		t = (int64_t)UINT32_MAX + 1;
	return series * ((int64_t)1 << 32) + t;
}

static bool level_ok(enum db_samples_level level)
{
	return level >= 0 && level < DB_SAMPLES_LEVELS;
}

int db_samples_put(struct db_samples *ds, enum db_samples_level level, int64_t series,
                   int64_t start, int span, const void *data, size_t len)
{
	sqlite3_stmt *st = level_ok(level) ? samples_stmt(ds, SS_PUT + level) : NULL;
	if (!st || len > INT_MAX)
		return -1;
	sqlite3_bind_int64(st, 1, samples_key(series, start));
	sqlite3_bind_blob(st, 3, data, (int)len, SQLITE_STATIC);
	return samples_exec(ds, st, "writing samples");
}

int db_samples_range(struct db_samples *ds, enum db_samples_level level, int64_t series,
                     int64_t from, int64_t to, db_samples_row_fn cb, void *arg)
{
	sqlite3_stmt *st = level_ok(level) ? samples_stmt(ds, SS_RANGE + level) : NULL;
	int rc, ret = 0;
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, samples_key(series, from));
	sqlite3_bind_int64(st, 2, samples_key(series, to));
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		int64_t k = sqlite3_column_int64(st, 0);
		const void *data = sqlite3_column_blob(st, 2);
		int len = sqlite3_column_bytes(st, 2);
		ret = cb(arg, k & UINT32_MAX, sqlite3_column_int(st, 1), data, (size_t)len);
	}
	if (ret == 0 && rc != SQLITE_DONE) {
		samples_log(ds, "reading samples");
		ret = -1;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

int db_samples_delete(struct db_samples *ds, enum db_samples_level level, int64_t series,
                      int64_t from, int64_t to)
{
	sqlite3_stmt *st = level_ok(level) ? samples_stmt(ds, SS_DELETE + level) : NULL;
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, samples_key(series, from));
	sqlite3_bind_int64(st, 2, samples_key(series, to));
	return samples_exec(ds, st, "deleting samples");
}

int db_samples_bytes(struct db_samples *ds, int64_t series, int64_t *rows, int64_t *bytes)
{
	*rows = *bytes = 0;
	for (int level = 0; level < DB_SAMPLES_LEVELS; level++) {
		sqlite3_stmt *st = samples_stmt(ds, SS_BYTES + level);
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, samples_key(series, 0));
		sqlite3_bind_int64(st, 2, samples_key(series + 1, 0));
		int rc = sqlite3_step(st);
		if (rc == SQLITE_ROW) {
			*rows += sqlite3_column_int64(st, 0);
			*bytes += (int64_t)sqlite3_column_double(st, 1);
		}
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
		if (rc != SQLITE_ROW) {
			samples_log(ds, "measuring samples");
			return -1;
		}
	}
	return 0;
}

int db_samples_series_insert(struct db_samples *ds, int64_t id, int64_t dataset, const char *key)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_SERIES_INSERT);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	sqlite3_bind_int64(st, 2, dataset);
	sqlite3_bind_text(st, 3, key, -1, SQLITE_STATIC);
	return samples_exec(ds, st, "inserting a series");
}

int db_samples_series_delete(struct db_samples *ds, int64_t id)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_SERIES_DELETE);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	return samples_exec(ds, st, "deleting a series");
}

int db_samples_series_list(struct db_samples *ds,
                           int (*cb)(void *arg, int64_t id, int64_t dataset, const char *key),
                           void *arg)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_SERIES_LIST);
	int rc, ret = 0;
	if (!st)
		return -1;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *key = sqlite3_column_text(st, 2);
		ret = cb(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
		         key ? (const char *)key : "");
	}
	if (ret == 0 && rc != SQLITE_DONE) {
		samples_log(ds, "reading the series");
		ret = -1;
	}
	sqlite3_reset(st);
	return ret;
}

int db_samples_recent_add(struct db_samples *ds, int64_t start, int span, const void *data,
                          size_t len)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_RECENT_ADD);
	if (!st || len > INT_MAX)
		return -1;
	sqlite3_bind_int64(st, 1, start);
	sqlite3_bind_int(st, 2, span);
	sqlite3_bind_blob(st, 3, data, (int)len, SQLITE_STATIC);
	return samples_exec(ds, st, "writing a flush");
}

int db_samples_recent_range(struct db_samples *ds, int64_t from, int64_t to,
                            db_samples_recent_fn cb, void *arg)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_RECENT_RANGE);
	int rc, ret = 0;
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const void *data = sqlite3_column_blob(st, 3);
		int len = sqlite3_column_bytes(st, 3);
		ret = cb(arg, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
		         sqlite3_column_int(st, 2), data, (size_t)len);
	}
	if (ret == 0 && rc != SQLITE_DONE) {
		samples_log(ds, "reading the flushes");
		ret = -1;
	}
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return ret;
}

int db_samples_recent_delete(struct db_samples *ds, int64_t from, int64_t to, int64_t max_id)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_RECENT_DELETE);
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, from);
	sqlite3_bind_int64(st, 2, to);
	sqlite3_bind_int64(st, 3, max_id);
	return samples_exec(ds, st, "deleting flushes");
}

int db_samples_recent_hours(struct db_samples *ds, int (*cb)(void *arg, int64_t hour), void *arg)
{
	sqlite3_stmt *st = samples_stmt(ds, SS_RECENT_HOURS);
	int rc, ret = 0;
	if (!st)
		return -1;
	while (ret == 0 && (rc = sqlite3_step(st)) == SQLITE_ROW)
		ret = cb(arg, sqlite3_column_int64(st, 0));
	if (ret == 0 && rc != SQLITE_DONE) {
		samples_log(ds, "listing the flushes");
		ret = -1;
	}
	sqlite3_reset(st);
	return ret;
}
