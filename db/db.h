/* SPDX-License-Identifier: ISC */
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
/* Whether the last -1 from a function on db was for want of space (the filesystem, or
 * the database, is full): nothing was changed, and the same write may succeed once space
 * returns. Callers answer it as ERR_NO_SPACE. */
bool db_full(const struct db *db);
/* Whether the last error logged was another writer holding the lock past the busy
 * timeout (another process: an administrator's sqlite3, a backup). */
bool db_locked(const struct db *db);
/* How long a write waits for another writer's lock (DB_BUSY_TIMEOUT_MS from db_open). */
#define DB_BUSY_TIMEOUT_MS 5000
void db_busy_timeout(struct db *db, int ms);
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

/* A browser kept signed in: the public key (base64url of its DER SubjectPublicKeyInfo) of a
 * key pair the browser holds and cannot export. */
#define DB_DEVICE_KEY_MAX 256 /* base64url of a P-256 SPKI is 122 */
struct db_device {
	char id[33];
	char user[DB_NAME_MAX + 1];
	char name[DB_NAME_MAX + 1];
	char public_key[DB_DEVICE_KEY_MAX + 1];
	char address[64]; /* where it was made */
	int64_t created, last_used, expires;
};

/* DB_EXISTS for a known id, DB_NOTFOUND for an unknown user. */
int db_device_insert(struct db *db, const struct db_device *d);
int db_device_get(struct db *db, const char *id, struct db_device *out); /* DB_NOTFOUND */
/* The user's devices, oldest first: *out for free(), *n of them. */
int db_device_list(struct db *db, const char *user, struct db_device **out, size_t *n);
int db_device_delete(struct db *db, const char *id); /* DB_NOTFOUND */
/* All of a user's; returns how many, or -1. */
int db_device_delete_user(struct db *db, const char *user);
/* A login with it: last_used and expires move. DB_NOTFOUND when it is gone. */
int db_device_use(struct db *db, const char *id, int64_t last_used, int64_t expires);
/* Those whose expires < now go; returns how many, or -1. */
int db_device_prune(struct db *db, int64_t now);

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
/* All of them, in one transaction. */
int db_audit_insert_many(struct db *db, const struct db_audit *a, size_t n);
/* Deletes entries with time < before, in transactions of at most 5000 rows so that no
 * other writer waits long; how many, or -1. */
int db_audit_prune(struct db *db, int64_t before);
/* Entries with time >= start, oldest first, at most limit (none when limit <= 0). */
int db_audit_list(struct db *db, int64_t start, int limit,
                  int (*cb)(void *arg, const struct db_audit *a), void *arg);

/* Worksheets (db/store_worksheets.c). Names are unique per owner. */
#define DB_WORKSHEET_NAME_MAX 128

struct db_worksheet {
	char uuid[37];
	char name[DB_WORKSHEET_NAME_MAX + 1];
	char owner[DB_NAME_MAX + 1];
	int64_t ctime, mtime;
	char *datasets;        /* JSON array text; from get: for free(); NULL in list callbacks */
	int64_t dataset_count; /* items in datasets, and the bytes of name and datasets: */
	int64_t bytes;         /* the caller sets both on insert and update */
};

int db_worksheet_get(struct db *db, const char *uuid, struct db_worksheet *out);
/* Summaries (no datasets), ordered by owner, then name: at most limit of them, from the
 * offset-th on. owner NULL: every owner's. Reads one index, never the datasets. */
int db_worksheet_list(struct db *db, const char *owner, int64_t offset, int limit,
                      int (*cb)(void *arg, const struct db_worksheet *w), void *arg);
int db_worksheet_insert(struct db *db, const struct db_worksheet *w); /* DB_EXISTS */
/* name, datasets, their count and bytes, mtime; DB_NOTFOUND, DB_EXISTS (the owner has
 * that name already). */
int db_worksheet_update(struct db *db, const struct db_worksheet *w);
int db_worksheet_delete(struct db *db, const char *uuid); /* DB_NOTFOUND */
/* How many worksheets owner has, and their bytes in all. */
int db_worksheet_usage(struct db *db, const char *owner, int64_t *count, int64_t *bytes);

/* Locator LEDs as last set (db/store_leds.c), keyed "chassis/<id>" or "disk/<id>". */
#define DB_LED_COMPONENT_MAX 160

struct db_led {
	char component[DB_LED_COMPONENT_MAX + 1];
	bool locate;
	char backend[16];
	int64_t mtime;
};

int db_led_put(struct db *db, const struct db_led *l); /* insert or replace */
/* The row and the audit entry of its change, in one transaction. */
int db_led_put_audited(struct db *db, const struct db_led *l, const struct db_audit *a);
int db_led_list(struct db *db, int (*cb)(void *arg, const struct db_led *l), void *arg);

