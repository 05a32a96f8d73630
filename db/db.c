/* SPDX-License-Identifier: ISC */
/* The connection: open, set up, migrate, close; and the statement cache and helpers the
 * store files share (declared in db_int.h). */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

bool db_conn_full(sqlite3 *conn)
{
	int rc = sqlite3_extended_errcode(conn) & 0xff, err = sqlite3_system_errno(conn);
	return rc == SQLITE_FULL || (rc == SQLITE_IOERR && (err == ENOSPC || err == EDQUOT));
}

bool db_full(const struct db *db)
{
	return db->full;
}

bool db_locked(const struct db *db)
{
	return db->locked;
}

void db_busy_timeout(struct db *db, int ms)
{
	sqlite3_busy_timeout(db->conn, ms);
}

void db_log(struct db *db, const char *what)
{
	db->full = db_conn_full(db->conn);
	int code = sqlite3_extended_errcode(db->conn) & 0xff;
	db->locked = code == SQLITE_BUSY || code == SQLITE_LOCKED;
	log_err("db: %s: %s (%d)", what, sqlite3_errmsg(db->conn),
	        sqlite3_extended_errcode(db->conn));
}

sqlite3_stmt *db_stmt(struct db *db, enum db_stmt_id id, const char *sql)
{
	sqlite3_stmt *st;

	if (db->stmt[id]) {
		/* One id, one SQL text: two callers sharing an id would reset each other. */
		assert(db->sql[id] == sql);
		return db->stmt[id];
	}
	if (sqlite3_prepare_v3(db->conn, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) !=
	    SQLITE_OK) {
		db_log(db, "preparing a statement");
		return NULL;
	}
	db->stmt[id] = st;
	db->sql[id] = sql;
	return st;
}

void db_reset(sqlite3_stmt *st)
{
	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
}

/* A bind that failed: logged, and the statement reset for its next use. */
static int bind_failed(struct db *db, sqlite3_stmt *st, int idx, int rc)
{
	log_err("db: binding parameter %d: %s", idx, sqlite3_errstr(rc));
	db->full = false;
	db_reset(st);
	return -1;
}

int db_bind_text(struct db *db, sqlite3_stmt *st, int idx, const char *s, size_t max)
{
	size_t len;
	int rc;

	if (!s) {
		rc = sqlite3_bind_null(st, idx);
	} else {
		len = strnlen(s, max);
		rc = len > INT_MAX ? SQLITE_TOOBIG
		                   : sqlite3_bind_text(st, idx, s, (int)len, SQLITE_STATIC);
	}
	return rc == SQLITE_OK ? 0 : bind_failed(db, st, idx, rc);
}

int db_bind_int64(struct db *db, sqlite3_stmt *st, int idx, int64_t v)
{
	int rc = sqlite3_bind_int64(st, idx, v);

	return rc == SQLITE_OK ? 0 : bind_failed(db, st, idx, rc);
}

int db_write(struct db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st), ret;

	switch (rc) {
	case SQLITE_DONE:
	case SQLITE_ROW:
		ret = 0;
		break;
	case SQLITE_CONSTRAINT_PRIMARYKEY:
	case SQLITE_CONSTRAINT_UNIQUE:
		log_debug("db: %s: %s", what, sqlite3_errmsg(db->conn));
		ret = DB_CONFLICT_UNIQUE;
		break;
	case SQLITE_CONSTRAINT_FOREIGNKEY:
		log_debug("db: %s: %s", what, sqlite3_errmsg(db->conn));
		ret = DB_CONFLICT_FK;
		break;
	default:
		db_log(db, what);
		ret = -1;
	}
	db_reset(st);
	return ret;
}

int db_query_int64(struct db *db, sqlite3_stmt *st, const char *what, int64_t *out)
{
	int rc = sqlite3_step(st), ret = 0;

	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(st, 0);
	} else if (rc == SQLITE_DONE) {
		ret = DB_NOTFOUND;
	} else {
		db_log(db, what);
		ret = -1;
	}
	db_reset(st);
	return ret;
}

void db_col_text(sqlite3_stmt *st, int col, char *buf, size_t size)
{
	const unsigned char *s = sqlite3_column_text(st, col);
	size_t len, n;

	if (!s) {
		buf[0] = '\0';
		return;
	}
	len = (size_t)sqlite3_column_bytes(st, col);
	n = len < size - 1 ? len : size - 1;
	/* Cut before a partial character, or the JSON encoder would refuse the string. */
	if (n < len)
		while (n > 0 && (s[n] & 0xc0) == 0x80)
			n--;
	memcpy(buf, s, n);
	buf[n] = '\0';
}

int db_begin(struct db *db)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_BEGIN, "BEGIN IMMEDIATE");

	return st && db_write(db, st, "begin") == 0 ? 0 : -1;
}

static void db_rollback(struct db *db)
{
	sqlite3_stmt *st;

	/* Some errors (full disk, I/O) have rolled back already. */
	if (sqlite3_get_autocommit(db->conn))
		return;
	st = db_stmt(db, DB_STMT_ROLLBACK, "ROLLBACK");
	if (st)
		db_write(db, st, "rollback");
}

int db_end(struct db *db, int ret)
{
	sqlite3_stmt *st;

	if (ret == 0) {
		st = db_stmt(db, DB_STMT_COMMIT, "COMMIT");
		if (st && db_write(db, st, "commit") == 0)
			return 0;
		ret = -1;
	}
	db_rollback(db);
	return ret;
}

