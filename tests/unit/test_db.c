/* SPDX-License-Identifier: ISC */
/* The store against a real SQLite file in a throwaway directory. The raw_* helpers open a
 * second connection only to look behind the store's back or to fake an old or a future
 * database; everything else goes through db.h. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sqlite3.h>

#include "db/db.h"
#include "base/log.h"
#include "tap.h"

static char dir[PATH_MAX];
static char path[PATH_MAX + 32];

/* ---- a second connection ------------------------------------------------------------ */

static int raw_exec(const char *file, const char *sql)
{
	sqlite3 *c;
	int rc;

	if (sqlite3_open(file, &c) != SQLITE_OK)
		return -1;
	rc = sqlite3_exec(c, sql, NULL, NULL, NULL);
	sqlite3_close(c);
	return rc == SQLITE_OK ? 0 : -1;
}

static long long raw_int(const char *file, const char *sql)
{
	sqlite3 *c;
	sqlite3_stmt *st;
	long long v = -1;

	if (sqlite3_open(file, &c) != SQLITE_OK)
		return -1;
	if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			v = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
	}
	sqlite3_close(c);
	return v;
}

static const char *raw_text(const char *file, const char *sql, char *buf, size_t len)
{
	sqlite3 *c;
	sqlite3_stmt *st;

	buf[0] = '\0';
	if (sqlite3_open(file, &c) != SQLITE_OK)
		return buf;
	if (sqlite3_prepare_v2(c, sql, -1, &st, NULL) == SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
			snprintf(buf, len, "%s", (const char *)sqlite3_column_text(st, 0));
		sqlite3_finalize(st);
	}
	sqlite3_close(c);
	return buf;
}

/* ---- fixtures ----------------------------------------------------------------------- */

static struct db_role make_role(const char *name, bool builtin, const char *const *auths)
{
	struct db_role r;

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "%s", name);
	snprintf(r.description, sizeof(r.description), "the %s role", name);
	r.builtin = builtin;
	r.ctime = r.mtime = 1000;
	for (; auths && *auths; auths++)
		snprintf(r.auths[r.nauths++], sizeof(r.auths[0]), "%s", *auths);
	return r;
}

static struct db_user make_user(const char *name, const char *role1, const char *role2)
{
	struct db_user u;

	memset(&u, 0, sizeof(u));
	snprintf(u.name, sizeof(u.name), "%s", name);
	snprintf(u.fullname, sizeof(u.fullname), "%s Example", name);
	snprintf(u.pwhash, sizeof(u.pwhash), "pbkdf2-sha256$1000$c2FsdA$aGFzaA");
	u.session_timeout_min = 15;
	u.ctime = u.mtime = 2000;
	if (role1)
		snprintf(u.roles[u.nroles++], sizeof(u.roles[0]), "%s", role1);
	if (role2)
		snprintf(u.roles[u.nroles++], sizeof(u.roles[0]), "%s", role2);
	return u;
}

static struct db_session make_session(const char *jti, const char *user, enum db_session_kind kind,
                                      const char *name, int64_t expires)
{
	struct db_session s;

	memset(&s, 0, sizeof(s));
	snprintf(s.jti, sizeof(s.jti), "%s", jti);
	snprintf(s.user, sizeof(s.user), "%s", user);
	s.kind = kind;
	snprintf(s.name, sizeof(s.name), "%s", name);
	snprintf(s.address, sizeof(s.address), "192.0.2.7");
	s.created = s.last_seen = 5000;
	s.expires = expires;
	return s;
}

/* List callbacks collect names (joined by ',') into a buffer, or stop at a given count. */
struct collect {
	char names[1024];
	int n, stop_after;
};

static void collect_add(struct collect *c, const char *name)
{
	size_t len = strlen(c->names);

	snprintf(c->names + len, sizeof(c->names) - len, "%s%s", len ? "," : "", name);
	c->n++;
}

static int collect_user(void *arg, const struct db_user *u)
{
	struct collect *c = arg;

	collect_add(c, u->name);
	return c->stop_after && c->n == c->stop_after ? 42 : 0;
}

static int collect_role(void *arg, const struct db_role *r)
{
	struct collect *c = arg;

	collect_add(c, r->name);
	return c->stop_after && c->n == c->stop_after ? 42 : 0;
}

