/* SPDX-License-Identifier: ISC */
/* Sessions: logins and named API tokens, by JWT id (sessions). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"

static const char sql_session_insert[] =
    "INSERT INTO sessions (jti, user, kind, name, address, created, expires, last_seen)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char sql_session_delete[] = "DELETE FROM sessions WHERE jti = ?1";
static const char sql_session_delete_user[] =
    "DELETE FROM sessions WHERE user = ?1 AND (?2 IS NULL OR jti <> ?2)";
static const char sql_session_list[] =
    "SELECT jti, user, kind, name, address, created, expires, last_seen FROM sessions"
    " ORDER BY created, jti";
static const char sql_session_touch[] = "UPDATE sessions SET last_seen = ?2 WHERE jti = ?1";
static const char sql_session_prune[] = "DELETE FROM sessions WHERE expires < ?1";

int db_session_insert(struct db *db, const struct db_session *s)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_INSERT, sql_session_insert);
	int rc;

	if (!st || db_bind_text(db, st, 1, s->jti, sizeof(s->jti)) == -1 ||
	    db_bind_text(db, st, 2, s->user, sizeof(s->user)) == -1 ||
	    db_bind_int64(db, st, 3, s->kind) == -1 ||
	    db_bind_text(db, st, 4, s->name, sizeof(s->name)) == -1 ||
	    db_bind_text(db, st, 5, s->address, sizeof(s->address)) == -1 ||
	    db_bind_int64(db, st, 6, db_time_or_now(s->created)) == -1 ||
	    db_bind_int64(db, st, 7, s->expires) == -1 ||
	    db_bind_int64(db, st, 8, db_time_or_now(s->last_seen)) == -1)
		return -1;
	rc = db_write(db, st, "inserting a session");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc == DB_CONFLICT_FK)
		return DB_NOTFOUND;
	return rc == 0 ? 0 : -1;
}

int db_session_delete(struct db *db, const char *jti)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_DELETE, sql_session_delete);

	if (!st || db_bind_text(db, st, 1, jti, SIZE_MAX) == -1 ||
	    db_write(db, st, "deleting a session") != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

int db_session_delete_user(struct db *db, const char *user, const char *except_jti)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_DELETE_USER, sql_session_delete_user);

	if (!st || db_bind_text(db, st, 1, user, SIZE_MAX) == -1 ||
	    db_bind_text(db, st, 2, except_jti, SIZE_MAX) == -1 ||
	    db_write(db, st, "deleting a user's sessions") != 0)
		return -1;
	return sqlite3_changes(db->conn);
}

static void db_session_list_row(sqlite3_stmt *st, void *row)
{
	struct db_session *s = row;
	db_col_text(st, 0, s->jti, sizeof(s->jti));
	db_col_text(st, 1, s->user, sizeof(s->user));
	s->kind =
	    sqlite3_column_int(st, 2) == DB_SESSION_TOKEN ? DB_SESSION_TOKEN : DB_SESSION_LOGIN;
	db_col_text(st, 3, s->name, sizeof(s->name));
	db_col_text(st, 4, s->address, sizeof(s->address));
	s->created = sqlite3_column_int64(st, 5);
	s->expires = sqlite3_column_int64(st, 6);
	s->last_seen = sqlite3_column_int64(st, 7);
}

int db_session_list(struct db *db, int (*cb)(void *arg, const struct db_session *s), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_LIST, sql_session_list);
	struct db_session *all = NULL;
	size_t i, n = 0;
	int ret;

	if (!st)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	ret = db_read_rows(db, st, sizeof(*all), db_session_list_row, "reading sessions",
	                   (void **)&all, &n);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}

static int db_session_touch_tx(struct db *db, const struct db_session *const *s, size_t n)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_TOUCH, sql_session_touch);
	size_t i;

	if (!st)
		return -1;
	/* A session deleted meanwhile matches no row; that is fine. */
	for (i = 0; i < n; i++)
		if (s[i] && (db_bind_text(db, st, 1, s[i]->jti, sizeof(s[i]->jti)) == -1 ||
		             db_bind_int64(db, st, 2, s[i]->last_seen) == -1 ||
		             db_write(db, st, "touching a session") != 0))
			return -1;
	return 0;
}

int db_session_touch(struct db *db, const struct db_session *const *s, size_t n)
{
	if (n == 0)
		return 0;
	if (db_begin(db) == -1)
		return -1;
	return db_end(db, db_session_touch_tx(db, s, n));
}

int db_session_prune(struct db *db, int64_t now)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_SESSION_PRUNE, sql_session_prune);

	if (!st || db_bind_int64(db, st, 1, now) == -1 || db_write(db, st, "pruning sessions") != 0)
		return -1;
	return sqlite3_changes(db->conn);
}
