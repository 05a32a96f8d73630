/* SPDX-License-Identifier: ISC */
/* Authentication and authorization. The session table lives in the database and, whole,
 * in memory: every request checks the in-memory copy (so a revocation is immediate and
 * nothing touches disk), and a verified token string is remembered with its session so
 * its HMAC is computed once, not once per request. Sliding last_seen stays in memory and
 * is written back by a 30 s timer. A login on a full disk keeps its session in memory
 * until the row can be written (tried every 5 s), and the rows of sessions ended while the
 * disk refused their delete go then too. Logins are throttled per address and per (user,
 * address), and their KDF runs on the helper threads. Everything here runs on the loop
 * thread except the login_work function. */
#include "auth.h"
#include "audit.h"
#include "db/dbw.h"
#include "base/hmap.h"
#include "kdf.h"
#include "base/log.h"
#include "token.h"
#include "base/util.h"
#include "base/workq.h"
#include "db/db.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define AUTH_TICK_S             30  /* persist last_seen, prune expired sessions */
#define AUTH_STORE_RETRY_S      5   /* retry what a full disk refused (sessions, deletes) */
#define AUTH_DEFAULT_TIMEOUT    15  /* minutes idle, when neither config nor user says */
#define AUTH_DEFAULT_MAX_HOURS  24  /* absolute lifetime of a login, when config says 0 */
#define AUTH_KEY_MAX            512 /* jwt.key longer than this is a mistake, not a key */
#define AUTH_LOGINS_PER_USER    64  /* more login sessions: the least recently used goes */
#define AUTH_TOKENS_PER_USER    100 /* named API tokens one user may hold */
#define AUTH_TOKEN_DAYS_DEFAULT 365
#define AUTH_TOKEN_DAYS_MAX     3650

/* Rows of ended sessions still to delete (the disk refused it): more are forgotten. */
#define AUTH_PENDING_DELETES 4096

/* Login throttle, so that guessing slows the guesser and not the account's owner. Within
 * WINDOW, PAIR_LIMIT failures for one user name from one address lock that pair, and
 * ADDR_LIMIT failures from one address (any names) lock the address, for BACKOFF_MIN
 * seconds, doubling at each further lock up to BACKOFF_MAX; a quiet WINDOW forgets.
 * USER_LIMIT failures for one name from all addresses lock the name too, but only for
 * the addresses that failed on it: one that has not failed is never refused for others'
 * guesses. Known or not, a name is throttled the same way. */
#define THROTTLE_PAIR_LIMIT  5
#define THROTTLE_ADDR_LIMIT  20
#define THROTTLE_USER_LIMIT  10
#define THROTTLE_WINDOW      (15 * 60)
#define THROTTLE_BACKOFF_MIN 30
#define THROTTLE_BACKOFF_MAX (15 * 60)
#define THROTTLE_MAX_ENTRIES 10000 /* per table; memory stays bounded under a flood */

/* Password checks cost a KDF each (~0.3 s of a helper thread at the default iterations),
 * and any request may carry a password: without a bound, a flood of wrong ones from many
 * addresses queued the owner's login behind seconds of them. Checks from an address
 * that passed one within THROTTLE_WINDOW (known good) go straight to the helper threads.
 * All others share a lane: at most all threads but one running at once and KDF_LANE_WAITING
 * more in line; and no address has more than KDF_PER_ADDRESS in flight. Past that, 429. So the
 * owner's login waits behind at most one lane's worth of checks, whatever the flood. */
#define KDF_LANE_WAITING 16
#define KDF_PER_ADDRESS  2
#define THROTTLE_KEY_MAX 160 /* "user\naddress": a valid name, an address, and room */

/* ---- Authorizations */

static const char *const perm_names[] = {
    "stat:read",       "worksheet:read", "worksheet:modify", "hardware:read",
    "hardware:locate", "bench:read",     "bench:run",        "user:read",
    "user:modify",     "role:modify",    "settings:modify",
};

uint32_t perm_parse(const char *name)
{
	if (!name)
		return 0;
	for (size_t i = 0; i < nitems(perm_names); i++)
		if (strcmp(name, perm_names[i]) == 0)
			return 1u << i;
	return 0;
}

const char *perm_name(uint32_t bit)
{
	for (size_t i = 0; i < nitems(perm_names); i++)
		if (bit == 1u << i)
			return perm_names[i];
	return NULL;
}

json_t *perm_json(uint32_t perms)
{
	json_t *a = json_array();
	for (size_t i = 0; i < nitems(perm_names); i++)
		if (perms & (1u << i))
			json_array_append_new(a, json_string(perm_names[i]));
	return a;
}

bool auth_name_valid(const char *name)
{
	size_t n = name ? strlen(name) : 0;
	if (n == 0 || n > DB_NAME_MAX || name[0] == '.' || name[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '_' || c == '-'))
			return false;
	}
	return true;
}

/* ---- State */

struct session {
	struct db_session s; /* last_seen is the live, sliding value */
	bool dirty;          /* last_seen changed since it was last written */
	bool unstored;       /* a login made while the disk was full: no row yet (store_tick) */
	bool storing;        /* a copy of it is on its way to the writer */
	char *token;         /* verified token string, key in auth.tokens; NULL until used */
};

/* What a request needs to know about its user, reloaded when auth.gen moves on. */
struct user_info {
	uint64_t gen;
	bool exists;
	uint32_t perms;
	int timeout_min;
	uint64_t pwtag; /* hmap_hash of the stored password hash: it moves when the password does */
};

struct throttle {
	int fails;    /* since the last quiet THROTTLE_WINDOW */
	int inflight; /* attempts whose KDF is still running */
	int lockouts; /* locks in a row, for the doubling back-off */
	int64_t last_fail, locked_until;
};

