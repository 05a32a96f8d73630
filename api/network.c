/* SPDX-License-Identifier: ISC */
/* /api/network/v1, read-only: devices, datalinks, interfaces and routes
 * (server/inventory/network.c), as the appliance's network service shapes them. A write to
 * any of these routes is the router's 405. */
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "base/util.h"
#include "inventory/network.h"

struct ask {
	struct request *r;
	const char *kind; /* "devices", "datalinks", "interfaces", "routes" */
	bool one;
};

static const char *href_of(const char *kind)
{
	return strcmp(kind, "devices") == 0      ? "/api/network/v1/devices/{device}"
	       : strcmp(kind, "datalinks") == 0  ? "/api/network/v1/datalinks/{datalink}"
	       : strcmp(kind, "interfaces") == 0 ? "/api/network/v1/interfaces/{interface}"
	                                         : "/api/network/v1/routes/{route}";
}

/* The key of one object's answer. The guide's Get Network Device answers under "devices",
 * the plural, in every release; the others under their singular. */
static const char *one_key(const char *kind)
{
	return strcmp(kind, "devices") == 0      ? "devices"
	       : strcmp(kind, "datalinks") == 0  ? "datalink"
	       : strcmp(kind, "interfaces") == 0 ? "interface"
	                                         : "route";
}

static void answer(void *arg)
{
	struct ask *a = arg;
	struct request *r = a->r;
	const char *kind = a->kind;
	bool one = a->one;
	free(a);
	if (one) {
		const char *name = request_param(r, 0);
		json_t *o = network_get(kind, name);
		if (!o) {
			struct fault f;
			const char *what = strcmp(kind, "devices") == 0 ? "device" : one_key(kind);
			fault_set(&f, ERR_NOT_FOUND, "%s: no %s '%.64s'", what, what, name);
			reply_fault(r, &f);
			return;
		}
		reply_json(r, 200, json_pack("{s:o}", one_key(kind), api_href(o, href_of(kind))));
		return;
	}
	json_t *list = network_list(kind);
	if (!list)
		list = json_array(); /* spindled is stopping */
	size_t i;
	json_t *o;
	json_array_foreach(list, i, o)
	{
		api_href(o, href_of(kind));
	}
	reply_json(r, 200, json_pack("{s:o}", kind, list));
}

static void ask(struct request *r, const char *kind, bool one)
{
	struct ask *a = xcalloc(1, sizeof(*a));
	*a = (struct ask){r, kind, one};
	network_when_ready(answer, a);
}

void network_devices_list(struct request *r)
{
	ask(r, "devices", false);
}

void network_device_get(struct request *r)
{
	ask(r, "devices", true);
}

void network_datalinks_list(struct request *r)
{
	ask(r, "datalinks", false);
}

void network_datalink_get(struct request *r)
{
	ask(r, "datalinks", true);
}

void network_interfaces_list(struct request *r)
{
	ask(r, "interfaces", false);
}

void network_interface_get(struct request *r)
{
	ask(r, "interfaces", true);
}

void network_routes_list(struct request *r)
{
	ask(r, "routes", false);
}

void network_route_get(struct request *r)
{
	ask(r, "routes", true);
}
