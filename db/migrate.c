/* SPDX-License-Identifier: ISC */
/* Schema migrations: PRAGMA user_version counts the steps applied. Each step runs as
 * BEGIN IMMEDIATE; DDL; PRAGMA user_version=N; COMMIT, so a crash leaves the schema at a
 * whole step. Append new steps at the end of migrate_steps; never edit a shipped one. */
#include <stdio.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"
#include "base/util.h"

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

/* Step 2: the locator LEDs as last set, so a restart keeps them (server/hardware/leds.c). */
static const char migrate_step2[] =
    "CREATE TABLE led_state ("
    " component TEXT PRIMARY KEY NOT NULL," /* "chassis/<id>" or "disk/<id>" */
    " locate INTEGER NOT NULL CHECK (locate IN (0, 1)),"
    " backend TEXT NOT NULL,"
    " mtime INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;";

/* Step 3: analytics (server/analytics/series.c, server/analytics/datasets.c, db/store_samples.c).
 * Each flush (every 10 s) is one analytics_recent row holding every series' packed seconds, so it
 * touches a page or two; once an hour is complete its rows become one block per series in
 * analytics_seconds, keyed k = series << 32 | hour, with the minute rollups packed per hour
 * (analytics_minutes) and the hour rollups packed per day (analytics_hours). No foreign
 * keys: a deleted dataset's series and samples are purged in small steps, and a series is
 * only written after its dataset exists. */
static const char migrate_step3[] =
    "CREATE TABLE analytics_datasets ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT," /* never reused: orphaned series stay orphans */
    " name TEXT NOT NULL UNIQUE,"
    " statistic TEXT NOT NULL,"
    " drilldown TEXT NOT NULL DEFAULT '',"
    " suspended INTEGER NOT NULL DEFAULT 0 CHECK (suspended IN (0, 1)),"
    " ctime INTEGER NOT NULL"
    ") STRICT;"
    "CREATE TABLE analytics_settings ("
    " name TEXT PRIMARY KEY NOT NULL,"
    " value INTEGER NOT NULL"
    ") STRICT, WITHOUT ROWID;"
    "CREATE TABLE analytics_series ("
    " id INTEGER PRIMARY KEY,"
    " dataset INTEGER NOT NULL,"
    " key TEXT NOT NULL," /* '' for the dataset's total */
    " UNIQUE (dataset, key)"
    ") STRICT;"
    "CREATE TABLE analytics_recent ("
    " id INTEGER PRIMARY KEY,"
    " start INTEGER NOT NULL," /* the first second it covers */
    " span INTEGER NOT NULL,"  /* seconds it covers, never across an hour */
    " data BLOB NOT NULL"
    ") STRICT;"
    "CREATE INDEX analytics_recent_start ON analytics_recent(start);"
    "CREATE TABLE analytics_seconds (k INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;"
    "CREATE TABLE analytics_minutes (k INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;"
    "CREATE TABLE analytics_hours (k INTEGER PRIMARY KEY, data BLOB NOT NULL) STRICT;"
    "INSERT INTO analytics_settings (name, value) VALUES"
    " ('retain_second_data', 24), ('retain_minute_data', 336), ('retain_hour_data', 8760);"
    "INSERT INTO analytics_datasets (name, statistic, drilldown, ctime)"
    " SELECT column1, column2, column3, CAST(strftime('%s', 'now') AS INTEGER) FROM (VALUES"
    " ('cpu.utilization[mode]', 'cpu.utilization', 'mode'),"
    " ('io.ops[op]', 'io.ops', 'op'),"
    " ('io.ops[disk]', 'io.ops', 'disk'),"
    " ('io.bytes[op]', 'io.bytes', 'op'),"
    " ('io.bytes[disk]', 'io.bytes', 'disk'),"
    " ('io.latency[op]', 'io.latency', 'op'),"
    " ('io.disks[utilization]', 'io.disks', 'utilization'),"
    " ('io.queue[disk]', 'io.queue', 'disk'),"
    " ('nic.kilobytes[direction]', 'nic.kilobytes', 'direction'),"
    " ('nic.kilobytes[device]', 'nic.kilobytes', 'device'),"
    " ('mem.bytes[component]', 'mem.bytes', 'component'),"
    " ('psi.some[resource]', 'psi.some', 'resource'));";

/* Step 4: worksheets (db/store_worksheets.c). datasets holds the JSON array the core
 * checked ([{name, drilldowns, seconds}]). No foreign key on owner: like the audit trail,
 * a worksheet outlives its owner's account, and an admin may still manage it. */
static const char migrate_step4[] =
    "CREATE TABLE worksheets ("
    " uuid TEXT PRIMARY KEY NOT NULL,"
    " name TEXT NOT NULL,"
    " owner TEXT NOT NULL,"
    " ctime INTEGER NOT NULL,"
    " mtime INTEGER NOT NULL,"
    " datasets TEXT NOT NULL DEFAULT '[]'"
    ") STRICT;"
    /* Names unique per owner; also the index listings read in order. */
    "CREATE UNIQUE INDEX worksheets_owner_name ON worksheets(owner, name);";

/* Step 5: benchmark runs (db/store_runs.c, server/bench/jobs.c). spec, start and result hold the
 * JSON the supervisor checked (the worker's start and result lines, with the collector's
 * figures added to the result); interval lines apart, one row each, so a progress stream
 * replays them in order. */