static struct {
	bool ready;
	struct event_base *base;
	struct db *db;
	struct workq *wq;
	struct auth_config cfg;
	char *state_dir;
	unsigned char key[AUTH_KEY_MAX];
	size_t keylen;
	/* Every password check costs at least kdf_floor iterations, the configured count or the
	 * costliest stored hash if more: unknown users (checked against dummy_hash, made with
	 * kdf_floor), weaker hashes not yet upgraded and current ones all cost the same. */
	unsigned kdf_floor;
	char dummy_hash[KDF_HASH_MAX];
	struct event *tick;
	struct event *store_ev;  /* store_tick, armed while the disk owes us something */
	char (*pending_del)[33]; /* jtis of ended sessions whose rows must still go */
	size_t npending_del, pending_del_cap;
	uint64_t gen;                        /* bumped by auth_users_changed() */
	uint64_t revokes;                    /* sessions ended, for auth_changes() */
	struct hmap sessions;                /* jti -> struct session */
	struct hmap tokens;                  /* token string -> struct session (not owned) */
	struct hmap users;                   /* user name -> struct user_info */
	struct hmap throttle_pairs;          /* "user\naddress" -> struct throttle */
	struct hmap throttle_addrs;          /* address -> struct throttle */
	struct hmap throttle_users;          /* user name -> struct throttle (every address) */
	struct hmap good_addrs;              /* address -> int64_t *: when it last passed a check */
	unsigned lane_running, lane_waiting; /* checks of the lane (KDF_LANE_WAITING) */
	struct lane_job *lane_head, **lane_tail;
	struct hmap creds;          /* HMAC(user, password) -> struct cred */
	unsigned char cred_key[32]; /* random per process: the HMAC's key */
} auth;

struct db *auth_db(void)
{
	return auth.db;
}

struct workq *auth_workq(void)
{
	return auth.wq;
}

unsigned auth_kdf_iterations(void)
{
	return auth.cfg.kdf_iterations;
}

unsigned auth_kdf_floor(void)
{
	return auth.kdf_floor;
}

int auth_default_timeout_min(void)
{
	return auth.cfg.session_timeout_min;
}

/* ---- Users' authorizations */

static uint32_t auth_role_perms(const char *role)
{
	struct db_role r;
	uint32_t perms = 0;
	if (db_role_get(auth.db, role, &r) != 0)
		return 0;
	for (int i = 0; i < r.nauths && i < DB_AUTHS_MAX; i++)
		perms |= perm_parse(r.auths[i]);
	return perms;
}

/* The user's current authorizations and idle timeout: 0, DB_NOTFOUND, or -1 (db error). */
static int auth_user_info(const char *name, const struct user_info **out)
{
	size_t len = strlen(name);
	struct user_info *ui = hmap_get(&auth.users, name, len);
	if (ui && ui->gen == auth.gen) {
		*out = ui;
		return ui->exists ? 0 : DB_NOTFOUND;
	}
	struct db_user u;
	int rc = db_user_get(auth.db, name, &u);
	if (rc < 0)
		return -1;
	if (!ui) {
		ui = xcalloc(1, sizeof(*ui));
		hmap_put(&auth.users, name, len, ui);
	}
	ui->gen = auth.gen;
	ui->exists = rc == 0;
	ui->perms = 0;
	ui->timeout_min = auth.cfg.session_timeout_min;
	ui->pwtag = ui->exists ? hmap_hash(u.pwhash, strlen(u.pwhash)) : 0;
	if (ui->exists) {
		for (int i = 0; i < u.nroles && i < DB_ROLES_MAX; i++)
			ui->perms |= auth_role_perms(u.roles[i]);
		if (u.session_timeout_min > 0)
			ui->timeout_min = u.session_timeout_min;
	}
	*out = ui;
	return ui->exists ? 0 : DB_NOTFOUND;
}

void auth_users_changed(void)
{
	auth.gen++;
}

uint64_t auth_changes(void)
{
	return auth.gen + auth.revokes;
}

bool auth_identity_current(const struct identity *who)
{
	const struct user_info *ui;
	int rc = auth_user_info(who->user, &ui);
	if (rc < 0)
		return true; /* the database cannot say: not a reason to cut anyone off */
	if (rc != 0 || ui->perms != who->perms || ui->pwtag != who->pwtag)
		return false;
	if (!who->jti[0])
		return true;
	const struct session *s = hmap_get(&auth.sessions, who->jti, strlen(who->jti));
	return s && util_now() < s->s.expires;
}

int auth_may_manage(const struct identity *actor, const char *user, struct fault *f)
{
	const struct user_info *ui;
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	int rc = auth_name_valid(user) ? auth_user_info(user, &ui) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0)
		return fault_set(f, ERR_NOT_FOUND, "user '%.64s' not found", user ? user : "");
	if (actor && strcmp(actor->user, user) == 0)
		return 0;
	uint32_t missing = ui->perms & ~(actor ? actor->perms : 0);
	if (!missing)
		return 0;
	char list[256];
	size_t n = 0;
	list[0] = '\0';
	for (size_t i = 0; i < nitems(perm_names) && n < sizeof(list); i++)
		if (missing & (1u << i))
			n += (size_t)snprintf(list + n, sizeof(list) - n, "%s%s", n ? ", " : "",
			                      perm_names[i]);
	return fault_set(f, ERR_DENIED, "name: user '%s' holds authorizations you do not: %s", user,
	                 list);
}

/* ---- Sessions */

static void session_forget_token(struct session *s)
{
	if (!s->token)
		return;
	hmap_del(&auth.tokens, s->token, strlen(s->token));
	free(s->token);
	s->token = NULL;
}

static void session_cache_token(struct session *s, const char *token, size_t len)
{
	session_forget_token(s);
	s->token = xstrndup(token, len);
	hmap_put(&auth.tokens, s->token, len, s);
}

static void store_later(void);

/* A row that must go once the disk lets it (the writer's copy of it may come first). */
static void pending_delete(const char *jti)
{
	if (auth.npending_del >= AUTH_PENDING_DELETES) {
		log_warn("auth: session %.8s ended but its row stays: too many deletes pending",
		         jti);
		return;
	}
	auth.pending_del =
	    util_grow(auth.pending_del, &auth.pending_del_cap, auth.npending_del, 33);
	snprintf(auth.pending_del[auth.npending_del++], 33, "%s", jti);
	store_later();
}

/* The session's row goes: at once, or after the writer's copy of it (never before, or
 * that copy would bring an ended session back at the next start). */
static void session_row_delete(const struct session *s)
{
	if (s->storing) {
		pending_delete(s->s.jti);
		return;
	}
	if (s->unstored)
		return;
	if (db_session_delete(auth.db, s->s.jti) >= 0)
		return;
	if (db_full(auth.db)) {
		log_warn("auth: session %.8s of %s ended; its row goes once space returns",
		         s->s.jti, s->s.user);
		pending_delete(s->s.jti);
	} else {
		log_warn("auth: could not delete session %.8s of %s", s->s.jti, s->s.user);
	}
}

