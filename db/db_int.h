/* SPDX-License-Identifier: ISC */
/* Private to db/: the connection and its statement cache, the helpers the store files
 * share, and the schema migrations. Nothing outside db/ includes this header. */
#ifndef SPINDLE_DB_INT_H
#define SPINDLE_DB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sqlite3.h>

#include "db.h"

/* Every cached statement. A store file names its SQL next to the code that runs it and
 * gets it through db_stmt(); a new store adds its ids here. */
enum db_stmt_id {
	DB_STMT_BEGIN,
	DB_STMT_COMMIT,
	DB_STMT_ROLLBACK,
	DB_STMT_PAGE_COUNT,
	DB_STMT_PAGE_SIZE,

	DB_STMT_USER_GET,
	DB_STMT_USER_LIST,
	DB_STMT_USER_INSERT,
	DB_STMT_USER_UPDATE,
	DB_STMT_USER_DELETE,
	DB_STMT_USER_COUNT,
	DB_STMT_USER_ROLE_ADD,
	DB_STMT_USER_ROLES_CLEAR,
	DB_STMT_ROLE_HOLDERS,

	DB_STMT_ROLE_GET,
	DB_STMT_ROLE_LIST,
	DB_STMT_ROLE_INSERT,
	DB_STMT_ROLE_UPDATE,
	DB_STMT_ROLE_DELETE,
	DB_STMT_ROLE_AUTH_ADD,
	DB_STMT_ROLE_AUTHS_CLEAR,

	DB_STMT_SESSION_INSERT,
	DB_STMT_SESSION_DELETE,
	DB_STMT_SESSION_DELETE_USER,
	DB_STMT_SESSION_LIST,
	DB_STMT_SESSION_TOUCH,
	DB_STMT_SESSION_PRUNE,

	DB_STMT_DEVICE_INSERT,
	DB_STMT_DEVICE_GET,
	DB_STMT_DEVICE_LIST,
	DB_STMT_DEVICE_DELETE,
	DB_STMT_DEVICE_DELETE_USER,
	DB_STMT_DEVICE_USE,
	DB_STMT_DEVICE_PRUNE,

	DB_STMT_AUDIT_INSERT,
	DB_STMT_AUDIT_LIST,
	DB_STMT_AUDIT_PRUNE,

	DB_STMT_WORKSHEET_GET,
	DB_STMT_WORKSHEET_LIST,
	DB_STMT_WORKSHEET_LIST_OWNER,
	DB_STMT_WORKSHEET_INSERT,
	DB_STMT_WORKSHEET_UPDATE,
	DB_STMT_WORKSHEET_DELETE,
	DB_STMT_WORKSHEET_USAGE,

	DB_STMT_LED_PUT,
	DB_STMT_LED_LIST,

	DB_STMT_DATASET_LIST,
	DB_STMT_DATASET_INSERT,
	DB_STMT_DATASET_SUSPEND,
	DB_STMT_DATASET_DELETE,
	DB_STMT_ANALYTICS_SETTING_GET,
	DB_STMT_ANALYTICS_SETTING_SET,

	DB_STMT_RUN_INSERT,
	DB_STMT_RUN_UPDATE,
	DB_STMT_RUN_GET,
	DB_STMT_RUN_LIST,
	DB_STMT_RUN_DELETE,
	DB_STMT_RUN_INTERRUPT,
	DB_STMT_RUN_QUEUED,
	DB_STMT_RUN_INTERVAL_ADD,
	DB_STMT_RUN_INTERVALS,

	DB_STMT_SWEEP_INSERT,
	DB_STMT_SWEEP_GET,
	DB_STMT_SWEEP_LIST,
	DB_STMT_SWEEP_CANCEL,
	DB_STMT_SWEEP_DELETE,
	DB_STMT_SWEEP_DELETE_RUNS,
	DB_STMT_SWEEP_RUNS,

	DB_STMT_COUNT
};

struct db {
	sqlite3 *conn;
	int version; /* PRAGMA user_version after migrating */
	sqlite3_stmt *stmt[DB_STMT_COUNT];
	const char *sql[DB_STMT_COUNT]; /* the text each id was prepared from, to catch mix-ups */
	bool full;                      /* the last error logged was for want of space (db_full) */
	bool locked; /* the last error logged: another writer's lock (db_locked) */
};

/* What db_write() ran into besides success and plain errors; callers turn these into
 * DB_EXISTS / DB_NOTFOUND / DB_INUSE. Never returned outside db/. */
#define DB_CONFLICT_UNIQUE 101 /* primary key or unique index */
#define DB_CONFLICT_FK     102 /* foreign key */

/* Logs the connection's last error: "db: <what>: <sqlite message>"; notes for db_full
 * whether it was for want of space. */
void db_log(struct db *db, const char *what);
/* Whether the connection's last error is for want of space: SQLITE_FULL, or an I/O error
 * whose system error is ENOSPC or EDQUOT. */
bool db_conn_full(sqlite3 *conn);

/* The statement for id, prepared (persistent) on first use; NULL on error (logged). */
sqlite3_stmt *db_stmt(struct db *db, enum db_stmt_id id, const char *sql);
/* Reset and unbind, so no read stays open and no caller memory stays bound. */
void db_reset(sqlite3_stmt *st);

/* Bind helpers: 0, or -1 logged (the statement is reset). Text is read up to max bytes or
 * its NUL, so a fixed-size field without a terminator is still safe; NULL binds NULL. */
int db_bind_text(struct db *db, sqlite3_stmt *st, int idx, const char *s, size_t max);
int db_bind_int64(struct db *db, sqlite3_stmt *st, int idx, int64_t v);

/* Runs a statement that returns no rows and resets it: 0, DB_CONFLICT_UNIQUE,
 * DB_CONFLICT_FK (both logged at debug level only), or -1 (logged). */
int db_write(struct db *db, sqlite3_stmt *st, const char *what);
/* Runs a one-row, one-column query and resets it: 0 with *out, DB_NOTFOUND, or -1. */
int db_query_int64(struct db *db, sqlite3_stmt *st, const char *what, int64_t *out);

/* Copies a text column into buf (size > 0), NUL-terminated; a value too long is cut at a
 * UTF-8 character boundary. NULL reads as "". */
void db_col_text(sqlite3_stmt *st, int col, char *buf, size_t size);

/* BEGIN IMMEDIATE: take the write lock now, so the busy handler applies. 0 or -1. */
int db_begin(struct db *db);
/* Ends the transaction begun by db_begin: commits when ret is 0, else rolls back.
 * Returns ret, or -1 when the commit fails (then rolled back). */
int db_end(struct db *db, int ret);

/* Steps st to its end, each row read by read_row into a zeroed elem-sized item of a new
 * array (*rows, for free(); *n items), then resets st, so callers may call back into the
 * store afterwards. 0, or -1 when stepping failed (logged with what; *rows still holds
 * the rows read before). */
int db_read_rows(struct db *db, sqlite3_stmt *st, size_t elem,
                 void (*read_row)(sqlite3_stmt *st, void *row), const char *what, void **rows,
                 size_t *n);

/* Wall-clock seconds, or t when t is non-zero: the store fills timestamps left at 0. */
int64_t db_time_or_now(int64_t t);

/* Brings the schema to the last migration step this code knows, one transaction per
 * step; sets *version. Refuses a database newer than the code. 0, or -1 with a message
 * in err (logged). */
int migrate_run(sqlite3 *conn, int *version, char *err, size_t errlen);

#endif