static int collect_session(void *arg, const struct db_session *s)
{
	struct collect *c = arg;

	collect_add(c, s->jti);
	return 0;
}

static int collect_audit(void *arg, const struct db_audit *a)
{
	struct collect *c = arg;

	collect_add(c, a->target);
	return 0;
}

struct find_session {
	const char *jti;
	struct db_session found;
	int n;
};

static int find_session_cb(void *arg, const struct db_session *s)
{
	struct find_session *f = arg;

	if (strcmp(s->jti, f->jti) == 0) {
		f->found = *s;
		f->n++;
	}
	return 0;
}

/* Calls back into the store while listing: the query must be finished by then. */
static int reentrant_user(void *arg, const struct db_user *u)
{
	struct db *db = arg;
	struct db_user again;

	return db_user_get(db, u->name, &again) == 0 && strcmp(again.name, u->name) == 0 ? 0 : 1;
}

/* ---- tests -------------------------------------------------------------------------- */

static struct db *test_open(void)
{
	char err[256] = "", buf[64];
	struct db *db;
	struct stat sb;

	db = db_open(path, err, sizeof(err));
	ok(db != NULL, "db_open creates a new database (%s)", err);
	if (!db)
		return NULL;
	ok(db_schema_version(db) >= 1, "schema version is %d", db_schema_version(db));
	is_int(raw_int(path, "PRAGMA user_version"), db_schema_version(db),
	       "user_version on disk matches");
	is_int(raw_int(path, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN"
	                     " ('users','roles','role_auths','user_roles','sessions','audit')"),
	       6, "step 1 created its six tables");
	is_str(raw_text(path, "PRAGMA journal_mode", buf, sizeof(buf)), "wal", "journal is WAL");
	memset(&sb, 0, sizeof(sb));
	stat(path, &sb);
	ok((sb.st_mode & 0777) == 0600, "database file is 0600 (%o)",
	   (unsigned)(sb.st_mode & 0777));
	ok(db_size_bytes(db) >= (int64_t)sb.st_size && sb.st_size > 0, "db_size_bytes %lld",
	   (long long)db_size_bytes(db));
	return db;
}

static void test_roles(struct db *db)
{
	static const char *const admin_auths[] = {"user:modify", "stat:read", "role:modify", NULL};
	static const char *const mon_auths[] = {"stat:read", "hardware:locate", NULL};
	struct db_role r, got;
	struct collect c;

	r = make_role("admin", true, admin_auths);
	is_int(db_role_insert(db, &r), 0, "insert role admin");
	r = make_role("monitor", true, mon_auths);
	is_int(db_role_insert(db, &r), 0, "insert role monitor");
	r = make_role("operator", false, NULL);
	is_int(db_role_insert(db, &r), 0, "insert role operator without authorizations");
	is_int(db_role_insert(db, &r), DB_EXISTS, "a second operator is DB_EXISTS");

	memset(&got, 0, sizeof(got));
	is_int(db_role_get(db, "admin", &got), 0, "get admin");
	is_str(got.name, "admin", "name");
	is_str(got.description, "the admin role", "description");
	ok(got.builtin, "builtin");
	is_int(got.ctime, 1000, "ctime");
	is_int(got.nauths, 3, "three authorizations");
	is_str(got.auths[0], "role:modify", "authorizations sorted (0)");
	is_str(got.auths[2], "user:modify", "authorizations sorted (2)");
	is_int(db_role_get(db, "nobody", &got), DB_NOTFOUND, "unknown role is DB_NOTFOUND");

	/* Update replaces description and authorizations, keeps builtin and ctime. */
	r = make_role("monitor", false, NULL);
	snprintf(r.description, sizeof(r.description), "phones");
	snprintf(r.auths[r.nauths++], sizeof(r.auths[0]), "bench:read");
	snprintf(r.auths[r.nauths++], sizeof(r.auths[0]), "bench:read"); /* twice is fine */
	r.ctime = 1;
	r.mtime = 3000;
	is_int(db_role_update(db, &r), 0, "update monitor");
	is_int(db_role_get(db, "monitor", &got), 0, "get monitor");
	is_str(got.description, "phones", "description updated");
	is_int(got.nauths, 1, "authorizations replaced");
	is_str(got.auths[0], "bench:read", "new authorization");
	ok(got.builtin, "builtin kept");
	is_int(got.ctime, 1000, "ctime kept");
	is_int(got.mtime, 3000, "mtime updated");
	r = make_role("ghost", false, NULL);
	is_int(db_role_update(db, &r), DB_NOTFOUND, "update of an unknown role is DB_NOTFOUND");
	r = make_role("toomany", false, NULL);
	r.nauths = DB_AUTHS_MAX + 1;
	is_int(db_role_insert(db, &r), -1, "more than DB_AUTHS_MAX authorizations is -1");
	is_int(db_role_get(db, "toomany", &got), DB_NOTFOUND, "... and nothing was inserted");

	memset(&c, 0, sizeof(c));
	is_int(db_role_list(db, collect_role, &c), 0, "list roles");
	is_str(c.names, "admin,monitor,operator", "roles by name");
	memset(&c, 0, sizeof(c));
	c.stop_after = 2;
	is_int(db_role_list(db, collect_role, &c), 42,
	       "a callback's non-zero return stops the list");
	is_int(c.n, 2, "... after two roles");
}

