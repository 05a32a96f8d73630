/* SPDX-License-Identifier: ISC */
/* Authentication and authorization: sessions, tokens, logins, roles' authorizations.
 * Owns the session table (db + an in-memory cache that makes verification cheap). */
#ifndef SPINDLE_AUTH_H
#define SPINDLE_AUTH_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "base/fault.h"

struct db;
struct workq;
struct event_base;

/* Authorizations, scope x verb ("stat:read"): what roles grant and routes require. */
enum perm {
	PERM_STAT_READ = 1u << 0,
	PERM_WORKSHEET_READ = 1u << 1,
	PERM_WORKSHEET_MODIFY = 1u << 2,
	PERM_HARDWARE_READ = 1u << 3,
	PERM_HARDWARE_LOCATE = 1u << 4,
	PERM_BENCH_READ = 1u << 5,
	PERM_BENCH_RUN = 1u << 6,
	PERM_USER_READ = 1u << 7,
	PERM_USER_MODIFY = 1u << 8,
	PERM_ROLE_MODIFY = 1u << 9,
	PERM_SETTINGS_MODIFY = 1u << 10,
};
#define PERM_ALL ((1u << 11) - 1)

/* "stat:read" -> PERM_STAT_READ; 0 if unknown. */
uint32_t perm_parse(const char *name);
const char *perm_name(uint32_t bit);
/* New reference: ["stat:read", ...] in a fixed order. */
json_t *perm_json(uint32_t perms);

struct identity {
	char user[65];
	uint32_t perms;
	char jti[33];
	bool api_token;
	int64_t expires; /* when this session ends if unused (sliding) or for good */
	uint64_t pwtag;  /* the password it was checked against (moves when it changes) */
};

struct auth_config {
	const char *state_dir;   /* jwt.key lives here */
	unsigned kdf_iterations; /* for new hashes */
	int session_timeout_min; /* default idle timeout for new users */
	int session_max_hours;   /* absolute lifetime of a login token */
};

/* Moves whenever a user, a role, a password or a session changes or ends: a cheap test
 * of whether auth_identity_current() may say something new. */
uint64_t auth_changes(void);
/* Whether who, as authenticated when a stream opened, still holds: the user exists with
 * the same password and authorizations, and its session (if any) is alive. */
bool auth_identity_current(const struct identity *who);

/* Loads or creates STATE/jwt.key (0600, 32 random bytes); creates user admin with a
 * random password (STATE/initial-admin-password, 0600) and the built-in roles when the
 * database has none. -1 with a message logged on failure (startup error). */
int auth_init(struct event_base *base, struct db *db, struct workq *wq,
              const struct auth_config *cfg);
void auth_shutdown(void);

/* Cheap: verifies signature, alg, exp, jti against the session cache, idle timeout,
 * and the user's current authorizations. Slides the idle timeout. */
int auth_verify(const char *token, struct identity *who, struct fault *f);

struct auth_login_result {
	char *token; /* for free() */
	int64_t expires;
	char user[65];
	uint32_t perms;
	json_t *device; /* the device registered or logged in with, else NULL (borrowed) */
};
/* A browser to keep signed in, registered with a password login: its name and the public
 * half (base64url DER SubjectPublicKeyInfo, EC P-256) of a key pair it cannot export. */
struct auth_device_req {
	const char *name;
	const char *public_key;
};
/* f is NULL on success; res is valid only during the call. */
typedef void (*auth_login_done)(void *arg, const struct auth_login_result *res,
                                const struct fault *f);
/* Throttled per address and per (user, address) (ERR_TOO_MANY with retry_after), so a
 * guesser locks out itself, not the user; unknown users cost as much as known ones.
 * cb may run before auth_login returns (throttled). */
void auth_login(const char *user, const char *password, const char *peer,
                const struct auth_device_req *device, auth_login_done cb, void *arg);
/* Devices (server/access/devices.c): a browser kept signed in logs in by signing a
 * challenge with its key. {"challenge","expires"}: */
int auth_device_challenge(json_t **out, struct fault *f);
/* Failures throttled as password logins are, and a device's own logins past
 * AUTH_DEVICE_LOGIN_LIMIT in a row (429); cb as auth_login's (res->device set). */
void auth_device_login(const char *id, const char *challenge, const char *signature,
                       const char *peer, auth_login_done cb, void *arg);
int auth_device_list(const char *user, json_t **out, struct fault *f); /* {"devices":[...]} */
int auth_device_delete(const char *user, const char *id, const struct identity *actor,
                       const char *peer, struct fault *f);
/* Credentials sent with a request (Basic, X-Auth-User/X-Auth-Key), as appliance clients
 * send them on every call: checked once on a helper thread, throttled as logins are, then
 * remembered for minutes so the next requests cost no KDF. who carries no jti (there is no
 * session). f is NULL on success; cb may run before auth_credentials returns. */
typedef void (*auth_cred_done)(void *arg, const struct identity *who, const struct fault *f);
void auth_credentials(const char *user, const char *password, const char *peer, auth_cred_done cb,
                      void *arg);
int auth_logout(const struct identity *who, const char *peer, struct fault *f);

/* Named long-lived tokens: {"token":{"id","name","user","ctime","expires","secret"}};
 * the secret (the JWT) is in this answer only. */
int auth_token_create(const char *user, const char *name, int expires_days,
                      const struct identity *actor, const char *peer, json_t **out,
                      struct fault *f);
int auth_token_list(const char *user, json_t **out, struct fault *f); /* {"tokens":[...]} */
int auth_token_delete(const char *user, const char *id, const struct identity *actor,
                      const char *peer, struct fault *f);

/* Whether actor may change user (password, roles, other fields, tokens, deletion): always
 * when it is the actor itself, else only when the actor holds every authorization the
 * user holds, so user:modify alone is no way to another user's power. 0, or -1 with
 * ERR_DENIED naming what the actor lacks (ERR_NOT_FOUND, ERR_INTERNAL). */
int auth_may_manage(const struct identity *actor, const char *user, struct fault *f);

/* Accounts call these after changing users or roles, so the next request sees it. */
void auth_users_changed(void);
/* Revoke every session and token of a user (deleted user, password changed by admin). */
void auth_revoke_user(const char *user, const char *except_jti);

/* Added for accounts.c (and any other password check, e.g. current_password). */
/* User, role and token names: 1-64 of [A-Za-z0-9._-], not starting with '.' or '-'. */
bool auth_name_valid(const char *name);
/* What auth_init was given, defaults applied (NULL/0 before auth_init). */
struct db *auth_db(void);
struct workq *auth_workq(void);
unsigned auth_kdf_iterations(void);
/* What every password check costs at least (kdf_verify_floor): the configured count, or
 * the costliest stored hash when that is more. */
unsigned auth_kdf_floor(void);
int auth_default_timeout_min(void);
/* The login throttle around any password check: attempt before submitting the KDF
 * (-1 with ERR_TOO_MANY and retry_after when throttled), then exactly one of result
 * (with the outcome; returns the lock it started, in seconds, or 0) or cancel (the check
 * never ran: workq full, db error). */
int auth_password_attempt(const char *user, const char *peer, struct fault *f);
int auth_password_result(const char *user, const char *peer, bool ok);
void auth_password_cancel(const char *user, const char *peer);

#endif
