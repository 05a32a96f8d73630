/* The route table: what exists, who may call it, and which handler answers. */
#include "routes.h"
#include "api.h"
#include "auth.h"
#include "util.h"

#define U "/api/user/v1"
#define R "/api/role/v1"

const struct route api_routes[] = {
    {METHOD_GET, "/api/openapi.json", "system", ROUTE_PUBLIC, 0, openapi_get,
     "The OpenAPI 3.1 document of this API"},
    {METHOD_GET, "/api/system/v1/health", "system", ROUTE_PUBLIC, 0, system_health,
     "Liveness probe"},
    {METHOD_GET, "/api/system/v1/version", "system", ROUTE_AUTH, 0, system_version,
     "Product, version, build, OS, host and uptime"},

    {METHOD_GET, "/api/access/v1", "access", ROUTE_AUTH, 0, access_get,
     "The services this session may use"},
    {METHOD_POST, "/api/access/v1", "access", ROUTE_PUBLIC, 0, access_login, "Log in"},
    {METHOD_DELETE, "/api/access/v1", "access", ROUTE_AUTH, 0, access_logout, "Log out"},

    {METHOD_GET, U "/users", "user", ROUTE_AUTH, PERM_USER_READ, users_list, "List users"},
    {METHOD_POST, U "/users", "user", ROUTE_AUTH, PERM_USER_MODIFY, users_create, "Create a user"},
    {METHOD_GET, U "/users/{name}", "user", ROUTE_SELF_OR, PERM_USER_READ, users_get, "One user"},
    {METHOD_PUT, U "/users/{name}", "user", ROUTE_SELF_OR, PERM_USER_MODIFY, users_update,
     "Change a user (anyone may change their own password)"},
    {METHOD_DELETE, U "/users/{name}", "user", ROUTE_AUTH, PERM_USER_MODIFY, users_delete,
     "Delete a user"},
    {METHOD_GET, U "/users/{name}/tokens", "user", ROUTE_SELF_OR, PERM_USER_READ, users_tokens_list,
     "A user's API tokens (never their secrets)"},
    {METHOD_POST, U "/users/{name}/tokens", "user", ROUTE_SELF_OR, PERM_USER_MODIFY,
     users_tokens_create, "Create a named API token; the secret is shown once"},
    {METHOD_DELETE, U "/users/{name}/tokens/{id}", "user", ROUTE_SELF_OR, PERM_USER_MODIFY,
     users_tokens_delete, "Revoke an API token"},

    {METHOD_GET, R "/roles", "role", ROUTE_AUTH, PERM_USER_READ, roles_list, "List roles"},
    {METHOD_POST, R "/roles", "role", ROUTE_AUTH, PERM_ROLE_MODIFY, roles_create, "Create a role"},
    {METHOD_GET, R "/roles/{name}", "role", ROUTE_AUTH, PERM_USER_READ, roles_get, "One role"},
    {METHOD_PUT, R "/roles/{name}", "role", ROUTE_AUTH, PERM_ROLE_MODIFY, roles_update,
     "Change a role's authorizations or description"},
    {METHOD_DELETE, R "/roles/{name}", "role", ROUTE_AUTH, PERM_ROLE_MODIFY, roles_delete,
     "Delete a role no user holds"},

    {METHOD_GET, "/api/log/v1/logs/audit", "log", ROUTE_AUTH, PERM_USER_READ, log_audit_list,
     "The audit log"},
};
const size_t api_routes_count = nitems(api_routes);

const struct api_service api_services[] = {
    {"access", "1.0"}, {"system", "1.0"}, {"user", "1.0"}, {"role", "1.0"}, {"log", "1.0"},
};
const size_t api_services_count = nitems(api_services);
