/* SPDX-License-Identifier: ISC */
/* Sessions and named API tokens (auth.h). The session table lives in the database and,
 * whole, in memory: every request checks the in-memory copy (so a revocation is immediate
 * and nothing touches disk), and a verified token string is remembered with its session
 * so its HMAC is computed once, not once per request. Sliding last_seen stays in memory
 * and is written back every AUTH_TICK_S. A login on a full disk keeps its session in
 * memory until the row can be written (tried every AUTH_STORE_RETRY_S), and the rows of
 * sessions ended while the disk refused their delete go then too. */
#include "auth_int.h"
#include "audit.h"
#include "base/log.h"
#include "base/util.h"
#include "token.h"
#include "db/dbw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <openssl/crypto.h>

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

void session_drop(struct session *s, bool from_db)
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

int64_t session_ends(const struct session *s, const struct user_info *ui)
{
	if (s->s.kind != DB_SESSION_LOGIN)
		return s->s.expires;
	int64_t idle_end = s->s.last_seen + session_idle_s(ui);
	return idle_end < s->s.expires ? idle_end : s->s.expires;
}

bool session_scan_cb(void *val, void *ctx)
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

struct session *session_create(const char *user, enum db_session_kind kind, const char *name,
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
		else if (rc == DB_NOTFOUND && kind == DB_SESSION_LOGIN)
			/* deleted while its password was checked */
			fault_set(f, ERR_UNAUTHORIZED, "user '%s' no longer exists", user);
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

struct session *session_login(const char *user, const char *name, const char *peer, int64_t now,
                              char **token, struct fault *f)
{
	/* Too many logins (a script that never logs out): the stalest one goes. */
	struct session_scan sc = {.user = user, .kind = DB_SESSION_LOGIN};
	hmap_filter(&auth.sessions, session_scan_cb, &sc);
	if (sc.count >= AUTH_LOGINS_PER_USER && sc.oldest)
		session_drop(sc.oldest, true);
	return session_create(user, DB_SESSION_LOGIN, name, peer, now,
	                      now + (int64_t)auth.cfg.session_max_hours * 3600, token, f);
}

int session_load_cb(void *arg, const struct db_session *ds)
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
		sessions_revoke_user(s->s.user, NULL); /* (its remembered credentials miss) */
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

void sessions_revoke_user(const char *user, const char *except_jti)
{
	struct revoke_ctx rc = {.user = user, .except = except_jti};
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
	/* A browser kept signed in that logs out is kept no longer: its device goes, and
	 * with it every session it opened (this one among them). */
	if (s->s.name[0]) {
		char user[sizeof(s->s.user)], id[sizeof(s->s.name)];
		memcpy(user, s->s.user, sizeof(user));
		memcpy(id, s->s.name, sizeof(id));
		int rc = db_device_delete(auth.db, id);
		if (rc < 0)
			log_warn("auth: could not delete device %.8s of %s at its logout", id,
			         user);
		else if (rc == 0)
			log_info("auth: device %.8s of %s ends: its browser logged out", id, user);
		sessions_end_named(user, id, NULL);
		return 0;
	}
	session_drop(s, true);
	return 0;
}

int sessions_end_named(const char *user, const char *name, const char *except_jti)
{
	struct session_scan sc = {.user = user, .kind = DB_SESSION_LOGIN, .collect = true};
	hmap_filter(&auth.sessions, session_scan_cb, &sc);
	int n = 0;
	for (size_t i = 0; i < sc.nlist; i++)
		if (strcmp(sc.list[i]->s.name, name) == 0 &&
		    !(except_jti && strcmp(sc.list[i]->s.jti, except_jti) == 0)) {
			session_drop(sc.list[i], true);
			n++;
		}
	free(sc.list);
	return n;
}

/* ---- Named API tokens */

bool auth_id_valid(const char *s)
{
	size_t n = 0;
	for (; s && s[n]; n++)
		if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f')))
			return false;
	return n == 32;
}

static json_t *token_json(const struct session *s)
{
	char created[32], expires[32];
	return json_pack("{ss ss ss ss ss}", "id", s->s.jti, "name", s->s.name, "user", s->s.user,
	                 "ctime", util_iso8601(s->s.created, created, sizeof(created)), "expires",
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

int auth_user_exists(const char *user, struct fault *f)
{
	struct db_user u;
	int rc = auth_name_valid(user) ? db_user_get(auth.db, user, &u) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0)
		return fault_set(f, ERR_NOT_FOUND, "user '%.64s' not found", user ? user : "");
	return 0;
}

int auth_manage_check(const char *user, const struct identity *actor, const char *peer,
                      const char *action, struct fault *f)
{
	if (!auth.ready)
		return fault_set(f, ERR_INTERNAL, "authentication is not ready");
	if (auth_user_exists(user, f) < 0)
		return -1;
	if (auth_may_manage(actor, user, f) < 0)
		return auth_refuse(actor, peer, action, user, f);
	return 0;
}

int auth_token_create(const char *user, const char *name, int expires_days,
                      const struct identity *actor, const char *peer, json_t **out, struct fault *f)
{
	*out = NULL;
	if (auth_manage_check(user, actor, peer, "token.create", f) < 0)
		return -1;
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
	if (auth_manage_check(user, actor, peer, "token.delete", f) < 0)
		return -1;
	struct session *s =
	    id && auth_id_valid(id) ? hmap_get(&auth.sessions, id, strlen(id)) : NULL;
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

/* ---- Every AUTH_TICK_S (auth_tick): last_seen written back, what has ended dropped */

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

int sessions_expire(int64_t now)
{
	struct tick_ctx t = {now, 0};
	hmap_filter(&auth.sessions, tick_expire_cb, &t);
	return t.dropped;
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
	pruned = t->prune_before ? db_device_prune(db, t->prune_before) : 0;
	if (pruned > 0)
		log_info("auth: %d device(s) ended unused", pruned);
}

static void touch_done(void *arg)
{
	struct touch_job *t = arg;
	free(t->v);
	free(t);
}

void auth_flush_last_seen(int64_t prune_before)
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
void store_submit(void)
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

void store_tick(evutil_socket_t fd, short what, void *arg)
{
	store_submit();
}

static void store_later(void)
{
	struct timeval tv = {AUTH_STORE_RETRY_S, 0};
	if (auth.store_ev && !evtimer_pending(auth.store_ev, NULL))
		evtimer_add(auth.store_ev, &tv);
}

void session_free(void *val)
{
	struct session *s = val;
	free(s->token);
	OPENSSL_cleanse(s, sizeof(*s));
	free(s);
}
