/* SPDX-License-Identifier: ISC */
/* /api/hardware/v1: chassis, their disks, and locator LEDs (server/hardware/leds.c). */
#include <stdio.h>
#include <string.h>

#include "api.h"
#include "hardware/leds.h"
#include "inventory/network.h"
#include "inventory/storage.h"

#define HW_CHASSIS "/api/hardware/v1/chassis"

/* The one thing a PUT may say; anything else is refused before anything is touched. */
static const struct field locate_fields[] = {
    {"locate", FIELD_BOOL, true, 0, 0},
    FIELDS_END,
};

#define CHASSIS_HREF HW_CHASSIS "/{id}"
#define DISK_HREF    HW_CHASSIS "/{chassis}/disk/{id}"

static void chassis_list_done(void *arg, json_t *res, const struct fault *f)
{
	if (f) {
		reply_fault(arg, f);
		return;
	}
	size_t i;
	json_t *c;
	json_array_foreach(res, i, c)
	{
		api_href(c, CHASSIS_HREF);
	}
	/* The guide's examples wrap the list in "hardware"; real appliances answer, and their
	 * clients read, "chassis": the one key. */
	reply_json(arg, 200, json_pack("{s:o}", "chassis", res));
}

static void chassis_reply(struct request *r, int status, json_t *res, const struct fault *f)
{
	if (f)
		reply_fault(r, f);
	else {
		size_t i;
		json_t *d;
		json_array_foreach(json_object_get(res, "disk"), i, d)
		{
			api_href(d, DISK_HREF);
		}
		reply_json(r, status, json_pack("{s:o}", "chassis", api_href(res, CHASSIS_HREF)));
	}
}

static void chassis_done(void *arg, json_t *res, const struct fault *f)
{
	chassis_reply(arg, 200, res, f);
}

static void chassis_changed(void *arg, json_t *res, const struct fault *f)
{
	chassis_reply(arg, 202, res, f);
}

static void disk_list_done(void *arg, json_t *res, const struct fault *f)
{
	if (f) {
		reply_fault(arg, f);
		return;
	}
	size_t i;
	json_t *d;
	json_array_foreach(res, i, d)
	{
		api_href(d, DISK_HREF);
	}
	reply_json(arg, 200, json_pack("{s:o}", "disks", res));
}

static void disk_reply(struct request *r, int status, json_t *res, const struct fault *f)
{
	if (f)
		reply_fault(r, f);
	else
		reply_json(r, status, json_pack("{s:o}", "disk", api_href(res, DISK_HREF)));
}

static void disk_done(void *arg, json_t *res, const struct fault *f)
{
	disk_reply(arg, 200, res, f);
}

static void disk_changed(void *arg, json_t *res, const struct fault *f)
{
	disk_reply(arg, 202, res, f);
}

void hardware_chassis_list(struct request *r)
{
	leds_chassis_list(chassis_list_done, r);
}

void hardware_chassis_get(struct request *r)
{
	leds_chassis_get(request_param(r, 0), chassis_done, r);
}

void hardware_disk_list(struct request *r)
{
	leds_disk_list(request_param(r, 0), disk_list_done, r);
}

void hardware_disk_get(struct request *r)
{
	leds_disk_get(request_param(r, 0), request_param(r, 1), disk_done, r);
}

/* {"locate": true|false}: true for on; -1 with the fault answered. */
static int locate_body(struct request *r)
{
	json_t *body;
	struct fault f;
	if (request_body(r, locate_fields, &body, &f) < 0) {
		reply_fault(r, &f);
		return -1;
	}
	int on = json_is_true(json_object_get(body, "locate"));
	json_decref(body);
	return on;
}

void hardware_chassis_locate(struct request *r)
{
	int on = locate_body(r);
	if (on >= 0)
		leds_locate(request_param(r, 0), NULL, on, r->who.user, r->peer, chassis_changed,
		            r);
}

void hardware_disk_locate(struct request *r)
{
	int on = locate_body(r);
	if (on >= 0)
		leds_locate(request_param(r, 0), request_param(r, 1), on, r->who.user, r->peer,
		            disk_changed, r);
}

/* A size as the appliance's cluster resources write it: three digits, "29.3G", "8.03T". */
static void size_text(uint64_t bytes, char *buf, size_t len)
{
	static const char units[] = "KMGTPE";
	double v = (double)bytes;
	int u = -1;
	while (v >= 1024 && u < (int)sizeof(units) - 2) {
		v /= 1024;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%lluB", (unsigned long long)bytes);
	else
		snprintf(buf, len,
		         v >= 100  ? "%.0f%c"
		         : v >= 10 ? "%.1f%c"
		                   : "%.2f%c",
		         v, units[u]);
}

/* The resources an unclustered appliance lists: each pool (its size) and each IP
 * interface (its address), owned by this node. */
static void cluster_answer(void *arg)
{
	struct request *r = arg;
	json_t *res = json_array();
	const char *node = system_nodename();
	size_t n;
	const struct storage_pool *p = storage_pools(&n);
	for (size_t i = 0; i < n; i++) {
		char size[32], href[320];
		size_text(p[i].size, size, sizeof(size));
		snprintf(href, sizeof(href), "/api/hardware/v1/cluster/resources/zfs/%s",
		         p[i].name);
		json_array_append_new(res, json_pack("{s:s, s:s, s:s, s:[s], s:s}", "owner", node,
		                                     "type", "singleton", "user_label", "",
		                                     "details", size, "href", href));
	}
	json_t *ifs = network_list("interfaces");
	size_t i;
	json_t *f;
	json_array_foreach(ifs, i, f)
	{
		const char *name = json_string_value(json_object_get(f, "interface"));
		json_t *addrs = json_object_get(f, "v4addrs");
		if (!json_array_size(addrs))
			addrs = json_object_get(f, "v6addrs");
		json_t *details = json_array();
		size_t k;
		json_t *a;
		json_array_foreach(addrs, k, a)
		{
			const char *cidr = json_string_value(a);
			json_array_append_new(details, json_stringn(cidr, strcspn(cidr, "/")));
		}
		char href[320];
		snprintf(href, sizeof(href), "/api/hardware/v1/cluster/resources/net/%s", name);
		json_array_append_new(res, json_pack("{s:s, s:s, s:O, s:o, s:s}", "owner", node,
		                                     "type", "singleton", "user_label",
		                                     json_object_get(f, "label"), "details",
		                                     details, "href", href));
	}
	json_decref(ifs);
	reply_json(r, 200,
	           json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:s, s:o}}", "cluster", "state",
	                     "AKCS_UNCONFIGURED", "description", "Clustering is not configured",
	                     "peer_asn", "", "peer_hostname", "", "peer_state", "",
	                     "peer_description", "", "resources", res));
}

static void cluster_network(void *arg)
{
	network_when_ready(cluster_answer, arg);
}

/* Spindle has no cluster: the answer of an appliance that is not clustered. */
void hardware_cluster_get(struct request *r)
{
	storage_when_ready(cluster_network, r);
}