static void test_users(struct db *db)
{
	struct db_user u, got;
	struct collect c;

	u = make_user("bob", "monitor", NULL);
	is_int(db_user_insert(db, &u), 0, "insert bob");
	u = make_user("alice", "admin", "monitor");
	is_int(db_user_insert(db, &u), 0, "insert alice");
	u = make_user("alice", NULL, NULL);
	is_int(db_user_insert(db, &u), DB_EXISTS, "a second alice is DB_EXISTS");
	is_int(db_user_count(db), 2, "two users");

	memset(&got, 0, sizeof(got));
	is_int(db_user_get(db, "alice", &got), 0, "get alice");
	is_str(got.fullname, "alice Example", "fullname");
	is_str(got.pwhash, "pbkdf2-sha256$1000$c2FsdA$aGFzaA", "pwhash");
	is_int(got.session_timeout_min, 15, "session timeout");
	is_int(got.ctime, 2000, "ctime");
	is_int(got.nroles, 2, "two roles");
	is_str(got.roles[0], "admin", "role 0");
	is_str(got.roles[1], "monitor", "role 1");
	is_int(db_user_get(db, "carol", &got), DB_NOTFOUND, "unknown user is DB_NOTFOUND");

	memset(&c, 0, sizeof(c));
	is_int(db_user_list(db, collect_user, &c), 0, "list users");
	is_str(c.names, "alice,bob", "users by name");
	is_int(db_user_list(db, reentrant_user, db), 0, "a list callback may call the store");

	/* A write naming a role that does not exist changes nothing. */
	u = make_user("carol", "monitor", "nosuchrole");
	is_int(db_user_insert(db, &u), DB_NOTFOUND, "insert with an unknown role is DB_NOTFOUND");
	is_int(db_user_get(db, "carol", &got), DB_NOTFOUND, "... and carol was not inserted");
	is_int(db_user_count(db), 2, "... still two users");
	is_int(db_role_holders(db, "monitor"), 2, "... and monitor still has two holders");

	u = make_user("alice", "operator", "nosuchrole");
	snprintf(u.fullname, sizeof(u.fullname), "Changed");
	is_int(db_user_update(db, &u), DB_NOTFOUND, "update with an unknown role is DB_NOTFOUND");
	is_int(db_user_get(db, "alice", &got), 0, "get alice again");
	is_str(got.fullname, "alice Example", "... fullname unchanged");
	is_int(got.nroles, 2, "... roles unchanged");
	is_str(got.roles[0], "admin", "... still admin");

	u = make_user("alice", "operator", "operator");
	snprintf(u.fullname, sizeof(u.fullname), "Alice Liddell");
	snprintf(u.pwhash, sizeof(u.pwhash), "newhash");
	u.session_timeout_min = 60;
	u.ctime = 1;
	u.mtime = 4000;
	is_int(db_user_update(db, &u), 0, "update alice (a role named twice is one role)");
	is_int(db_user_get(db, "alice", &got), 0, "get alice after update");
	is_str(got.fullname, "Alice Liddell", "fullname updated");
	is_str(got.pwhash, "newhash", "pwhash updated");
	is_int(got.session_timeout_min, 60, "timeout updated");
	is_int(got.ctime, 2000, "ctime kept");
	is_int(got.mtime, 4000, "mtime updated");
	is_int(got.nroles, 1, "roles replaced");
	is_str(got.roles[0], "operator", "now operator");
	u = make_user("carol", NULL, NULL);
	is_int(db_user_update(db, &u), DB_NOTFOUND, "update of an unknown user is DB_NOTFOUND");
	u = make_user("dave", NULL, NULL);
	u.nroles = DB_ROLES_MAX + 1;
	is_int(db_user_insert(db, &u), -1, "more than DB_ROLES_MAX roles is -1");
	u = make_user("eve", NULL, NULL);
	u.ctime = u.mtime = 0;
	is_int(db_user_insert(db, &u), 0, "insert eve without roles or times");
	is_int(db_user_get(db, "eve", &got), 0, "get eve");
	ok(got.ctime > 1700000000 && got.mtime == got.ctime, "timestamps left at 0 become now");
	is_int(got.nroles, 0, "eve holds no role");

	/* Role deletion against holders. */
	is_int(db_role_holders(db, "operator"), 1, "operator has one holder");
	is_int(db_role_holders(db, "admin"), 0, "admin has none now");
	is_int(db_role_holders(db, "nosuchrole"), 0, "an unknown role has none");
	is_int(db_role_delete(db, "operator"), DB_INUSE, "deleting a held role is DB_INUSE");
	is_int(db_role_get(db, "operator", &(struct db_role){0}), 0, "... and it is still there");
	is_int(db_role_holders(db, "operator"), 1, "... still held");
	is_int(db_role_delete(db, "admin"), 0, "delete unheld admin");
	is_int(db_role_delete(db, "admin"), DB_NOTFOUND, "delete it again is DB_NOTFOUND");
	is_int(raw_int(path, "SELECT count(*) FROM role_auths WHERE role = 'admin'"), 0,
	       "its authorizations went with it");
}

