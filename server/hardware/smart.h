/* SPDX-License-Identifier: ISC */
/* Disk health: each disk's SMART or NVMe health log as `smartctl --json -a -n standby`
 * gives it, read through the root helper's socket (spindle-smart.socket,
 * server/hardware/smarthelper.c) or, when spindled runs as root without it, by running
 * smartctl itself. Every disk is read when it is first seen and then every interval (a
 * disk that is not ok more often), one at a time, each with a timeout, off the loop (the
 * answer is read on it). A disk spun down is not woken: its last reading stays, marked.
 * Loop thread only. */
#ifndef SPINDLE_SMART_H
#define SPINDLE_SMART_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;

enum smart_health { SMART_UNKNOWN, SMART_OK, SMART_WARNING, SMART_FAILING };

#define SMART_NONE (-1) /* a counter the disk does not report */

/* One disk's health as last read. */
struct smart_info {
	enum smart_health health;
	char why[400];         /* what is not ok, or why it is unknown; "" when ok */
	int64_t read_at;       /* when the values were read (epoch s); 0: never */
	bool asleep;           /* the last try found it spun down and left it so */
	char protocol[8];      /* "ATA", "SCSI", "NVMe"; "" before a reading */
	int overall_passed;    /* the drive's own verdict: 1, 0, SMART_NONE */
	int64_t temperature_c; /* all below: SMART_NONE when not reported */
	int64_t temperature_limit_c;
	int64_t power_on_hours;
	/* ATA */
	int64_t reallocated, pending, offline_uncorrectable, crc_errors;
	/* SCSI (SAS) */
	int64_t grown_defects, uncorrected_read, uncorrected_write;
	/* NVMe */
	int64_t critical_warning, percentage_used, available_spare, available_spare_threshold,
	    media_errors;
};

/* Reads smartctl's JSON (out, len) into *info, read at now. prev: the disk's last
 * reading (NULL: none), kept when this one has no values (a disk asleep). Never fails:
 * what cannot be read makes the health unknown, with why. */
void smart_parse(const char *out, size_t len, int64_t now, const struct smart_info *prev,
                 struct smart_info *info);
/* The name of a health: "ok", "warning", "failing", "unknown". */
const char *smart_health_name(enum smart_health h);

struct smart_config {
	const char *socket; /* the root helper's socket; used when it exists */
	int interval_s;     /* between two readings of a disk; 0: never read */
	int retry_s;        /* of a disk that is not ok */
	int timeout_ms;     /* of one reading */
};

/* A disk of the inventory: its stable id, its device ("sdb") and interface ("sata"), and
 * what names it in a problem: its chassis, label ("HDD 3"), slot ("Slot 03", "" outside
 * an enclosure), serial and href. */
struct smart_disk {
	const char *id, *device, *interface;
	const char *chassis, *label, *slot, *serial, *href;
};

int smart_init(struct event_base *base, const struct smart_config *cfg);
/* The disks there are now (after each hardware scan): new ones are read soon, the ones
 * gone forgotten. */
void smart_inventory(const struct smart_disk *disks, size_t n);
/* The disk's reading, or NULL when it has none yet (or is not a disk smartctl reads). */
const struct smart_info *smart_get(const char *id);
/* The reading of the disk whose device is name, or holds the partition name ("sdb1",
 * "nvme0n1p2": its disk's, by the kernel's naming); NULL when none. *disk: the disk's
 * device name (NULL: not wanted). */
const struct smart_info *smart_get_device(const char *name, const char **disk);
/* Whether any disk has given a temperature (the analytics' disk.temperature is made then). */
bool smart_have_temperature(void);
/* Each disk's device and reading, for /metrics (disks read at least once, or unknown). */
void smart_each(void (*cb)(void *arg, const char *device, const struct smart_info *s), void *arg);
/* Adds the disk's health keys to its appliance-shaped object: "health",
 * "health_details", "temperature_c", "power_on_hours" and "smart" (the reading's
 * details). */
void smart_json_add(json_t *disk, const char *id, const char *interface);
void smart_shutdown(void);

#endif
