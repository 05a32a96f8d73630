/* SPDX-License-Identifier: ISC */
/* Auth, accounts, audit and the helper-thread queue against the real store in a temp dir,
 * with the clock wrapped (-Wl,--wrap=util_now) so idle timeouts, expiry and throttle
 * back-off are tested without waiting. */
#define _GNU_SOURCE
#include "tap.h"
#include "base/workq.h"
#include "access/auth.h"
#include "access/accounts.h"
#include "access/audit.h"
#include "access/kdf.h"
#include "access/token.h"
#include "base/util.h"
#include "base/log.h"
#include "db/db.h"

#include <ftw.h>
#include <stdio.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int64_t time_offset;
int64_t __real_util_now(void);
int64_t __wrap_util_now(void);
int64_t __wrap_util_now(void)
{
	return __real_util_now() + time_offset;
}

static struct event_base *base;
static struct db *db;
static struct workq *wq;
static char dir[256];

/* ---- workq */
static pthread_t loop_thread;
static int wq_done_count, wq_done_wrong_thread, wq_work_count;
static pthread_mutex_t wq_lock = PTHREAD_MUTEX_INITIALIZER;

static void wq_work(void *arg)
{
	usleep(2000);
	pthread_mutex_lock(&wq_lock);
	wq_work_count++;
	pthread_mutex_unlock(&wq_lock);
}
static void wq_done(void *arg)
{
	wq_done_count++;
	if (!pthread_equal(pthread_self(), loop_thread))
		wq_done_wrong_thread++;
	(*(int *)arg)++;
}

static void test_workq(void)
{
	struct workq *q = workq_new(base, 3);
	int hits[200] = {0};
	int accepted = 0, refused = 0;
	loop_thread = pthread_self();
	for (int i = 0; i < 200; i++) {
		if (workq_submit(q, wq_work, wq_done, &hits[i]) == 0)
			accepted++;
		else
			refused++;
	}
	ok(accepted == 64 && refused == 136, "workq: 64 accepted, rest refused (%d/%d)", accepted,
	   refused);
	is_int(workq_pending(q), 64, "pending 64");
	while (wq_done_count < 32)
		event_base_loop(base, EVLOOP_ONCE);
	ok(workq_submit(q, wq_work, wq_done, &hits[199]) == 0, "room again after completions");
	accepted++;
	workq_free(q); /* drains */
	is_int(wq_done_count, accepted, "every done ran (after free)");
	is_int(wq_work_count, accepted, "every work ran");
	is_int(wq_done_wrong_thread, 0, "done callbacks on the loop thread");
	int twice = 0;
	for (int i = 0; i < 200; i++)
		twice += hits[i] > 1;
	is_int(twice, 0, "no done ran twice");
}

/* ---- async helpers */
struct login_res {
	int done;
	struct fault f;
	bool failed;
	char *token;
	uint32_t perms;
	int64_t expires;
};
static void login_cb(void *arg, const struct auth_login_result *res, const struct fault *f)
{
	struct login_res *r = arg;
	r->done = 1;
	if (f) {
		r->failed = true;
		r->f = *f;
	} else {
		r->token = xstrdup(res->token);
		r->perms = res->perms;
		r->expires = res->expires;
	}
}
static struct login_res login(const char *u, const char *p, const char *peer)
{
	struct login_res r = {0};
	auth_login(u, p, peer, NULL, login_cb, &r);
	while (!r.done)
		event_base_loop(base, EVLOOP_ONCE);
	return r;
}

struct cred_res {
	int done;
	bool failed;
	struct fault f;
	struct identity who;
};
static void cred_cb(void *arg, const struct identity *who, const struct fault *f)
{
	struct cred_res *r = arg;
	r->done = 1;
	if (f) {
		r->failed = true;
		r->f = *f;
	} else {
		r->who = *who;
	}
}
static struct cred_res cred(const char *u, const char *p, const char *peer)
{
	struct cred_res r = {0};
	auth_credentials(u, p, peer, cred_cb, &r);
	while (!r.done)
		event_base_loop(base, EVLOOP_ONCE);
	return r;
}