static void test_sessions(struct db *db)
{
	struct db_session s, s2, s3;
	const struct db_session *touch[3];
	struct find_session f;
	struct collect c;

	s = make_session("j-login-1", "alice", DB_SESSION_LOGIN, "", 9000);
	is_int(db_session_insert(db, &s), 0, "insert a login");
	s = make_session("j-login-2", "alice", DB_SESSION_LOGIN, "", 7000);
	is_int(db_session_insert(db, &s), 0, "a second login (no name) is fine");
	is_int(db_session_insert(db, &s), DB_EXISTS, "the same jti again is DB_EXISTS");
	s = make_session("j-token-1", "alice", DB_SESSION_TOKEN, "backup", 99000);
	is_int(db_session_insert(db, &s), 0, "insert an API token");
	s = make_session("j-token-2", "alice", DB_SESSION_TOKEN, "backup", 99000);
	is_int(db_session_insert(db, &s), DB_EXISTS,
	       "a second token of the same name is DB_EXISTS");
	s = make_session("j-token-3", "bob", DB_SESSION_TOKEN, "backup", 99000);
	is_int(db_session_insert(db, &s), 0, "another user's token may share the name");
	s = make_session("j-bob-1", "bob", DB_SESSION_LOGIN, "", 6000);
	is_int(db_session_insert(db, &s), 0, "a login for bob");
	s = make_session("j-ghost", "ghost", DB_SESSION_LOGIN, "", 9000);
	is_int(db_session_insert(db, &s), DB_NOTFOUND,
	       "a session of an unknown user is DB_NOTFOUND");

	memset(&c, 0, sizeof(c));
	is_int(db_session_list(db, collect_session, &c), 0, "list sessions");
	is_int(c.n, 5, "five sessions");

	memset(&f, 0, sizeof(f));
	f.jti = "j-token-1";
	db_session_list(db, find_session_cb, &f);
	is_int(f.n, 1, "token listed");
	is_str(f.found.user, "alice", "token user");
	is_int(f.found.kind, DB_SESSION_TOKEN, "token kind");
	is_str(f.found.name, "backup", "token name");
	is_str(f.found.address, "192.0.2.7", "token address");
	is_int(f.found.expires, 99000, "token expires");

	/* Touch two sessions, one of which is gone by then. */
	s = make_session("j-token-1", "alice", DB_SESSION_TOKEN, "", 0);
	s.last_seen = 6500;
	s2 = make_session("j-vanished", "alice", DB_SESSION_LOGIN, "", 0);
	s2.last_seen = 6500;
	touch[0] = &s;
	touch[1] = &s2;
	touch[2] = NULL;
	is_int(db_session_touch(db, touch, 3), 0, "touch (with a vanished session and a NULL)");
	is_int(db_session_touch(db, touch, 0), 0, "touching nothing is fine");
	memset(&f, 0, sizeof(f));
	f.jti = "j-token-1";
	db_session_list(db, find_session_cb, &f);
	is_int(f.found.last_seen, 6500, "last_seen persisted");
	is_int(f.found.expires, 99000, "expires untouched");

	is_int(db_session_delete(db, "j-login-1"), 0, "delete a session");
	is_int(db_session_delete(db, "j-login-1"), DB_NOTFOUND, "delete it again is DB_NOTFOUND");

	/* Prune: expires < now goes, expires == now stays. */
	s3 = make_session("j-edge", "bob", DB_SESSION_LOGIN, "", 7000);
	is_int(db_session_insert(db, &s3), 0, "a login expiring exactly at 7000");
	is_int(db_session_prune(db, 7000), 1, "prune at 7000 removes one (bob's 6000)");
	memset(&c, 0, sizeof(c));
	db_session_list(db, collect_session, &c);
	is_str(c.names, "j-edge,j-login-2,j-token-1,j-token-3", "the unexpired ones remain");
	is_int(db_session_prune(db, 7000), 0, "pruning again removes nothing");

	is_int(db_session_delete_user(db, "alice", "j-token-1"), 1,
	       "delete alice's sessions but one");
	is_int(db_session_delete_user(db, "alice", NULL), 1, "... then the last one");
	s = make_session("j-login-3", "alice", DB_SESSION_LOGIN, "", 9000);
	is_int(db_session_insert(db, &s), 0, "alice logs in again");

	is_int(db_user_delete(db, "alice"), 0, "delete alice");
	is_int(db_user_delete(db, "alice"), DB_NOTFOUND, "delete her again is DB_NOTFOUND");
	is_int(raw_int(path, "SELECT count(*) FROM sessions WHERE user = 'alice'"), 0,
	       "her sessions went with her");
	is_int(raw_int(path, "SELECT count(*) FROM user_roles WHERE user = 'alice'"), 0,
	       "so did her roles");
	is_int(db_role_holders(db, "operator"), 0, "operator is free now");
	is_int(db_role_delete(db, "operator"), 0, "and can be deleted");
}

