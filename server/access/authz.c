/* SPDX-License-Identifier: ISC */
/* Authorizations (auth.h): their names, the state the parts of authentication share
 * (auth_int.h), and what a user may do, read fresh whenever users or roles change. The
 * lowest of those parts: sessions.c, credentials.c and auth.c build on it, and it calls
 * none of them. Everything here runs on the loop thread. */
#include "auth_int.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

struct auth_state auth;

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

int auth_user_info(const char *name, const struct user_info **out)
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
