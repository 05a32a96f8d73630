/* SPDX-License-Identifier: ISC */
/* Network: the box's network devices, datalinks, IP interfaces and routes, read-only, in
 * the appliance's terms, for /api/network/v1.
 *
 * Devices are the physical NICs (a link of <sys-root>/sys/class/net with a `device`); the
 * datalinks every link but loopback, by class: device, aggregation (a bond, its links the
 * bond's slaves), vlan (its link the lower device, its id the VLAN id), vnic (anything else
 * virtual: bridges, veth, macvlan, tunnels); the interfaces every link that is up or holds
 * an address and is no bond's or bridge's port, with its addresses from the kernel
 * (netlink RTM_GETADDR; a faked --sys-root has none); the routes those of
 * <proc-root>/proc/net/route and /proc/net/ipv6_route. The reading is done on a helper
 * thread of this module's own when a request finds the last reading older than
 * NETWORK_TTL_S; the request then waits for it. Loop thread only. */
#ifndef SPINDLE_NETWORK_H
#define SPINDLE_NETWORK_H

#include <stdbool.h>
#include <jansson.h>

struct event_base;

#define NETWORK_TTL_S     5
#define NETWORK_MAX_LINKS 4096

int network_init(struct event_base *base, const char *sys_root, const char *proc_root);
void network_shutdown(void);

/* cb(arg) once a reading at most NETWORK_TTL_S old exists (at once when it does). */
void network_when_ready(void (*cb)(void *arg), void *arg);

/* kind: "devices", "datalinks", "interfaces" or "routes". The newest reading's list (new
 * reference, without hrefs), or one object by its name (its "route-NNN" for a route), or
 * NULL. */
json_t *network_list(const char *kind);
json_t *network_get(const char *kind, const char *name);

/* The reading itself: what sys_root, proc_root and (when live) the kernel say, as
 * {"devices": [...], "datalinks": [...], "interfaces": [...], "routes": [...]}; why says
 * what failed when the kernel's addresses could not be read ("" when they were).
 * Blocking: a helper thread's work. */
json_t *network_read(const char *sys_root, const char *proc_root, bool live, char *why,
                     size_t whylen);

#endif
