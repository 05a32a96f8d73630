/* SPDX-License-Identifier: ISC */
/* The disks' I/O histograms (latency, size, offset: iolat/iolat.h) as spindle-iolat, the
 * root helper holding the eBPF program, streams them over its socket. spindled connects
 * only while a dataset needs them (iohist_want), as the appliance's dynamic statistics cost
 * only while enabled; at start, and now and then while the helper is not there, it asks
 * once whether the helper is there and can load its program, which is what decides whether
 * the datasets are offered. Loop thread only. */
#ifndef SPINDLE_IOHIST_H
#define SPINDLE_IOHIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "iolat/iolat.h"
#include "sample.h"

struct event_base;

/* One device's completions of a second, both directions. */
struct iohist_disk {
	char name[32];
	uint64_t lat[IOLAT_DIRS][IOLAT_LAT_BUCKETS];
	uint64_t size[IOLAT_DIRS][IOLAT_SIZE_BUCKETS];
	uint64_t off[IOLAT_DIRS][IOLAT_OFF_BUCKETS];
	uint64_t untimed[IOLAT_DIRS];
};

/* path "" or NULL: no helper (the datasets are never offered). */
int iohist_init(struct event_base *base, const char *path);
void iohist_shutdown(void);

/* Whether the helper answered, the last time it was asked, that its program is attached;
 * if not, why (always set). */
bool iohist_available(char *why, size_t len);
/* Who needs the histograms: a dataset, a running benchmark job (its record keeps its
 * disks'). Connected while any does. */
enum iohist_client { IOHIST_FOR_DATASETS = 1, IOHIST_FOR_JOBS = 2 };
void iohist_want(enum iohist_client who, bool on);

/* The second just ended: what the helper sent since the last call becomes what
 * iohist_get answers. false when nothing is streaming (no values for that second). The
 * collector calls it once a tick (the sample's have_iohist) with the disks it counts: from
 * then on the helper's lines count for those alone, and what others it names is dropped
 * (a helper naming devices without end costs nothing). */
bool iohist_take(const struct disk_sample *disks, int ndisks);
/* A device's counts of the second taken last, or NULL when it had no completions or is
 * not among the collector's disks. */
const struct iohist_disk *iohist_get(const char *name);

/* The three histograms of a device, as io.ops breaks down by them. */
enum iohist_kind { IOHIST_LATENCY, IOHIST_SIZE, IOHIST_OFFSET, IOHIST_KINDS };
#define IOHIST_MAX_BUCKETS IOLAT_LAT_BUCKETS /* the most any kind has */

/* How many buckets kind k has. */
unsigned iohist_buckets(enum iohist_kind k);
/* d's counts of kind k in direction dir, iohist_buckets(k) of them. */
const uint64_t *iohist_counts(const struct iohist_disk *d, enum iohist_kind k, int dir);
/* The key of bucket idx of kind k, as the datasets name it, or NULL past the last:
 * latency "1024-1280" (ns), size "4096-8192" (bytes), offset "0-1" .. "63-64" (64ths of
 * the device); the last latency and size buckets are open above ("68719476736+"). */
const char *iohist_key(enum iohist_kind k, unsigned idx);

/* One line of the helper's stream, as the reader takes it (the fuzz harness and tests). 0;
 * 1 with the helper's reason in why when it says it cannot serve; -1 with why when the
 * line breaks the protocol. The connection is closed on either. */
int iohist_feed_line(const char *line, char *why, size_t len);

#endif
