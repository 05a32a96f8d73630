/* SPDX-License-Identifier: ISC */
/* The kernel's uevents (a NETLINK_KOBJECT_UEVENT socket, on the loop): what tells the
 * inventory that a disk or an enclosure came, went or changed, so that reads of the
 * hardware never have to rescan it to find out. Only the events that can change the
 * inventory are passed on: whole disks (block, not partitions), SCSI devices, enclosures
 * and NVMe controllers. Receiving them needs no privilege; sending them does
 * (CAP_NET_ADMIN), and an event only ever makes spindled look again, so the sender is not
 * checked (root may also make the kernel send one: echo change > /sys/block/sda/uevent). */
#ifndef SPINDLE_UEVENT_H
#define SPINDLE_UEVENT_H

#include <stdbool.h>
#include <stddef.h>

struct event_base;

struct uevent {
	const char *action;    /* "add", "remove", "change", "move", "bind", ... */
	const char *subsystem; /* "block", "scsi", "enclosure", "nvme" */
	const char *devpath;   /* under /sys, e.g. "/devices/.../block/sdb" */
	const char *devtype;   /* "disk", "scsi_device", ... or "" */
};

typedef void (*uevent_fn)(void *arg, const struct uevent *ev);

/* Starts listening; -1 (errno set) when the socket cannot be had (a sandbox without
 * AF_NETLINK): the caller then has to look for itself. */
int uevent_start(struct event_base *base, uevent_fn fn, void *arg);
void uevent_stop(void);

/* Parses one message as the kernel sends it ("ACTION@DEVPATH", then KEY=VALUE strings,
 * each NUL-terminated; buf is changed in place); true when it is one the inventory cares
 * about, with ev filled (pointing into buf). Exposed for the tests. */
bool uevent_parse(char *buf, size_t len, struct uevent *ev);

#endif
