/* SPDX-License-Identifier: ISC */
/* Password checks (auth.h): the login throttle, the lane their KDFs take to the helper
 * threads, logins, and the credentials that appliance clients send with every request,
 * remembered once checked. Whatever the way in, a locked guesser is refused before any
 * password is looked at. Everything here runs on the loop thread except the *_work
 * functions. */
#include "auth_int.h"
#include "audit.h"
#include "base/log.h"
#include "base/util.h"
#include "base/workq.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

/* ---- Throttle */

bool throttle_quiet(const struct throttle *t, int window, int64_t now)
{
	int64_t last = t->last_fail > t->locked_until ? t->last_fail : t->locked_until;
	return t->inflight == 0 && now - last > window;
}

static bool throttle_stale(void *val, void *ctx)
{
	struct throttle *t = val;
	if (!throttle_quiet(t, THROTTLE_WINDOW, *(const int64_t *)ctx))
		return false;
	free(t);
	return true;
}

static struct throttle *throttle_get(struct hmap *m, const char *key, bool create, int64_t now)
{
	size_t len = strnlen(key, THROTTLE_KEY_MAX);
	struct throttle *t = hmap_get(m, key, len);
	if (t || !create)
		return t;
	if (m->n >= THROTTLE_MAX_ENTRIES)
		hmap_filter(m, throttle_stale, &now);
	if (m->n >= THROTTLE_MAX_ENTRIES) {
		/* Still full of live entries: under a flood like this the per-address limit
		 * and the bounded work queue are what hold; don't grow. */
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	hmap_put(m, key, len, t);
	return t;
}

int throttle_until(const struct throttle *t, int limit, int window, int64_t now)
{
	if (now < t->locked_until)
		return (int)(t->locked_until - now);
	/* Attempts still hashing count as failures until they say otherwise: else 64
	 * guesses submitted at once would all run before the first one is counted. */
	int fails = now - t->last_fail > window ? 0 : t->fails;
	return fails + t->inflight >= limit ? 1 : 0;
}

int throttle_count(struct throttle *t, int limit, int window, int64_t now)
{
	if (now - t->last_fail > window)
		t->fails = 0;
	if (t->locked_until && now - t->locked_until > window)
		t->lockouts = 0;
	t->fails++;
	t->last_fail = now;
	if (t->fails < limit)
		return 0;
	int64_t backoff = THROTTLE_BACKOFF_MIN;
	for (int i = 0; i < t->lockouts && backoff < THROTTLE_BACKOFF_MAX; i++)
		backoff *= 2;
	if (backoff > THROTTLE_BACKOFF_MAX)
		backoff = THROTTLE_BACKOFF_MAX;
	t->locked_until = now + backoff;
	t->lockouts++;
	/* After the lock, one attempt at a time, and its failure locks for twice as long. */
	t->fails = limit - 1;
	return (int)backoff;
}

/* Seconds before another attempt may start, or 0. */
static int throttle_wait(struct hmap *m, const char *key, int limit, int64_t now)
{
	struct throttle *t = throttle_get(m, key, false, now);
	return t ? throttle_until(t, limit, THROTTLE_WINDOW, now) : 0;
}

/* Counts a failure; returns the lock it started (seconds), or 0. */
static int throttle_fail(struct hmap *m, const char *key, int limit, int64_t now)
{
	struct throttle *t = throttle_get(m, key, true, now);
	return t ? throttle_count(t, limit, THROTTLE_WINDOW, now) : 0;
}

/* Names longer than any valid one are cut: they are throttled by their first 64 bytes. */
static const char *throttle_pair_key(const char *user, const char *peer, char key[THROTTLE_KEY_MAX])
{
	snprintf(key, THROTTLE_KEY_MAX, "%.*s\n%s", DB_NAME_MAX, user, peer);
	return key;
}

/* The name's lock holds only against addresses that failed on that name lately. */
static int throttle_user_wait(const char *user, const char *pair, int64_t now)
{
	struct throttle *tu = throttle_get(&auth.throttle_users, user, false, now);
	struct throttle *tp = throttle_get(&auth.throttle_pairs, pair, false, now);
	if (!tu || now >= tu->locked_until || !tp || tp->fails == 0 ||
	    now - tp->last_fail > THROTTLE_WINDOW)
		return 0;
	return (int)(tu->locked_until - now);
}

/* ---- the lane of password checks from addresses not known good (KDF_LANE_WAITING) */

/* refuse answers a check that will not run, with f. */
typedef void (*lane_refuse_fn)(void *arg, const struct fault *f);

struct lane_job {
	workq_fn work, done;
	lane_refuse_fn refuse;
	void *arg;
	struct lane_job *next;
};

static bool good_stale(void *val, void *ctx)
{
	int64_t *t = val;
	if (*(const int64_t *)ctx - *t < THROTTLE_WINDOW)
		return false;
	free(t);
	return true;
}

static bool addr_known_good(const char *peer, int64_t now)
{
	const int64_t *t = hmap_get(&auth.good_addrs, peer, strlen(peer));
	return t && now - *t < THROTTLE_WINDOW;
}

/* A check passed from peer (good), or failed (no longer known good). */
static void addr_checked(const char *peer, bool good, int64_t now)
{
	size_t len = strlen(peer);
	int64_t *t = hmap_get(&auth.good_addrs, peer, len);
	if (!good) {
		free(hmap_del(&auth.good_addrs, peer, len));
		return;
	}
	if (!t) {
		if (auth.good_addrs.n >= THROTTLE_MAX_ENTRIES)
			hmap_filter(&auth.good_addrs, good_stale, &now);
		if (auth.good_addrs.n >= THROTTLE_MAX_ENTRIES)
			return; /* they are in the lane, then, as any other */
		t = xmalloc(sizeof(*t));
		hmap_put(&auth.good_addrs, peer, len, t);
	}
	*t = now;
}

static unsigned lane_max(void)
{
	int n = workq_threads(auth.wq) - 1; /* one thread is always there for the known */
	return n > 0 ? (unsigned)n : 1;
}

static void lane_done(void *arg);

static void lane_work(void *arg)
{
	struct lane_job *lj = arg;
	lj->work(lj->arg);
}

static void lane_pump(void)
{
	while (auth.lane_head && auth.lane_running < lane_max()) {
		struct lane_job *lj = auth.lane_head;
		auth.lane_head = lj->next;
		if (!auth.lane_head)
			auth.lane_tail = &auth.lane_head;
		auth.lane_waiting--;
		if (workq_submit(auth.wq, lane_work, lane_done, lj) == 0) {
			auth.lane_running++;
			continue;
		}
		/* the threads' queue is full, or they are stopping: answered now, not later */
		struct fault f = {0};
		fault_set(&f, ERR_BUSY, "too many logins in progress; retry shortly");
		lj->refuse(lj->arg, &f);
		free(lj);
	}
}

static void lane_done(void *arg)
{
	struct lane_job *lj = arg;
	auth.lane_running--;
	lj->done(lj->arg);
	free(lj);
	lane_pump();
}

/* A password check (work on a helper thread, done on the loop) for peer: at once for a
 * known good address, else through the lane. -1 with a 429 (or 503) fault, nothing run. */
static int kdf_submit(const char *peer, workq_fn work, workq_fn done, lane_refuse_fn refuse,
                      void *arg, struct fault *f)
{
	int64_t now = util_now();
	/* one address, known good or not (one valid account makes an address good) */
	const struct throttle *ta = throttle_get(&auth.throttle_addrs, peer, false, now);
	if (ta && ta->inflight > KDF_PER_ADDRESS) { /* (this check counts among them) */
		fault_set(f, ERR_TOO_MANY,
		          "credentials: %d password checks from this address are in progress; "
		          "retry when they end",
		          ta->inflight - 1);
		f->retry_after = 1; /* (after fault_set, which clears it) */
		return -1;
	}
	if (addr_known_good(peer, now)) {
		if (workq_submit(auth.wq, work, done, arg) == 0)
			return 0;
		return fault_set(f, ERR_BUSY, "too many logins in progress; retry shortly");
	}
	if (auth.lane_waiting >= KDF_LANE_WAITING) {
		fault_set(f, ERR_TOO_MANY,
		          "credentials: too many password checks in progress; retry shortly");
		f->retry_after = 1;
		return -1;
	}
	struct lane_job *lj = xcalloc(1, sizeof(*lj));
	*lj = (struct lane_job){work, done, refuse, arg, NULL};
	*auth.lane_tail = lj;
	auth.lane_tail = &lj->next;
	auth.lane_waiting++;
	lane_pump();
	return 0;
}

/* -1 with a 429 fault while (user, peer), peer, or user for peer is locked: asked before
 * anything else looks at a password, so that no way of checking one (a login, a
 * remembered credential, a check in flight) answers a locked guesser. */
static int throttle_refuses(const char *user, const char *peer, const char *pair, int64_t now,
                            struct fault *f)
{
	int wp = throttle_wait(&auth.throttle_pairs, pair, THROTTLE_PAIR_LIMIT, now);
	int wa = throttle_wait(&auth.throttle_addrs, peer, THROTTLE_ADDR_LIMIT, now);
	int wu = throttle_user_wait(user, pair, now);
	int wait = wp > wa ? wp : wa;
	wait = wait > wu ? wait : wu;
	if (!wait)
		return 0;
	fault_set(f, ERR_TOO_MANY, "too many failed attempts; retry later");
	f->retry_after = wait;
	return -1;
}

int auth_password_attempt(const char *user, const char *peer, struct fault *f)
{
	int64_t now = util_now();
	char pair[THROTTLE_KEY_MAX];
	user = user ? user : "";
	peer = peer ? peer : "";
	throttle_pair_key(user, peer, pair);
	if (throttle_refuses(user, peer, pair, now, f) < 0)
		return -1;
	/* In flight per pair and address only: others' guesses in flight for this name must
	 * not refuse an address that has not failed. */
	struct throttle *tp = throttle_get(&auth.throttle_pairs, pair, true, now);
	struct throttle *ta = throttle_get(&auth.throttle_addrs, peer, true, now);
	if (tp)
		tp->inflight++;
	if (ta)
		ta->inflight++;
	return 0;
}

void auth_password_cancel(const char *user, const char *peer)
{
	int64_t now = util_now();
	char pair[THROTTLE_KEY_MAX];
	throttle_pair_key(user ? user : "", peer ? peer : "", pair);
	struct throttle *tp = throttle_get(&auth.throttle_pairs, pair, false, now);
	struct throttle *ta = throttle_get(&auth.throttle_addrs, peer ? peer : "", false, now);
	if (tp && tp->inflight > 0)
		tp->inflight--;
	if (ta && ta->inflight > 0)
		ta->inflight--;
}

int auth_password_result(const char *user, const char *peer, bool ok)
{
	int64_t now = util_now();
	char pair[THROTTLE_KEY_MAX];
	user = user ? user : "";
	peer = peer ? peer : "";
	throttle_pair_key(user, peer, pair);
	auth_password_cancel(user, peer);
	addr_checked(peer, ok, now);
	if (ok) {
		/* Success clears this pair's record only: the owner's login must not reset the
		 * name's count against guessers elsewhere, nor one valid account the count of
		 * an address guessing at others. */
		struct throttle *tp = throttle_get(&auth.throttle_pairs, pair, false, now);
		if (tp && tp->inflight == 0)
			free(hmap_del(&auth.throttle_pairs, pair, strnlen(pair, THROTTLE_KEY_MAX)));
		else if (tp)
			tp->fails = tp->lockouts = 0;
		return 0;
	}
	int lp = throttle_fail(&auth.throttle_pairs, pair, THROTTLE_PAIR_LIMIT, now);
	int la = throttle_fail(&auth.throttle_addrs, peer, THROTTLE_ADDR_LIMIT, now);
	int lu = throttle_fail(&auth.throttle_users, user, THROTTLE_USER_LIMIT, now);
	if (lp)
		log_warn("auth: repeated failed logins for '%.64s' from %s: locked for %d s", user,
		         peer, lp);
	if (la)
		log_warn("auth: repeated failed logins from %s: locked for %d s", peer, la);
	if (lu)
		log_warn("auth: repeated failed logins for '%.64s' from several addresses: locked "
		         "for %d s for the addresses that failed",
		         user, lu);
	int lock = lp > la ? lp : la;
	return lock > lu ? lock : lu;
}

/* Any well-formed hash of the floor's cost makes an unknown user take as long as a known
 * one; no KDF needed to build it. */
int auth_set_kdf_floor(unsigned floor)
{
	unsigned char salt[16], hash[32];
	char salt_s[32], hash_s[48];
	if (util_random(salt, sizeof(salt)) < 0 || util_random(hash, sizeof(hash)) < 0)
		return -1;
	util_b64url(salt, sizeof(salt), salt_s);
	util_b64url(hash, sizeof(hash), hash_s);
	char dummy[sizeof(auth.dummy_hash)];
	snprintf(dummy, sizeof(dummy), "pbkdf2-sha256$%u$%s$%s", floor, salt_s, hash_s);
	if (kdf_iterations(dummy) != floor)
		return -1;
	memcpy(auth.dummy_hash, dummy, sizeof(dummy));
	auth.kdf_floor = floor;
	return 0;
}

void throttle_prune(int64_t now)
{
	hmap_filter(&auth.throttle_pairs, throttle_stale, &now);
	hmap_filter(&auth.throttle_addrs, throttle_stale, &now);
	hmap_filter(&auth.throttle_users, throttle_stale, &now);
	hmap_filter(&auth.good_addrs, good_stale, &now);
}

/* ---- What a login and a remembered credential's check share */

/* The step every password check opens with: none while not ready. NULLs read as "".
 * false with f set when refused. */
static bool check_open(const char **user, const char **password, const char **peer, struct fault *f)
{
	if (!auth.ready) {
		fault_set(f, ERR_BUSY, "authentication is not ready");
		return false;
	}
	*user = *user ? *user : "";
	*password = *password ? *password : "";
	*peer = *peer ? *peer : "";
	return true;
}

/* What a password for user is checked against: its stored hash, or, for an unknown user
 * or a hash that cannot be used, the unknown users' dummy, so that both cost a full KDF
 * of the floor's iterations. 0, or -1 on a database error. */
static int check_target(const char *user, bool *known, char *stored, size_t len, unsigned *floor)
{
	struct db_user u;
	int rc = auth_name_valid(user) ? db_user_get(auth.db, user, &u) : DB_NOTFOUND;
	if (rc < 0)
		return -1;
	*known = rc == 0 && kdf_iterations(u.pwhash) != 0;
	/* A row written behind our back may cost more than the floor: raise it. */
	if (*known && kdf_iterations(u.pwhash) > auth.kdf_floor &&
	    auth_set_kdf_floor(kdf_iterations(u.pwhash)) < 0)
		log_warn("auth: no randomness for the unknown users' hash");
	snprintf(stored, len, "%s", *known ? u.pwhash : auth.dummy_hash);
	*floor = auth.kdf_floor;
	OPENSSL_cleanse(&u, sizeof(u));
	return 0;
}

/* ---- Login */

struct login_job {
	char user[DB_NAME_MAX + 1];
	char peer[64];
	char *password;
	bool known;
	char stored[sizeof(((struct db_user *)0)->pwhash)];
	unsigned iterations, floor;
	bool ok, rehash;
	char newhash[KDF_HASH_MAX];
	bool device; /* a device to register with the login */
	char device_name[DB_NAME_MAX + 1];
	char device_key[DB_DEVICE_KEY_MAX + 1];
	auth_login_done cb;
	void *arg;
};

/* Helper thread: only the job's own fields. */
static void login_work(void *p)
{
	struct login_job *j = p;
	j->ok = kdf_verify_floor(j->password, j->stored, j->floor) && j->known;
	if (j->ok && kdf_iterations(j->stored) < j->iterations)
		j->rehash =
		    kdf_hash(j->password, j->iterations, j->newhash, sizeof(j->newhash)) == 0;
	OPENSSL_cleanse(j->password, strlen(j->password));
}

static void login_job_free(struct login_job *j)
{
	if (j->password) {
		OPENSSL_cleanse(j->password, strlen(j->password));
		free(j->password);
	}
	OPENSSL_cleanse(j, sizeof(*j));
	free(j);
}

static void login_fail(struct login_job *j, enum fault_kind kind, const char *details)
{
	struct fault f;
	fault_set(&f, kind, "%s", details);
	j->cb(j->arg, NULL, &f);
	login_job_free(j);
}

/* A login whose check will not run (kdf_submit's lane). */
static void login_refuse(void *p, const struct fault *f)
{
	struct login_job *j = p;
	auth_password_cancel(j->user, j->peer);
	j->cb(j->arg, NULL, f);
	login_job_free(j);
}

static void login_done(void *p)
{
	struct login_job *j = p;
	struct db_user u;

	if (!auth.ready) {
		login_fail(j, ERR_BUSY, "shutting down");
		return;
	}
	/* The row may have changed while we hashed: the password we checked must still be
	 * the one stored, and the user must still exist. */
	if (j->ok && (db_user_get(auth.db, j->user, &u) != 0 || strcmp(u.pwhash, j->stored) != 0))
		j->ok = false;
	int locked = auth_password_result(j->user, j->peer, j->ok);
	if (!j->ok) {
		if (locked)
			audit_log(j->user, j->peer, "login", j->user, false,
			          "invalid user name or password; locked for %d s", locked);
		else
			audit_log(j->user, j->peer, "login", j->user, false,
			          "invalid user name or password");
		login_fail(j, ERR_UNAUTHORIZED, "invalid user name or password");
		return;
	}
	if (j->rehash) {
		snprintf(u.pwhash, sizeof(u.pwhash), "%s", j->newhash);
		if (db_user_update(auth.db, &u) == 0) {
			auth_users_changed(); /* remembered credentials compare the new hash */
			log_info("auth: password hash of %s upgraded to %u iterations", j->user,
			         j->iterations);
		} else {
			log_warn("auth: could not upgrade the password hash of %s", j->user);
		}
	}

	const struct user_info *ui;
	if (auth_user_info(u.name, &ui) != 0) {
		login_fail(j, ERR_INTERNAL, "database error");
		return;
	}
	int64_t now = util_now();
	struct fault f;
	/* A browser to keep signed in: its device first, so that the session is named after
	 * it and ends with it; no session without the device asked for. */
	struct db_device dev;
	if (j->device) {
		struct auth_device_req req = {.name = j->device_name, .public_key = j->device_key};
		if (device_create(u.name, &req, j->peer, now, &dev, &f) < 0) {
			j->cb(j->arg, NULL, &f);
			login_job_free(j);
			return;
		}
	}
	char *token = NULL;
	struct session *s =
	    session_login(u.name, j->device ? dev.id : NULL, j->peer, now, &token, &f);
	if (!s) {
		if (j->device && db_device_delete(auth.db, dev.id) < 0)
			log_warn("auth: could not delete device %.8s of %s", dev.id, u.name);
		j->cb(j->arg, NULL, &f);
		login_job_free(j);
		return;
	}
	struct auth_login_result res;
	memset(&res, 0, sizeof(res));
	if (j->device) {
		audit_log(u.name, j->peer, "login", u.name, true,
		          "session %.8s; device '%s' (%.8s) kept signed in", s->s.jti, dev.name,
		          dev.id);
		res.device = device_public(&dev);
	} else {
		audit_log(u.name, j->peer, "login", u.name, true, "session %.8s", s->s.jti);
	}
	res.token = token;
	res.expires = session_ends(s, ui);
	memcpy(res.user, u.name, sizeof(res.user));
	res.perms = ui->perms;
	j->cb(j->arg, &res, NULL);
	json_decref(res.device);
	free(token);
	login_job_free(j);
}

void auth_login(const char *user, const char *password, const char *peer,
                const struct auth_device_req *device, auth_login_done cb, void *arg)
{
	struct fault f;
	/* a device that could not be kept is refused before the password costs a check */
	if (!check_open(&user, &password, &peer, &f) ||
	    (device && device_request_check(device, &f) < 0) ||
	    auth_password_attempt(user, peer, &f) < 0) {
		cb(arg, NULL, &f);
		return;
	}

	struct login_job *j = xcalloc(1, sizeof(*j));
	snprintf(j->user, sizeof(j->user), "%s", user);
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	j->password = xstrdup(password);
	j->iterations = auth.cfg.kdf_iterations;
	if (device) {
		j->device = true;
		snprintf(j->device_name, sizeof(j->device_name), "%s", device->name);
		snprintf(j->device_key, sizeof(j->device_key), "%s", device->public_key);
	}
	j->cb = cb;
	j->arg = arg;
	if (check_target(user, &j->known, j->stored, sizeof(j->stored), &j->floor) < 0) {
		auth_password_cancel(j->user, j->peer);
		login_fail(j, ERR_INTERNAL, "database error");
		return;
	}
	struct fault busy = {0};
	if (kdf_submit(j->peer, login_work, login_done, login_refuse, j, &busy) < 0) {
		auth_password_cancel(j->user, j->peer);
		j->cb(j->arg, NULL, &busy); /* with its Retry-After */
		login_job_free(j);
		return;
	}
}

/* ---- Credentials sent with every request (Basic, X-Auth-User/X-Auth-Key)
 *
 * Appliance clients send the password with each request. A KDF for each would make every
 * call cost a login, so a verified (user, password) is remembered for CRED_MAX_AGE_S, keyed
 * by an HMAC of both under a per-process random key (never the password itself), with a
 * tag of the stored hash it matched. A hit costs one HMAC. The user's entry is read fresh
 * as for sessions (auth.gen, which every change of users and roles moves): a deleted user
 * or a changed role shows on the next request, and a changed password changes the tag, so
 * the old one misses and is checked (and refused, and throttled) again. The same
 * credentials arriving while their check runs wait for it: one KDF for a client that
 * opens many connections at once, and one throttle count. */
#define CRED_MAX       1024 /* remembered credentials; the oldest goes first */
#define CRED_MAX_AGE_S 600  /* then they are checked again */

struct cred_waiter {
	auth_cred_done cb;
	void *arg;
	struct cred_waiter *next;
};

struct cred {
	unsigned char mac[32];
	char user[DB_NAME_MAX + 1];
	uint64_t pwtag;              /* the user_info pwtag it was checked against */
	int64_t verified;            /* 0 while its check runs */
	struct cred_waiter *waiters; /* while its check runs */
};

struct cred_job {
	char user[DB_NAME_MAX + 1];
	char peer[64];
	char *password;
	bool known, ok;
	char stored[sizeof(((struct db_user *)0)->pwhash)];
	unsigned floor;
	unsigned char mac[32];
};

static void cred_mac(const char *user, const char *password, unsigned char mac[32])
{
	unsigned int len = 32;
	size_t ul = strlen(user), pl = strlen(password);
	unsigned char *buf = xmalloc(ul + 1 + pl);
	memcpy(buf, user, ul);
	buf[ul] = '\0'; /* no name holds a NUL: ("a", "b:c") and ("a:b", "c") differ */
	memcpy(buf + ul + 1, password, pl);
	if (!HMAC(EVP_sha256(), auth.cred_key, sizeof(auth.cred_key), buf, ul + 1 + pl, mac, &len))
		memset(mac, 0, 32); /* an entry never verified: misses every time */
	OPENSSL_cleanse(buf, ul + 1 + pl);
	free(buf);
}

static void cred_identity(const struct cred *c, const struct user_info *ui, struct identity *who)
{
	memset(who, 0, sizeof(*who));
	memcpy(who->user, c->user, sizeof(who->user));
	who->perms = ui->perms;
	who->pwtag = ui->pwtag;
	who->expires = c->verified + CRED_MAX_AGE_S; /* no session: jti stays empty */
}

static bool cred_stale(void *val, void *ctx)
{
	struct cred *c = val;
	const int64_t *now = ctx;
	if (c->verified == 0 || *now - c->verified < CRED_MAX_AGE_S)
		return false;
	free(c);
	return true;
}

struct cred_oldest {
	struct cred *c;
};

static bool cred_find_oldest(void *val, void *ctx)
{
	struct cred *c = val;
	struct cred_oldest *o = ctx;
	if (c->verified && (!o->c || c->verified < o->c->verified))
		o->c = c;
	return false;
}

static bool cred_of_user(void *val, void *ctx)
{
	struct cred *c = val;
	if (c->verified == 0 || strcmp(c->user, ctx) != 0)
		return false;
	free(c);
	return true;
}

void cred_forget_user(const char *user)
{
	hmap_filter(&auth.creds, cred_of_user, (void *)user);
}

static void cred_drop(struct cred *c)
{
	free(hmap_del(&auth.creds, (const char *)c->mac, sizeof(c->mac)));
}

/* Room for one more: the stale go, then the oldest checked one. Checks in flight stay. */
static void cred_make_room(int64_t now)
{
	if (auth.creds.n < CRED_MAX)
		return;
	hmap_filter(&auth.creds, cred_stale, &now);
	while (auth.creds.n >= CRED_MAX) {
		struct cred_oldest o = {NULL};
		hmap_filter(&auth.creds, cred_find_oldest, &o);
		if (!o.c)
			return; /* all in flight: bounded by the work queue */
		cred_drop(o.c);
	}
}

/* Answers everyone waiting on c, and forgets c unless it was verified. */
static void cred_answer(struct cred *c, const struct fault *f)
{
	struct cred_waiter *w = c->waiters;
	c->waiters = NULL;
	struct identity who;
	const struct user_info *ui = NULL;
	struct fault err;
	if (!f) {
		int rc = auth_user_info(c->user, &ui);
		if (rc != 0) {
			f = &err;
			fault_set(&err, rc < 0 ? ERR_INTERNAL : ERR_UNAUTHORIZED,
			          rc < 0 ? "database error" : "invalid user name or password");
		} else {
			cred_identity(c, ui, &who);
		}
	}
	if (f)
		cred_drop(c);
	/* c may be gone from here on: a handler may delete its user. */
	while (w) {
		struct cred_waiter *next = w->next;
		w->cb(w->arg, f ? NULL : &who, f);
		free(w);
		w = next;
	}
}

static void cred_job_free(struct cred_job *j)
{
	if (j->password) {
		OPENSSL_cleanse(j->password, strlen(j->password));
		free(j->password);
	}
	OPENSSL_cleanse(j, sizeof(*j));
	free(j);
}

/* Helper thread: only the job's own fields. */
static void cred_work(void *p)
{
	struct cred_job *j = p;
	j->ok = kdf_verify_floor(j->password, j->stored, j->floor) && j->known;
	OPENSSL_cleanse(j->password, strlen(j->password));
}

/* Credentials whose check will not run (kdf_submit's lane): their waiters hear why. */
static void cred_refuse(void *p, const struct fault *f)
{
	struct cred_job *j = p;
	struct cred *c = hmap_get(&auth.creds, (const char *)j->mac, 32);
	auth_password_cancel(j->user, j->peer);
	if (c)
		cred_answer(c, f);
	cred_job_free(j);
}

static void cred_done(void *p)
{
	struct cred_job *j = p;
	struct fault f;
	struct db_user u;
	struct cred *c = auth.ready ? hmap_get(&auth.creds, (const char *)j->mac, 32) : NULL;
	if (!c) { /* shutting down: its waiters were answered */
		cred_job_free(j);
		return;
	}
	/* The row may have changed while we hashed, as for logins. */
	if (j->ok && (db_user_get(auth.db, j->user, &u) != 0 || strcmp(u.pwhash, j->stored) != 0))
		j->ok = false;
	int locked = auth_password_result(j->user, j->peer, j->ok);
	if (!j->ok) {
		audit_log(j->user, j->peer, "credentials", j->user, false,
		          "invalid user name or password%s", locked ? "; locked" : "");
		fault_set(&f, ERR_UNAUTHORIZED, "invalid user name or password");
		cred_answer(c, &f);
		cred_job_free(j);
		return;
	}
	/* Each check is audited: one line per KDF, not per request. */
	audit_log(j->user, j->peer, "credentials", j->user, true,
	          "password sent with the request; remembered for %d s", CRED_MAX_AGE_S);
	snprintf(c->user, sizeof(c->user), "%s", u.name);
	c->pwtag = hmap_hash(u.pwhash, strlen(u.pwhash));
	c->verified = util_now();
	const struct user_info *ui;
	if (auth_user_info(c->user, &ui) == 0 && ui->pwtag != c->pwtag) {
		auth_users_changed(); /* a hash upgraded behind the cache: read it again */
		if (auth_user_info(c->user, &ui) == 0)
			c->pwtag = ui->pwtag;
	}
	cred_answer(c, NULL);
	cred_job_free(j);
}

void auth_credentials(const char *user, const char *password, const char *peer, auth_cred_done cb,
                      void *arg)
{
	struct fault f;
	struct identity who;
	int64_t now = util_now();
	char pair[THROTTLE_KEY_MAX];
	if (!check_open(&user, &password, &peer, &f) ||
	    throttle_refuses(user, peer, throttle_pair_key(user, peer, pair), now, &f) < 0) {
		cb(arg, NULL, &f); /* before the cache: a remembered password is no way past */
		return;
	}
	unsigned char mac[32];
	cred_mac(user, password, mac);
	struct cred *c = hmap_get(&auth.creds, (const char *)mac, sizeof(mac));
	if (c && c->verified == 0) {
		struct cred_waiter *w = xcalloc(1, sizeof(*w));
		w->cb = cb;
		w->arg = arg;
		w->next = c->waiters;
		c->waiters = w;
		return;
	}
	if (c) {
		const struct user_info *ui;
		int rc = auth_user_info(c->user, &ui);
		if (rc < 0) {
			fault_set(&f, ERR_INTERNAL, "database error");
			cb(arg, NULL, &f);
			return;
		}
		if (rc == 0 && ui->pwtag == c->pwtag && now - c->verified < CRED_MAX_AGE_S) {
			cred_identity(c, ui, &who);
			cb(arg, &who, NULL);
			return;
		}
		cred_drop(c); /* aged, or the password or the user changed: check again */
	}
	if (auth_password_attempt(user, peer, &f) < 0) {
		cb(arg, NULL, &f);
		return;
	}
	struct cred_job *j = xcalloc(1, sizeof(*j));
	snprintf(j->user, sizeof(j->user), "%s", user);
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	memcpy(j->mac, mac, sizeof(mac));
	if (check_target(user, &j->known, j->stored, sizeof(j->stored), &j->floor) < 0) {
		auth_password_cancel(j->user, j->peer);
		cred_job_free(j);
		fault_set(&f, ERR_INTERNAL, "database error");
		cb(arg, NULL, &f);
		return;
	}
	j->password = xstrdup(password);

	cred_make_room(now);
	c = xcalloc(1, sizeof(*c));
	memcpy(c->mac, mac, sizeof(mac));
	snprintf(c->user, sizeof(c->user), "%s", user);
	c->waiters = xcalloc(1, sizeof(*c->waiters));
	c->waiters->cb = cb;
	c->waiters->arg = arg;
	hmap_put(&auth.creds, (const char *)c->mac, sizeof(c->mac), c);
	if (kdf_submit(j->peer, cred_work, cred_done, cred_refuse, j, &f) < 0) {
		auth_password_cancel(j->user, j->peer);
		cred_job_free(j);
		cred_answer(c, &f);
	}
}

void cred_free(void *val)
{
	struct cred *c = val;
	for (struct cred_waiter *w = c->waiters, *next; w; w = next) {
		next = w->next;
		free(w);
	}
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}