/* Devices: browsers kept signed in, with their user, oldest first, used and pruned. */
static void test_devices(struct db *db)
{
	struct db_user u;
	memset(&u, 0, sizeof(u));
	snprintf(u.name, sizeof(u.name), "dora");
	snprintf(u.pwhash, sizeof(u.pwhash), "x");
	is_int(db_user_insert(db, &u), 0, "user dora");
	struct db_device d = {.created = 100, .last_used = 100, .expires = 5000};
	snprintf(d.user, sizeof(d.user), "dora");
	snprintf(d.public_key, sizeof(d.public_key), "MFkw");
	const char *ids[] = {"bbbb", "aaaa", "cccc"};
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		snprintf(d.id, sizeof(d.id), "%s", ids[i]);
		snprintf(d.name, sizeof(d.name), "phone %zu", i);
		d.expires = 5000 + (int64_t)i * 1000;
		is_int(db_device_insert(db, &d), 0, "device %s", ids[i]);
	}
	is_int(db_device_insert(db, &d), DB_EXISTS, "the same id again is DB_EXISTS");
	snprintf(d.id, sizeof(d.id), "dddd");
	snprintf(d.user, sizeof(d.user), "ghost");
	is_int(db_device_insert(db, &d), DB_NOTFOUND, "an unknown user's is DB_NOTFOUND");
	struct db_device *list;
	size_t n;
	is_int(db_device_list(db, "dora", &list, &n), 0, "list");
	ok(n == 3 && strcmp(list[0].id, "bbbb") == 0 && strcmp(list[2].id, "cccc") == 0,
	   "three, in the order made (same second: by insertion)");
	free(list);
	struct db_device got;
	is_int(db_device_use(db, "aaaa", 200, 9000), 0, "used");
	is_int(db_device_get(db, "aaaa", &got), 0, "get");
	ok(got.last_used == 200 && got.expires == 9000 && strcmp(got.name, "phone 1") == 0 &&
	       strcmp(got.public_key, "MFkw") == 0,
	   "last_used and expires moved; name and key kept");
	is_int(db_device_use(db, "zzzz", 200, 9000), DB_NOTFOUND, "an unknown one: DB_NOTFOUND");
	is_int(db_device_prune(db, 5500), 1, "prune at 5500: bbbb (5000) goes");
	is_int(db_device_get(db, "bbbb", &got), DB_NOTFOUND, "gone");
	is_int(db_device_delete(db, "cccc"), 0, "delete cccc");
	is_int(db_device_delete(db, "cccc"), DB_NOTFOUND, "again: DB_NOTFOUND");
	is_int(db_device_delete_user(db, "dora"), 1, "dora's last one");
	snprintf(d.user, sizeof(d.user), "dora");
	is_int(db_device_insert(db, &d), 0, "another");
	is_int(db_user_delete(db, "dora"), 0, "dora deleted");
	is_int(raw_int(path, "SELECT count(*) FROM devices WHERE user = 'dora'"), 0,
	       "her devices went with her");
}