int db_read_rows(struct db *db, sqlite3_stmt *st, size_t elem,
                 void (*read_row)(sqlite3_stmt *st, void *row), const char *what, void **rows,
                 size_t *n)
{
	char *all = NULL;
	size_t cap = 0;
	int rc, ret = 0;

	*n = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		all = util_grow(all, &cap, *n, elem);
		char *row = all + (*n)++ * elem;
		memset(row, 0, elem);
		read_row(st, row);
	}
	if (rc != SQLITE_DONE) {
		db_log(db, what);
		ret = -1;
	}
	db_reset(st);
	*rows = all;
	return ret;
}

int64_t db_time_or_now(int64_t t)
{
	return t ? t : (int64_t)time(NULL);
}

/* Runs a set-up pragma that may answer one row; its first column goes to out if asked. */
static int db_pragma(struct db *db, const char *sql, char *out, size_t outlen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(db->conn, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	rc = sqlite3_step(st);
	if (out) {
		if (rc == SQLITE_ROW)
			db_col_text(st, 0, out, outlen);
		else
			out[0] = '\0';
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? 0 : -1;
}

static bool db_is_file(const char *path)
{
	return path[0] != '\0' && strcmp(path, ":memory:") != 0;
}

/* The database holds password hashes: create it 0600 before SQLite does (SQLite gives the
 * -wal and -shm files the mode of the database file). An existing file keeps its mode and
 * is not opened here: closing any descriptor of a file drops every POSIX lock this process
 * holds on it, the locks of connections already open on it (a second db_open) included,
 * and SQLite's WAL then takes them for gone. */
static int db_create_private(const char *path, char *err, size_t errlen)
{
	int fd;

	if (!db_is_file(path))
		return 0;
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd == -1 && errno == EEXIST)
		return 0;
	if (fd == -1) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

static int db_setup(struct db *db, const char *path, char *err, size_t errlen)
{
	char val[32];

	/* Before anything that locks, so start-up waits out another process's write. */
	sqlite3_busy_timeout(db->conn, DB_BUSY_TIMEOUT_MS);
	if (db_pragma(db, "PRAGMA journal_mode = WAL", val, sizeof(val)) == -1)
		goto fail;
	if (strcmp(val, "wal") != 0 && db_is_file(path))
		log_warn("db: %s: journal_mode is %s, not wal", path, val);
	if (db_pragma(db, "PRAGMA synchronous = FULL", NULL, 0) == -1 ||
	    db_pragma(db, "PRAGMA foreign_keys = ON", NULL, 0) == -1 ||
	    db_pragma(db, "PRAGMA foreign_keys", val, sizeof(val)) == -1)
		goto fail;
	/* Cascades and the unknown-role checks depend on it: a build without it must not run. */
	if (strcmp(val, "1") != 0) {
		snprintf(err, errlen, "%s: SQLite does not enforce foreign keys", path);
		log_err("db: %s", err);
		return -1;
	}
	return 0;
fail:
	snprintf(err, errlen, "%s: %s", path, sqlite3_errmsg(db->conn));
	db_log(db, "setting up the connection");
	return -1;
}

struct db *db_open(const char *path, char *err, size_t errlen)
{
	char buf[256];
	struct db *db;
	int rc;

	if (!err || errlen == 0) {
		err = buf;
		errlen = sizeof(buf);
	}
	if (db_create_private(path, err, errlen) == -1) {
		log_err("db: %s", err);
		return NULL;
	}
	db = xcalloc(1, sizeof(*db));
	/* NOMUTEX: only the loop thread uses this connection, helper threads never do. */
	rc = sqlite3_open_v2(path, &db->conn,
	                     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX |
	                         SQLITE_OPEN_EXRESCODE,
	                     NULL);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "%s: %s", path,
		         db->conn ? sqlite3_errmsg(db->conn) : sqlite3_errstr(rc));
		log_err("db: %s", err);
		goto fail;
	}
	sqlite3_extended_result_codes(db->conn, 1);
	if (db_setup(db, path, err, errlen) == -1 ||
	    migrate_run(db->conn, &db->version, err, errlen) == -1)
		goto fail;
	return db;
fail:
	sqlite3_close(db->conn);
	free(db);
	return NULL;
}

void db_close(struct db *db)
{
	size_t i;

	if (!db)
		return;
	for (i = 0; i < nitems(db->stmt); i++)
		sqlite3_finalize(db->stmt[i]);
	/* Cheap, and keeps the planner's statistics fresh for the next start. */
	sqlite3_exec(db->conn, "PRAGMA optimize", NULL, NULL, NULL);
	if (sqlite3_close(db->conn) != SQLITE_OK)
		db_log(db, "closing");
	free(db);
}

int db_schema_version(struct db *db)
{
	return db->version;
}

int64_t db_size_bytes(struct db *db)
{
	sqlite3_stmt *st;
	int64_t pages, page_size, bytes;
	const char *file, *wal;
	struct stat sb;

	st = db_stmt(db, DB_STMT_PAGE_COUNT, "PRAGMA page_count");
	if (!st || db_query_int64(db, st, "page count", &pages) != 0)
		return -1;
	st = db_stmt(db, DB_STMT_PAGE_SIZE, "PRAGMA page_size");
	if (!st || db_query_int64(db, st, "page size", &page_size) != 0)
		return -1;
	bytes = pages * page_size;
	file = sqlite3_db_filename(db->conn, "main");
	if (file && file[0] != '\0') {
		wal = sqlite3_filename_wal(file);
		if (wal && stat(wal, &sb) == 0)
			bytes += sb.st_size;
		else if (wal && errno != ENOENT)
			log_warn("db: %s: %s", wal, strerror(errno));
	}
	return bytes;
}
