/* SPDX-License-Identifier: ISC */
/* Users and roles: the rules (names, built-in roles, the last admin) over db/. */
#ifndef SPINDLE_ACCOUNTS_H
#define SPINDLE_ACCOUNTS_H

#include <jansson.h>
#include "auth.h"
#include "base/fault.h"

/* f is NULL on success; result is a new reference (or NULL for 204 answers) and the
 * callee takes it. */
typedef void (*accounts_done)(void *arg, json_t *result, const struct fault *f);

/* User objects: {"name","fullname","roles":[...],"authorizations":[...],
 * "session_timeout_min","ctime","mtime"} (no password, ever). */
int accounts_user_list(json_t **out, struct fault *f);                  /* array */
int accounts_user_get(const char *name, json_t **out, struct fault *f); /* object */
/* body already checked for types/unknown keys: name, password, roles, fullname?,
 * session_timeout_min?. Hashes the password on a helper thread. */
void accounts_user_create(json_t *body, const struct identity *actor, const char *peer,
                          accounts_done cb, void *arg);
/* body: fullname?, roles?, session_timeout_min?, password?, current_password?, already
 * checked by body_check() for types, sizes and unknown keys (api/users.c's field table,
 * which refuses a name: users are not renamed). A user without user:modify may change only their
 * own password and fullname, and must give current_password. Another user, and (delete) only one
 * holding no authorization the actor lacks (auth_may_manage). */
void accounts_user_update(const char *name, json_t *body, const struct identity *actor,
                          const char *peer, accounts_done cb, void *arg);
int accounts_user_delete(const char *name, const struct identity *actor, const char *peer,
                         struct fault *f);

/* Role objects: {"name","description","authorizations":[...],"builtin","ctime","mtime"} */
int accounts_role_list(json_t **out, struct fault *f);
int accounts_role_get(const char *name, json_t **out, struct fault *f);
int accounts_role_create(json_t *body, const struct identity *actor, const char *peer, json_t **out,
                         struct fault *f);
/* body: authorizations?, description?, already checked by body_check() (api/roles.c). */
int accounts_role_update(const char *name, json_t *body, const struct identity *actor,
                         const char *peer, json_t **out, struct fault *f);
int accounts_role_delete(const char *name, const struct identity *actor, const char *peer,
                         struct fault *f);

#endif
