/* SPDX-License-Identifier: ISC */
/* Users and roles: the rules over db/. Passwords are hashed (and current passwords
 * checked) on the helper threads; the database is only touched on the loop thread, and
 * every rule that depends on its state is checked again when the hash comes back,
 * because anything may have changed in between.
 *
 * Refusals: ERR_INVALID_ARG for values breaking a rule, ERR_DENIED for what the actor
 * may not do (fields needing user:modify, granting authorizations the actor does not
 * hold, changing a user who holds some the actor does not, built-in roles, removing the
 * last admin), ERR_OBJECT_EXISTS for taken names, ERR_STATE_CHANGED for roles still
 * held (the appliance's names). details always starts with the field at fault. */
#include "accounts.h"
#include "audit.h"
#include "auth.h"
#include "kdf.h"
#include "base/log.h"
#include "base/util.h"
#include "base/workq.h"
#include "db/db.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#define PASSWORD_MIN    8
#define PASSWORD_MAX    1024
#define FULLNAME_MAX    128
#define TIMEOUT_MIN     1
#define TIMEOUT_MAX     1440
#define DESCRIPTION_MAX 256
#define ADMIN_ROLE      "admin"
#define NAME_RULE       "1-64 of A-Z a-z 0-9 . _ -, not starting with . or -"

/* ---- Small helpers */

/* A growing "a, b, c" for audit details. */
struct strbuf {
	char s[512];
	size_t n;
};