/* Out of memory, and out of the database when from_db. */
static void session_drop(struct session *s, bool from_db)
{
	auth.revokes++; /* streams opened with it end (auth_identity_current) */
	if (from_db)
		session_row_delete(s);
	session_forget_token(s);
	hmap_del(&auth.sessions, s->s.jti, strlen(s->s.jti));
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

static int64_t session_idle_s(const struct user_info *ui)
{
	return (int64_t)(ui->timeout_min > 0 ? ui->timeout_min : AUTH_DEFAULT_TIMEOUT) * 60;
}

/* When this session ends if nothing else happens. */
static int64_t session_ends(const struct session *s, const struct user_info *ui)
{
	if (s->s.kind != DB_SESSION_LOGIN)
		return s->s.expires;
	int64_t idle_end = s->s.last_seen + session_idle_s(ui);
	return idle_end < s->s.expires ? idle_end : s->s.expires;
}

struct session_scan {
	const char *user;
	enum db_session_kind kind;
	int count;
	struct session *oldest;
	const char *name; /* token name looked for */
	struct session *match;
	bool collect; /* gather the matches in list */
	struct session **list;
	size_t nlist, cap;
};

static bool session_scan_cb(void *val, void *ctx)
{
	struct session *s = val;
	struct session_scan *sc = ctx;
	if (strcmp(s->s.user, sc->user) != 0 || s->s.kind != sc->kind)
		return false;
	sc->count++;
	if (!sc->oldest || s->s.last_seen < sc->oldest->s.last_seen)
		sc->oldest = s;
	if (sc->name && strcmp(s->s.name, sc->name) == 0)
		sc->match = s;
	if (sc->collect) {
		sc->list = util_grow(sc->list, &sc->cap, sc->nlist, sizeof(*sc->list));
		sc->list[sc->nlist++] = s;
	}
	return false;
}

/* A new session and its signed token (for free()); NULL with f set. */
static struct session *session_create(const char *user, enum db_session_kind kind, const char *name,
                                      const char *peer, int64_t now, int64_t expires, char **token,
                                      struct fault *f)
{
	unsigned char rnd[16];
	struct token_claims c;

	memset(&c, 0, sizeof(c));
	if (util_random(rnd, sizeof(rnd)) < 0) {
		fault_set(f, ERR_INTERNAL, "no randomness");
		return NULL;
	}
	util_hex(rnd, sizeof(rnd), c.jti);
	snprintf(c.sub, sizeof(c.sub), "%s", user);
	c.iat = now;
	c.exp = expires;
	*token = token_sign(auth.key, auth.keylen, &c);
	if (!*token) {
		fault_set(f, ERR_INTERNAL, "could not sign a token");
		return NULL;
	}

	struct session *s = xcalloc(1, sizeof(*s));
	memcpy(s->s.jti, c.jti, sizeof(s->s.jti));
	snprintf(s->s.user, sizeof(s->s.user), "%s", user);
	s->s.kind = kind;
	snprintf(s->s.name, sizeof(s->s.name), "%s", name ? name : "");
	snprintf(s->s.address, sizeof(s->s.address), "%s", peer ? peer : "");
	s->s.created = now;
	s->s.expires = expires;
	s->s.last_seen = now;
	int rc = db_session_insert(auth.db, &s->s);
	if (rc < 0 && kind == DB_SESSION_LOGIN && db_full(auth.db)) {
		/* A login must work on a full disk: the session lives in memory until stored. */
		log_warn("auth: session %.8s of %s kept in memory: the state filesystem is full; "
		         "it is stored once space returns",
		         s->s.jti, user);
		s->unstored = true;
		store_later();
	} else if (rc != 0) {
		free(s);
		free(*token);
		*token = NULL;
		if (rc == DB_EXISTS && kind == DB_SESSION_TOKEN)
			fault_set(f, ERR_OBJECT_EXISTS, "name: %s already has a token '%s'", user,
			          name);
		else if (rc == DB_NOTFOUND)
			fault_set(f, ERR_NOT_FOUND, "user '%s' not found", user);
		else
			fault_store(f, db_full(auth.db),
			            kind == DB_SESSION_TOKEN ? "token" : "session");
		return NULL;
	}
	hmap_put(&auth.sessions, s->s.jti, strlen(s->s.jti), s);
	/* The client uses it at once: verified now, it needn't be verified again. */
	session_cache_token(s, *token, strlen(*token));
	return s;
}

static int session_load_cb(void *arg, const struct db_session *ds)
{
	int64_t now = *(const int64_t *)arg;
	if (ds->expires <= now || strlen(ds->jti) != 32 ||
	    hmap_get(&auth.sessions, ds->jti, strlen(ds->jti)))
		return 0; /* expired (pruned below) or not ours to trust */
	struct session *s = xcalloc(1, sizeof(*s));
	s->s = *ds;
	hmap_put(&auth.sessions, s->s.jti, strlen(s->s.jti), s);
	return 0;
}

int auth_verify(const char *token, struct identity *who, struct fault *f)
{
	memset(who, 0, sizeof(*who));
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	size_t len = token ? strnlen(token, TOKEN_MAX_LEN + 1) : 0;
	if (len == 0 || len > TOKEN_MAX_LEN)
		return fault_set(f, ERR_UNAUTHORIZED, "invalid token");

	int64_t now = util_now();
	struct session *s = hmap_get(&auth.tokens, token, len);
	if (!s) {
		struct token_claims c;
		const char *why = NULL;
		if (token_verify(auth.key, auth.keylen, token, now, &c, &why) < 0) {
			log_debug("auth: token refused: %s", why);
			return fault_set(f, ERR_UNAUTHORIZED, "invalid token");
		}
		s = hmap_get(&auth.sessions, c.jti, strlen(c.jti));
		if (!s || strcmp(s->s.user, c.sub) != 0)
			return fault_set(f, ERR_UNAUTHORIZED, "session expired or revoked");
		session_cache_token(s, token, len);
	}
	if (now >= s->s.expires) {
		session_drop(s, true);
		return fault_set(f, ERR_UNAUTHORIZED, "session expired");
	}
	const struct user_info *ui;
	int rc = auth_user_info(s->s.user, &ui);
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc == DB_NOTFOUND) {
		auth_revoke_user(s->s.user, NULL);
		return fault_set(f, ERR_UNAUTHORIZED, "session expired or revoked");
	}
	if (s->s.kind == DB_SESSION_LOGIN && now - s->s.last_seen > session_idle_s(ui)) {
		session_drop(s, true);
		return fault_set(f, ERR_UNAUTHORIZED, "session expired");
	}
	if (s->s.last_seen != now) {
		s->s.last_seen = now;
		s->dirty = true;
	}
	memcpy(who->user, s->s.user, sizeof(who->user));
	memcpy(who->jti, s->s.jti, sizeof(who->jti));
	who->perms = ui->perms;
	who->pwtag = ui->pwtag;
	who->api_token = s->s.kind == DB_SESSION_TOKEN;
	who->expires = session_ends(s, ui);
	return 0;
}

