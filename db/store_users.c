/* SPDX-License-Identifier: ISC */
/* Users and the roles they hold (users, user_roles). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

#define USER_SELECT                                                                                \
	"SELECT u.rowid, u.name, u.fullname, u.pwhash, u.session_timeout_min, u.ctime,"            \
	" u.mtime, ur.role FROM users u LEFT JOIN user_roles ur ON ur.user = u.name"

static const char sql_user_get[] = USER_SELECT " WHERE u.name = ?1 ORDER BY ur.role";
static const char sql_user_list[] = USER_SELECT " ORDER BY u.name, ur.role";
static const char sql_user_insert[] =
    "INSERT INTO users (name, fullname, pwhash, session_timeout_min, ctime, mtime)"
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6)";
static const char sql_user_update[] = "UPDATE users SET fullname = ?2, pwhash = ?3,"
                                      " session_timeout_min = ?4, mtime = ?5 WHERE name = ?1";
static const char sql_user_delete[] = "DELETE FROM users WHERE name = ?1";
static const char sql_user_count[] = "SELECT count(*) FROM users";
/* OR IGNORE skips a role named twice; it does not apply to foreign keys. */
static const char sql_user_role_add[] =
    "INSERT OR IGNORE INTO user_roles (user, role) VALUES (?1, ?2)";
static const char sql_user_roles_clear[] = "DELETE FROM user_roles WHERE user = ?1";
static const char sql_role_holders[] = "SELECT count(*) FROM user_roles WHERE role = ?1";

/* Reads a users-join-roles query: one user per rowid, one role per row, so a single
 * statement answers and is reset before any caller code runs. *out is for free(). */
static int db_user_rows(struct db *db, sqlite3_stmt *st, struct db_user **out, size_t *nout)
{
	struct db_user *users = NULL, *u;
	size_t n = 0, cap = 0;
	int64_t rowid = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == 0 || sqlite3_column_int64(st, 0) != rowid) {
			users = util_grow(users, &cap, n, sizeof(*users));
			u = &users[n++];
			memset(u, 0, sizeof(*u));
			rowid = sqlite3_column_int64(st, 0);
			db_col_text(st, 1, u->name, sizeof(u->name));
			db_col_text(st, 2, u->fullname, sizeof(u->fullname));
			db_col_text(st, 3, u->pwhash, sizeof(u->pwhash));
			u->session_timeout_min = sqlite3_column_int(st, 4);
			u->ctime = sqlite3_column_int64(st, 5);
			u->mtime = sqlite3_column_int64(st, 6);
		}
		u = &users[n - 1];
		if (sqlite3_column_type(st, 7) == SQLITE_NULL)
			continue;
		if (u->nroles == DB_ROLES_MAX) {
			log_warn("db: user %s holds more than %d roles; ignoring the rest", u->name,
			         DB_ROLES_MAX);
			continue;
		}
		db_col_text(st, 7, u->roles[u->nroles], sizeof(u->roles[0]));
		u->nroles++;
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading users");
		db_reset(st);
		free(users);
		return -1;
	}
	db_reset(st);
	*out = users;
	*nout = n;
	return 0;
}

int db_user_get(struct db *db, const char *name, struct db_user *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_GET, sql_user_get);
	struct db_user *users;
	size_t n;

	if (!st || db_bind_text(db, st, 1, name, SIZE_MAX) == -1 ||
	    db_user_rows(db, st, &users, &n) == -1)
		return -1;
	if (n > 0)
		*out = users[0];
	free(users);
	return n > 0 ? 0 : DB_NOTFOUND;
}

int db_user_list(struct db *db, int (*cb)(void *arg, const struct db_user *u), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_LIST, sql_user_list);
	struct db_user *users;
	size_t i, n;
	int ret = 0;

	if (!st || db_user_rows(db, st, &users, &n) == -1)
		return -1;
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &users[i]);
	free(users);
	return ret;
}

/* More roles than the struct can hold back is a caller bug, not a user error. */
static int db_user_check(const struct db_user *u)
{
	if (u->nroles < 0 || u->nroles > DB_ROLES_MAX) {
		log_err("db: user %.*s: %d roles", DB_NAME_MAX, u->name, u->nroles);
		return -1;
	}
	return 0;
}