static const char migrate_step5[] =
    "CREATE TABLE bench_runs ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT," /* never reused: old links stay wrong, not other */
    " name TEXT NOT NULL,"
    " label TEXT NOT NULL DEFAULT '',"
    " owner TEXT NOT NULL,"
    " state TEXT NOT NULL CHECK (state IN"
    "  ('queued', 'running', 'done', 'failed', 'cancelled', 'interrupted')),"
    " target TEXT NOT NULL DEFAULT '',"
    " ctime INTEGER NOT NULL,"
    " start_time INTEGER NOT NULL DEFAULT 0,"
    " end_time INTEGER NOT NULL DEFAULT 0,"
    " reason TEXT NOT NULL DEFAULT '',"
    " spec TEXT NOT NULL,"
    " start TEXT,"
    " result TEXT"
    ") STRICT;"
    "CREATE INDEX bench_runs_state ON bench_runs(state);"
    "CREATE TABLE bench_intervals ("
    " run INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,"
    " seq INTEGER NOT NULL,"
    " line TEXT NOT NULL,"
    " PRIMARY KEY (run, seq)"
    ") STRICT, WITHOUT ROWID;";

/* Step 6: worksheet summaries. A listing read every worksheet's datasets (up to ~1 MB
 * each) to show a few fields; now each row keeps its number of datasets and its bytes
 * (name and datasets as stored), and one index holds every column a listing or an
 * owner's total reads, so neither touches the datasets text. */
static const char migrate_step6[] =
    "ALTER TABLE worksheets ADD COLUMN dataset_count INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE worksheets ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0;"
    "UPDATE worksheets SET"
    " dataset_count = CASE WHEN NOT json_valid(datasets) THEN 0"
    "  WHEN json_type(datasets) = 'array' THEN json_array_length(datasets) ELSE 0 END,"
    " bytes = length(CAST(name AS BLOB)) + length(CAST(datasets AS BLOB));"
    "CREATE INDEX worksheets_summary"
    " ON worksheets(owner, name, uuid, ctime, mtime, dataset_count, bytes);";

/* Step 7: runs that explain themselves. Each run keeps the environment its target sat on
 * (resolved at submit), the sweep it belongs to, and whether it was imported from a fio
 * result rather than run here. A sweep keeps its base spec and its axes; its runs are
 * ordinary rows that name it (no foreign key: a sweep is deleted with its runs, by the
 * code that deletes it). */
static const char migrate_step7[] =
    "CREATE TABLE bench_sweeps ("
    " id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " name TEXT NOT NULL,"
    " label TEXT NOT NULL DEFAULT '',"
    " owner TEXT NOT NULL,"
    " ctime INTEGER NOT NULL,"
    " spec TEXT NOT NULL,"
    " axes TEXT NOT NULL,"
    " cancelled INTEGER NOT NULL DEFAULT 0"
    ") STRICT;"
    "ALTER TABLE bench_runs ADD COLUMN environment TEXT;"
    "ALTER TABLE bench_runs ADD COLUMN sweep INTEGER;"
    "ALTER TABLE bench_runs ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;"
    "CREATE INDEX bench_runs_sweep ON bench_runs(sweep) WHERE sweep IS NOT NULL;";

/* Step 8: io.disks[utilization] becomes what the appliance means by it, a heat map of the
 * disks by how busy they were (server/analytics/datasets.c). What it was, the busiest disk's
 * share and each disk's, is now io.busy[disk]: the row is renamed, so its series and their
 * data go with it, and so are worksheets' references to it; the heat map is a new dataset,
 * where the old one was collected (one deleted stays deleted). */
static const char migrate_step8[] =
    "UPDATE analytics_datasets SET name = 'io.busy[disk]', statistic = 'io.busy',"
    " drilldown = 'disk' WHERE name = 'io.disks[utilization]'"
    " AND NOT EXISTS (SELECT 1 FROM analytics_datasets WHERE name = 'io.busy[disk]');"
    "INSERT OR IGNORE INTO analytics_datasets (name, statistic, drilldown, ctime)"
    " SELECT 'io.disks[utilization]', 'io.disks', 'utilization',"
    " CAST(strftime('%s', 'now') AS INTEGER)"
    " FROM analytics_datasets WHERE name = 'io.busy[disk]';"
    "UPDATE worksheets SET"
    " datasets = replace(datasets, '\"io.disks[utilization]\"', '\"io.busy[disk]\"'),"
    " bytes = length(CAST(name AS BLOB)) +"
    "  length(CAST(replace(datasets, '\"io.disks[utilization]\"', '\"io.busy[disk]\"')"
    "   AS BLOB))"
    " WHERE instr(datasets, '\"io.disks[utilization]\"') > 0;";

/* Step 9: a browser kept signed in. A device credential is the public half of a key pair
 * its browser made and cannot export (server/access/devices.c): it signs a challenge to
 * log in without a password. It goes with its user, and ends unused or at its end. */
static const char migrate_step9[] = "CREATE TABLE devices ("
                                    " id TEXT PRIMARY KEY NOT NULL,"
                                    " user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,"
                                    " name TEXT NOT NULL,"
                                    " public_key TEXT NOT NULL,"
                                    " address TEXT NOT NULL DEFAULT '',"
                                    " created INTEGER NOT NULL,"
                                    " last_used INTEGER NOT NULL,"
                                    " expires INTEGER NOT NULL"
                                    ") STRICT;"
                                    "CREATE INDEX devices_user ON devices(user);";

static const struct migrate_step migrate_steps[] = {
    {1, migrate_step1}, {2, migrate_step2}, {3, migrate_step3},
    {4, migrate_step4}, {5, migrate_step5}, {6, migrate_step6},
    {7, migrate_step7}, {8, migrate_step8}, {9, migrate_step9},
};

/* The schema version this code knows (the last migration step). */
static int migrate_latest(void)
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