static void cred_forget_user(const char *user);

struct revoke_ctx {
	const char *user, *except;
	int n;
	char (*stored)[33]; /* jtis of the rows the user's delete must take */
	size_t nstored, cap;
};

static bool revoke_cb(void *val, void *ctx)
{
	struct session *s = val;
	struct revoke_ctx *rc = ctx;
	if (strcmp(s->s.user, rc->user) != 0 || (rc->except && strcmp(s->s.jti, rc->except) == 0))
		return false;
	if (s->storing) {
		pending_delete(s->s.jti);
	} else if (!s->unstored) {
		rc->stored = util_grow(rc->stored, &rc->cap, rc->nstored, sizeof(*rc->stored));
		memcpy(rc->stored[rc->nstored++], s->s.jti, sizeof(*rc->stored));
	}
	session_forget_token(s);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
	rc->n++;
	return true;
}

void auth_revoke_user(const char *user, const char *except_jti)
{
	if (!auth.ready || !user)
		return;
	struct revoke_ctx rc = {.user = user, .except = except_jti};
	cred_forget_user(user);
	/* Memory first: even if the database fails, the sessions are dead from now on. */
	hmap_filter(&auth.sessions, revoke_cb, &rc);
	if (db_session_delete_user(auth.db, user, except_jti) < 0) {
		log_warn("auth: could not delete the sessions of %s%s", user,
		         db_full(auth.db) ? " yet: they go once space returns" : "");
		for (size_t i = 0; db_full(auth.db) && i < rc.nstored; i++)
			pending_delete(rc.stored[i]);
	}
	free(rc.stored);
	free(hmap_del(&auth.users, user, strlen(user)));
	if (rc.n)
		log_info("auth: revoked %d session(s) of %s", rc.n, user);
}

/* ---- Throttle */