static void test_audit(struct db *db)
{
	static const int64_t times[] = {300, 100, 200, 200, 400};
	static const char *const targets[] = {"c", "a", "b1", "b2", "d"};
	struct db_audit a;
	struct collect c;
	size_t i;

	for (i = 0; i < 5; i++) {
		memset(&a, 0, sizeof(a));
		a.time = times[i];
		snprintf(a.user, sizeof(a.user), "root");
		snprintf(a.address, sizeof(a.address), "::1");
		snprintf(a.action, sizeof(a.action), "user.create");
		snprintf(a.target, sizeof(a.target), "%s", targets[i]);
		snprintf(a.details, sizeof(a.details), "entry %zu", i);
		a.ok = i != 1;
		is_int(db_audit_insert(db, &a), 0, "audit insert %s", targets[i]);
	}
	memset(&c, 0, sizeof(c));
	is_int(db_audit_list(db, 0, 100, collect_audit, &c), 0, "list the whole trail");
	is_str(c.names, "a,b1,b2,c,d", "oldest first, insertion order within a second");
	memset(&c, 0, sizeof(c));
	db_audit_list(db, 200, 2, collect_audit, &c);
	is_str(c.names, "b1,b2", "start is inclusive and limit bounds");
	memset(&c, 0, sizeof(c));
	db_audit_list(db, 250, 100, collect_audit, &c);
	is_str(c.names, "c,d", "start skips older entries");
	memset(&c, 0, sizeof(c));
	is_int(db_audit_list(db, 0, 0, collect_audit, &c), 0, "limit 0");
	is_int(c.n, 0, "... lists nothing");
}

/* Retention: everything before the cut goes, in batches; the rest stays as it was. */
static void test_audit_prune(struct db *db)
{
	struct db_audit a;
	struct collect c;
	int i;

	for (i = 0; i < 12001; i++) {
		memset(&a, 0, sizeof(a));
		a.time = i < 12000 ? 10 + i % 7 : 17; /* 10 .. 16, then one at 17 */
		snprintf(a.action, sizeof(a.action), "old");
		snprintf(a.target, sizeof(a.target), "%s", i < 12000 ? "" : "edge");
		if (db_audit_insert(db, &a) != 0)
			break;
	}
	is_int(i, 12001, "12001 old entries");
	is_int(db_audit_prune(db, 17), 12000, "pruned in batches of 5000: all 12000 before 17");
	memset(&c, 0, sizeof(c));
	db_audit_list(db, 0, 100, collect_audit, &c);
	is_str(c.names, "edge,a,b1,b2,c,d", "the entry at the cut and the newer ones stay");
	is_int(db_audit_prune(db, 18), 1, "a cut past it takes it");
	is_int(db_audit_prune(db, 18), 0, "nothing more to prune");
	memset(&c, 0, sizeof(c));
	db_audit_list(db, 0, 100, collect_audit, &c);
	is_str(c.names, "a,b1,b2,c,d", "the rest as it was");
}

struct first_audit {
	struct db_audit a;
	int n;
};

static int first_audit_cb(void *arg, const struct db_audit *a)
{
	struct first_audit *f = arg;

	if (f->n++ == 0)
		f->a = *a;
	return 0;
}