struct acc_res {
	int done;
	json_t *j;
	struct fault f;
	bool failed;
};
static void acc_cb(void *arg, json_t *result, const struct fault *f)
{
	struct acc_res *r = arg;
	r->done = 1;
	if (f) {
		r->failed = true;
		r->f = *f;
	}
	r->j = result;
}
static struct acc_res wait_acc(struct acc_res *r)
{
	while (!r->done)
		event_base_loop(base, EVLOOP_ONCE);
	return *r;
}
static struct acc_res ucreate(const char *json, const struct identity *actor)
{
	struct acc_res r = {0};
	json_t *b = json_loads(json, 0, NULL);
	accounts_user_create(b, actor, "10.0.0.1", acc_cb, &r);
	json_decref(b);
	return wait_acc(&r);
}
static struct acc_res uupdate(const char *name, const char *json, const struct identity *actor)
{
	struct acc_res r = {0};
	json_t *b = json_loads(json, 0, NULL);
	accounts_user_update(name, b, actor, "10.0.0.1", acc_cb, &r);
	json_decref(b);
	return wait_acc(&r);
}

static char *read_pw(void)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/initial-admin-password", dir);
	size_t len;
	char *s = util_read_file(path, &len);
	if (s && len && s[len - 1] == '\n')
		s[len - 1] = 0;
	return s;
}

static struct auth_config cfg;

static int start(void)
{
	char err[256], path[512];
	snprintf(path, sizeof(path), "%s/spindle.db", dir);
	db = db_open(path, err, sizeof(err));
	if (!db) {
		diag("db_open: %s", err);
		return -1;
	}
	wq = workq_new(base, 2);
	return auth_init(base, db, wq, &cfg);
}
static int count_cb(void *arg, const struct db_session *ds)
{
	(*(int *)arg)++;
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void stop(void)
{
	workq_free(wq);
	auth_shutdown();
	db_close(db);
}

static int audit_count(const char *action, bool okv)
{
	json_t *o;
	int n = 0;
	if (audit_list(0, 10000, &o) < 0)
		return -1;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(o, "logs"), i, e)
	{
		if (strcmp(json_string_value(json_object_get(e, "action")), action) == 0 &&
		    strcmp(json_string_value(json_object_get(e, "result")),
		           okv ? "success" : "failure") == 0)
			n++;
	}
	json_decref(o);
	return n;
}

static void dump_audit(void)
{
	json_t *o;
	if (audit_list(0, 10000, &o) < 0)
		return;
	size_t i;
	json_t *e;
	json_array_foreach(json_object_get(o, "logs"), i, e)
	{
		char *s = json_dumps(e, JSON_COMPACT);
		diag("%s", s);
		free(s);
	}
	json_decref(o);
}

