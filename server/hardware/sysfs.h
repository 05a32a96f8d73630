/* SPDX-License-Identifier: ISC */
/* The hardware inventory as sysfs shows it under a root directory (--sys-root, "/" on a
 * live box): the system chassis from DMI, every SES enclosure with its slots, and the
 * whole disks of /sys/block, linked to their slots both ways.
 *
 * Plain file reads and no globals, so it runs on a helper thread: reading an SES slot's
 * locate or fault file sends the enclosure a SCSI command and may take a while. */
#ifndef SPINDLE_SYSFS_H
#define SPINDLE_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYSFS_ID_MAX 128 /* ids: [A-Za-z0-9._-], stable across restarts and reboots */

struct sysfs_chassis {
	char id[SYSFS_ID_MAX + 1]; /* "system", or the enclosure's logical id */
	bool enclosure;
	char name[192];
	char vendor[96], model[128], serial[128]; /* "" when unknown or unreadable */
	char hostname[256];                       /* the system only */
	char sysname[64];                         /* enclosure: its sysfs name, "0:0:12:0" */
	char revision[64], part[64];              /* DMI version and SKU, SCSI rev; "" unknown */
	char uuid[37];                            /* the system only: DMI product_uuid, or "" */
	int paths;                                /* enclosure: times the same id was seen */
	int nslots;                               /* enclosure: device slots */
	int ndisks;                               /* disks present in it */
};

struct sysfs_disk {
	char id[SYSFS_ID_MAX + 1]; /* from the wwid, else the serial, else the slot */
	size_t chassis;            /* index into sysfs_inventory.chassis */
	bool present;              /* false: an empty enclosure slot */
	char device[32];           /* "sdb", "nvme0n1", "vda"; "" for an empty slot */
	char label[128];           /* the slot's name in an enclosure, else the device */
	char vendor[64], model[128], serial[128], wwid[192];
	uint64_t size;      /* bytes; 0 when unknown */
	int rotational;     /* 1, 0, or -1 unknown */
	char interface[16]; /* sata, sas, nvme, virtio, scsi, usb, mmc, xen; "" unknown */
	char slot[96];      /* the enclosure slot's name, "" outside an enclosure */
	int slot_number;    /* -1 outside an enclosure */
	char *slot_dir;     /* the slot's directory under /sys/class/enclosure, or NULL */
	int faulted;        /* the slot's fault file (or a critical status): 1, 0, -1 unknown */
	int locate;         /* the slot's locate file: 1, 0, or -1 (unknown or not read) */
	char revision[32];  /* firmware revision, "" unknown */
	int rpm;            /* medium rotation rate (SCSI VPD page B1): rpm, 1 not rotating, 0
	                     * unknown */
	int paths;          /* block devices that reach it (multipath legs): 1 and more */
};

struct sysfs_inventory {
	struct sysfs_chassis *chassis; /* [0] is the system, enclosures follow */
	size_t nchassis;
	struct sysfs_disk *disks; /* the system's disks by name, then each enclosure's slots */
	size_t ndisks;
	bool have_ipmi; /* /sys/class/ipmi lists a BMC interface */
};

/* Reads the whole inventory under root; 0, or -1 when root is too long a path. Missing
 * pieces are left empty, never an error. leds: also read each slot's locate and fault
 * files (else they stay -1): on real hardware each is a command to the enclosure. */
int sysfs_scan(const char *root, struct sysfs_inventory *inv, bool leds);
void sysfs_inventory_free(struct sysfs_inventory *inv);
/* A block device the inventory never lists (loop, RAM, device-mapper, md, ...), by name. */
bool sysfs_not_a_disk(const char *name);

/* An enclosure slot's status (one command to the enclosure): whether a device is in it,
 * and whether the enclosure calls it critical or unrecoverable; 0, or -1 unreadable. */
int sysfs_read_slot_status(const char *slot_dir, bool *present, bool *critical);
/* A 0/1 attribute (locate, fault) or a brightness (> 0 is on): 1, 0, or -1 with errno. */
int sysfs_read_flag(const char *path);
/* A non-negative integer attribute (max_brightness), or -1. */
long long sysfs_read_ll(const char *path);
/* Writes value to an existing attribute, as echo does; 0, or -1 with errno. */
int sysfs_write(const char *path, const char *value);

/* In place: keeps [A-Za-z0-9._-], turns each run of anything else into one '-', trims
 * '-' and '.' at the ends and cuts at SYSFS_ID_MAX. */
void sysfs_sanitize_id(char *s);

#endif
