/* SPDX-License-Identifier: ISC */
/* What the parts of the locator LEDs share (leds.h is their face), from the top down, each
 * calling only those below it: leds.c (snapshots of the inventory, ops, changes), leds_json.c
 * (the inventory in the appliance's shape), led_records.c (what was last set on each
 * component), led_backends.c (the one table of backends, and the virtual one), and one
 * file per kind of backend: led_sysfs.c (SES slots and LED class devices, written through
 * sysfs) and led_command.c (ledctl, directly or through the root helper, and ipmitool).
 * A backend knows only the op it is given and the environment it was started with; it
 * reports the end of a change through op->done. Everything here runs on the loop thread
 * unless it says otherwise. */
#ifndef SPINDLE_LEDS_INT_H
#define SPINDLE_LEDS_INT_H

#include "leds.h"
#include "sysfs.h"
#include "base/fault.h"
#include "base/hmap.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LEDS_TTL_NS                                                                                \
	1000000000ull          /* without uevents, a request finds an older                        \
	                        * inventory stale */
#define LEDS_SETTLE_MS     250 /* after a uevent, the rescan waits for the rest of a burst */
#define LEDS_KILL_GRACE_MS 1000
#define LEDS_KEY_MAX       (SYSFS_ID_MAX + 16)

enum led_backend { LED_VIRTUAL, LED_SES, LED_LEDS, LED_LEDCTL, LED_IPMI, LED_NBACKENDS };

/* What the config asks for: auto, or one backend. */
enum led_choice { CHOOSE_AUTO = -1 };

/* One LED in a snapshot. */
struct comp {
	char key[LEDS_KEY_MAX]; /* "chassis/<id>" or "disk/<id>" */
	enum led_backend backend;
	char *path;       /* ses: the slot's locate file; leds: brightness; else NULL */
	char *fault_path; /* ses: the slot's fault file */
	int locate;       /* ses, leds: as last read back (1, 0, -1 unreadable) */
};

struct snap {
	struct sysfs_inventory inv;
	struct comp *chassis; /* parallel to inv.chassis */
	struct comp *disks;   /* parallel to inv.disks */
	struct hmap by_key;   /* comp key -> its index + 1, disks after the chassis */
	uint64_t taken_ns;
	unsigned gen;
};

/* What was last set on a component, as led_state holds it. */
struct rec {
	char key[LEDS_KEY_MAX];
	bool locate;
	int64_t lit_since; /* Unix time the LED was turned on (or first seen lit), 0: off */
	bool busy;         /* a change is in flight */
	char fault[200];   /* why re-applying it at start failed, or "" */
};

enum op_kind {
	OP_CHASSIS_LIST,
	OP_CHASSIS,
	OP_DISK_LIST,
	OP_DISK,
	OP_LOCATE,
	OP_REAPPLY,
	OP_WATCH /* the watch's pass over the slots: answers nobody */
};

struct readback {
	bool disk;
	size_t idx;
	char key[LEDS_KEY_MAX];
	char *path, *fault_path; /* copies: the snapshot may go while the helper reads */
	char *slot_dir;          /* the watch's: the slot's status and fault, not its LED */
	int locate, faulted;
};

struct op {
	enum op_kind kind;
	char chassis[SYSFS_ID_MAX + 1], disk[SYSFS_ID_MAX + 1];
	bool on;
	char user[65], peer[64];
	leds_done cb;
	void *arg;
	struct op *next; /* waiting for a scan */
	/* reading back */
	struct readback *rb;
	size_t nrb, rb_cap;
	unsigned gen;
	/* a change */
	char key[LEDS_KEY_MAX];
	char target[2 * SYSFS_ID_MAX + 16]; /* "chassis/<c>/disk/<d>" for the audit */
	enum led_backend backend;
	char *path, *fault_path;
	char device[32];
	/* the disk as a person finds it, for the audit: "sdc · HDD 2 · serial Z1Z0A1B2" (the
	 * disk in the slot then: a later one may have the same slot) */
	char named[300];
	char command[96]; /* as run, for messages */
	int old, now, faulted, err;
	int64_t at; /* the row's time, and so the lit LED's lit_since: one clock read */
	/* the change could not be stored: it is being undone, then this is the answer */
	bool undoing;
	/* how the backend reports the end of the change (why NULL: it took), and whether it
	 * refused it before trying anything (the answer is then a plain fault, unaudited) */
	void (*done)(struct op *op, enum fault_kind kind, const char *why);
	bool refused;
	bool read; /* now is what the hardware read back after the change */
	struct fault unstored;
	struct op *next_store; /* in leds.stores while its row is with the writer */
};