static void sb_add(struct strbuf *b, const char *sep, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void sb_add(struct strbuf *b, const char *sep, const char *fmt, ...)
{
	va_list ap;
	if (b->n >= sizeof(b->s) - 1)
		return;
	if (b->n && sep)
		b->n += (size_t)snprintf(b->s + b->n, sizeof(b->s) - b->n, "%s", sep);
	if (b->n >= sizeof(b->s) - 1) {
		b->n = sizeof(b->s) - 1;
		return;
	}
	va_start(ap, fmt);
	int w = vsnprintf(b->s + b->n, sizeof(b->s) - b->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		b->n += (size_t)w;
	if (b->n >= sizeof(b->s))
		b->n = sizeof(b->s) - 1;
}

static void sb_perms(struct strbuf *b, uint32_t perms)
{
	size_t start = b->n;
	for (uint32_t bit = 1; bit && bit <= PERM_ALL; bit <<= 1)
		if (perms & bit)
			sb_add(b, b->n > start ? ", " : NULL, "%s", perm_name(bit));
	if (b->n == start)
		sb_add(b, NULL, "(none)");
}

static void sb_roles(struct strbuf *b, const struct db_user *u)
{
	if (u->nroles == 0)
		sb_add(b, NULL, "(none)");
	for (int i = 0; i < u->nroles; i++)
		sb_add(b, i ? ", " : NULL, "%s", u->roles[i]);
}

static bool user_has_role(const struct db_user *u, const char *role)
{
	for (int i = 0; i < u->nroles && i < DB_ROLES_MAX; i++)
		if (strcmp(u->roles[i], role) == 0)
			return true;
	return false;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

static const char *actor_name(const struct identity *actor)
{
	return actor ? actor->user : "";
}

/* Refusals of what the actor may not do are security events: keep them in the trail. */
static int refuse(const struct identity *actor, const char *peer, const char *action,
                  const char *target, const struct fault *f)
{
	if (f->kind == ERR_DENIED)
		audit_log(actor_name(actor), peer, action, target, false, "%s", f->details);
	return -1;
}

/* 0, DB_NOTFOUND or -1; perms of one role. */
static int role_perms(const char *name, uint32_t *perms)
{
	struct db_role r;
	int rc = db_role_get(auth_db(), name, &r);
	*perms = 0;
	if (rc != 0)
		return rc;
	for (int i = 0; i < r.nauths && i < DB_AUTHS_MAX; i++)
		*perms |= perm_parse(r.auths[i]);
	return 0;
}

static uint32_t user_perms(const struct db_user *u)
{
	uint32_t all = 0, p;
	for (int i = 0; i < u->nroles && i < DB_ROLES_MAX; i++)
		if (role_perms(u->roles[i], &p) == 0)
			all |= p;
	return all;
}

static json_t *user_json(const struct db_user *u)
{
	char ctime[32], mtime[32];
	json_t *roles = json_array();
	for (int i = 0; i < u->nroles && i < DB_ROLES_MAX; i++)
		json_array_append_new(roles, json_string(u->roles[i]));
	return json_pack("{ss ss so so si ss ss}", "name", u->name, "fullname", u->fullname,
	                 "roles", roles, "authorizations", perm_json(user_perms(u)),
	                 "session_timeout_min", u->session_timeout_min, "ctime",
	                 util_iso8601(u->ctime, ctime, sizeof(ctime)), "mtime",
	                 util_iso8601(u->mtime, mtime, sizeof(mtime)));
}

/* ---- Field checks (values; the HTTP layer checked the JSON types, we check again
 * because a wrong type here would be a crash, not a 400) */

static int get_string(json_t *body, const char *key, bool required, const char **out,
                      struct fault *f)
{
	json_t *v = body ? json_object_get(body, key) : NULL;
	*out = NULL;
	if (!v) {
		if (required)
			return fault_set(f, ERR_MISSING_ARG, "%s", key);
		return 0;
	}
	if (!json_is_string(v))
		return fault_set(f, ERR_INVALID_ARG, "%s: must be a string", key);
	*out = json_string_value(v);
	return 0;
}

static int check_password(const char *pw, const char *field, struct fault *f)
{
	size_t n = strlen(pw);
	if (n < PASSWORD_MIN || n > PASSWORD_MAX)
		return fault_set(f, ERR_INVALID_ARG, "%s: %d to %d bytes", field, PASSWORD_MIN,
		                 PASSWORD_MAX);
	return 0;
}

static int check_fullname(const char *s, struct fault *f)
{
	if (strlen(s) > FULLNAME_MAX || !text_ok(s))
		return fault_set(f, ERR_INVALID_ARG,
		                 "fullname: at most %d bytes, no control characters", FULLNAME_MAX);
	return 0;
}

static int get_timeout(json_t *body, bool *present, int *out, struct fault *f)
{
	json_t *v = body ? json_object_get(body, "session_timeout_min") : NULL;
	*present = v != NULL;
	if (!v)
		return 0;
	json_int_t t = json_is_integer(v) ? json_integer_value(v) : -1;
	if (t < TIMEOUT_MIN || t > TIMEOUT_MAX)
		return fault_set(f, ERR_INVALID_ARG, "session_timeout_min: %d..%d", TIMEOUT_MIN,
		                 TIMEOUT_MAX);
	*out = (int)t;
	return 0;
}

/* roles: an array of distinct role names, into u. Existence is checked separately. */
static int get_roles(json_t *v, struct db_user *u, struct fault *f)
{
	if (!json_is_array(v))
		return fault_set(f, ERR_INVALID_ARG, "roles: must be an array of role names");
	if (json_array_size(v) > DB_ROLES_MAX)
		return fault_set(f, ERR_INVALID_ARG, "roles: at most %d", DB_ROLES_MAX);
	u->nroles = 0;
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		const char *r = json_string_value(e);
		if (!r || !auth_name_valid(r))
			return fault_set(f, ERR_INVALID_ARG, "roles: no role '%.64s'", r ? r : "");
		if (user_has_role(u, r))
			return fault_set(f, ERR_INVALID_ARG, "roles: '%s' given twice", r);
		snprintf(u->roles[u->nroles++], sizeof(u->roles[0]), "%s", r);
	}
	return 0;
}

/* The rules that depend on the database, checked before hashing and again after:
 * the roles exist, the actor holds every authorization of each role it grants, and
 * the last admin keeps that role. before is NULL for a new user. */
static int check_user_change(const struct db_user *before, const struct db_user *after,
                             const struct identity *actor, struct fault *f)
{
	for (int i = 0; i < after->nroles; i++) {
		uint32_t p;
		int rc = role_perms(after->roles[i], &p);
		if (rc < 0)
			return fault_set(f, ERR_INTERNAL, "database error");
		if (rc != 0)
			return fault_set(f, ERR_INVALID_ARG, "roles: no role '%s'",
			                 after->roles[i]);
		/* user:modify alone must not be a way to admin: grant only what you hold. */
		if ((!before || !user_has_role(before, after->roles[i])) && (p & ~actor->perms))
			return fault_set(
			    f, ERR_DENIED,
			    "roles: granting '%s' needs authorizations you do not hold",
			    after->roles[i]);
	}
	if (before && user_has_role(before, ADMIN_ROLE) && !user_has_role(after, ADMIN_ROLE)) {
		int n = db_role_holders(auth_db(), ADMIN_ROLE);
		if (n < 0)
			return fault_set(f, ERR_INTERNAL, "database error");
		if (n <= 1)
			return fault_set(f, ERR_DENIED,
			                 "roles: '%s' is the last user holding role " ADMIN_ROLE,
			                 before->name);
	}
	return 0;
}

static int user_load(const char *name, struct db_user *u, struct fault *f)
{
	int rc = name && auth_name_valid(name) ? db_user_get(auth_db(), name, u) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0)
		return fault_set(f, ERR_NOT_FOUND, "user '%.64s' not found", name ? name : "");
	return 0;
}

/* ---- Users: reads */

static int user_list_cb(void *arg, const struct db_user *u)
{
	json_array_append_new(arg, user_json(u));
	return 0;
}

int accounts_user_list(json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	json_t *a = json_array();
	if (db_user_list(auth_db(), user_list_cb, a) < 0) {
		json_decref(a);
		return fault_set(f, ERR_INTERNAL, "database error");
	}
	*out = a;
	return 0;
}

int accounts_user_get(const char *name, json_t **out, struct fault *f)
{
	struct db_user u;
	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (user_load(name, &u, f) < 0)
		return -1;
	*out = user_json(&u);
	OPENSSL_cleanse(u.pwhash, sizeof(u.pwhash));
	return 0;
}

/* ---- Users: changes, through the helper threads when a password is involved */

struct user_job {
	bool create;
	char name[DB_NAME_MAX + 1];
	struct db_user want; /* create: the new user; update: the requested values */
	bool set_fullname, set_roles, set_timeout;
	char *password, *current; /* owned, wiped */
	unsigned iterations, floor;
	char stored[sizeof(((struct db_user *)0)->pwhash)]; /* what current is checked against */
	bool current_ok, hashed;
	char newhash[KDF_HASH_MAX];
	struct identity actor;
	char peer[64];
	accounts_done cb;
	void *arg;
};

static void user_job_free(struct user_job *j)
{
	if (j->password) {
		OPENSSL_cleanse(j->password, strlen(j->password));
		free(j->password);
	}
	if (j->current) {
		OPENSSL_cleanse(j->current, strlen(j->current));
		free(j->current);
	}
	OPENSSL_cleanse(j, sizeof(*j));
	free(j);
}

static void user_job_fail(struct user_job *j, const struct fault *f)
{
	refuse(&j->actor, j->peer, j->create ? "user.create" : "user.update", j->name, f);
	j->cb(j->arg, NULL, f);
	user_job_free(j);
}

/* Helper thread: the job's own fields only. */
static void user_work(void *p)
{
	struct user_job *j = p;
	if (j->current) {
		j->current_ok = kdf_verify_floor(j->current, j->stored, j->floor);
		OPENSSL_cleanse(j->current, strlen(j->current));
	}
	if (j->password && (!j->current || j->current_ok))
		j->hashed =
		    kdf_hash(j->password, j->iterations, j->newhash, sizeof(j->newhash)) == 0;
	if (j->password)
		OPENSSL_cleanse(j->password, strlen(j->password));
}

static void user_create_finish(struct user_job *j)
{
	struct fault f;
	struct db_user *u = &j->want;

	if (!j->hashed) {
		fault_set(&f, ERR_INTERNAL, "password: could not hash");
		user_job_fail(j, &f);
		return;
	}
	if (check_user_change(NULL, u, &j->actor, &f) < 0) {
		user_job_fail(j, &f);
		return;
	}
	snprintf(u->pwhash, sizeof(u->pwhash), "%s", j->newhash);
	u->ctime = u->mtime = util_now();
	int rc = db_user_insert(auth_db(), u);
	if (rc == DB_EXISTS)
		fault_set(&f, ERR_OBJECT_EXISTS, "name: user '%s' exists", u->name);
	else if (rc == DB_NOTFOUND)
		fault_set(&f, ERR_INVALID_ARG, "roles: a role was deleted meanwhile");
	else if (rc != 0)
		fault_store(&f, db_full(auth_db()), "user");
	if (rc != 0) {
		user_job_fail(j, &f);
		return;
	}
	struct strbuf d = {0};
	sb_add(&d, NULL, "roles: ");
	sb_roles(&d, u);
	audit_log(j->actor.user, j->peer, "user.create", u->name, true, "%s", d.s);
	auth_users_changed(); /* a cached "no such user" for this name must go */
	json_t *res = user_json(u);
	j->cb(j->arg, res, NULL);
	user_job_free(j);
}

static void user_update_finish(struct user_job *j)
{
	struct fault f;
	struct db_user before, after;

	if (user_load(j->name, &before, &f) < 0) {
		if (j->current)
			auth_password_cancel(j->name, j->peer);
		user_job_fail(j, &f);
		return;
	}
	if (j->current) {
		/* The hash we checked against must still be the one stored. */
		if (strcmp(before.pwhash, j->stored) != 0)
			j->current_ok = false;
		auth_password_result(j->name, j->peer, j->current_ok);
		if (!j->current_ok) {
			fault_set(&f, ERR_DENIED, "current_password: incorrect");
			user_job_fail(j, &f);
			return;
		}
	}
	if (j->password && !j->hashed) {
		fault_set(&f, ERR_INTERNAL, "password: could not hash");
		user_job_fail(j, &f);
		return;
	}
	/* The user may have gained authorizations while the password was hashed. */
	if (auth_may_manage(&j->actor, j->name, &f) < 0) {
		user_job_fail(j, &f);
		return;
	}

	after = before;
	struct strbuf d = {0};
	if (j->set_fullname && strcmp(before.fullname, j->want.fullname) != 0) {
		memcpy(after.fullname, j->want.fullname, sizeof(after.fullname));
		sb_add(&d, "; ", "fullname");
	}
	if (j->set_roles) {
		after.nroles = j->want.nroles;
		memcpy(after.roles, j->want.roles, sizeof(after.roles));
		struct strbuf a = {0}, b = {0};
		sb_roles(&a, &before);
		sb_roles(&b, &after);
		if (strcmp(a.s, b.s) != 0)
			sb_add(&d, "; ", "roles: %s -> %s", a.s, b.s);
	}
	if (j->set_timeout && before.session_timeout_min != j->want.session_timeout_min) {
		after.session_timeout_min = j->want.session_timeout_min;
		sb_add(&d, "; ", "session_timeout_min: %d -> %d", before.session_timeout_min,
		       after.session_timeout_min);
	}
	if (j->password) {
		snprintf(after.pwhash, sizeof(after.pwhash), "%s", j->newhash);
		sb_add(&d, "; ", "password");
	}
	if (check_user_change(&before, &after, &j->actor, &f) < 0) {
		user_job_fail(j, &f);
		return;
	}
	if (d.n == 0) { /* nothing changed: nothing to write or audit */
		j->cb(j->arg, user_json(&before), NULL);
		user_job_free(j);
		return;
	}
	after.mtime = util_now();
	int rc = db_user_update(auth_db(), &after);
	if (rc != 0) {
		if (rc == DB_NOTFOUND)
			fault_set(&f, ERR_NOT_FOUND, "user '%s' not found", j->name);
		else
			fault_store(&f, db_full(auth_db()), "user");
		user_job_fail(j, &f);
		return;
	}
	audit_log(j->actor.user, j->peer, "user.update", j->name, true, "%s", d.s);
	auth_users_changed();
	if (j->password) {
		/* A new password ends the user's other sessions; one changing their own keeps
		 * the session they did it from. */
		bool self = strcmp(j->actor.user, j->name) == 0;
		auth_revoke_user(j->name, self ? j->actor.jti : NULL);
	}
	json_t *res = user_json(&after);
	OPENSSL_cleanse(&before, sizeof(before));
	OPENSSL_cleanse(&after, sizeof(after));
	j->cb(j->arg, res, NULL);
	user_job_free(j);
}

static void user_done(void *p)
{
	struct user_job *j = p;
	if (!auth_db()) {
		struct fault f;
		fault_set(&f, ERR_BUSY, "shutting down");
		j->cb(j->arg, NULL, &f);
		user_job_free(j);
		return;
	}
	if (j->create)
		user_create_finish(j);
	else
		user_update_finish(j);
}

void accounts_user_create(json_t *body, const struct identity *actor, const char *peer,
                          accounts_done cb, void *arg)
{
	struct fault f;
	struct user_job *j = xcalloc(1, sizeof(*j));
	const char *name, *password, *fullname;
	struct db_user existing;

	j->create = true;
	j->cb = cb;
	j->arg = arg;
	if (actor)
		j->actor = *actor;
	snprintf(j->peer, sizeof(j->peer), "%s", peer ? peer : "");
	if (!auth_db()) {
		fault_set(&f, ERR_INTERNAL, "not ready");
		goto fail;
	}
	if (get_string(body, "name", true, &name, &f) < 0)
		goto fail;
	snprintf(j->name, sizeof(j->name), "%s", name);
	if (!auth_name_valid(name)) {
		fault_set(&f, ERR_INVALID_ARG, "name: " NAME_RULE);
		goto fail;
	}
	if (get_string(body, "password", true, &password, &f) < 0 ||
	    check_password(password, "password", &f) < 0 ||
	    get_string(body, "fullname", false, &fullname, &f) < 0 ||
	    (fullname && check_fullname(fullname, &f) < 0))
		goto fail;
	json_t *roles = json_object_get(body, "roles");
	if (!roles) {
		fault_set(&f, ERR_MISSING_ARG, "roles");
		goto fail;
	}
	struct db_user *u = &j->want;
	snprintf(u->name, sizeof(u->name), "%s", name);
	snprintf(u->fullname, sizeof(u->fullname), "%s", fullname ? fullname : "");
	u->session_timeout_min = auth_default_timeout_min();
	bool has_timeout;
	if (get_timeout(body, &has_timeout, &u->session_timeout_min, &f) < 0 ||
	    get_roles(roles, u, &f) < 0)
		goto fail;
	int rc = db_user_get(auth_db(), name, &existing);
	if (rc < 0) {
		fault_set(&f, ERR_INTERNAL, "database error");
		goto fail;
	}
	if (rc == 0) {
		fault_set(&f, ERR_OBJECT_EXISTS, "name: user '%s' exists", name);
		goto fail;
	}
	if (!actor) {
		fault_set(&f, ERR_DENIED, "no actor");
		goto fail;
	}
	if (check_user_change(NULL, u, actor, &f) < 0)
		goto fail;
	j->password = xstrdup(password);
	j->iterations = auth_kdf_iterations();
	if (workq_submit(auth_workq(), user_work, user_done, j) < 0) {
		fault_set(&f, ERR_BUSY, "too many password operations in progress; retry shortly");
		f.retry_after = 1;
		goto fail;
	}
	return;
fail:
	user_job_fail(j, &f);
}

void accounts_user_update(const char *name, json_t *body, const struct identity *actor,
                          const char *peer, accounts_done cb, void *arg)
{
	struct fault f;
	struct user_job *j = xcalloc(1, sizeof(*j));
	struct db_user before;

	j->cb = cb;
	j->arg = arg;
	if (actor)
		j->actor = *actor;
	snprintf(j->peer, sizeof(j->peer), "%s", peer ? peer : "");
	snprintf(j->name, sizeof(j->name), "%s", name ? name : "");
	if (!auth_db()) {
		fault_set(&f, ERR_INTERNAL, "not ready");
		goto fail;
	}
	if (user_load(name, &before, &f) < 0)
		goto fail;
	bool privileged = actor && (actor->perms & PERM_USER_MODIFY);
	bool self = actor && strcmp(actor->user, name) == 0;
	if (!privileged && !self) {
		fault_set(&f, ERR_DENIED, "name: changing another user needs user:modify");
		goto fail;
	}
	if (auth_may_manage(actor, name, &f) < 0)
		goto fail;

	/* body passed body_check() against the update fields: every key is known and of the
	 * right type and size. Left here: who may change what, and the values' own rules. */
	json_t *fullname = json_object_get(body, "fullname");
	json_t *roles = json_object_get(body, "roles");
	json_t *timeout = json_object_get(body, "session_timeout_min");
	const char *password = json_string_value(json_object_get(body, "password"));
	const char *current = json_string_value(json_object_get(body, "current_password"));
	/* Without user:modify a user may change only their password and fullname. */
	if (!privileged && (roles || timeout)) {
		fault_set(&f, ERR_DENIED, "%s: changing it needs user:modify",
		          roles ? "roles" : "session_timeout_min");
		goto fail;
	}
	j->want = before;
	if (fullname) {
		if (check_fullname(json_string_value(fullname), &f) < 0)
			goto fail;
		snprintf(j->want.fullname, sizeof(j->want.fullname), "%s",
		         json_string_value(fullname));
		j->set_fullname = true;
	}
	if (password && check_password(password, "password", &f) < 0)
		goto fail;
	if (roles) {
		if (get_roles(roles, &j->want, &f) < 0)
			goto fail;
		j->set_roles = true;
	}
	if (timeout) {
		j->want.session_timeout_min = (int)json_integer_value(timeout);
		j->set_timeout = true;
	}
	if (current && !password) {
		fault_set(&f, ERR_MISSING_ARG, "password");
		goto fail;
	}
	if (password && !privileged && !current) {
		fault_set(&f, ERR_MISSING_ARG, "current_password");
		goto fail;
	}
	/* Check now what can be checked, so a refusal doesn't wait for a KDF. */
	struct db_user after = before;
	if (j->set_roles) {
		after.nroles = j->want.nroles;
		memcpy(after.roles, j->want.roles, sizeof(after.roles));
	}
	if (check_user_change(&before, &after, actor, &f) < 0)
		goto fail;
	if (!password) {
		user_update_finish(j);
		return;
	}

	j->password = xstrdup(password);
	j->iterations = auth_kdf_iterations();
	if (current) {
		/* A current_password check is a password guess: throttled like a login. */
		if (auth_password_attempt(name, j->peer, &f) < 0)
			goto fail;
		j->current = xstrdup(current);
		snprintf(j->stored, sizeof(j->stored), "%s", before.pwhash);
		j->floor = auth_kdf_floor(); /* a password check like a login's */
	}
	if (workq_submit(auth_workq(), user_work, user_done, j) < 0) {
		if (j->current)
			auth_password_cancel(name, j->peer);
		fault_set(&f, ERR_BUSY, "too many password operations in progress; retry shortly");
		f.retry_after = 1;
		goto fail;
	}
	OPENSSL_cleanse(&before, sizeof(before));
	return;
fail:
	OPENSSL_cleanse(&before, sizeof(before));
	user_job_fail(j, &f);
}

int accounts_user_delete(const char *name, const struct identity *actor, const char *peer,
                         struct fault *f)
{
	struct db_user u;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (user_load(name, &u, f) < 0)
		return -1;
	if (auth_may_manage(actor, name, f) < 0)
		return refuse(actor, peer, "user.delete", name, f);
	if (user_has_role(&u, ADMIN_ROLE)) {
		int n = db_role_holders(auth_db(), ADMIN_ROLE);
		if (n < 0)
			return fault_set(f, ERR_INTERNAL, "database error");
		if (n <= 1) {
			fault_set(f, ERR_DENIED,
			          "name: '%s' is the last user holding role " ADMIN_ROLE, name);
			return refuse(actor, peer, "user.delete", name, f);
		}
	}
	int rc = db_user_delete(auth_db(), name);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "user '%s' not found", name);
	if (rc != 0)
		return fault_store(f, db_full(auth_db()), "user");
	struct strbuf d = {0};
	sb_add(&d, NULL, "roles: ");
	sb_roles(&d, &u);
	audit_log(actor_name(actor), peer, "user.delete", name, true, "%s", d.s);
	auth_revoke_user(name, NULL);
	auth_users_changed();
	OPENSSL_cleanse(&u, sizeof(u));
	return 0;
}

