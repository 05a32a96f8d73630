/* SPDX-License-Identifier: ISC */
/* Roles and the authorizations they hold (roles, role_auths). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

#define ROLE_SELECT                                                                                \
	"SELECT r.rowid, r.name, r.description, r.builtin, r.ctime, r.mtime, ra.auth"              \
	" FROM roles r LEFT JOIN role_auths ra ON ra.role = r.name"

static const char sql_role_get[] = ROLE_SELECT " WHERE r.name = ?1 ORDER BY ra.auth";
static const char sql_role_list[] = ROLE_SELECT " ORDER BY r.name, ra.auth";
static const char sql_role_insert[] =
    "INSERT INTO roles (name, description, builtin, ctime, mtime) VALUES (?1, ?2, ?3, ?4, ?5)";
/* builtin and ctime are set once, at insert. */
static const char sql_role_update[] =
    "UPDATE roles SET description = ?2, mtime = ?3 WHERE name = ?1";
/* role_auths cascade. user_roles restricts as a safety net, but SQLite reports that as a
 * trigger failure, so db_role_delete counts holders first. */
static const char sql_role_delete[] = "DELETE FROM roles WHERE name = ?1";
static const char sql_role_auth_add[] =
    "INSERT OR IGNORE INTO role_auths (role, auth) VALUES (?1, ?2)";
static const char sql_role_auths_clear[] = "DELETE FROM role_auths WHERE role = ?1";

/* Reads a roles-join-auths query: one role per rowid, one authorization per row, so a
 * single statement answers and is reset before any caller code runs. *out is for free(). */
static int db_role_rows(struct db *db, sqlite3_stmt *st, struct db_role **out, size_t *nout)
{
	struct db_role *roles = NULL, *r;
	size_t n = 0, cap = 0;
	int64_t rowid = 0;
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == 0 || sqlite3_column_int64(st, 0) != rowid) {
			roles = util_grow(roles, &cap, n, sizeof(*roles));
			r = &roles[n++];
			memset(r, 0, sizeof(*r));
			rowid = sqlite3_column_int64(st, 0);
			db_col_text(st, 1, r->name, sizeof(r->name));
			db_col_text(st, 2, r->description, sizeof(r->description));
			r->builtin = sqlite3_column_int(st, 3) != 0;
			r->ctime = sqlite3_column_int64(st, 4);
			r->mtime = sqlite3_column_int64(st, 5);
		}
		r = &roles[n - 1];
		if (sqlite3_column_type(st, 6) == SQLITE_NULL)
			continue;
		if (r->nauths == DB_AUTHS_MAX) {
			log_warn("db: role %s holds more than %d authorizations; ignoring the rest",
			         r->name, DB_AUTHS_MAX);
			continue;
		}
		db_col_text(st, 6, r->auths[r->nauths], sizeof(r->auths[0]));
		r->nauths++;
	}
	if (rc != SQLITE_DONE) {
		db_log(db, "reading roles");
		db_reset(st);
		free(roles);
		return -1;
	}
	db_reset(st);
	*out = roles;
	*nout = n;
	return 0;
}

int db_role_get(struct db *db, const char *name, struct db_role *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ROLE_GET, sql_role_get);
	struct db_role *roles;
	size_t n;

	if (!st || db_bind_text(db, st, 1, name, SIZE_MAX) == -1 ||
	    db_role_rows(db, st, &roles, &n) == -1)
		return -1;
	if (n > 0)
		*out = roles[0];
	free(roles);
	return n > 0 ? 0 : DB_NOTFOUND;
}

int db_role_list(struct db *db, int (*cb)(void *arg, const struct db_role *r), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ROLE_LIST, sql_role_list);
	struct db_role *roles;
	size_t i, n;
	int ret = 0;

	if (!st || db_role_rows(db, st, &roles, &n) == -1)
		return -1;
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &roles[i]);
	free(roles);
	return ret;
}

/* More authorizations than the struct can hold back is a caller bug. */
static int db_role_check(const struct db_role *r)
{
	if (r->nauths < 0 || r->nauths > DB_AUTHS_MAX) {
		log_err("db: role %.*s: %d authorizations", DB_NAME_MAX, r->name, r->nauths);
		return -1;
	}
	return 0;
}

/* Inside a transaction: gives the role exactly r's authorizations. */
static int db_role_auths_write(struct db *db, const struct db_role *r)
{
	sqlite3_stmt *st;
	int i;

	st = db_stmt(db, DB_STMT_ROLE_AUTHS_CLEAR, sql_role_auths_clear);
	if (!st || db_bind_text(db, st, 1, r->name, sizeof(r->name)) == -1 ||
	    db_write(db, st, "clearing role authorizations") != 0)
		return -1;
	st = db_stmt(db, DB_STMT_ROLE_AUTH_ADD, sql_role_auth_add);
	if (!st)
		return -1;
	for (i = 0; i < r->nauths; i++)
		if (db_bind_text(db, st, 1, r->name, sizeof(r->name)) == -1 ||
		    db_bind_text(db, st, 2, r->auths[i], sizeof(r->auths[i])) == -1 ||
		    db_write(db, st, "adding a role authorization") != 0)
			return -1;
	return 0;
}

static int db_role_insert_tx(struct db *db, const struct db_role *r)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ROLE_INSERT, sql_role_insert);
	int rc;

	if (!st || db_bind_text(db, st, 1, r->name, sizeof(r->name)) == -1 ||
	    db_bind_text(db, st, 2, r->description, sizeof(r->description)) == -1 ||
	    db_bind_int64(db, st, 3, r->builtin ? 1 : 0) == -1 ||
	    db_bind_int64(db, st, 4, db_time_or_now(r->ctime)) == -1 ||
	    db_bind_int64(db, st, 5, db_time_or_now(r->mtime)) == -1)
		return -1;
	rc = db_write(db, st, "inserting a role");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc != 0)
		return -1;
	return db_role_auths_write(db, r);
}

int db_role_insert(struct db *db, const struct db_role *r)
{
	if (db_role_check(r) == -1 || db_begin(db) == -1)
		return -1;
	return db_end(db, db_role_insert_tx(db, r));
}

static int db_role_update_tx(struct db *db, const struct db_role *r)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_ROLE_UPDATE, sql_role_update);

	if (!st || db_bind_text(db, st, 1, r->name, sizeof(r->name)) == -1 ||
	    db_bind_text(db, st, 2, r->description, sizeof(r->description)) == -1 ||
	    db_bind_int64(db, st, 3, db_time_or_now(r->mtime)) == -1 ||
	    db_write(db, st, "updating a role") != 0)
		return -1;
	if (sqlite3_changes(db->conn) == 0)
		return DB_NOTFOUND;
	return db_role_auths_write(db, r);
}

int db_role_update(struct db *db, const struct db_role *r)
{
	if (db_role_check(r) == -1 || db_begin(db) == -1)
		return -1;
	return db_end(db, db_role_update_tx(db, r));
}

static int db_role_delete_tx(struct db *db, const char *name)
{
	sqlite3_stmt *st;
	int holders = db_role_holders(db, name);

	if (holders != 0)
		return holders > 0 ? DB_INUSE : -1;
	st = db_stmt(db, DB_STMT_ROLE_DELETE, sql_role_delete);
	if (!st || db_bind_text(db, st, 1, name, SIZE_MAX) == -1 ||
	    db_write(db, st, "deleting a role") != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

/* Count and delete under one write lock, so no one takes the role in between. */
int db_role_delete(struct db *db, const char *name)
{
	if (db_begin(db) == -1)
		return -1;
	return db_end(db, db_role_delete_tx(db, name));
}