int main(void)
{
	log_init(true, LOG_LEVEL_INFO);
	evthread_use_pthreads();
	base = event_base_new();
	test_workq();

	snprintf(dir, sizeof(dir), "/tmp/spindle-test-auth.XXXXXX");
	if (!mkdtemp(dir))
		return 2;
	cfg.state_dir = dir;
	cfg.kdf_iterations = 1000;
	cfg.session_timeout_min = 15;
	cfg.session_max_hours = 8;

	/* short key refused */
	char kp[512];
	snprintf(kp, sizeof(kp), "%s/jwt.key", dir);
	util_write_file_atomic(kp, "short", 5, 0600);
	{
		char err[256], path[512];
		snprintf(path, sizeof(path), "%s/spindle.db", dir);
		db = db_open(path, err, sizeof(err));
		wq = workq_new(base, 2);
		ok(auth_init(base, db, wq, &cfg) < 0, "short jwt.key refused");
		util_write_file_atomic(kp, "", 0, 0600);
		ok(auth_init(base, db, wq, &cfg) < 0, "empty jwt.key refused");
		workq_free(wq);
		db_close(db);
		unlink(kp);
	}

	is_int(start(), 0, "auth_init");
	struct stat st;
	ok(stat(kp, &st) == 0 && (st.st_mode & 0777) == 0600 && st.st_size == 32,
	   "jwt.key 0600, 32 bytes");
	char *pw = read_pw();
	ok(pw && strlen(pw) == 24, "initial admin password file (%s)", pw ? pw : "none");
	char pp[512];
	snprintf(pp, sizeof(pp), "%s/initial-admin-password", dir);
	ok(stat(pp, &st) == 0 && (st.st_mode & 0777) == 0600, "password file 0600");
	json_t *roles;
	struct fault f;
	is_int(accounts_role_list(&roles, &f), 0, "role list");
	is_int(json_array_size(roles), 3, "3 built-in roles");
	char *rs = json_dumps(roles, JSON_COMPACT);
	diag("%s", rs);
	free(rs);
	json_decref(roles);

	/* login */
	struct login_res lr = login("admin", pw, "10.0.0.1");
	ok(!lr.failed && lr.token, "admin logs in");
	is_int(lr.perms, PERM_ALL, "admin has all perms");
	struct identity admin;
	is_int(auth_verify(lr.token, &admin, &f), 0, "admin token verifies");
	is_str(admin.user, "admin", "who.user");
	ok(!admin.api_token, "login session");
	ok(admin.expires > util_now() + 14 * 60 && admin.expires <= util_now() + 15 * 60,
	   "expires = now + idle");
	char *admin_token = lr.token;

	lr = login("admin", "wrong", "10.0.0.2");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "wrong password 401: %s", lr.f.details);
	struct login_res lr2 = login("nosuchuser", "wrong", "10.0.0.2");
	ok(lr2.failed && lr2.f.kind == ERR_UNAUTHORIZED && strcmp(lr.f.details, lr2.f.details) == 0,
	   "unknown user: same 401");
	/* timing similar */
	uint64_t t0 = util_mono_ns();
	login("admin", "wrong", "10.0.0.3");
	uint64_t t1 = util_mono_ns();
	login("ghost", "wrong", "10.0.0.3");
	uint64_t t2 = util_mono_ns();
	diag("wrong pw known %.2f ms, unknown %.2f ms", (t1 - t0) / 1e6, (t2 - t1) / 1e6);

	/* throttle per (user, address): 5 failures lock the pair, doubling at each lock */
	for (int i = 0; i < 5; i++)
		lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "5th failure still 401");
	lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_TOO_MANY && lr.f.retry_after > 25 &&
	       lr.f.retry_after <= 30,
	   "6th from that address: 429 retry_after %d", lr.f.retry_after);
	lr = login("victim", "x", "10.0.0.5");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED,
	   "from an address that has not failed: not refused (%s)", lr.f.details);
	time_offset += 31;
	lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "after 30 s: one more try (401)");
	lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_TOO_MANY && lr.f.retry_after > 55, "then locked 60 s (%d)",
	   lr.f.retry_after);
	time_offset += 61;
	lr = login("victim", "x", "10.0.0.4");
	lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_TOO_MANY && lr.f.retry_after > 115, "then 120 s (%d)",
	   lr.f.retry_after);
	time_offset += 20 * 60;
	lr = login("victim", "x", "10.0.0.4");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "quiet window forgets");
	/* throttle per user: 10 failures from 10 addresses lock the name for those addresses
	 * only; the owner, elsewhere, logs in (admin's failures above are a window old) */
	for (int i = 1; i <= 10; i++) {
		char peer[32];
		snprintf(peer, sizeof(peer), "10.0.3.%d", i);
		lr = login("admin", "wrong", peer);
	}
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "10 failures from 10 addresses: 401");
	lr = login("admin", pw, "10.0.3.1");
	ok(lr.failed && lr.f.kind == ERR_TOO_MANY && lr.f.retry_after > 25,
	   "an address that failed on the name: 429 even with the password (%d)", lr.f.retry_after);
	lr = login("admin", "wrong", "10.0.3.99");
	ok(lr.failed && lr.f.kind == ERR_UNAUTHORIZED, "a new address is not refused (%s)",
	   lr.f.details);
	lr = login("admin", pw, "10.0.0.1");
	ok(!lr.failed, "the owner from an address that never failed logs in (%s)",
	   lr.failed ? lr.f.details : "");
	/* parallel attempts are counted while in flight */
	{
		struct login_res par[10];
		memset(par, 0, sizeof(par));
		for (int i = 0; i < 10; i++)
			auth_login("paral", "x", "10.0.1.1", NULL, login_cb, &par[i]);
		int busy = 0;
		for (int i = 0; i < 10; i++) {
			while (!par[i].done)
				event_base_loop(base, EVLOOP_ONCE);
			busy += par[i].f.kind == ERR_TOO_MANY;
		}
		/* from an address not known good, KDF_PER_ADDRESS (2) are checked at once */
		is_int(busy, 8, "10 parallel guesses from a new address: 8 refused up front");
	}
	/* address throttle */
	{
		int too = 0;
		for (int i = 0; i < 22; i++) {
			char u[16];
			snprintf(u, sizeof(u), "u%d", i);
			lr = login(u, "x", "10.9.9.9");
			too += lr.f.kind == ERR_TOO_MANY;
		}
		is_int(too, 2, "address: 20 failures, then 429");
	}

	/* accounts */
	struct acc_res ar = ucreate("{\"name\":\"mon\",\"password\":\"monitorpw1\",\"roles\":["
	                            "\"monitor\"],\"fullname\":\"Mo N\"}",
	                            &admin);
	ok(!ar.failed, "create mon %s", ar.failed ? ar.f.details : "");
	if (ar.j) {
		char *s = json_dumps(ar.j, JSON_COMPACT);
		diag("%s", s);
		free(s);
		json_decref(ar.j);
	}
	ar = ucreate("{\"name\":\"mon\",\"password\":\"monitorpw1\",\"roles\":[\"monitor\"]}",
	             &admin);
	ok(ar.failed && ar.f.kind == ERR_OBJECT_EXISTS, "dup user 409 (%s)", ar.f.details);
	ar = ucreate("{\"name\":\".bad\",\"password\":\"monitorpw1\",\"roles\":[]}", &admin);
	ok(ar.failed && ar.f.kind == ERR_INVALID_ARG, "bad name (%s)", ar.f.details);
	ar = ucreate("{\"name\":\"x\",\"password\":\"short\",\"roles\":[]}", &admin);
	ok(ar.failed && ar.f.kind == ERR_INVALID_ARG, "short pw (%s)", ar.f.details);
	ar = ucreate("{\"name\":\"x\",\"password\":\"longenough\",\"roles\":[\"nope\"]}", &admin);
	ok(ar.failed && ar.f.kind == ERR_INVALID_ARG && strstr(ar.f.details, "roles"),
	   "unknown role (%s)", ar.f.details);
	ar = ucreate(
	    "{\"name\":\"x\",\"password\":\"longenough\",\"roles\":[],\"session_timeout_min\":0}",
	    &admin);
	ok(ar.failed && ar.f.kind == ERR_INVALID_ARG, "timeout 0 (%s)", ar.f.details);

	lr = login("mon", "monitorpw1", "10.0.0.7");
	ok(!lr.failed, "mon logs in");
	struct identity mon;
	is_int(auth_verify(lr.token, &mon, &f), 0, "mon verifies");
	is_int(mon.perms,
	       PERM_STAT_READ | PERM_WORKSHEET_READ | PERM_HARDWARE_READ | PERM_HARDWARE_LOCATE |
	           PERM_BENCH_READ,
	       "monitor perms");
	char *mon_token = lr.token;
	struct login_res lr_mon2 = login("mon", "monitorpw1", "10.0.0.7");

	/* mon creating a user: privilege escalation attempt */
	ar = ucreate("{\"name\":\"evil\",\"password\":\"longenough\",\"roles\":[\"admin\"]}", &mon);
	ok(ar.failed && ar.f.kind == ERR_DENIED, "monitor cannot grant admin (%s)", ar.f.details);

	/* role change takes effect on next request */
	ar = uupdate("mon", "{\"roles\":[\"operator\"]}", &admin);
	ok(!ar.failed, "mon -> operator");
	json_decref(ar.j);
	is_int(auth_verify(mon_token, &mon, &f), 0, "mon still verifies");
	ok(mon.perms & PERM_BENCH_RUN, "now has bench:run without logging in again");

	/* self update */
	ar = uupdate("mon", "{\"fullname\":\"Monique\"}", &mon);
	ok(!ar.failed, "self fullname");
	json_decref(ar.j);
	ar = uupdate("mon", "{\"roles\":[\"admin\"]}", &mon);
	ok(ar.failed && ar.f.kind == ERR_DENIED && strstr(ar.f.details, "roles"),
	   "self roles denied (%s)", ar.f.details);
	ar = uupdate("mon", "{\"session_timeout_min\":60}", &mon);
	ok(ar.failed && ar.f.kind == ERR_DENIED, "self timeout denied (%s)", ar.f.details);
	ar = uupdate("mon", "{\"password\":\"newpassword\"}", &mon);
	ok(ar.failed && ar.f.kind == ERR_MISSING_ARG, "needs current (%s)", ar.f.details);
	ar = uupdate("mon", "{\"password\":\"newpassword\",\"current_password\":\"wrong\"}", &mon);
	ok(ar.failed && ar.f.kind == ERR_DENIED, "wrong current (%s)", ar.f.details);
	ar = uupdate("mon", "{\"password\":\"newpassword\",\"current_password\":\"monitorpw1\"}",
	             &mon);
	ok(!ar.failed, "self password change (%s)", ar.failed ? ar.f.details : "");
	json_decref(ar.j);
	is_int(auth_verify(mon_token, &mon, &f), 0, "own session kept");
	struct identity tmp;
	ok(auth_verify(lr_mon2.token, &tmp, &f) < 0, "other session revoked");
	ok(login("mon", "monitorpw1", "10.0.0.7").failed, "old pw refused");
	lr = login("mon", "newpassword", "10.0.0.7");
	ok(!lr.failed, "new pw works");

	/* last admin */
	ok(accounts_user_delete("admin", &admin, "10.0.0.1", &f) < 0 && f.kind == ERR_DENIED,
	   "last admin cannot be deleted (%s)", f.details);
	ar = uupdate("admin", "{\"roles\":[\"monitor\"]}", &admin);
	ok(ar.failed && ar.f.kind == ERR_DENIED, "last admin keeps role (%s)", ar.f.details);
	ar = uupdate("mon", "{\"roles\":[\"operator\",\"admin\"]}", &admin);
	ok(!ar.failed, "second admin");
	json_decref(ar.j);
	ar = uupdate("admin", "{\"roles\":[\"monitor\"]}", &admin);
	ok(!ar.failed, "now admin may drop the role");
	json_decref(ar.j);
	auth_verify(mon_token, &mon, &f);
	ar = uupdate("admin", "{\"roles\":[\"admin\"]}", &mon);
	ok(!ar.failed, "mon restores admin");
	json_decref(ar.j);

	/* roles */
	json_t *out;
	json_t *b =
	    json_loads("{\"name\":\"ops\",\"authorizations\":[\"stat:read\",\"bogus\"]}", 0, NULL);
	ok(accounts_role_create(b, &admin, "x", &out, &f) < 0 && f.kind == ERR_INVALID_ARG &&
	       strcmp(f.details, "authorizations: unknown 'bogus'") == 0,
	   "unknown auth (%s)", f.details);
	json_decref(b);
	b = json_loads("{\"name\":\"ops\",\"authorizations\":[\"stat:read\",\"bench:run\"],"
	               "\"description\":\"d\"}",
	               0, NULL);
	is_int(accounts_role_create(b, &admin, "x", &out, &f), 0, "role create");
	json_decref(out);
	ok(accounts_role_create(b, &admin, "x", &out, &f) < 0 && f.kind == ERR_OBJECT_EXISTS,
	   "dup role");
	json_decref(b);
	b = json_loads("{\"authorizations\":[\"stat:read\"]}", 0, NULL);
	ok(accounts_role_update("admin", b, &admin, "x", &out, &f) < 0 && f.kind == ERR_DENIED,
	   "builtin update denied (%s)", f.details);
	is_int(accounts_role_update("ops", b, &admin, "x", &out, &f), 0, "role update");
	char *s = json_dumps(out, JSON_COMPACT);
	diag("%s", s);
	free(s);
	json_decref(out);
	json_decref(b);
	ok(accounts_role_delete("monitor", &admin, "x", &f) < 0 && f.kind == ERR_DENIED,
	   "builtin delete denied");
	ar = ucreate("{\"name\":\"opsuser\",\"password\":\"longenough\",\"roles\":[\"ops\"]}",
	             &admin);
	json_decref(ar.j);
	ok(accounts_role_delete("ops", &admin, "x", &f) < 0 && f.kind == ERR_STATE_CHANGED,
	   "held role (%s)", f.details);
	is_int(accounts_user_delete("opsuser", &admin, "x", &f), 0, "delete user");
	is_int(accounts_role_delete("ops", &admin, "x", &f), 0, "delete role");

	/* tokens */
	is_int(auth_token_create("mon", "ci", 0, &mon, "x", &out, &f), 0, "token create");
	s = json_dumps(out, JSON_COMPACT);
	diag("%s", s);
	free(s);
	char *secret =
	    xstrdup(json_string_value(json_object_get(json_object_get(out, "token"), "secret")));
	char *tid =
	    xstrdup(json_string_value(json_object_get(json_object_get(out, "token"), "id")));
	json_decref(out);
	ok(auth_token_create("mon", "ci", 5, &mon, "x", &out, &f) < 0 &&
	       f.kind == ERR_OBJECT_EXISTS,
	   "dup token name (%s)", f.details);
	ok(auth_token_create("mon", "ci2", 4000, &mon, "x", &out, &f) < 0 &&
	       f.kind == ERR_INVALID_ARG,
	   "expires_days range");
	struct identity tk;
	is_int(auth_verify(secret, &tk, &f), 0, "token secret verifies");
	ok(tk.api_token, "api_token set");
	is_int(auth_token_list("mon", &out, &f), 0, "token list");
	s = json_dumps(out, JSON_COMPACT);
	ok(!strstr(s, "secret") && !strstr(s, secret), "list hides the secret: %s", s);
	free(s);
	json_decref(out);
	ok(auth_logout(&tk, "x", &f) < 0, "logout with an api token refused (%s)", f.details);
	is_int(auth_token_delete("mon", tid, &mon, "x", &f), 0, "token delete");
	ok(auth_verify(secret, &tk, &f) < 0, "deleted token dead at once");

	/* logout */
	is_int(auth_logout(&admin, "x", &f), 0, "logout");
	ok(auth_verify(admin_token, &tmp, &f) < 0, "logged-out token refused");
	lr = login("admin", pw, "10.0.0.1");
	admin_token = lr.token;
	auth_verify(admin_token, &admin, &f);

	/* idle timeout */
	lr = login("mon", "newpassword", "10.0.0.7");
	char *m3 = lr.token;
	time_offset += 14 * 60;
	is_int(auth_verify(m3, &tmp, &f), 0, "14 min idle: alive");
	time_offset += 14 * 60;
	is_int(auth_verify(m3, &tmp, &f), 0, "slid: 28 min after login still alive");
	time_offset += 16 * 60;
	ok(auth_verify(m3, &tmp, &f) < 0, "16 min idle: dead (%s)", f.details);
	auth_verify(admin_token, &admin, &f);

	/* speed of cached verify */
	lr = login("admin", pw, "10.0.0.1");
	int n = 200000;
	uint64_t a = util_mono_ns();
	for (int i = 0; i < n; i++)
		auth_verify(lr.token, &tmp, &f);
	uint64_t z = util_mono_ns();
	diag("auth_verify cached: %.3f us", (z - a) / 1e3 / n);
	char *fresh = lr.token;
	auth_verify(fresh, &admin, &f);

	/* delete user revokes */
	ar = ucreate("{\"name\":\"gone\",\"password\":\"longenough\",\"roles\":[\"monitor\"]}",
	             &admin);
	json_decref(ar.j);
	lr = login("gone", "longenough", "1.1.1.1");
	is_int(accounts_user_delete("gone", &admin, "x", &f), 0, "delete gone");
	ok(auth_verify(lr.token, &tmp, &f) < 0, "deleted user's token dead");

	is_int(audit_count("login", true) > 3, 1, "login ok audited");
	is_int(audit_count("user.update", true) > 3, 1, "user.update audited");
	is_int(audit_count("user.update", false) >= 1, 1, "denied update audited");
	dump_audit();

	/* restart: sessions persist */
	char *keep = fresh;
	stop();
	time_offset += 1;
	is_int(start(), 0, "restart");
	is_int(auth_verify(keep, &tmp, &f), 0, "session survives restart");
	stop();

	/* rehash on login when the configured cost went up; meanwhile a failed login costs the
	 * same KDF work (counted, not timed) for an unknown user as for a weaker stored hash */
	cfg.kdf_iterations = 2000;
	is_int(start(), 0, "restart with 2000 iterations");
	{
		struct db_user u;
		db_user_get(db, "admin", &u);
		is_int(kdf_iterations(u.pwhash), 1000, "stored at 1000");
		unsigned long long w0 = kdf_work();
		lr = login("admin", "wrong", "10.0.6.1");
		unsigned long long w1 = kdf_work();
		lr2 = login("ghost", "wrong", "10.0.6.1");
		unsigned long long w2 = kdf_work();
		ok(lr.failed && lr2.failed, "wrong password and unknown user refused");
		ok(w1 - w0 == 2000 && w2 - w1 == 2000,
		   "both cost 2000 iterations (wrong password %llu, unknown user %llu)", w1 - w0,
		   w2 - w1);
		lr = login("admin", pw, "10.0.0.1");
		ok(!lr.failed, "login");
		ok(kdf_work() - w2 == 4000, "the check, then the new hash: 2000 + 2000 (%llu)",
		   kdf_work() - w2);
		db_user_get(db, "admin", &u);
		is_int(kdf_iterations(u.pwhash), 2000, "upgraded to 2000");
		lr = login("admin", pw, "10.0.0.1");
		ok(!lr.failed, "login after upgrade");
		auth_verify(lr.token, &admin, &f);
	}
	/* the configured cost went down: hashes of more stay until their next login, and until
	 * then an unknown user costs what the costliest of them costs */
	stop();
	cfg.kdf_iterations = 1000;
	is_int(start(), 0, "restart with 1000 iterations");
	{
		unsigned long long w0 = kdf_work();
		login("ghost", "wrong", "10.0.6.2");
		unsigned long long w1 = kdf_work();
		login("mon", "wrong", "10.0.6.2");
		unsigned long long w2 = kdf_work();
		login("admin", "wrong", "10.0.6.2");
		unsigned long long w3 = kdf_work();
		ok(w1 - w0 == 2000 && w2 - w1 == 2000 && w3 - w2 == 2000,
		   "unknown, 1000- and 2000-iteration users: 2000 each (%llu %llu %llu)", w1 - w0,
		   w2 - w1, w3 - w2);
		lr = login("admin", pw, "10.0.0.1");
		auth_verify(lr.token, &admin, &f);
	}
	/* credentials sent with every request: the KDF runs once, then they are remembered
	 * (counted KDF work, not time); the same ones arriving together share one check */
	{
		unsigned long long w0 = kdf_work();
		struct cred_res cr = cred("admin", pw, "10.0.7.1");
		unsigned long long w1 = kdf_work();
		ok(!cr.failed && strcmp(cr.who.user, "admin") == 0 && cr.who.perms == PERM_ALL &&
		       !cr.who.jti[0],
		   "credentials checked: admin, every authorization, no session");
		ok(w1 > w0, "the first request ran the KDF (%llu)", w1 - w0);
		int fails = 0;
		for (int i = 0; i < 50; i++)
			fails += cred("admin", pw, "10.0.7.1").failed;
		is_int(fails, 0, "50 more requests accepted");
		ok(kdf_work() == w1, "without any KDF work (%llu)", kdf_work() - w1);
		cr = cred("admin", "wrong", "10.0.7.1");
		ok(cr.failed && cr.f.kind == ERR_UNAUTHORIZED, "a wrong password is refused");
		ok(kdf_work() - w1 == w1 - w0, "after a KDF of its own (%llu)", kdf_work() - w1);
		cr = cred("ghost", pw, "10.0.7.1");
		ok(cr.failed && cr.f.kind == ERR_UNAUTHORIZED, "an unknown user is refused");

		time_offset += 601; /* past the 10 minutes a check is remembered */
		struct cred_res par[8];
		memset(par, 0, sizeof(par));
		unsigned long long w2 = kdf_work();
		for (int i = 0; i < 8; i++)
			auth_credentials("admin", pw, "10.0.7.2", cred_cb, &par[i]);
		for (int i = 0; i < 8; i++)
			while (!par[i].done)
				event_base_loop(base, EVLOOP_ONCE);
		int ok_n = 0;
		for (int i = 0; i < 8; i++)
			ok_n += !par[i].failed;
		is_int(ok_n, 8, "8 requests at once, after the memory aged: all accepted");
		ok(kdf_work() - w2 == w1 - w0, "with one KDF between them (%llu)", kdf_work() - w2);
	}

	/* the timer: expired token pruned, last_seen written back */
	is_int(auth_token_create("admin", "short", 1, &admin, "x", &out, &f), 0, "1-day token");
	json_decref(out);
	lr = login("admin", pw, "10.0.0.1");
	char *live = lr.token;
	time_offset += 86400 + 5;
	{
		struct timeval tv = {31, 0};
		event_base_loopexit(base, &tv);
		event_base_dispatch(base); /* the session timer ticks every 30 s */
	}
	int nsess = 0;
	db_session_list(db, count_cb, &nsess);
	is_int(nsess, 0, "all expired or idle sessions gone from the db after a tick (%d)", nsess);
	ok(auth_verify(live, &tmp, &f) < 0, "idle login dead");
	stop();
	nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	return done_testing();
}
