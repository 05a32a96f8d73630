/* SPDX-License-Identifier: ISC */
/* Handlers of every service, one file each: they translate HTTP <-> core calls. */
#ifndef SPINDLE_API_H
#define SPINDLE_API_H

#include "net/http.h"

/* api/access.c */
void access_get(struct request *r);
void access_login(struct request *r);
void access_logout(struct request *r);
void access_challenge(struct request *r);
void access_service(struct request *r); /* GET /api/<service>/v1 */
/* api/system.c */
void system_health(struct request *r);
void system_version(struct request *r);
/* At start-up: uptime, and what the version answer reads once (machine-id and DMI under
 * sys_root, boot time under proc_root, the install time from state_dir). */
void system_started(const char *proc_root, const char *sys_root, const char *state_dir);
/* What the version answer calls the box: its asn (a UUID of /etc/machine-id) and its
 * nodename (the host name); the storage service's pools carry them as owner and asn. */
const char *system_asn(void);
const char *system_nodename(void);
/* api/openapi.c */
void openapi_get(struct request *r);
/* Each route of api_routes takes the query parameters the embedded document gives its
 * operation, and no other (the router refuses the rest before the handler). */
void openapi_route_queries(struct router *rt);
/* api/users.c */
void users_list(struct request *r);
void users_create(struct request *r);
void users_get(struct request *r);
void users_update(struct request *r);
void users_delete(struct request *r);
void users_tokens_list(struct request *r);
void users_tokens_create(struct request *r);
void users_tokens_get(struct request *r);
void users_tokens_delete(struct request *r);
void users_devices_list(struct request *r);
void users_devices_delete(struct request *r);
/* The bodies those take (also fed to the body validator's fuzz harness). */
extern const struct field user_create_fields[], user_update_fields[], token_fields[];
/* api/roles.c */
void roles_list(struct request *r);
void roles_create(struct request *r);
void roles_get(struct request *r);
void roles_update(struct request *r);
void roles_delete(struct request *r);
/* api/log.c */
void log_audit_list(struct request *r);
/* api/hardware.c */
void hardware_chassis_list(struct request *r);
void hardware_chassis_get(struct request *r);
void hardware_chassis_locate(struct request *r);
void hardware_disk_list(struct request *r);
void hardware_disk_get(struct request *r);
void hardware_disk_locate(struct request *r);
void hardware_cluster_get(struct request *r);
/* api/storage.c */
/* How the storage service's answers are shaped (hrefs, a pool's owner): before storage_init. */
void storage_service_init(void);
void storage_pools_list(struct request *r);
void storage_pool_get(struct request *r);
void storage_projects_list(struct request *r);
void storage_project_get(struct request *r);
void storage_filesystems_list(struct request *r);
void storage_filesystem_get(struct request *r);
void storage_luns_list(struct request *r);
void storage_lun_get(struct request *r);
/* api/network.c */
void network_devices_list(struct request *r);
void network_device_get(struct request *r);
void network_datalinks_list(struct request *r);
void network_datalink_get(struct request *r);
void network_interfaces_list(struct request *r);
void network_interface_get(struct request *r);
void network_routes_list(struct request *r);
void network_route_get(struct request *r);
/* api/problem.c */
void problem_list(struct request *r);
void problem_get(struct request *r);
/* api/analytics.c */
void analytics_datasets_list(struct request *r);
void analytics_datasets_create(struct request *r);
void analytics_dataset_get(struct request *r);
void analytics_dataset_update(struct request *r);
void analytics_dataset_delete(struct request *r);
void analytics_dataset_data(struct request *r);
void analytics_settings_get(struct request *r);
void analytics_settings_update(struct request *r);
/* api/worksheets.c */
void worksheets_api_list(struct request *r);
void worksheets_api_create(struct request *r);
void worksheets_api_get(struct request *r);
void worksheets_api_update(struct request *r);
void worksheets_api_delete(struct request *r);
void worksheets_api_datasets_list(struct request *r);
void worksheets_api_dataset_add(struct request *r);
void worksheets_api_dataset_get(struct request *r);
void worksheets_api_dataset_update(struct request *r);
void worksheets_api_dataset_delete(struct request *r);
/* api/status.c */
void status_dashboard(struct request *r);
void status_events(struct request *r);
void status_disks(struct request *r);
/* api/metrics.c */
void metrics_api_get(struct request *r);
/* api/bench.c */
void bench_jobs_list(struct request *r);
void bench_jobs_create(struct request *r);
void bench_jobs_get(struct request *r);
void bench_jobs_delete(struct request *r);
void bench_jobs_progress(struct request *r);
void bench_jobs_result(struct request *r);
void bench_jobs_fio_log(struct request *r);
void bench_compare(struct request *r);
void bench_presets(struct request *r);
void bench_jobs_import(struct request *r);
void bench_sweeps_list(struct request *r);
void bench_sweeps_create(struct request *r);
void bench_sweeps_get(struct request *r);
void bench_sweeps_delete(struct request *r);

/* api/href.c: sets obj's "href" to path, each {member} in it replaced by that member of
 * obj (a string or an integer; nothing when absent) as one path segment, percent-encoded,
 * with '/' written '|'. Returns obj (borrowed): api_href(user, "/api/user/v1/users/{name}"). */
json_t *api_href(json_t *obj, const char *path);
/* The same for names that may hold a '/' (a ZFS filesystem's "home/alice", written
 * "home|alice"): a '|' of the name is written "~|" and a '~' "~~", so that the segment
 * reads back to exactly the name (api_nested_name) and never to another's. */
json_t *api_href_nested(json_t *obj, const char *path);
/* A segment of api_href_nested (percent-decoded, as the router gives it) back to its name
 * in out[len]: 0, or -1 when no name is written so (a '~' before anything but '|' or '~')
 * or it does not fit. */
int api_nested_name(const char *seg, char *out, size_t len);

/* Services and their API versions, for GET /api/access/v1 and the response headers. */
struct api_service {
	const char *name;
	const char *version;
};
extern const struct api_service api_services[];
extern const size_t api_services_count;

#endif
