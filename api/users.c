/* SPDX-License-Identifier: ISC */
/* /api/user/v1/users: accounts and their API tokens. */
#include "api.h"
#include "access/accounts.h"

const struct field user_create_fields[] = {
    {"name", FIELD_STRING, true, 1, 64},
    {"password", FIELD_STRING, true, 1, 1024},
    {"roles", FIELD_STRING_ARRAY, true, 0, 16},
    {"fullname", FIELD_STRING, false, 0, 128},
    {"session_timeout_min", FIELD_INT, false, 1, 1440},
    FIELDS_END,
};

const struct field user_update_fields[] = {
    {"name", FIELD_READ_ONLY, false, 0, 0}, /* users are not renamed */
    {"password", FIELD_STRING, false, 1, 1024},
    {"current_password", FIELD_STRING, false, 1, 1024},
    {"roles", FIELD_STRING_ARRAY, false, 0, 16},
    {"fullname", FIELD_STRING, false, 0, 128},
    {"session_timeout_min", FIELD_INT, false, 1, 1440},
    FIELDS_END,
};

const struct field token_fields[] = {
    {"name", FIELD_STRING, true, 1, 64},
    {"expires_days", FIELD_INT, false, 1, 3650},
    FIELDS_END,
};

#define USER_HREF   "/api/user/v1/users/{name}"
#define TOKEN_HREF  "/api/user/v1/users/{user}/tokens/{id}"
#define DEVICE_HREF "/api/user/v1/users/{user}/devices/{id}"

static void reply_user(struct request *r, int status, json_t *user /* stolen */)
{
	api_href(user, USER_HREF);
	if (status == 201)
		reply_header(r, "Location", json_string_value(json_object_get(user, "href")));
	reply_json(r, status, json_pack("{s:o}", "user", user));
}

/* If-Match against the user as GET answers it: -1 (answered) when the user is gone or has
 * changed since the client read it. */
static int user_precondition(struct request *r)
{
	json_t *user = NULL;
	struct fault f;
	if (!request_header(r, "If-Match"))
		return 0;
	if (accounts_user_get(request_param(r, 0), &user, &f) == 0)
		api_href(user, USER_HREF);
	return reply_unless_current(r, "user", user, &f);
}

void users_list(struct request *r)
{
	json_t *users;
	struct fault f;
	if (accounts_user_list(&users, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	size_t i;
	json_t *u;
	json_array_foreach(users, i, u)
	{
		api_href(u, USER_HREF);
	}
	reply_json(r, 200, json_pack("{s:o}", "users", users));
}

void users_get(struct request *r)
{
	json_t *user;
	struct fault f;
	if (accounts_user_get(request_param(r, 0), &user, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_user(r, 200, user);
}

static void user_created(void *arg, json_t *result, const struct fault *f)
{
	if (f)
		reply_fault(arg, f);
	else
		reply_user(arg, 201, result);
}

static void user_updated(void *arg, json_t *result, const struct fault *f)
{
	if (f)
		reply_fault(arg, f);
	else
		reply_user(arg, 200, result);
}

void users_create(struct request *r)
{
	json_t *body;
	struct fault f;
	if (request_body(r, user_create_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	accounts_user_create(body, &r->who, r->peer, user_created, r);
	json_decref(body);
}

void users_update(struct request *r)
{
	json_t *body;
	struct fault f;
	if (request_body(r, user_update_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	if (user_precondition(r) < 0) {
		json_decref(body);
		return;
	}
	accounts_user_update(request_param(r, 0), body, &r->who, r->peer, user_updated, r);
	json_decref(body);
}

void users_delete(struct request *r)
{
	struct fault f;
	if (user_precondition(r) < 0)
		return;
	if (accounts_user_delete(request_param(r, 0), &r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}

/* The path's user's tokens ({"tokens":[...]}, each with its href), or -1 answered. */
static int user_tokens(struct request *r, json_t **out)
{
	struct fault f;
	if (auth_token_list(request_param(r, 0), out, &f) < 0) {
		reply_fault(r, &f);
		return -1;
	}
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(*out, "tokens"), i, t)
	{
		api_href(t, TOKEN_HREF);
	}
	return 0;
}

void users_tokens_list(struct request *r)
{
	json_t *out;
	if (user_tokens(r, &out) == 0)
		reply_json(r, 200, out);
}

void users_tokens_create(struct request *r)
{
	json_t *body, *out;
	struct fault f;
	if (request_body(r, token_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *days = json_object_get(body, "expires_days");
	int rc = auth_token_create(
	    request_param(r, 0), json_string_value(json_object_get(body, "name")),
	    days ? (int)json_integer_value(days) : 365, &r->who, r->peer, &out, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	json_t *tok = api_href(json_object_get(out, "token"), TOKEN_HREF);
	reply_header(r, "Location", json_string_value(json_object_get(tok, "href")));
	reply_json(r, 201, out);
}

/* One token, as the list shows it (its Location after it is made): never its secret. */
void users_tokens_get(struct request *r)
{
	json_t *out;
	const char *id = request_param(r, 1);
	if (user_tokens(r, &out) < 0)
		return;
	size_t i;
	json_t *t;
	json_array_foreach(json_object_get(out, "tokens"), i, t)
	{
		if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
			json_t *one = json_pack("{s:O}", "token", t);
			json_decref(out);
			reply_json(r, 200, one);
			return;
		}
	}
	json_decref(out);
	reply_error(r, ERR_NOT_FOUND, "token '%.64s' not found", id);
}

void users_tokens_delete(struct request *r)
{
	struct fault f;
	if (auth_token_delete(request_param(r, 0), request_param(r, 1), &r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}

void users_devices_list(struct request *r)
{
	json_t *out;
	struct fault f;
	if (auth_device_list(request_param(r, 0), &out, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	size_t i;
	json_t *d;
	json_array_foreach(json_object_get(out, "devices"), i, d)
	{
		api_href(d, DEVICE_HREF);
	}
	reply_json(r, 200, out);
}

void users_devices_delete(struct request *r)
{
	struct fault f;
	if (auth_device_delete(request_param(r, 0), request_param(r, 1), &r->who, r->peer, &f) <
	    0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}
