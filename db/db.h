/* The store: the only place that speaks SQL. Everything runs on the loop thread
 * unless a function says otherwise. Return values: 0 ok, DB_NOTFOUND, DB_EXISTS,
 * DB_INUSE, or -1 on an SQLite error (logged). A write that fails changes nothing.
 * Timestamps (ctime, mtime, created, last_seen, time) left at 0 are stored as now.
 * List callbacks run after the query is finished, so they may call the store. */
#ifndef SPINDLE_DB_H
#define SPINDLE_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#define DB_NOTFOUND 1
#define DB_EXISTS   2
#define DB_INUSE    3

#define DB_NAME_MAX      64 /* user, role and token names */
#define DB_ROLES_MAX     16 /* roles one user may hold */
#define DB_AUTHS_MAX     32 /* authorizations one role may hold */
#define DB_AUTH_NAME_MAX 31

struct db;

/* Opens (creating if needed) the database, sets WAL, busy timeout, foreign keys,
 * synchronous=FULL, and runs pending migrations, each in its own transaction.
 * NULL with a message in err on failure. */
struct db *db_open(const char *path, char *err, size_t errlen);
void db_close(struct db *db);
int db_schema_version(struct db *db);
/* Bytes the database file(s) take on disk. */
int64_t db_size_bytes(struct db *db);

struct db_user {
	char name[DB_NAME_MAX + 1];
	char fullname[129];
	char pwhash[256];
	int session_timeout_min;
	int64_t ctime, mtime;
	int nroles;
	char roles[DB_ROLES_MAX][DB_NAME_MAX + 1];
};

int db_user_get(struct db *db, const char *name, struct db_user *out);
/* Calls cb for each user ordered by name; a non-zero return from cb stops and is returned. */
int db_user_list(struct db *db, int (*cb)(void *arg, const struct db_user *u), void *arg);
/* DB_EXISTS; DB_NOTFOUND when one of u->roles does not exist (then nothing is inserted). */
int db_user_insert(struct db *db, const struct db_user *u);
/* All fields but ctime, and the roles. DB_NOTFOUND when the user or one of the roles does
 * not exist (then nothing changes). */
int db_user_update(struct db *db, const struct db_user *u);
int db_user_delete(struct db *db, const char *name); /* and its sessions; DB_NOTFOUND */
int db_user_count(struct db *db);
/* How many users hold the role; -1 on error. */
int db_role_holders(struct db *db, const char *role);

struct db_role {
	char name[DB_NAME_MAX + 1];
	char description[257];
	bool builtin;
	int64_t ctime, mtime;
	int nauths;
	char auths[DB_AUTHS_MAX][DB_AUTH_NAME_MAX + 1];
};

int db_role_get(struct db *db, const char *name, struct db_role *out);
int db_role_list(struct db *db, int (*cb)(void *arg, const struct db_role *r), void *arg);
int db_role_insert(struct db *db, const struct db_role *r); /* DB_EXISTS */
int db_role_update(struct db *db, const struct db_role *r); /* DB_NOTFOUND; keeps builtin, ctime */
int db_role_delete(struct db *db, const char *name);        /* DB_NOTFOUND, DB_INUSE */

enum db_session_kind { DB_SESSION_LOGIN = 0, DB_SESSION_TOKEN = 1 };

struct db_session {
	char jti[33];
	char user[DB_NAME_MAX + 1];
	enum db_session_kind kind;
	char name[DB_NAME_MAX + 1]; /* API tokens only */
	char address[64];           /* where it was created */
	int64_t created, expires, last_seen;
};

/* DB_EXISTS for a known jti or a token name the user already has; DB_NOTFOUND for an
 * unknown user. */
int db_session_insert(struct db *db, const struct db_session *s);
int db_session_delete(struct db *db, const char *jti); /* DB_NOTFOUND */
/* Deletes all sessions of user but except_jti (may be NULL); returns how many, or -1. */
int db_session_delete_user(struct db *db, const char *user, const char *except_jti);
int db_session_list(struct db *db, int (*cb)(void *arg, const struct db_session *s), void *arg);
/* Persist last_seen (only) for many sessions in one transaction; NULL entries and
 * sessions gone meanwhile are skipped. */
int db_session_touch(struct db *db, const struct db_session *const *s, size_t n);
/* Delete sessions whose expires < now; returns how many, or -1. */
int db_session_prune(struct db *db, int64_t now);

struct db_audit {
	int64_t id;
	int64_t time;
	char user[DB_NAME_MAX + 1];
	char address[64];
	char action[32];
	char target[129];
	char details[257];
	bool ok;
};

int db_audit_insert(struct db *db, const struct db_audit *a);
/* Entries with time >= start, oldest first, at most limit (none when limit <= 0). */
int db_audit_list(struct db *db, int64_t start, int limit,
                  int (*cb)(void *arg, const struct db_audit *a), void *arg);

#endif
