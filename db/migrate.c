/* Schema migrations: PRAGMA user_version counts the steps applied. Each step runs as
 * BEGIN IMMEDIATE; DDL; PRAGMA user_version=N; COMMIT, so a crash leaves the schema at a
 * whole step. Append new steps at the end of migrate_steps; never edit a shipped one. */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "migrate.h"
#include "log.h"
#include "util.h"

struct migrate_step {
	int version;
	const char *sql;
};

/* Step 1: accounts, sessions and the audit trail. */
static const char migrate_step1[] =
    "CREATE TABLE users ("
    " name TEXT PRIMARY KEY NOT NULL,"
    " fullname TEXT NOT NULL DEFAULT '',"
    " pwhash TEXT NOT NULL,"
    " session_timeout_min INTEGER NOT NULL,"
    " ctime INTEGER NOT NULL,"
    " mtime INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE roles ("
    " name TEXT PRIMARY KEY NOT NULL,"
    " description TEXT NOT NULL DEFAULT '',"
    " builtin INTEGER NOT NULL DEFAULT 0 CHECK (builtin IN (0, 1)),"
    " ctime INTEGER NOT NULL,"
    " mtime INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE role_auths ("
    " role TEXT NOT NULL REFERENCES roles(name) ON DELETE CASCADE,"
    " auth TEXT NOT NULL,"
    " PRIMARY KEY (role, auth)"
    ") STRICT, WITHOUT ROWID;"
    /* RESTRICT backs up db_role_delete's holder check (DB_INUSE). */
    "CREATE TABLE user_roles ("
    " user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,"
    " role TEXT NOT NULL REFERENCES roles(name) ON DELETE RESTRICT,"
    " PRIMARY KEY (user, role)"
    ") STRICT, WITHOUT ROWID;"
    /* For the foreign key check on role deletes and for db_role_holders. */
    "CREATE INDEX user_roles_role ON user_roles(role);"
    "CREATE TABLE sessions ("
    " jti TEXT PRIMARY KEY NOT NULL,"
    " user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,"
    " kind INTEGER NOT NULL CHECK (kind IN (0, 1)),"
    " name TEXT NOT NULL DEFAULT '',"
    " address TEXT NOT NULL DEFAULT '',"
    " created INTEGER NOT NULL,"
    " expires INTEGER NOT NULL,"
    " last_seen INTEGER NOT NULL"
    ") STRICT;"
    "CREATE INDEX sessions_user ON sessions(user);"
    "CREATE INDEX sessions_expires ON sessions(expires);"
    /* A user's API tokens (kind 1) have distinct names; logins have none. */
    "CREATE UNIQUE INDEX sessions_token_name ON sessions(user, name) WHERE kind = 1;"
    /* No foreign key on user: the trail outlives the accounts it names. */
    "CREATE TABLE audit ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " time INTEGER NOT NULL,"
    " user TEXT NOT NULL DEFAULT '',"
    " address TEXT NOT NULL DEFAULT '',"
    " action TEXT NOT NULL,"
    " target TEXT NOT NULL DEFAULT '',"
    " details TEXT NOT NULL DEFAULT '',"
    " ok INTEGER NOT NULL CHECK (ok IN (0, 1))"
    ") STRICT;"
    "CREATE INDEX audit_time ON audit(time);";

static const struct migrate_step migrate_steps[] = {
    {1, migrate_step1},
};

int migrate_latest(void)
{
	return migrate_steps[nitems(migrate_steps) - 1].version;
}

static int migrate_fail(sqlite3 *conn, char *err, size_t errlen, const char *what)
{
	snprintf(err, errlen, "database %s: %s", what, sqlite3_errmsg(conn));
	log_err("db: %s", err);
	return -1;
}

static int migrate_user_version(sqlite3 *conn, int *out, char *err, size_t errlen)
{
	sqlite3_stmt *st;
	int rc;

	if (sqlite3_prepare_v2(conn, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
		return migrate_fail(conn, err, errlen, "reading user_version");
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW)
		*out = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW)
		return migrate_fail(conn, err, errlen, "reading user_version");
	return 0;
}

static int migrate_too_new(int version, char *err, size_t errlen)
{
	snprintf(err, errlen,
	         "database schema version %d is newer than this spindled knows (%d): "
	         "refusing to open it; run the newer spindled or restore a backup",
	         version, migrate_latest());
	log_err("db: %s", err);
	return -1;
}

/* One step in its own write transaction. The version is read again under the lock, so
 * two processes opening the same new database cannot both apply a step. */
static int migrate_step(sqlite3 *conn, const struct migrate_step *step, int *version, char *err,
                        size_t errlen)
{
	char pragma[64];
	char *msg = NULL;
	int current;

	if (sqlite3_exec(conn, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return migrate_fail(conn, err, errlen, "starting a migration");
	if (migrate_user_version(conn, &current, err, errlen) == -1)
		goto fail;
	if (current > migrate_latest()) {
		migrate_too_new(current, err, errlen);
		goto fail;
	}
	if (current >= step->version) {
		*version = current;
		sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
		return 0;
	}
	if (sqlite3_exec(conn, step->sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(err, errlen, "database migration to version %d: %s", step->version,
		         msg ? msg : sqlite3_errmsg(conn));
		log_err("db: %s", err);
		sqlite3_free(msg);
		goto fail;
	}
	snprintf(pragma, sizeof(pragma), "PRAGMA user_version = %d", step->version);
	if (sqlite3_exec(conn, pragma, NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_exec(conn, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
		migrate_fail(conn, err, errlen, "committing a migration");
		goto fail;
	}
	*version = step->version;
	log_info("db: schema migrated to version %d", step->version);
	return 0;
fail:
	if (!sqlite3_get_autocommit(conn))
		sqlite3_exec(conn, "ROLLBACK", NULL, NULL, NULL);
	return -1;
}

int migrate_run(sqlite3 *conn, int *version, char *err, size_t errlen)
{
	size_t i;

	if (migrate_user_version(conn, version, err, errlen) == -1)
		return -1;
	if (*version > migrate_latest())
		return migrate_too_new(*version, err, errlen);
	for (i = 0; i < nitems(migrate_steps); i++) {
		/* Steps are numbered 1, 2, 3...: a gap would skip DDL for good. */
		if (migrate_steps[i].version != (int)i + 1) {
			snprintf(err, errlen, "migration table out of order at step %zu", i + 1);
			log_err("db: %s", err);
			return -1;
		}
		if (migrate_steps[i].version <= *version)
			continue;
		if (migrate_step(conn, &migrate_steps[i], version, err, errlen) == -1)
			return -1;
	}
	return 0;
}