/* ---- Roles */

static uint32_t role_mask(const struct db_role *r)
{
	uint32_t perms = 0;
	for (int i = 0; i < r->nauths && i < DB_AUTHS_MAX; i++)
		perms |= perm_parse(r->auths[i]);
	return perms;
}

static void role_set_mask(struct db_role *r, uint32_t perms)
{
	r->nauths = 0;
	for (uint32_t bit = 1; bit && bit <= PERM_ALL && r->nauths < DB_AUTHS_MAX; bit <<= 1)
		if (perms & bit)
			snprintf(r->auths[r->nauths++], sizeof(r->auths[0]), "%s", perm_name(bit));
}

static json_t *role_json(const struct db_role *r)
{
	char ctime[32], mtime[32];
	return json_pack("{ss ss so sb ss ss}", "name", r->name, "description", r->description,
	                 "authorizations", perm_json(role_mask(r)), "builtin", r->builtin, "ctime",
	                 util_iso8601(r->ctime, ctime, sizeof(ctime)), "mtime",
	                 util_iso8601(r->mtime, mtime, sizeof(mtime)));
}

static int role_load(const char *name, struct db_role *r, struct fault *f)
{
	int rc = name && auth_name_valid(name) ? db_role_get(auth_db(), name, r) : DB_NOTFOUND;
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc != 0)
		return fault_set(f, ERR_NOT_FOUND, "role '%.64s' not found", name ? name : "");
	return 0;
}