static bool throttle_stale(void *val, void *ctx)
{
	struct throttle *t = val;
	int64_t now = *(const int64_t *)ctx;
	int64_t last = t->last_fail > t->locked_until ? t->last_fail : t->locked_until;
	if (t->inflight > 0 || now - last <= THROTTLE_WINDOW)
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

/* Seconds before another attempt may start, or 0. */
static int throttle_wait(struct hmap *m, const char *key, int limit, int64_t now)
{
	struct throttle *t = throttle_get(m, key, false, now);
	if (!t)
		return 0;
	if (now < t->locked_until)
		return (int)(t->locked_until - now);
	/* Attempts still hashing count as failures until they say otherwise: else 64
	 * guesses submitted at once would all run before the first one is counted. */
	int fails = now - t->last_fail > THROTTLE_WINDOW ? 0 : t->fails;
	return fails + t->inflight >= limit ? 1 : 0;
}

/* Counts a failure; returns the lock it started (seconds), or 0. */
static int throttle_fail(struct hmap *m, const char *key, int limit, int64_t now)
{
	struct throttle *t = throttle_get(m, key, true, now);
	if (!t)
		return 0;
	if (now - t->last_fail > THROTTLE_WINDOW)
		t->fails = 0;
	if (t->locked_until && now - t->locked_until > THROTTLE_WINDOW)
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
static int auth_set_kdf_floor(unsigned floor)
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
	/* Too many logins (a script that never logs out): the stalest one goes. */
	struct session_scan sc = {.user = u.name, .kind = DB_SESSION_LOGIN};
	hmap_filter(&auth.sessions, session_scan_cb, &sc);
	if (sc.count >= AUTH_LOGINS_PER_USER && sc.oldest)
		session_drop(sc.oldest, true);

	int64_t now = util_now();
	struct fault f;
	char *token = NULL;
	struct session *s =
	    session_create(u.name, DB_SESSION_LOGIN, NULL, j->peer, now,
	                   now + (int64_t)auth.cfg.session_max_hours * 3600, &token, &f);
	if (!s) {
		j->cb(j->arg, NULL, &f);
		login_job_free(j);
		return;
	}
	audit_log(u.name, j->peer, "login", u.name, true, "session %.8s", s->s.jti);
	struct auth_login_result res;
	memset(&res, 0, sizeof(res));
	res.token = token;
	res.expires = session_ends(s, ui);
	memcpy(res.user, u.name, sizeof(res.user));
	res.perms = ui->perms;
	j->cb(j->arg, &res, NULL);
	free(token);
	login_job_free(j);
}

void auth_login(const char *user, const char *password, const char *peer, auth_login_done cb,
                void *arg)
{
	struct fault f;
	struct db_user u;

	if (!auth.ready) {
		fault_set(&f, ERR_BUSY, "authentication is not ready");
		cb(arg, NULL, &f);
		return;
	}
	user = user ? user : "";
	password = password ? password : "";
	peer = peer ? peer : "";
	if (auth_password_attempt(user, peer, &f) < 0) {
		cb(arg, NULL, &f);
		return;
	}

	struct login_job *j = xcalloc(1, sizeof(*j));
	snprintf(j->user, sizeof(j->user), "%s", user);
	snprintf(j->peer, sizeof(j->peer), "%s", peer);
	j->password = xstrdup(password);
	j->iterations = auth.cfg.kdf_iterations;
	j->cb = cb;
	j->arg = arg;
	int rc = auth_name_valid(user) ? db_user_get(auth.db, user, &u) : DB_NOTFOUND;
	if (rc < 0) {
		auth_password_cancel(j->user, j->peer);
		login_fail(j, ERR_INTERNAL, "database error");
		return;
	}
	/* Unknown users, and accounts whose hash can't be used, cost a full KDF too. */
	j->known = rc == 0 && kdf_iterations(u.pwhash) != 0;
	/* A row written behind our back may cost more than the floor: raise it. */
	if (j->known && kdf_iterations(u.pwhash) > auth.kdf_floor &&
	    auth_set_kdf_floor(kdf_iterations(u.pwhash)) < 0)
		log_warn("auth: no randomness for the unknown users' hash");
	snprintf(j->stored, sizeof(j->stored), "%s", j->known ? u.pwhash : auth.dummy_hash);
	j->floor = auth.kdf_floor;
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

static void cred_forget_user(const char *user)
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
	struct db_user u;
	if (!auth.ready) {
		fault_set(&f, ERR_BUSY, "authentication is not ready");
		cb(arg, NULL, &f);
		return;
	}
	user = user ? user : "";
	password = password ? password : "";
	peer = peer ? peer : "";
	int64_t now = util_now();
	char pair[THROTTLE_KEY_MAX];
	if (throttle_refuses(user, peer, throttle_pair_key(user, peer, pair), now, &f) < 0) {
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
	int rc = auth_name_valid(user) ? db_user_get(auth.db, user, &u) : DB_NOTFOUND;
	if (rc < 0) {
		auth_password_cancel(j->user, j->peer);
		cred_job_free(j);
		fault_set(&f, ERR_INTERNAL, "database error");
		cb(arg, NULL, &f);
		return;
	}
	j->password = xstrdup(password);
	j->known = rc == 0 && kdf_iterations(u.pwhash) != 0;
	if (j->known && kdf_iterations(u.pwhash) > auth.kdf_floor &&
	    auth_set_kdf_floor(kdf_iterations(u.pwhash)) < 0)
		log_warn("auth: no randomness for the unknown users' hash");
	snprintf(j->stored, sizeof(j->stored), "%s", j->known ? u.pwhash : auth.dummy_hash);
	j->floor = auth.kdf_floor;
	OPENSSL_cleanse(&u, sizeof(u));

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

static void cred_shutdown(void *val)
{
	struct cred *c = val;
	for (struct cred_waiter *w = c->waiters, *next; w; w = next) {
		next = w->next;
		free(w);
	}
	OPENSSL_cleanse(c, sizeof(*c));
	free(c);
}

int auth_logout(const struct identity *who, const char *peer, struct fault *f)
{
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	struct session *s = hmap_get(&auth.sessions, who->jti, strlen(who->jti));
	if (!s)
		return fault_set(f, ERR_UNAUTHORIZED, "session expired or revoked");
	/* A script ending with a logout must not destroy its long-lived token. */
	if (s->s.kind != DB_SESSION_LOGIN)
		return fault_set(f, ERR_DENIED,
		                 "an API token is not a login session; delete the "
		                 "token to revoke it");
	audit_log(who->user, peer, "logout", who->user, true, "session %.8s", s->s.jti);
	session_drop(s, true);
	return 0;
}

/* ---- Named API tokens */

static bool auth_jti_valid(const char *s)
{
	size_t n = 0;
	for (; s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 32;
}

static json_t *token_json(const struct session *s)
{
	char created[32], expires[32];
	return json_pack("{ss ss ss ss ss}", "id", s->s.jti, "name", s->s.name, "user", s->s.user,
	                 "created", util_iso8601(s->s.created, created, sizeof(created)), "expires",
	                 util_iso8601(s->s.expires, expires, sizeof(expires)));
}

/* Refusals of what the actor may not do are security events: keep them in the trail. */
static int auth_refuse(const struct identity *actor, const char *peer, const char *action,
                       const char *target, const struct fault *f)
{
	if (f->kind == ERR_DENIED)
		audit_log(actor ? actor->user : "", peer, action, target, false, "%s", f->details);
	return -1;
}

static int auth_user_exists(const char *user, struct fault *f)
{
	struct db_user u;
	int rc = auth_name_valid(user) ? db_user_get(auth.db, user, &u) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0)
		return fault_set(f, ERR_NOT_FOUND, "user '%.64s' not found", user ? user : "");
	return 0;
}

int auth_token_create(const char *user, const char *name, int expires_days,
                      const struct identity *actor, const char *peer, json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	if (auth_user_exists(user, f) < 0)
		return -1;
	if (auth_may_manage(actor, user, f) < 0)
		return auth_refuse(actor, peer, "token.create", user, f);
	if (!auth_name_valid(name))
		return fault_set(f, ERR_INVALID_ARG,
		                 "name: 1-64 of A-Z a-z 0-9 . _ -, not starting with . or -");
	if (expires_days == 0)
		expires_days = AUTH_TOKEN_DAYS_DEFAULT;
	if (expires_days < 1 || expires_days > AUTH_TOKEN_DAYS_MAX)
		return fault_set(f, ERR_INVALID_ARG, "expires_days: 1..%d", AUTH_TOKEN_DAYS_MAX);

	struct session_scan sc = {.user = user, .kind = DB_SESSION_TOKEN, .name = name};
	hmap_filter(&auth.sessions, session_scan_cb, &sc);
	if (sc.match)
		return fault_set(f, ERR_OBJECT_EXISTS, "name: %s already has a token '%s'", user,
		                 name);
	if (sc.count >= AUTH_TOKENS_PER_USER)
		return fault_set(f, ERR_OVER_LIMIT, "tokens: at most %d per user",
		                 AUTH_TOKENS_PER_USER);

	int64_t now = util_now();
	char *secret = NULL;
	struct session *s = session_create(user, DB_SESSION_TOKEN, name, peer, now,
	                                   now + (int64_t)expires_days * 86400, &secret, f);
	if (!s)
		return -1;
	char when[32];
	audit_log(actor ? actor->user : "", peer, "token.create", user, true,
	          "token '%s' (%.8s), expires %s", name, s->s.jti,
	          util_iso8601(s->s.expires, when, sizeof(when)));
	json_t *t = token_json(s);
	json_object_set_new(t, "secret", json_string(secret));
	OPENSSL_cleanse(secret, strlen(secret));
	free(secret);
	*out = json_pack("{so}", "token", t);
	return 0;
}

static int token_cmp(const void *a, const void *b)
{
	const struct session *x = *(struct session *const *)a, *y = *(struct session *const *)b;
	if (x->s.created != y->s.created)
		return x->s.created < y->s.created ? -1 : 1;
	return strcmp(x->s.name, y->s.name);
}

int auth_token_list(const char *user, json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	if (auth_user_exists(user, f) < 0)
		return -1;
	struct session_scan sc = {.user = user, .kind = DB_SESSION_TOKEN, .collect = true};
	hmap_filter(&auth.sessions, session_scan_cb, &sc);
	if (sc.nlist) /* no list was made for none */
		qsort(sc.list, sc.nlist, sizeof(*sc.list), token_cmp);
	json_t *a = json_array();
	for (size_t i = 0; i < sc.nlist; i++)
		json_array_append_new(a, token_json(sc.list[i])); /* never the secret */
	free(sc.list);
	*out = json_pack("{so}", "tokens", a);
	return 0;
}

int auth_token_delete(const char *user, const char *id, const struct identity *actor,
                      const char *peer, struct fault *f)
{
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	if (auth_user_exists(user, f) < 0)
		return -1;
	if (auth_may_manage(actor, user, f) < 0)
		return auth_refuse(actor, peer, "token.delete", user, f);
	struct session *s =
	    id && auth_jti_valid(id) ? hmap_get(&auth.sessions, id, strlen(id)) : NULL;
	if (!s || s->s.kind != DB_SESSION_TOKEN || strcmp(s->s.user, user) != 0)
		return fault_set(f, ERR_NOT_FOUND, "token '%.64s' not found", id ? id : "");
	/* The row first: a token deleted must not come back with the next start. */
	if (db_session_delete(auth.db, s->s.jti) < 0)
		return fault_store(f, db_full(auth.db), "token");
	audit_log(actor ? actor->user : "", peer, "token.delete", user, true, "token '%s' (%.8s)",
	          s->s.name, s->s.jti);
	session_drop(s, false);
	return 0;
}

/* ---- The timer: write back last_seen, drop what has ended */

struct tick_ctx {
	int64_t now;
	int dropped;
};

static bool tick_expire_cb(void *val, void *ctx)
{
	struct session *s = val;
	struct tick_ctx *t = ctx;
	const struct user_info *ui = NULL;
	bool gone = t->now >= s->s.expires;

	if (!gone) {
		int rc = auth_user_info(s->s.user, &ui);
		if (rc == DB_NOTFOUND)
			gone = true;
		else if (rc == 0 && s->s.kind == DB_SESSION_LOGIN &&
		         t->now - s->s.last_seen > session_idle_s(ui))
			gone = true;
	}
	if (!gone)
		return false;
	/* Past expires, db_session_prune deletes the row; idle or orphaned, we do. */
	if (t->now < s->s.expires)
		session_row_delete(s);
	session_forget_token(s);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
	t->dropped++;
	auth.revokes++; /* streams opened with it end (auth_identity_current) */
	return true;
}

/* last_seen of the sessions used since the last tick, and the prune of expired ones: for
 * the writer (dbw.h), as copies; memory stays the truth meanwhile. */
struct touch_job {
	struct db_session *v;
	size_t n, cap;
	int64_t prune_before; /* 0: no prune */
};

static bool tick_dirty_cb(void *val, void *ctx)
{
	struct session *s = val;
	struct touch_job *t = ctx;
	if (!s->dirty)
		return false;
	t->v = util_grow(t->v, &t->cap, t->n, sizeof(*t->v));
	t->v[t->n++] = s->s;
	s->dirty = false;
	return false;
}

static bool tick_user_stale(void *val, void *ctx)
{
	struct user_info *ui = val;
	if (ui->gen == auth.gen)
		return false;
	free(ui);
	return true;
}

static void touch_work(struct db *db, void *arg)
{
	struct touch_job *t = arg;
	if (t->n) {
		const struct db_session **p = xmalloc(t->n * sizeof(*p));
		for (size_t i = 0; i < t->n; i++)
			p[i] = &t->v[i];
		if (db_session_touch(db, p, t->n) != 0)
			log_warn("auth: could not write back last_seen of %zu session(s)", t->n);
		free(p);
	}
	int pruned = t->prune_before ? db_session_prune(db, t->prune_before) : 0;
	if (pruned > 0)
		log_debug("auth: %d expired session row(s) pruned", pruned);
}

static void touch_done(void *arg)
{
	struct touch_job *t = arg;
	free(t->v);
	free(t);
}

static void auth_flush_last_seen(int64_t prune_before)
{
	struct touch_job *t = xcalloc(1, sizeof(*t));
	t->prune_before = prune_before;
	hmap_filter(&auth.sessions, tick_dirty_cb, t);
	if (t->n || t->prune_before)
		dbw_submit(auth.db, touch_work, touch_done, t);
	else
		touch_done(t);
}

/* What a full disk refused, tried again: the sessions kept in memory and the rows of
 * ended sessions, in that order (dbw keeps it), as copies. */
struct store_job {
	struct db_session *ins;
	int *ins_rc; /* 0 stored, DB_NOTFOUND its user is gone, -1 not yet */
	size_t nins, ins_cap;
	char (*del)[33];
	int *del_rc;
	size_t ndel;
	bool full;
};

static bool store_collect(void *val, void *ctx)
{
	struct session *s = val;
	struct store_job *j = ctx;
	if (!s->unstored || s->storing)
		return false;
	j->ins = util_grow(j->ins, &j->ins_cap, j->nins, sizeof(*j->ins));
	j->ins[j->nins++] = s->s;
	s->storing = true;
	return false;
}

static void store_work(struct db *db, void *arg)
{
	struct store_job *j = arg;
	for (size_t i = 0; i < j->nins; i++) {
		int rc = db_session_insert(db, &j->ins[i]);
		j->ins_rc[i] = rc == DB_EXISTS ? 0 : rc;
		j->full |= rc < 0 && db_full(db);
	}
	for (size_t i = 0; i < j->ndel; i++) {
		int rc = db_session_delete(db, j->del[i]);
		j->del_rc[i] = rc == DB_NOTFOUND ? 0 : rc;
		j->full |= rc < 0 && db_full(db);
	}
}

static void store_done(void *arg)
{
	struct store_job *j = arg;
	size_t stored = 0, left = 0, deleted = 0;
	for (size_t i = 0; i < j->nins; i++) {
		struct session *s =
		    auth.ready ? hmap_get(&auth.sessions, j->ins[i].jti, strlen(j->ins[i].jti))
		               : NULL;
		stored += j->ins_rc[i] == 0;
		left += j->ins_rc[i] < 0;
		if (!s)
			continue; /* ended meanwhile: its delete is queued behind this */
		s->storing = false;
		if (j->ins_rc[i] == 0) {
			s->unstored = false;
			s->dirty = true; /* last_seen may have moved since the copy */
		}
	}
	for (size_t i = 0; i < j->ndel; i++) {
		if (j->del_rc[i] == 0)
			deleted++;
		else if (auth.ready)
			pending_delete(j->del[i]);
	}
	if (stored)
		log_info(
		    "auth: %zu session(s) kept in memory while the disk was full are stored now",
		    stored);
	if (deleted)
		log_info("auth: the rows of %zu ended session(s) are deleted now", deleted);
	if (!auth.ready && (left || deleted < j->ndel))
		log_warn("auth: stopping with %zu session(s) and %zu delete(s) not stored: %s",
		         left, j->ndel - deleted,
		         j->full ? "the state filesystem is full" : "database error");
	else if (left || deleted < j->ndel)
		store_later();
	OPENSSL_cleanse(j->ins, j->ins_cap * sizeof(*j->ins));
	free(j->ins);
	free(j->ins_rc);
	free(j->del);
	free(j->del_rc);
	free(j);
}

/* Hands what is owed to the writer; the done callback arms the timer again if the disk
 * still refuses. */
static void store_submit(void)
{
	struct store_job *j = xcalloc(1, sizeof(*j));
	hmap_filter(&auth.sessions, store_collect, j);
	j->del = auth.pending_del;
	j->ndel = auth.npending_del;
	auth.pending_del = NULL;
	auth.npending_del = auth.pending_del_cap = 0;
	if (!j->nins && !j->ndel) {
		free(j->ins);
		free(j->del);
		free(j);
		return;
	}
	j->ins_rc = xcalloc(j->nins ? j->nins : 1, sizeof(*j->ins_rc));
	j->del_rc = xcalloc(j->ndel ? j->ndel : 1, sizeof(*j->del_rc));
	dbw_submit(auth.db, store_work, store_done, j);
}

static void store_tick(evutil_socket_t fd, short what, void *arg)
{
	store_submit();
}

static void store_later(void)
{
	struct timeval tv = {AUTH_STORE_RETRY_S, 0};
	if (auth.store_ev && !evtimer_pending(auth.store_ev, NULL))
		evtimer_add(auth.store_ev, &tv);
}

static void auth_tick(evutil_socket_t fd, short what, void *arg)
{
	struct tick_ctx t = {util_now(), 0};

	hmap_filter(&auth.users, tick_user_stale, NULL);
	hmap_filter(&auth.sessions, tick_expire_cb, &t);
	auth_flush_last_seen(t.now);
	if (t.dropped)
		log_debug("auth: %d session(s) ended", t.dropped);
	hmap_filter(&auth.throttle_pairs, throttle_stale, &t.now);
	hmap_filter(&auth.throttle_addrs, throttle_stale, &t.now);
	hmap_filter(&auth.throttle_users, throttle_stale, &t.now);
	hmap_filter(&auth.good_addrs, good_stale, &t.now);
}

/* ---- Start-up */

static int auth_load_key(void)
{
	char *path = xasprintf("%s/jwt.key", auth.state_dir);
	size_t len = 0;
	int rc = -1;
	char *data = util_read_file(path, &len);

	if (!data && errno == ENOENT) {
		if (util_random(auth.key, TOKEN_KEY_LEN) < 0) {
			log_err("auth: no randomness for %s", path);
			goto out;
		}
		if (util_write_file_atomic(path, auth.key, TOKEN_KEY_LEN, 0600) < 0) {
			log_err("auth: cannot write %s: %s", path, strerror(errno));
			goto out;
		}
		auth.keylen = TOKEN_KEY_LEN;
		log_info("auth: created a new token key in %s", path);
		rc = 0;
		goto out;
	}
	if (!data) {
		log_err("auth: cannot read %s: %s", path, strerror(errno));
		goto out;
	}
	/* An empty or short secret would make every token forgeable: refuse to start. */
	if (len < TOKEN_KEY_LEN || len > AUTH_KEY_MAX) {
		log_err("auth: %s holds %zu bytes; a key is %d..%d bytes (remove the file to "
		        "make a new one, which ends every session)",
		        path, len, TOKEN_KEY_LEN, AUTH_KEY_MAX);
		goto out;
	}
	memcpy(auth.key, data, len);
	auth.keylen = len;
	struct stat st;
	if (stat(path, &st) == 0 && (st.st_mode & 077))
		log_warn("auth: %s is readable by others than its owner (mode %03o)", path,
		         (unsigned)(st.st_mode & 0777));
	rc = 0;
out:
	if (data) {
		OPENSSL_cleanse(data, len);
		free(data);
	}
	free(path);
	return rc;
}

static const struct {
	const char *name, *description;
	uint32_t perms;
} builtin_roles[] = {
    {"admin", "Full control", PERM_ALL},
    {"operator", "Reads everything, runs benchmarks, saves worksheets, locates hardware",
     PERM_STAT_READ | PERM_WORKSHEET_READ | PERM_WORKSHEET_MODIFY | PERM_HARDWARE_READ |
         PERM_HARDWARE_LOCATE | PERM_BENCH_READ | PERM_BENCH_RUN | PERM_USER_READ},
    {"monitor", "Reads analytics, worksheets, hardware and benchmarks; locates hardware",
     PERM_STAT_READ | PERM_WORKSHEET_READ | PERM_HARDWARE_READ | PERM_HARDWARE_LOCATE |
         PERM_BENCH_READ},
};

static void role_fill_auths(struct db_role *r, uint32_t perms)
{
	r->nauths = 0;
	for (size_t i = 0; i < nitems(perm_names) && r->nauths < DB_AUTHS_MAX; i++)
		if (perms & (1u << i))
			snprintf(r->auths[r->nauths++], sizeof(r->auths[0]), "%s", perm_names[i]);
}

static int auth_builtin_roles(void)
{
	int64_t now = util_now();
	for (size_t i = 0; i < nitems(builtin_roles); i++) {
		struct db_role r;
		int rc = db_role_get(auth.db, builtin_roles[i].name, &r);
		if (rc < 0)
			return -1;
		if (rc == 0 && !r.builtin) {
			log_warn("auth: role %s exists but is not the built-in one; left alone",
			         r.name);
			continue;
		}
		uint32_t have = 0;
		for (int k = 0; rc == 0 && k < r.nauths && k < DB_AUTHS_MAX; k++)
			have |= perm_parse(r.auths[k]);
		if (rc == 0 && have == builtin_roles[i].perms)
			continue;
		/* Missing, or made by an older version with other authorizations. */
		if (rc != 0) {
			memset(&r, 0, sizeof(r));
			snprintf(r.name, sizeof(r.name), "%s", builtin_roles[i].name);
			r.ctime = now;
		}
		snprintf(r.description, sizeof(r.description), "%s", builtin_roles[i].description);
		r.builtin = true;
		r.mtime = now;
		role_fill_auths(&r, builtin_roles[i].perms);
		rc = rc == 0 ? db_role_update(auth.db, &r) : db_role_insert(auth.db, &r);
		if (rc != 0) {
			log_err("auth: cannot store built-in role %s", r.name);
			return -1;
		}
		log_info("auth: built-in role %s %s", r.name,
		         r.ctime == now ? "created" : "updated");
	}
	return 0;
}

static int auth_initial_admin(void)
{
	int n = db_user_count(auth.db);
	if (n < 0)
		return -1;
	if (n > 0)
		return 0;

	unsigned char rnd[18];
	char password[32], line[34];
	struct db_user u;
	int rc = -1;
	char *path = xasprintf("%s/initial-admin-password", auth.state_dir);

	memset(&u, 0, sizeof(u));
	if (util_random(rnd, sizeof(rnd)) < 0)
		goto out;
	util_b64url(rnd, sizeof(rnd), password);
	if (kdf_hash(password, auth.cfg.kdf_iterations, u.pwhash, sizeof(u.pwhash)) < 0) {
		log_err("auth: cannot hash the initial admin password");
		goto out;
	}
	/* File first: a user whose password nobody knows would lock the box. */
	int len = snprintf(line, sizeof(line), "%s\n", password);
	if (util_write_file_atomic(path, line, (size_t)len, 0600) < 0) {
		log_err("auth: cannot write %s: %s", path, strerror(errno));
		goto out;
	}
	snprintf(u.name, sizeof(u.name), "admin");
	snprintf(u.fullname, sizeof(u.fullname), "Administrator");
	u.session_timeout_min = auth.cfg.session_timeout_min;
	u.ctime = u.mtime = util_now();
	u.nroles = 1;
	snprintf(u.roles[0], sizeof(u.roles[0]), "admin");
	if (db_user_insert(auth.db, &u) != 0) {
		log_err("auth: cannot create user admin");
		goto out;
	}
	log_info("initial admin password written to %s", path);
	audit_log("", "", "user.create", "admin", true, "initial administrator");
	rc = 0;
out:
	OPENSSL_cleanse(password, sizeof(password));
	OPENSSL_cleanse(line, sizeof(line));
	OPENSSL_cleanse(&u, sizeof(u));
	free(path);
	return rc;
}

static int auth_costliest_cb(void *arg, const struct db_user *u)
{
	unsigned *most = arg, it = kdf_iterations(u->pwhash);
	if (it > *most)
		*most = it;
	return 0;
}

/* Hashes made before a change of kdf_iterations stay until their next login: the floor
 * starts at the costliest stored, never below the configured count. */
static int auth_init_kdf_floor(void)
{
	unsigned floor = auth.cfg.kdf_iterations;
	if (db_user_list(auth.db, auth_costliest_cb, &floor) < 0)
		return -1;
	if (floor != auth.cfg.kdf_iterations)
		log_info(
		    "auth: stored password hashes of up to %u iterations: every check costs as "
		    "much",
		    floor);
	return auth_set_kdf_floor(floor);
}

int auth_init(struct event_base *base, struct db *db, struct workq *wq,
              const struct auth_config *cfg)
{
	if (auth.ready) {
		log_err("auth: initialised twice");
		return -1;
	}
	if (!base || !db || !wq || !cfg) {
		log_err("auth: no event loop, database or helper threads");
		return -1;
	}
	memset(&auth, 0, sizeof(auth));
	auth.base = base;
	auth.db = db;
	auth.wq = wq;
	auth.lane_tail = &auth.lane_head;
	auth.cfg = *cfg;
	auth.state_dir = xstrdup(cfg->state_dir ? cfg->state_dir : ".");
	auth.cfg.state_dir = auth.state_dir;
	if (!auth.cfg.kdf_iterations)
		auth.cfg.kdf_iterations = KDF_DEFAULT_ITERATIONS;
	if (auth.cfg.kdf_iterations < KDF_MIN_ITERATIONS ||
	    auth.cfg.kdf_iterations > KDF_MAX_ITERATIONS) {
		log_err("auth: kdf_iterations must be %d..%d", KDF_MIN_ITERATIONS,
		        KDF_MAX_ITERATIONS);
		goto fail;
	}
	if (auth.cfg.session_timeout_min <= 0)
		auth.cfg.session_timeout_min = AUTH_DEFAULT_TIMEOUT;
	if (auth.cfg.session_max_hours <= 0)
		auth.cfg.session_max_hours = AUTH_DEFAULT_MAX_HOURS;
	audit_init(db);

	unsigned char seed[HMAP_SEED_LEN];
	if (util_random(seed, sizeof(seed)) < 0 ||
	    util_random(auth.cred_key, sizeof(auth.cred_key)) < 0) {
		log_err("auth: no randomness");
		goto fail;
	}
	hmap_seed(seed);
	OPENSSL_cleanse(seed, sizeof(seed));
	if (auth_load_key() < 0)
		goto fail;
	if (auth_builtin_roles() < 0 || auth_initial_admin() < 0) {
		log_err("auth: cannot set up the built-in roles and users");
		goto fail;
	}
	if (auth_init_kdf_floor() < 0) {
		log_err("auth: cannot read the stored password hashes");
		goto fail;
	}
	int64_t now = util_now();
	if (db_session_list(db, session_load_cb, &now) < 0 || db_session_prune(db, now) < 0) {
		log_err("auth: cannot load sessions");
		goto fail;
	}
	auth.tick = event_new(base, -1, EV_PERSIST, auth_tick, NULL);
	auth.store_ev = evtimer_new(base, store_tick, NULL);
	struct timeval tv = {AUTH_TICK_S, 0};
	if (!auth.tick || !auth.store_ev || event_add(auth.tick, &tv) < 0) {
		log_err("auth: cannot start the session timer");
		goto fail;
	}
	auth.ready = true;
	log_info("auth: %zu session(s) loaded", auth.sessions.n);
	return 0;
fail:
	auth.ready = true; /* so that auth_shutdown frees what was made */
	auth_shutdown();
	return -1;
}

static void shutdown_session(void *val)
{
	struct session *s = val;
	free(s->token);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}

/* Call after workq_free (whose done callbacks still use this state) and before db_close. */
void auth_shutdown(void)
{
	if (!auth.ready)
		return;
	if (auth.tick)
		event_free(auth.tick);
	if (auth.store_ev)
		event_free(auth.store_ev);
	auth.store_ev = NULL;
	if (auth.db) {
		store_submit(); /* a last try; its done callback finds auth stopped */
		auth_flush_last_seen(0);
	}
	free(auth.pending_del);
	/* The token map doesn't own its values: empty it before the sessions go. */
	hmap_clear(&auth.tokens, NULL);
	hmap_clear(&auth.sessions, shutdown_session);
	hmap_clear(&auth.users, free);
	hmap_clear(&auth.throttle_pairs, free);
	hmap_clear(&auth.throttle_addrs, free);
	hmap_clear(&auth.throttle_users, free);
	hmap_clear(&auth.good_addrs, free);
	hmap_clear(&auth.creds, cred_shutdown);
	free(auth.state_dir);
	audit_init(NULL);                     /* the database is about to close */
	OPENSSL_cleanse(&auth, sizeof(auth)); /* zeroes: the key goes too */
}
