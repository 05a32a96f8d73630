/* SPDX-License-Identifier: ISC */
/* /api/role/v1/roles: sets of authorizations that users hold. */
#include "api.h"
#include "access/accounts.h"

static const struct field role_create_fields[] = {
    {"name", FIELD_STRING, true, 1, 64},
    {"authorizations", FIELD_STRING_ARRAY, true, 0, 32},
    {"description", FIELD_STRING, false, 0, 256},
    FIELDS_END,
};

static const struct field role_update_fields[] = {
    {"name", FIELD_READ_ONLY, false, 0, 0}, /* roles are not renamed */
    {"authorizations", FIELD_STRING_ARRAY, false, 0, 32},
    {"description", FIELD_STRING, false, 0, 256},
    FIELDS_END,
};

#define ROLE_HREF "/api/role/v1/roles/{name}"

static void reply_role(struct request *r, int status, json_t *role /* stolen */)
{
	api_href(role, ROLE_HREF);
	if (status == 201)
		reply_header(r, "Location", json_string_value(json_object_get(role, "href")));
	reply_json(r, status, json_pack("{s:o}", "role", role));
}

void roles_list(struct request *r)
{
	json_t *roles;
	struct fault f;
	if (accounts_role_list(&roles, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	size_t i;
	json_t *role;
	json_array_foreach(roles, i, role)
	{
		api_href(role, ROLE_HREF);
	}
	reply_json(r, 200, json_pack("{s:o}", "roles", roles));
}

void roles_get(struct request *r)
{
	json_t *role;
	struct fault f;
	if (accounts_role_get(request_param(r, 0), &role, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_role(r, 200, role);
}

void roles_create(struct request *r)
{
	json_t *body, *role;
	struct fault f;
	if (request_body(r, role_create_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	int rc = accounts_role_create(body, &r->who, r->peer, &role, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_role(r, 201, role);
}

void roles_update(struct request *r)
{
	json_t *body, *role;
	struct fault f;
	if (request_body(r, role_update_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	int rc = accounts_role_update(request_param(r, 0), body, &r->who, r->peer, &role, &f);
	json_decref(body);
	if (rc < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_role(r, 200, role);
}

void roles_delete(struct request *r)
{
	struct fault f;
	if (accounts_role_delete(request_param(r, 0), &r->who, r->peer, &f) < 0) {
		reply_fault(r, &f);
		return;
	}
	reply_empty(r, 204);
}