static int get_authorizations(json_t *v, uint32_t *perms, struct fault *f)
{
	*perms = 0;
	if (!json_is_array(v))
		return fault_set(f, ERR_INVALID_ARG, "authorizations: must be an array");
	size_t i;
	json_t *e;
	json_array_foreach(v, i, e)
	{
		const char *s = json_string_value(e);
		uint32_t p = perm_parse(s);
		if (!p)
			return fault_set(f, ERR_INVALID_ARG, "authorizations: unknown '%.64s'",
			                 s ? s : "");
		*perms |= p;
	}
	return 0;
}

static int get_description(json_t *body, const char **out, struct fault *f)
{
	if (get_string(body, "description", false, out, f) < 0)
		return -1;
	if (*out && (strlen(*out) > DESCRIPTION_MAX || !text_ok(*out)))
		return fault_set(f, ERR_INVALID_ARG,
		                 "description: at most %d bytes, no control characters",
		                 DESCRIPTION_MAX);
	return 0;
}

/* Like roles granted to users: role:modify must not be a way to every authorization. */
static int check_grant(uint32_t added, const struct identity *actor, struct fault *f)
{
	uint32_t missing = added & ~(actor ? actor->perms : 0);
	if (!missing)
		return 0;
	for (uint32_t bit = 1; bit <= PERM_ALL; bit <<= 1)
		if (missing & bit)
			return fault_set(f, ERR_DENIED,
			                 "authorizations: granting '%s' needs it yourself",
			                 perm_name(bit));
	return fault_set(f, ERR_DENIED, "authorizations: not yours to grant");
}

