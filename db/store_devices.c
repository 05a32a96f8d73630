/* SPDX-License-Identifier: ISC */
/* Devices: browsers kept signed in, each by the public key of a key pair it holds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"

#define DEVICE_COLUMNS "id, user, name, public_key, address, created, last_used, expires"

static const char sql_device_insert[] = "INSERT INTO devices (" DEVICE_COLUMNS ")"
                                        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
static const char sql_device_get[] = "SELECT " DEVICE_COLUMNS " FROM devices WHERE id = ?1";
static const char sql_device_list[] =
    "SELECT " DEVICE_COLUMNS " FROM devices WHERE user = ?1 ORDER BY created, rowid";
static const char sql_device_delete[] = "DELETE FROM devices WHERE id = ?1";
static const char sql_device_delete_user[] = "DELETE FROM devices WHERE user = ?1";
static const char sql_device_use[] =
    "UPDATE devices SET last_used = ?2, expires = ?3 WHERE id = ?1";
static const char sql_device_prune[] = "DELETE FROM devices WHERE expires < ?1";

int db_device_insert(struct db *db, const struct db_device *d)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DEVICE_INSERT, sql_device_insert);
	if (!st || db_bind_text(db, st, 1, d->id, sizeof(d->id)) == -1 ||
	    db_bind_text(db, st, 2, d->user, sizeof(d->user)) == -1 ||
	    db_bind_text(db, st, 3, d->name, sizeof(d->name)) == -1 ||
	    db_bind_text(db, st, 4, d->public_key, sizeof(d->public_key)) == -1 ||
	    db_bind_text(db, st, 5, d->address, sizeof(d->address)) == -1 ||
	    db_bind_int64(db, st, 6, db_time_or_now(d->created)) == -1 ||
	    db_bind_int64(db, st, 7, db_time_or_now(d->last_used)) == -1 ||
	    db_bind_int64(db, st, 8, d->expires) == -1)
		return -1;
	int rc = db_write(db, st, "inserting a device");
	if (rc == DB_CONFLICT_UNIQUE)
		return DB_EXISTS;
	if (rc == DB_CONFLICT_FK)
		return DB_NOTFOUND;
	return rc == 0 ? 0 : -1;
}

static void device_row(sqlite3_stmt *st, void *row)
{
	struct db_device *d = row;
	db_col_text(st, 0, d->id, sizeof(d->id));
	db_col_text(st, 1, d->user, sizeof(d->user));
	db_col_text(st, 2, d->name, sizeof(d->name));
	db_col_text(st, 3, d->public_key, sizeof(d->public_key));
	db_col_text(st, 4, d->address, sizeof(d->address));
	d->created = sqlite3_column_int64(st, 5);
	d->last_used = sqlite3_column_int64(st, 6);
	d->expires = sqlite3_column_int64(st, 7);
}

int db_device_get(struct db *db, const char *id, struct db_device *out)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DEVICE_GET, sql_device_get);
	struct db_device *rows = NULL;
	size_t n = 0;
	if (!st || db_bind_text(db, st, 1, id, SIZE_MAX) == -1 ||
	    db_read_rows(db, st, sizeof(*rows), device_row, "reading a device", (void **)&rows,
	                 &n) == -1) {
		free(rows);
		return -1;
	}
	if (n > 0)
		*out = rows[0];
	free(rows);
	return n > 0 ? 0 : DB_NOTFOUND;
}

int db_device_list(struct db *db, const char *user, struct db_device **out, size_t *n)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DEVICE_LIST, sql_device_list);
	*out = NULL;
	*n = 0;
	if (!st || db_bind_text(db, st, 1, user, SIZE_MAX) == -1)
		return -1;
	if (db_read_rows(db, st, sizeof(**out), device_row, "reading devices", (void **)out, n) ==
	    -1) {
		free(*out);
		*out = NULL;
		*n = 0;
		return -1;
	}
	return 0;
}

static int device_write(struct db *db, enum db_stmt_id id, const char *sql, const char *key,
                        const char *what)
{
	sqlite3_stmt *st = db_stmt(db, id, sql);
	if (!st || db_bind_text(db, st, 1, key, SIZE_MAX) == -1 || db_write(db, st, what) != 0)
		return -1;
	return sqlite3_changes(db->conn);
}

int db_device_delete(struct db *db, const char *id)
{
	int n = device_write(db, DB_STMT_DEVICE_DELETE, sql_device_delete, id, "deleting a device");
	return n < 0 ? -1 : n > 0 ? 0 : DB_NOTFOUND;
}

int db_device_delete_user(struct db *db, const char *user)
{
	return device_write(db, DB_STMT_DEVICE_DELETE_USER, sql_device_delete_user, user,
	                    "deleting a user's devices");
}

int db_device_use(struct db *db, const char *id, int64_t last_used, int64_t expires)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DEVICE_USE, sql_device_use);
	if (!st || db_bind_text(db, st, 1, id, SIZE_MAX) == -1 ||
	    db_bind_int64(db, st, 2, last_used) == -1 || db_bind_int64(db, st, 3, expires) == -1 ||
	    db_write(db, st, "using a device") != 0)
		return -1;
	return sqlite3_changes(db->conn) > 0 ? 0 : DB_NOTFOUND;
}

int db_device_prune(struct db *db, int64_t now)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_DEVICE_PRUNE, sql_device_prune);
	if (!st || db_bind_int64(db, st, 1, now) == -1 || db_write(db, st, "pruning devices") != 0)
		return -1;
	return sqlite3_changes(db->conn);
}
