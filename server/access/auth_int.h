/* SPDX-License-Identifier: ISC */
/* What the parts of authentication share (auth.h is their face), from the top down, each
 * calling only those below it: auth.c (start-up, the timer, shutdown, revocation),
 * credentials.c (password checks: the throttle, the lane of KDFs, logins and the
 * credentials remembered from requests), sessions.c (sessions and named API tokens, and
 * writing them back) and authz.c (authorizations, a user's, and the state itself).
 * Everything here runs on the loop thread. */
#ifndef SPINDLE_AUTH_INT_H
#define SPINDLE_AUTH_INT_H

#include "auth.h"
#include "kdf.h"
#include "base/hmap.h"
#include "db/db.h"

#include <stdbool.h>
#include <stdint.h>

#include <event2/util.h>

#define AUTH_TICK_S             30  /* persist last_seen, prune expired sessions */
#define AUTH_STORE_RETRY_S      5   /* retry what a full disk refused (sessions, deletes) */
#define AUTH_DEFAULT_TIMEOUT    15  /* minutes idle, when neither config nor user says */
#define AUTH_DEFAULT_MAX_HOURS  24  /* absolute lifetime of a login, when config says 0 */
#define AUTH_KEY_MAX            512 /* jwt.key longer than this is a mistake, not a key */
#define AUTH_LOGINS_PER_USER    64  /* more login sessions: the least recently used goes */
#define AUTH_TOKENS_PER_USER    100 /* named API tokens one user may hold */
#define AUTH_TOKEN_DAYS_DEFAULT 365
#define AUTH_TOKEN_DAYS_MAX     3650
#define AUTH_DEVICES_PER_USER   20  /* browsers kept signed in; the least recently used goes */
#define AUTH_DEVICE_IDLE_DAYS   30  /* a device not used for this long ends */
#define AUTH_DEVICE_MAX_DAYS    365 /* and any at this age */
#define AUTH_CHALLENGE_S        120 /* a device login's challenge lasts this long */

/* Device logins that succeed are throttled per device as failed password logins are:
 * LIMIT of them, each within WINDOW seconds of the one before, lock the device for
 * THROTTLE_BACKOFF_MIN, doubling as for a guesser (429 with Retry-After). A browser logs
 * in when it opens with no session of another tab, and when its session ends: never that
 * often. Only its own logins count, so only its key can lock it, and no other's. */
#define AUTH_DEVICE_LOGIN_LIMIT  10
#define AUTH_DEVICE_LOGIN_WINDOW 60

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

/* Attempts of one kind under one key (a pair, an address, a name, a device). */
struct throttle {
	int fails;    /* since the last quiet window */
	int inflight; /* attempts whose KDF is still running */
	int lockouts; /* locks in a row, for the doubling back-off */
	int64_t last_fail, locked_until;
};

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

struct event;
struct lane_job;

struct auth_state {
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
	struct hmap challenges;     /* device id -> struct device_use (devices.c) */
	unsigned char chal_key[32]; /* random per process: the challenges' MAC key */
	uint64_t chal_serial;       /* of the last challenge made */
};

extern struct auth_state auth;

/* --- authz.c */

/* The user's current authorizations and idle timeout: 0, DB_NOTFOUND, or -1 (db error). */
int auth_user_info(const char *name, const struct user_info **out);

/* --- sessions.c */

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
/* An hmap_filter() callback over auth.sessions: counts and finds the user's of a kind. */
bool session_scan_cb(void *val, void *ctx);
/* A new session and its signed token (for free()); NULL with f set. */
struct session *session_create(const char *user, enum db_session_kind kind, const char *name,
                               const char *peer, int64_t now, int64_t expires, char **token,
                               struct fault *f);
/* A login session of user (named after the device that opened it, or NULL) for the
 * configured lifetime; past AUTH_LOGINS_PER_USER the user's stalest login goes first. */
