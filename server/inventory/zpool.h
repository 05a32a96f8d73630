/* SPDX-License-Identifier: ISC */
/* What `zpool status` prints, parsed: one place for the pool layout that the storage
 * service (its profile and failed devices) and a benchmark job's environment (the vdevs
 * under its target) both read. Pure functions over text. */
#ifndef SPINDLE_ZPOOL_H
#define SPINDLE_ZPOOL_H

#include <jansson.h>

/* The vdevs of the first config section of text (one pool's `zpool status [-P] POOL`), as
 * [{"type": "mirror", "devices": [{"name": "sda", "state": "ONLINE", "note": ""}, ...]},
 * ...]: a group's type before its number (mirror-0: mirror; raidz2-1: raidz2), "disk" for
 * a device standing alone; "class": "log", "cache", "spare", "special" or "dedup" outside
 * the data vdevs. A device is named as zpool names it (a path with -P), its state as it
 * says (ONLINE, UNAVAIL, AVAIL for a spare ...), note what follows its error counts
 * ("cannot open"). The groups inside a group (replacing-0, spare-1) are passed through
 * to their devices. NULL when the text has no config section. New reference. */
json_t *zpool_parse_vdevs(const char *text);

#endif
