/* SPDX-License-Identifier: ISC */
/* Authentication (auth.h), the top of its parts: start-up (the token key, the built-in
 * roles, the first administrator), the timer, shutdown, and a user's revocation. Below it,
 * each calling only those under it: credentials.c (password checks and logins),
 * sessions.c (sessions and named API tokens) and authz.c (authorizations and the shared
 * state). Everything here runs on the loop thread. */
#include "auth_int.h"
#include "audit.h"
#include "base/log.h"
#include "base/util.h"
#include "token.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <event2/event.h>
#include <openssl/crypto.h>

/* ---- Revocation */

void auth_revoke_user(const char *user, const char *except_jti)
{
	if (!auth.ready || !user)
		return;
	cred_forget_user(user);
	devices_revoke_user(user, except_jti);
	sessions_revoke_user(user, except_jti);
}

/* ---- The timer */

static bool tick_user_stale(void *val, void *ctx)
{
	struct user_info *ui = val;
	if (ui->gen == auth.gen)
		return false;
	free(ui);
	return true;
}

static void auth_tick(evutil_socket_t fd, short what, void *arg)
{
	int64_t now = util_now();
	hmap_filter(&auth.users, tick_user_stale, NULL);
	int dropped = sessions_expire(now);
	auth_flush_last_seen(now);
	if (dropped)
		log_debug("auth: %d session(s) ended", dropped);
	throttle_prune(now);
	devices_prune(now);
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
	for (unsigned i = 0; i < 32 && r->nauths < DB_AUTHS_MAX; i++)
		if ((perms & (1u << i)) && perm_name(1u << i))
			snprintf(r->auths[r->nauths++], sizeof(r->auths[0]), "%s",
			         perm_name(1u << i));
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
	    util_random(auth.cred_key, sizeof(auth.cred_key)) < 0 ||
	    util_random(auth.chal_key, sizeof(auth.chal_key)) < 0) {
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
	hmap_clear(&auth.sessions, session_free);
	hmap_clear(&auth.users, free);
	hmap_clear(&auth.throttle_pairs, free);
	hmap_clear(&auth.throttle_addrs, free);
	hmap_clear(&auth.throttle_users, free);
	hmap_clear(&auth.good_addrs, free);
	hmap_clear(&auth.creds, cred_free);
	hmap_clear(&auth.challenges, free);
	free(auth.state_dir);
	audit_init(NULL);                     /* the database is about to close */
	OPENSSL_cleanse(&auth, sizeof(auth)); /* zeroes: the key goes too */
}