struct session *session_login(const char *user, const char *name, const char *peer, int64_t now,
                              char **token, struct fault *f);
/* Out of memory, and out of the database when from_db. */
void session_drop(struct session *s, bool from_db);
/* When this session ends if nothing else happens. */
int64_t session_ends(const struct session *s, const struct user_info *ui);
/* A db_session_list() callback: the stored sessions still valid join memory. */
int session_load_cb(void *arg, const struct db_session *ds);
void session_free(void *val);
/* Ends the sessions past their end, idle, or of a deleted user; returns how many. */
int sessions_expire(int64_t now);
/* Hands last_seen of the sessions used since the last call to the writer, with a prune
 * of the rows expired before prune_before (0: none). */
void auth_flush_last_seen(int64_t prune_before);
/* The user's sessions end, but except_jti's (NULL: all), in memory at once and in the
 * database as soon as it lets us. */
void sessions_revoke_user(const char *user, const char *except_jti);
/* The user's login sessions named name (those a device opened) end, but except_jti's
 * (NULL: all); returns how many. */
int sessions_end_named(const char *user, const char *name, const char *except_jti);
/* What a full disk refused (sessions kept in memory, rows to delete), tried again. */
void store_submit(void);
void store_tick(evutil_socket_t fd, short what, void *arg);

/* 0 when user names an existing user; else -1 with ERR_NOT_FOUND (ERR_INTERNAL). */
int auth_user_exists(const char *user, struct fault *f);
/* Whether s is an id as sessions and devices have them: 32 lower-case hex digits. */
bool auth_id_valid(const char *s);
/* What every change of a user's tokens or devices checks first: ready, the user exists,
 * and actor may manage them (else the refusal of action is audited). 0, or -1 with f. */
int auth_manage_check(const char *user, const struct identity *actor, const char *peer,
                      const char *action, struct fault *f);

/* --- devices.c */

/* 0 when a device to register (at a password login) has a name and an EC P-256 key. */
int device_request_check(const struct auth_device_req *req, struct fault *f);
/* Stores a new device of user (the least recently used goes past AUTH_DEVICES_PER_USER). */
int device_create(const char *user, const struct auth_device_req *req, const char *peer,
                  int64_t now, struct db_device *out, struct fault *f);
/* What the API shows of a device (never its key): a new reference. */
json_t *device_public(const struct db_device *d);
/* The device's row goes, and the sessions it opened end but except_jti's (NULL: all). */
void device_delete_row(const struct db_device *d, const char *except_jti, const char *why);
/* Every device of user ends, and the sessions they opened but except_jti's (with
 * auth_revoke_user: a password changed or reset, the user deleted). */
void devices_revoke_user(const char *user, const char *except_jti);
/* What devices' logins left behind (the challenges they used, their throttle) is
 * forgotten once those challenges have expired and the throttle is quiet. */
void devices_prune(int64_t now);

/* --- credentials.c */

/* Every password check costs at least floor iterations from now on. */
int auth_set_kdf_floor(unsigned floor);
/* The remembered credentials of user go (its sessions are revoked). */
void cred_forget_user(const char *user);
void cred_free(void *val);
/* The throttle's entries and known good addresses quiet for a window go. */
void throttle_prune(int64_t now);
/* The throttle's counting, for a record kept elsewhere (a device's logins): seconds
 * before t allows another attempt under limit, or 0; counting one (throttle_count), the
 * lock it starts (seconds), or 0: limit counts, each within window seconds of the one
 * before, lock for THROTTLE_BACKOFF_MIN, doubling at each further lock; a quiet window
 * forgets. */
int throttle_until(const struct throttle *t, int limit, int window, int64_t now);
int throttle_count(struct throttle *t, int limit, int window, int64_t now);
/* Whether t has been quiet for window (nothing in flight, no lock, no count). */
bool throttle_quiet(const struct throttle *t, int window, int64_t now);

#endif