struct scan_job {
	struct snap *snap;
	bool full; /* every LED read too, not just what is there */
};

/* What a backend works with, set by leds_init (leds.env) and handed to each kind. */
struct led_env {
	struct event_base *base;
	struct workq *wq;          /* the LEDs' helper thread */
	const char *ledctl_socket; /* the root helper's socket, used when it exists; or NULL */
	int timeout_ms;            /* a command's or the helper's answer */
	bool stopping;             /* leds_shutdown has begun */
};

struct leds_state {
	struct led_env env;
	struct db *db;
	char *root;
	char *system_led;
	char *ledctl_socket; /* env.ledctl_socket's */
	int sys_choice, disk_choice;
	struct snap *snap;
	unsigned gen;
	bool scanning;
	struct event *watch; /* --hardware-watch: every slot's status and fault read this often */
	bool watching;       /* its pass is on the helper thread */
	/* The kernel's uevents tell when the inventory changes (uevent.c); without them a
	 * read finds it stale when it is a second old. stale: an event came since the last
	 * scan began; settle: the scan it asks for, a moment later (events come in bursts). */
	bool uevents, stale;
	struct event *settle;
	uint64_t scans[LEDS_SCAN_NWHY];
	struct op *waiters, *waiters_tail;
	struct op *stores; /* changes whose row and audit entry are with the writer */
	bool started;
};

extern struct leds_state leds;

/* --- leds.c */

/* The op fails: its answer is the fault of kind with the message, and it is freed. */
void op_fail(struct op *op, enum fault_kind kind, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
struct comp *comp_by_key(struct snap *s, const char *key, long *idx, bool *disk);

static inline const char *onoff(int v)
{
	return v < 0 ? "unknown" : v ? "on" : "off";
}

/* --- leds_json.c */

json_t *chassis_json(const struct snap *s, size_t i);
json_t *disk_json(const struct snap *s, size_t i);
/* An open problem for every present disk of s its enclosure marks faulted; cleared when
 * the mark goes (or the disk does). */
void faults_to_problems(const struct snap *s);

/* --- led_records.c */

struct rec *rec_find(const char *key);
/* The component's record, made (off) when it has none. */
struct rec *rec_get(const char *key);
/* What a component's LED shows: read back where the hardware tells, else as recorded. */
int comp_locate(const struct comp *c);
/* The LED states as last set, from the database; and forgotten. */
void led_records_load(struct db *db);
void led_records_clear(void);

/* --- led_backends.c: the table */

/* A kind of backend: how an LED of it is set, and what the hardware tells of it. Each is
 * defined by its file; led_backends is the one table of them. */
struct led_backend_ops {
	const char *name; /* as led_backend and the config say it */
	/* Sets op->on; ends in op->done (at once, or later on the loop). */
	void (*set)(struct op *op);
	bool readable; /* its LEDs are read back; the others show what was recorded */
	bool forgets;  /* the hardware may forget: what was lit is set again at start */
};
extern const struct led_backend_ops led_virtual, led_ses, led_leds, led_ledctl, led_ipmi;
extern const struct led_backend_ops *const led_backends[LED_NBACKENDS];

/* --- led_sysfs.c */

void led_sysfs_start(const struct led_env *env);

/* --- led_command.c */

void led_command_start(const struct led_env *env);
/* Whether ledctl goes through the root helper: its socket is there. */
bool ledctl_via_socket(void);
/* At shutdown: the requests waiting on the root helper are answered. */
void led_command_stop(void);

/* The disks present, to disk health (smart.h): each is read when first seen. */
void smart_from_snap(const struct snap *s);

#endif
