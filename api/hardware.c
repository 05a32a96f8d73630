/* SPDX-License-Identifier: ISC */
/* /api/hardware/v1: chassis, their disks, and locator LEDs (server/hardware/leds.c). */
#include "api.h"
#include "hardware/leds.h"

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
	/* The guide's wrapper is "hardware"; deployed clients read "chassis": both. */
	reply_json(arg, 200, json_pack("{s:O, s:o}", "hardware", res, "chassis", res));
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
	if (api_query_none(r))
		leds_chassis_list(chassis_list_done, r);
}

void hardware_chassis_get(struct request *r)
{
	if (api_query_none(r))
		leds_chassis_get(request_param(r, 0), chassis_done, r);
}

void hardware_disk_list(struct request *r)
{
	if (api_query_none(r))
		leds_disk_list(request_param(r, 0), disk_list_done, r);
}

void hardware_disk_get(struct request *r)
{
	if (api_query_none(r))
		leds_disk_get(request_param(r, 0), request_param(r, 1), disk_done, r);
}

/* {"locate": true|false}: true for on; -1 with the fault answered. */
static int locate_body(struct request *r)
{
	json_t *body;
	struct fault f;
	if (!api_query_none(r))
		return -1;
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

/* Spindle has no cluster: the answer of an appliance that is not clustered. */
void hardware_cluster_get(struct request *r)
{
	if (api_query_none(r))
		reply_json(r, 200,
		           json_pack("{s:{s:s, s:s, s:s, s:s, s:s, s:{}, s:s}}", "cluster",
		                     "description", "Clustering is not configured", "peer_asn", "",
		                     "peer_description", "", "peer_hostname", "", "peer_state", "",
		                     "resources", "state", "AKCS_UNCONFIGURED"));
}