/* Analytics (db/store_samples.c): the dataset catalog and settings on this connection. */
#define DB_DATASET_NAME_MAX 127

struct db_dataset {
	int64_t id; /* set by insert; never reused */
	char name[DB_DATASET_NAME_MAX + 1];
	char statistic[64];
	char drilldown[64]; /* "" for none */
	bool suspended;
	int64_t ctime;
};

int db_dataset_list(struct db *db, int (*cb)(void *arg, const struct db_dataset *d), void *arg);
int db_dataset_insert(struct db *db, struct db_dataset *d);              /* DB_EXISTS */
int db_dataset_set_suspended(struct db *db, int64_t id, bool suspended); /* DB_NOTFOUND */
int db_dataset_delete(struct db *db, int64_t id); /* DB_NOTFOUND; its samples: series.c */
int db_analytics_setting_get(struct db *db, const char *name, int64_t *out); /* DB_NOTFOUND */
/* All of them in one transaction. */
int db_analytics_settings_set(struct db *db, const char *const *names, const int64_t *values,
                              size_t n);

/* The samples, on connections of their own (synchronous=NORMAL): one writer thread and
 * readers on helper threads, each connection used by one thread at a time. */
enum db_samples_level {
	DB_SAMPLES_SECONDS,
	DB_SAMPLES_MINUTES,
	DB_SAMPLES_HOURS,
	DB_SAMPLES_LEVELS
};

struct db_samples;

/* The database must exist and be migrated (db_open) first. */
struct db_samples *db_samples_open(const char *path, bool readonly, char *err, size_t errlen);
void db_samples_close(struct db_samples *ds);
/* A write transaction (BEGIN IMMEDIATE) on a writer, a read snapshot on a reader. */
int db_samples_begin(struct db_samples *ds);
int db_samples_end(struct db_samples *ds, int ret); /* commits when ret is 0 */
/* As db_full, for the samples connection. */
bool db_samples_full(const struct db_samples *ds);
/* Insert or replace the row of (series, start): an hour block of seconds (start the hour),
 * an hour of minute rollups, a day of hour rollups. span is not stored. */
int db_samples_put(struct db_samples *ds, enum db_samples_level level, int64_t series,
                   int64_t start, int span, const void *data, size_t len);
/* Rows of series with start in [from, to), oldest first. Unlike the catalog's lists, cb
 * runs while the row is read (data is valid during the call only) and must not use ds. */
typedef int (*db_samples_row_fn)(void *arg, int64_t start, int span, const void *data, size_t len);
int db_samples_range(struct db_samples *ds, enum db_samples_level level, int64_t series,
                     int64_t from, int64_t to, db_samples_row_fn cb, void *arg);
int db_samples_delete(struct db_samples *ds, enum db_samples_level level, int64_t series,
                      int64_t from, int64_t to);
/* Rows and bytes of packed data a series holds at all levels. */
int db_samples_bytes(struct db_samples *ds, int64_t series, int64_t *rows, int64_t *bytes);
int db_samples_series_insert(struct db_samples *ds, int64_t id, int64_t dataset, const char *key);
int db_samples_series_delete(struct db_samples *ds, int64_t id); /* the row only */
int db_samples_series_list(struct db_samples *ds,
                           int (*cb)(void *arg, int64_t id, int64_t dataset, const char *key),
                           void *arg);
/* The flushes not yet packed into hour blocks: one row each, every series' seconds in it.
 * Ranges are by start; cb runs while the row is read, as for db_samples_range. */
int db_samples_recent_add(struct db_samples *ds, int64_t start, int span, const void *data,
                          size_t len);
typedef int (*db_samples_recent_fn)(void *arg, int64_t id, int64_t start, int span,
                                    const void *data, size_t len);
int db_samples_recent_range(struct db_samples *ds, int64_t from, int64_t to,
                            db_samples_recent_fn cb, void *arg);
/* Only rows up to max_id: a flush that came after they were read stays. */
int db_samples_recent_delete(struct db_samples *ds, int64_t from, int64_t to, int64_t max_id);
/* The hours (start - start % 3600) the flushes cover, oldest first. */
int db_samples_recent_hours(struct db_samples *ds, int (*cb)(void *arg, int64_t hour), void *arg);

/* Benchmark runs (db/store_runs.c): one row per job; its interval lines apart. */
#define DB_RUN_NAME_MAX   64
#define DB_RUN_LABEL_MAX  256
#define DB_RUN_TARGET_MAX 4096