static void test_audit_fields(struct db *db)
{
	struct first_audit f;

	memset(&f, 0, sizeof(f));
	db_audit_list(db, 100, 1, first_audit_cb, &f);
	is_int(f.n, 1, "one entry");
	ok(f.a.id > 0, "id assigned (%lld)", (long long)f.a.id);
	is_int(f.a.time, 100, "time");
	is_str(f.a.user, "root", "user");
	is_str(f.a.address, "::1", "address");
	is_str(f.a.action, "user.create", "action");
	is_str(f.a.details, "entry 1", "details");
	ok(!f.a.ok, "ok is false for the failed one");
}

/* A value longer than its field, written behind the store's back, comes back cut at a
 * character boundary and terminated. */
static void test_truncation(struct db *db)
{
	struct db_user got;
	char sql[1024], big[400];
	size_t i, len;

	/* "x" then two-byte characters, so byte 128 falls inside one. */
	big[0] = 'x';
	for (i = 1; i + 2 < sizeof(big); i += 2)
		memcpy(big + i, "\xc3\xa9", 2); /* é */
	big[i] = '\0';
	snprintf(sql, sizeof(sql), "UPDATE users SET fullname = '%s' WHERE name = 'bob'", big);
	ok(raw_exec(path, sql) == 0, "store a 399-byte fullname directly");
	memset(&got, 'x', sizeof(got));
	is_int(db_user_get(db, "bob", &got), 0, "get bob");
	len = strnlen(got.fullname, sizeof(got.fullname));
	ok(len < sizeof(got.fullname), "fullname terminated (%zu bytes)", len);
	is_int(len, 127, "cut before the character that did not fit");
	ok(memcmp(got.fullname + len - 2, "\xc3\xa9", 2) == 0, "ending on a whole character");
}

static void test_reopen(struct db *db)
{
	char err[256] = "";
	struct db_user got;
	long long objects, version;

	version = db_schema_version(db);
	db_close(db);
	objects = raw_int(path, "SELECT count(*) FROM sqlite_master");
	db = db_open(path, err, sizeof(err));
	ok(db != NULL, "reopen (%s)", err);
	if (!db)
		return;
	is_int(db_schema_version(db), version, "same schema version");
	is_int(raw_int(path, "SELECT count(*) FROM sqlite_master"), objects,
	       "migrations did not run again");
	is_int(db_user_get(db, "bob", &got), 0, "bob survived the reopen");
	is_int(db_user_count(db), 2, "bob and eve");
	db_close(db);
	db = db_open(path, err, sizeof(err));
	ok(db != NULL, "and a third open");
	db_close(db);
}

/* Step 8 on a database of step 7: io.disks[utilization] (each disk's busy share) becomes
 * io.busy[disk] with its data and its worksheets' references; the heat map is added. */
static void test_step8(void)
{
	char err[256], buf[512];
	ok(raw_exec(path,
	            "DELETE FROM analytics_datasets WHERE name = 'io.disks[utilization]';"
	            "UPDATE analytics_datasets SET name = 'io.disks[utilization]', "
	            "statistic = 'io.disks', drilldown = 'utilization' "
	            "WHERE name = 'io.busy[disk]';"
	            "INSERT INTO worksheets (uuid, name, owner, ctime, mtime, datasets) "
	            "VALUES ('u8', 'disks', 'bob', 1, 1, '[{\"name\":\"io.disks[utilization]\","
	            "\"drilldowns\":[],\"seconds\":60},{\"name\":\"io.ops[disk]\"}]');"
	            "DROP TABLE devices; PRAGMA user_version = 7;") == 0,
	   "a database as step 7 left it, with a worksheet of io.disks[utilization]");
	long long old = raw_int(path, "SELECT id FROM analytics_datasets "
	                              "WHERE name = 'io.disks[utilization]'");
	struct db *db = db_open(path, err, sizeof(err));
	ok(db != NULL, "migrated (%s)", err);
	db_close(db);
	is_int(raw_int(path, "SELECT id FROM analytics_datasets WHERE name = 'io.busy[disk]' AND "
	                     "statistic = 'io.busy' AND drilldown = 'disk'"),
	       old, "the busy shares are io.busy[disk], the same row (its series keep their data)");
	ok(raw_int(path, "SELECT id FROM analytics_datasets WHERE name = 'io.disks[utilization]' "
	                 "AND statistic = 'io.disks'") > old,
	   "the heat map is a dataset of its own");
	is_str(
	    raw_text(path, "SELECT datasets FROM worksheets WHERE uuid = 'u8'", buf, sizeof(buf)),
	    "[{\"name\":\"io.busy[disk]\",\"drilldowns\":[],\"seconds\":60},"
	    "{\"name\":\"io.ops[disk]\"}]",
	    "the worksheet names io.busy[disk]");
	is_int(raw_int(path, "SELECT bytes - length(name) - length(datasets) FROM worksheets "
	                     "WHERE uuid = 'u8'"),
	       0, "and its size is counted anew");

	ok(raw_exec(path, "DELETE FROM analytics_datasets WHERE name IN ('io.disks[utilization]', "
	                  "'io.busy[disk]'); DROP TABLE devices; PRAGMA user_version = 7;") == 0,
	   "step 7 again, the dataset deleted by its user");
	db = db_open(path, err, sizeof(err));
	ok(db != NULL, "migrated (%s)", err);
	db_close(db);
	is_int(raw_int(path, "SELECT count(*) FROM analytics_datasets WHERE name IN "
	                     "('io.disks[utilization]', 'io.busy[disk]')"),
	       0, "a deleted dataset stays deleted");
}

