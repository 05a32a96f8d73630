/* SPDX-License-Identifier: ISC */
/* The route table: what exists, who may call it, and which handler answers. */
#include "routes.h"
#include "api.h"
#include "access/auth.h"
#include "base/util.h"

#define U "/api/user/v1"
#define R "/api/role/v1"
#define H "/api/hardware/v1"
#define A "/api/analytics/v1"
#define B "/api/bench/v1"

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
    /* Each service lists its methods (the appliance's "get service commands"): every
     * href of the login answer leads somewhere. */
    {METHOD_GET, "/api/system/v1", "system", ROUTE_AUTH, 0, access_service,
     "The system service and its methods"},
    {METHOD_GET, "/api/user/v1", "user", ROUTE_AUTH, 0, access_service,
     "The user service and its methods"},
    {METHOD_GET, "/api/role/v1", "role", ROUTE_AUTH, 0, access_service,
     "The role service and its methods"},
    {METHOD_GET, "/api/log/v1", "log", ROUTE_AUTH, 0, access_service,
     "The log service and its methods"},
    {METHOD_GET, "/api/hardware/v1", "hardware", ROUTE_AUTH, 0, access_service,
     "The hardware service and its methods"},
    {METHOD_GET, "/api/analytics/v1", "analytics", ROUTE_AUTH, 0, access_service,
     "The analytics service and its methods"},
    {METHOD_GET, "/api/status/v1", "status", ROUTE_AUTH, 0, access_service,
     "The status service and its methods"},
    {METHOD_GET, "/api/bench/v1", "bench", ROUTE_AUTH, 0, access_service,
     "The bench service and its methods"},
    {METHOD_GET, "/api/problem/v1", "problem", ROUTE_AUTH, 0, access_service,
     "The problem service and its methods"},

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

    {METHOD_GET, H "/chassis", "hardware", ROUTE_AUTH, PERM_HARDWARE_READ, hardware_chassis_list,
     "The system chassis and every SES enclosure"},
    {METHOD_GET, H "/chassis/{chassis}", "hardware", ROUTE_AUTH, PERM_HARDWARE_READ,
     hardware_chassis_get, "One chassis"},
    {METHOD_PUT, H "/chassis/{chassis}", "hardware", ROUTE_AUTH, PERM_HARDWARE_LOCATE,
     hardware_chassis_locate, "Turn a chassis locator LED on or off"},
    {METHOD_GET, H "/chassis/{chassis}/disk", "hardware", ROUTE_AUTH, PERM_HARDWARE_READ,
     hardware_disk_list, "The disks (and enclosure slots) of a chassis"},
    {METHOD_GET, H "/chassis/{chassis}/disk/{disk}", "hardware", ROUTE_AUTH, PERM_HARDWARE_READ,
     hardware_disk_get, "One disk"},
    {METHOD_PUT, H "/chassis/{chassis}/disk/{disk}", "hardware", ROUTE_AUTH, PERM_HARDWARE_LOCATE,
     hardware_disk_locate, "Turn a disk locator LED on or off"},
    {METHOD_GET, H "/cluster", "hardware", ROUTE_AUTH, PERM_HARDWARE_READ, hardware_cluster_get,
     "Cluster state: a stand-alone box, as an unclustered appliance answers"},

    {METHOD_GET, "/api/problem/v1/problems", "problem", ROUTE_AUTH, PERM_STAT_READ, problem_list,
     "The open problems"},
    {METHOD_GET, "/api/problem/v1/problems/{uuid}", "problem", ROUTE_AUTH, PERM_STAT_READ,
     problem_get, "One open problem, by its uuid"},

    {METHOD_GET, A "/datasets", "analytics", ROUTE_AUTH, PERM_STAT_READ, analytics_datasets_list,
     "The analytics datasets"},
    {METHOD_POST, A "/datasets", "analytics", ROUTE_AUTH, PERM_SETTINGS_MODIFY,
     analytics_datasets_create, "Collect a statistic, broken down by a drilldown"},
    {METHOD_GET, A "/datasets/{name}", "analytics", ROUTE_AUTH, PERM_STAT_READ,
     analytics_dataset_get, "One dataset"},
    {METHOD_PUT, A "/datasets/{name}", "analytics", ROUTE_AUTH, PERM_SETTINGS_MODIFY,
     analytics_dataset_update, "Suspend or resume collecting a dataset"},
    {METHOD_DELETE, A "/datasets/{name}", "analytics", ROUTE_AUTH, PERM_SETTINGS_MODIFY,
     analytics_dataset_delete, "Stop collecting a dataset and delete its data"},
    {METHOD_GET, A "/datasets/{name}/data", "analytics", ROUTE_AUTH, PERM_STAT_READ,
     analytics_dataset_data, "A dataset's samples; streamed while the window reaches past now"},
    /* A name with a raw slash, as the appliance's hrefs have it: arc.accesses[hit/miss] */
    {METHOD_GET, A "/datasets/{name}/{part}", "analytics", ROUTE_AUTH, PERM_STAT_READ,
     analytics_dataset_get, "One dataset whose name holds a slash, written raw"},
    {METHOD_GET, A "/datasets/{name}/{part}/data", "analytics", ROUTE_AUTH, PERM_STAT_READ,
     analytics_dataset_data, "The samples of a dataset whose name holds a slash, written raw"},
    {METHOD_GET, A "/settings", "analytics", ROUTE_AUTH, PERM_STAT_READ, analytics_settings_get,
     "How long second, minute and hour data are kept"},
    {METHOD_PUT, A "/settings", "analytics", ROUTE_AUTH, PERM_SETTINGS_MODIFY,
     analytics_settings_update, "Change how long analytics data are kept"},

    {METHOD_GET, A "/worksheets", "analytics", ROUTE_AUTH, PERM_WORKSHEET_READ, worksheets_api_list,
     "List worksheets"},
    {METHOD_POST, A "/worksheets", "analytics", ROUTE_AUTH, PERM_WORKSHEET_MODIFY,
     worksheets_api_create, "Create a worksheet"},
    {METHOD_GET, A "/worksheets/{uuid}", "analytics", ROUTE_AUTH, PERM_WORKSHEET_READ,
     worksheets_api_get, "One worksheet"},
    {METHOD_PUT, A "/worksheets/{uuid}", "analytics", ROUTE_AUTH, PERM_WORKSHEET_MODIFY,
     worksheets_api_update, "Rename a worksheet or replace its datasets"},
    {METHOD_DELETE, A "/worksheets/{uuid}", "analytics", ROUTE_AUTH, PERM_WORKSHEET_MODIFY,
     worksheets_api_delete, "Delete a worksheet"},
    {METHOD_GET, A "/worksheets/{uuid}/datasets", "analytics", ROUTE_AUTH, PERM_WORKSHEET_READ,
     worksheets_api_datasets_list, "A worksheet's datasets"},
    {METHOD_POST, A "/worksheets/{uuid}/datasets", "analytics", ROUTE_AUTH, PERM_WORKSHEET_MODIFY,
     worksheets_api_dataset_add, "Add a dataset to a worksheet"},
    {METHOD_GET, A "/worksheets/{uuid}/datasets/{dataset}", "analytics", ROUTE_AUTH,
     PERM_WORKSHEET_READ, worksheets_api_dataset_get, "One dataset of a worksheet"},
    {METHOD_PUT, A "/worksheets/{uuid}/datasets/{dataset}", "analytics", ROUTE_AUTH,
     PERM_WORKSHEET_MODIFY, worksheets_api_dataset_update,
     "Change a worksheet dataset's drilldowns or seconds"},
    {METHOD_DELETE, A "/worksheets/{uuid}/datasets/{dataset}", "analytics", ROUTE_AUTH,
     PERM_WORKSHEET_MODIFY, worksheets_api_dataset_delete, "Remove a dataset from a worksheet"},

    {METHOD_GET, "/api/status/v1/dashboard", "status", ROUTE_AUTH, PERM_STAT_READ, status_dashboard,
     "The phone's dashboard: one compact document, with ETag"},
    {METHOD_GET, "/api/status/v1/events", "status", ROUTE_AUTH, PERM_STAT_READ, status_events,
     "The dashboard as Server-Sent Events, one a second"},
    /* Public here: api/metrics.c lets --metrics-allow addresses in, else wants stat:read. */
    {METHOD_GET, "/metrics", "system", ROUTE_PUBLIC, 0, metrics_api_get,
     "Prometheus metrics (allow-listed addresses, or a token with stat:read)"},

    {METHOD_GET, B "/jobs", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_jobs_list,
     "List benchmark jobs"},
    {METHOD_POST, B "/jobs", "bench", ROUTE_AUTH, PERM_BENCH_RUN, bench_jobs_create,
     "Queue a benchmark job"},
    /* before /jobs/{id}: the literal segment is matched first */
    {METHOD_POST, B "/jobs/import", "bench", ROUTE_AUTH, PERM_BENCH_RUN, bench_jobs_import,
     "Store fio's JSON output (json or json+) as a finished, imported job"},
    {METHOD_GET, B "/jobs/{id}", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_jobs_get,
     "One job: spec, state, progress while it runs, result when done"},
    {METHOD_DELETE, B "/jobs/{id}", "bench", ROUTE_AUTH, PERM_BENCH_RUN, bench_jobs_delete,
     "Cancel a live job, or delete a finished one (settings:modify)"},
    {METHOD_GET, B "/jobs/{id}/progress", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_jobs_progress,
     "A job's interval lines, streamed while it runs (NDJSON or SSE)"},
    {METHOD_GET, B "/jobs/{id}/result", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_jobs_result,
     "A job's result, in fio's json+ shape (format=fio) or as fio log files (format=fio-log)"},
    {METHOD_GET, B "/compare", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_compare,
     "Key figures of finished jobs side by side, with the difference to a baseline"},
    {METHOD_GET, B "/presets", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_presets,
     "The job presets: slob and iozone"},
    {METHOD_GET, B "/sweeps", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_sweeps_list,
     "List sweeps, newest first"},
    {METHOD_POST, B "/sweeps", "bench", ROUTE_AUTH, PERM_BENCH_RUN, bench_sweeps_create,
     "Queue one spec over a matrix of values, every combination a job"},
    {METHOD_GET, B "/sweeps/{id}", "bench", ROUTE_AUTH, PERM_BENCH_READ, bench_sweeps_get,
     "One sweep: its table of runs and the knee of its threads axis"},
    {METHOD_DELETE, B "/sweeps/{id}", "bench", ROUTE_AUTH, PERM_BENCH_RUN, bench_sweeps_delete,
     "Cancel a sweep as a whole, or delete an ended one with its runs (settings:modify)"},
};
const size_t api_routes_count = nitems(api_routes);

const struct api_service api_services[] = {
    {"access", "1.0"}, {"system", "1.0"},   {"user", "1.0"},      {"role", "1.0"},
    {"log", "1.0"},    {"hardware", "1.0"}, {"analytics", "1.0"}, {"status", "1.0"},
    {"bench", "1.0"},  {"problem", "1.0"},
};
const size_t api_services_count = nitems(api_services);