struct db_run {
	int64_t id; /* set by insert */
	char name[DB_RUN_NAME_MAX + 1];
	char label[DB_RUN_LABEL_MAX + 1];
	char owner[DB_NAME_MAX + 1];
	char state[16]; /* queued running done failed cancelled interrupted */
	char target[DB_RUN_TARGET_MAX];
	int64_t ctime, start_time, end_time; /* start and end: 0 while not yet */
	char reason[512];
	/* JSON texts. From get and list: allocated (db_run_clear); list leaves start and
	 * environment NULL and result only {"summary":...}. */
	char *spec, *start, *result;
	char *environment; /* what the target sat on, resolved at submit; NULL: not yet */
	int64_t sweep;     /* the sweep the run belongs to; 0: none */
	bool imported;     /* stored from a fio result, not run here */
};

void db_run_clear(struct db_run *r);
int db_run_insert(struct db *db, struct db_run *r); /* sets r->id */
/* Everything but id, name, label, owner and ctime. DB_NOTFOUND. */
int db_run_update(struct db *db, const struct db_run *r);
int db_run_get(struct db *db, int64_t id, struct db_run *out); /* DB_NOTFOUND */
/* Newest first (by id), ctime >= start; state and label (exact) NULL for any; of sweep (0:
 * any); ids below before (0: any); at most limit. */
int db_run_list(struct db *db, const char *state, const char *label, int64_t start, int64_t sweep,
                int64_t before, int limit, int (*cb)(void *arg, const struct db_run *r), void *arg);
int db_run_delete(struct db *db, int64_t id); /* and its intervals; DB_NOTFOUND */
/* Runs left 'running' (the daemon stopped under them) become 'interrupted'; how many. */
int db_run_interrupt_running(struct db *db, const char *reason, int64_t now);
/* Ids of the queued runs, oldest first. */
int db_run_queued(struct db *db, int (*cb)(void *arg, int64_t id), void *arg);
/* In one transaction: n interval lines of the run, numbered from first_seq, and its row r
 * (as db_run_update; NULL: none). Safe on a helper thread with a connection of its own
 * (a second db_open), one thread at a time. */
int db_run_save(struct db *db, int64_t run, const struct db_run *r, int64_t first_seq,
                const char *const *lines, size_t n);
int db_run_intervals(struct db *db, int64_t run,
                     int (*cb)(void *arg, int64_t seq, const char *line), void *arg);

/* Sweeps (db/store_sweeps.c): one spec over a matrix of values, its runs in bench_runs
 * (their sweep column), queued in the order of the combinations, so the k-th run by id is
 * the k-th combination. */
struct db_sweep {
	int64_t id; /* set by insert */
	char name[DB_RUN_NAME_MAX + 1];
	char label[DB_RUN_LABEL_MAX + 1];
	char owner[DB_NAME_MAX + 1];
	int64_t ctime;
	char *spec, *axes; /* JSON texts: the base spec, the axes; allocated (db_sweep_clear) */
	bool cancelled;
};

/* A run of a sweep as its table needs it. The figures are read only when asked for, and
 * are NaN where the result has none (or there is no result). */
enum db_sweep_fig {
	DB_SWEEP_IOPS,
	DB_SWEEP_READ_IOPS,
	DB_SWEEP_WRITE_IOPS,
	DB_SWEEP_READ_OPS,
	DB_SWEEP_WRITE_OPS,
	DB_SWEEP_READ_P99,
	DB_SWEEP_WRITE_P99,
	DB_SWEEP_READ_BPS,
	DB_SWEEP_WRITE_BPS,
	DB_SWEEP_NFIGS
};
struct db_sweep_run {
	int64_t id;
	char state[16];
	char reason[512];
	double fig[DB_SWEEP_NFIGS];
};

void db_sweep_clear(struct db_sweep *s);
int db_sweep_insert(struct db *db, struct db_sweep *s); /* sets s->id */
/* The sweep and its runs (their sweep set to its id) in one transaction: all of them, or
 * none (a crash or a full disk midway leaves no part of a sweep to run). Sets the ids. */
int db_sweep_insert_runs(struct db *db, struct db_sweep *s, struct db_run *const *runs, size_t n);
int db_sweep_get(struct db *db, int64_t id, struct db_sweep *out); /* DB_NOTFOUND */
/* Newest first (by id), at most limit, ids below before (0: any). */
int db_sweep_list(struct db *db, int64_t before, int limit,
                  int (*cb)(void *arg, const struct db_sweep *s), void *arg);
int db_sweep_set_cancelled(struct db *db, int64_t id); /* DB_NOTFOUND */
/* The sweep with its runs and their interval lines, in one transaction. DB_NOTFOUND. */
int db_sweep_delete(struct db *db, int64_t id);
/* Its runs by id (the order of the combinations), with their figures when figures. */
int db_sweep_runs(struct db *db, int64_t sweep, bool figures,
                  int (*cb)(void *arg, const struct db_sweep_run *r), void *arg);

#endif