/* Inside a transaction: gives the user exactly u's roles. An unknown role is DB_NOTFOUND. */
static int db_user_roles_write(struct db *db, const struct db_user *u)
{
	sqlite3_stmt *st;
	int i, rc;

	st = db_stmt(db, DB_STMT_USER_ROLES_CLEAR, sql_user_roles_clear);
	if (!st || db_bind_text(db, st, 1, u->name, sizeof(u->name)) == -1 ||
	    db_write(db, st, "clearing user roles") != 0)
		return -1;
	st = db_stmt(db, DB_STMT_USER_ROLE_ADD, sql_user_role_add);
	if (!st)
		return -1;
	for (i = 0; i < u->nroles; i++) {
		if (db_bind_text(db, st, 1, u->name, sizeof(u->name)) == -1 ||
		    db_bind_text(db, st, 2, u->roles[i], sizeof(u->roles[i])) == -1)
			return -1;
		rc = db_write(db, st, "adding a user role");
		if (rc == DB_CONFLICT_FK)
			return DB_NOTFOUND;
		if (rc != 0)
			return -1;
	}
	return 0;
}

static int db_user_insert_tx(struct db *db, const struct db_user *u)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_INSERT, sql_user_insert);
	int rc;

	if (!st || db_bind_text(db, st, 1, u->name, sizeof(u->name)) == -1 ||
	    db_bind_text(db, st, 2, u->fullname, sizeof(u->fullname)) == -1 ||
	    db_bind_text(db, st, 3, u->pwhash, sizeof(u->pwhash)) == -1 ||
	    db_bind_int64(db, st, 4, u->session_timeout_min) == -1 ||
	    db_bind_int64(db, st, 5, db_time_or_now(u->ctime)) == -1 ||
	    db_bind_int64(db, st, 6, db_time_or_now(u->mtime)) == -1)
		return -1;
	rc = db_write(db, st, "inserting a user");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc != 0)
		return -1;
	return db_user_roles_write(db, u);
}

int db_user_insert(struct db *db, const struct db_user *u)
{
	if (db_user_check(u) == -1 || db_begin(db) == -1)
		return -1;
	return db_end(db, db_user_insert_tx(db, u));
}

static int db_user_update_tx(struct db *db, const struct db_user *u)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_UPDATE, sql_user_update);

	if (!st || db_bind_text(db, st, 1, u->name, sizeof(u->name)) == -1 ||
	    db_bind_text(db, st, 2, u->fullname, sizeof(u->fullname)) == -1 ||
	    db_bind_text(db, st, 3, u->pwhash, sizeof(u->pwhash)) == -1 ||
	    db_bind_int64(db, st, 4, u->session_timeout_min) == -1 ||
	    db_bind_int64(db, st, 5, db_time_or_now(u->mtime)) == -1 ||
	    db_write(db, st, "updating a user") != 0)
		return -1;
	if (sqlite3_changes(db->conn) == 0)
		return DB_NOTFOUND;
	return db_user_roles_write(db, u);
}

int db_user_update(struct db *db, const struct db_user *u)
{
	if (db_user_check(u) == -1 || db_begin(db) == -1)
		return -1;
	return db_end(db, db_user_update_tx(db, u));
}

int db_user_delete(struct db *db, const char *name)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_DELETE, sql_user_delete);

	/* One statement: the cascades to user_roles and sessions share its transaction. */
	if (!st || db_bind_text(db, st, 1, name, SIZE_MAX) == -1 ||
	    db_write(db, st, "deleting a user") != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

int db_user_count(struct db *db)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_USER_COUNT, sql_user_count);
	int64_t n;

	if (!st || db_query_int64(db, st, "counting users", &n) != 0)
		return -1;
	return (int)n;
}

int db_role_holders(struct db *db, const char *role)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ROLE_HOLDERS, sql_role_holders);
	int64_t n;

	if (!st || db_bind_text(db, st, 1, role, SIZE_MAX) == -1 ||
	    db_query_int64(db, st, "counting role holders", &n) != 0)
		return -1;
	return (int)n;
}