static void test_refusals(void)
{
	char err[256], sql[64], file[PATH_MAX + 32];
	struct db *db;
	int latest;
	FILE *fp;

	/* A database from a newer spindled. */
	latest = (int)raw_int(path, "PRAGMA user_version");
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", latest + 1);
	ok(raw_exec(path, sql) == 0, "pretend a newer spindled wrote the database");
	err[0] = '\0';
	db = db_open(path, err, sizeof(err));
	ok(db == NULL, "a newer schema is refused");
	ok(strstr(err, "newer") != NULL, "with a clear message: %s", err);
	db_close(db);
	is_int(raw_int(path, "PRAGMA user_version"), latest + 1, "and the file is left alone");
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", latest);
	raw_exec(path, sql);

	/* Not a database at all. */
	snprintf(file, sizeof(file), "%s/garbage.db", dir);
	fp = fopen(file, "w");
	if (fp) {
		for (int i = 0; i < 512; i++)
			fputs("not a database ", fp);
		fclose(fp);
	}
	err[0] = '\0';
	db = db_open(file, err, sizeof(err));
	ok(db == NULL && err[0] != '\0', "a file that is not a database is refused: %s", err);
	db_close(db);

	/* A step that fails leaves no half schema: users exists already, so step 1 fails. */
	snprintf(file, sizeof(file), "%s/half.db", dir);
	ok(raw_exec(file, "CREATE TABLE users (x)") == 0, "a database with a stray users table");
	db = db_open(file, err, sizeof(err));
	ok(db == NULL, "step 1 fails on it: %s", err);
	db_close(db);
	is_int(raw_int(file, "PRAGMA user_version"), 0, "user_version still 0");
	is_int(raw_int(file, "SELECT count(*) FROM sqlite_master WHERE name = 'roles'"), 0,
	       "and none of step 1 was applied");

	/* A directory that does not exist. */
	snprintf(file, sizeof(file), "%s/no/such/dir/x.db", dir);
	db = db_open(file, err, sizeof(err));
	ok(db == NULL && err[0] != '\0', "a missing directory is an error: %s", err);
}

static void cleanup(void)
{
	static const char *const files[] = {"spindle.db",  "spindle.db-wal", "spindle.db-shm",
	                                    "garbage.db",  "half.db",        "half.db-wal",
	                                    "half.db-shm", "garbage.db-wal", "garbage.db-shm"};
	char file[PATH_MAX + 32];
	size_t i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(file, sizeof(file), "%s/%s", dir, files[i]);
		unlink(file);
	}
	rmdir(dir);
}

int main(void)
{
	const char *tmp = getenv("TMPDIR");
	struct db *db;

	log_init(true, LOG_LEVEL_WARN);
	snprintf(dir, sizeof(dir), "%s/test_db.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof(path), "%s/spindle.db", dir);

	db = test_open();
	if (db) {
		test_roles(db);
		test_users(db);
		test_sessions(db);
		test_devices(db);
		test_audit(db);
		test_audit_prune(db);
		test_audit_fields(db);
		test_truncation(db);
		test_reopen(db);
		test_step8();
	}
	test_refusals();
	cleanup();
	return done_testing();
}