static int role_list_cb(void *arg, const struct db_role *r)
{
	json_array_append_new(arg, role_json(r));
	return 0;
}

int accounts_role_list(json_t **out, struct fault *f)
{
	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	json_t *a = json_array();
	if (db_role_list(auth_db(), role_list_cb, a) < 0) {
		json_decref(a);
		return fault_set(f, ERR_INTERNAL, "database error");
	}
	*out = a;
	return 0;
}

int accounts_role_get(const char *name, json_t **out, struct fault *f)
{
	struct db_role r;
	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (role_load(name, &r, f) < 0)
		return -1;
	*out = role_json(&r);
	return 0;
}

int accounts_role_create(json_t *body, const struct identity *actor, const char *peer, json_t **out,
                         struct fault *f)
{
	struct db_role r, existing;
	const char *name, *description;
	uint32_t perms = 0;

	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (get_string(body, "name", true, &name, f) < 0)
		return -1;
	if (!auth_name_valid(name))
		return fault_set(f, ERR_INVALID_ARG, "name: " NAME_RULE);
	if (get_description(body, &description, f) < 0)
		return -1;
	json_t *auths = json_object_get(body, "authorizations");
	if (auths && get_authorizations(auths, &perms, f) < 0)
		return -1;
	int rc = db_role_get(auth_db(), name, &existing);
	if (rc < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (rc == 0)
		return fault_set(f, ERR_OBJECT_EXISTS, "name: role '%s' exists", name);
	if (check_grant(perms, actor, f) < 0)
		return refuse(actor, peer, "role.create", name, f);

	memset(&r, 0, sizeof(r));
	snprintf(r.name, sizeof(r.name), "%s", name);
	snprintf(r.description, sizeof(r.description), "%s", description ? description : "");
	r.builtin = false;
	r.ctime = r.mtime = util_now();
	role_set_mask(&r, perms);
	rc = db_role_insert(auth_db(), &r);
	if (rc == DB_EXISTS)
		return fault_set(f, ERR_OBJECT_EXISTS, "name: role '%s' exists", name);
	if (rc != 0)
		return fault_store(f, db_full(auth_db()), "role");
	struct strbuf d = {0};
	sb_add(&d, NULL, "authorizations: ");
	sb_perms(&d, perms);
	audit_log(actor_name(actor), peer, "role.create", name, true, "%s", d.s);
	*out = role_json(&r);
	return 0;
}

int accounts_role_update(const char *name, json_t *body, const struct identity *actor,
                         const char *peer, json_t **out, struct fault *f)
{
	struct db_role r;
	const char *description = NULL;

	*out = NULL;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (role_load(name, &r, f) < 0)
		return -1;
	if (r.builtin) {
		fault_set(f, ERR_DENIED, "name: role '%s' is built in and cannot be changed", name);
		return refuse(actor, peer, "role.update", name, f);
	}
	/* body passed body_check() against the update fields: only the values' rules are
	 * left to check. */
	json_t *auths = json_object_get(body, "authorizations");
	if (get_description(body, &description, f) < 0)
		return -1;
	uint32_t old = role_mask(&r), perms = old;
	if (auths && get_authorizations(auths, &perms, f) < 0)
		return -1;
	if (check_grant(perms & ~old, actor, f) < 0)
		return refuse(actor, peer, "role.update", name, f);

	struct strbuf d = {0};
	if (description && strcmp(description, r.description) != 0) {
		snprintf(r.description, sizeof(r.description), "%s", description);
		sb_add(&d, "; ", "description");
	}
	if (perms != old) {
		struct strbuf a = {0}, b = {0};
		sb_perms(&a, old);
		sb_perms(&b, perms);
		sb_add(&d, "; ", "authorizations: %s -> %s", a.s, b.s);
		role_set_mask(&r, perms);
	}
	if (d.n == 0) {
		*out = role_json(&r);
		return 0;
	}
	r.mtime = util_now();
	int rc = db_role_update(auth_db(), &r);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "role '%s' not found", name);
	if (rc != 0)
		return fault_store(f, db_full(auth_db()), "role");
	audit_log(actor_name(actor), peer, "role.update", name, true, "%s", d.s);
	auth_users_changed(); /* its holders' next request sees the new authorizations */
	*out = role_json(&r);
	return 0;
}

