/* SPDX-License-Identifier: ISC */
/* Locator LEDs, and the hardware inventory they sit on (server/hardware/sysfs.c).
 *
 * Each chassis and disk gets the backend the machine has for it, unless the config forces
 * one: ses (the enclosure slot's locate file), leds (a /sys/class/leds brightness file),
 * ledctl (ledmon, for disks behind SGPIO/VMD/NPEM), ipmi (ipmitool chassis identify), or
 * virtual (nothing to light: the state is only kept, and says so).
 *
 * Nothing here blocks the loop: sysfs is read and written on a helper thread of its own
 * (an SES attribute is a SCSI command to the enclosure), ledctl and ipmitool run as child
 * processes with a timeout. The inventory is rescanned when the kernel's uevents say a
 * disk, SCSI device, enclosure or NVMe controller came, went or changed (without uevents:
 * when a request finds it a second old), and all of it, LEDs and slots, every
 * --hardware-watch seconds; the LEDs a response shows are read back from the hardware for
 * it. What was set
 * is kept in the database (led_state), re-applied at start for backends that cannot be
 * read, and every change goes to the audit log. A change is answered once its row and its
 * audit entry are committed together; one the disk refuses is undone on the hardware and
 * answered as a fault (ERR_NO_SPACE when the disk is full). */
#ifndef SPINDLE_LEDS_H
#define SPINDLE_LEDS_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "base/fault.h"

struct event_base;
struct db;

struct leds_config {
	const char *sys_root;       /* "/" on a live box */
	const char *system_led;     /* name under /sys/class/leds, or NULL */
	const char *system_backend; /* "auto", "leds", "ipmi", "virtual" */
	const char *disk_backend;   /* "auto", "ses", "ledctl", "virtual" */
	int command_timeout_ms;     /* ledctl / ipmitool; then SIGTERM, SIGKILL a second later */
	const char *ledctl_socket;  /* the root helper's socket for ledctl, used if it exists */
	int watch_s; /* every LED and slot read this often (faults become problems); 0: never */
};

/* Once, after child_init and audit_init; starts the first inventory scan. */
int leds_init(struct event_base *base, struct db *db, const struct leds_config *cfg);
/* At shutdown, before child_shutdown: no new changes, the helper thread drained. */
void leds_shutdown(void);

/* f is NULL on success; result is a new reference the callee takes. cb may run before
 * the call returns. Faults: ERR_NOT_FOUND (details start with "chassis:" or "disk:"),
 * ERR_BUSY, and for a change ERR_BACKEND / ERR_TIMEOUT / ERR_NO_SPACE (details start with
 * "locate:"). */
typedef void (*leds_done)(void *arg, json_t *result, const struct fault *f);

/* Chassis objects: {"id","name","type":"system"|"enclosure","vendor","model","serial",
 * "hostname" (system),"locate","led_backend","disk_count","slot_count" (enclosure)}. */
void leds_chassis_list(leds_done cb, void *arg); /* array */
void leds_chassis_get(const char *chassis, leds_done cb, void *arg);
/* Disk objects: {"id","chassis","device","label","vendor","model","serial","wwid","size",
 * "rotational","interface","present","faulted","enclosure","slot","locate","led_backend"};
 * an enclosure lists every slot, empty ones with "present":false. */
void leds_disk_list(const char *chassis, leds_done cb, void *arg); /* array */
void leds_disk_get(const char *chassis, const char *disk, leds_done cb, void *arg);
/* Turns the locator of a chassis (disk NULL) or a disk on or off; the result is the
 * updated object. Audited as hardware.locate with user and peer. */
void leds_locate(const char *chassis, const char *disk, bool on, const char *user, const char *peer,
                 leds_done cb, void *arg);
/* Why the inventory was scanned, for /metrics. */
enum leds_scan_why {
	LEDS_SCAN_START,   /* the first, every LED read */
	LEDS_SCAN_UEVENT,  /* the kernel said something changed */
	LEDS_SCAN_REQUEST, /* a read found it stale (a uevent just came, or none are had) */
	LEDS_SCAN_WATCH,   /* --hardware-watch: every LED and slot read */
	LEDS_SCAN_NWHY
};
extern const char *const leds_scan_why_names[LEDS_SCAN_NWHY];
uint64_t leds_scans(enum leds_scan_why why);

/* Locator LEDs that are lit now (system and disks), for the dashboard and /metrics. */
unsigned leds_lit_count(void);
/* Each locator LED lit now, as leds_lit_count last read them: its key ("chassis/<id>" or
 * "disk/<id>") and since when (Unix time): when it was turned on here, kept across
 * restarts, else when spindled first saw it lit. For /metrics: a "lit for a day" alert. */
typedef void (*leds_lit_fn)(void *arg, const char *key, int64_t since);
void leds_lit_each(leds_lit_fn fn, void *arg);

#endif