struct holders {
	const char *role;
	int n;
	struct strbuf names;
};

static int holders_cb(void *arg, const struct db_user *u)
{
	struct holders *h = arg;
	if (!user_has_role(u, h->role))
		return 0;
	if (h->n < 5)
		sb_add(&h->names, ", ", "%s", u->name);
	else if (h->n == 5)
		sb_add(&h->names, NULL, ", ...");
	h->n++;
	return 0;
}

static int role_held(const char *name, struct fault *f)
{
	struct holders h = {.role = name};
	if (db_user_list(auth_db(), holders_cb, &h) < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	return fault_set(f, ERR_STATE_CHANGED, "name: role '%s' is held by %d user%s: %s", name,
	                 h.n, h.n == 1 ? "" : "s", h.names.s);
}

int accounts_role_delete(const char *name, const struct identity *actor, const char *peer,
                         struct fault *f)
{
	struct db_role r;
	if (!auth_db())
		return fault_set(f, ERR_INTERNAL, "not ready");
	if (role_load(name, &r, f) < 0)
		return -1;
	if (r.builtin) {
		fault_set(f, ERR_DENIED, "name: role '%s' is built in and cannot be deleted", name);
		return refuse(actor, peer, "role.delete", name, f);
	}
	int n = db_role_holders(auth_db(), name);
	if (n < 0)
		return fault_set(f, ERR_INTERNAL, "database error");
	if (n > 0)
		return role_held(name, f);
	int rc = db_role_delete(auth_db(), name);
	if (rc == DB_INUSE)
		return role_held(name, f);
	if (rc == DB_NOTFOUND)
		return fault_set(f, ERR_NOT_FOUND, "role '%s' not found", name);
	if (rc != 0)
		return fault_store(f, db_full(auth_db()), "role");
	struct strbuf d = {0};
	sb_add(&d, NULL, "authorizations: ");
	sb_perms(&d, role_mask(&r));
	audit_log(actor_name(actor), peer, "role.delete", name, true, "%s", d.s);
	auth_users_changed();
	return 0;
}
