/* SPDX-License-Identifier: ISC */
/* The analytics datasets: what is collected, named as the appliance names it. A dataset
 * is a statistic ("io.ops") with an optional drilldown ("disk"): io.ops[disk]. Every
 * second the collector's sample becomes one value per dataset (its total) and one per
 * drilldown key (per disk, per mode...), kept by the series store (series.h). The
 * catalog (which datasets, suspended or not) and the retention settings live in the
 * database; datasets.c owns them. Loop thread only. */
#ifndef SPINDLE_DATASETS_H
#define SPINDLE_DATASETS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/fault.h"
#include "series.h"

struct db;
struct box_sample;
struct dataset;

/* Loads the catalog and retention, drops series of datasets deleted before, and
 * subscribes to the collector. series_init() must have run. */
int datasets_init(struct db *db);
void datasets_shutdown(void);

struct dataset_info {
	int64_t id;
	const char *name;      /* "io.ops[disk]" */
	const char *statistic; /* "io.ops" */
	const char *drilldown; /* "disk", or NULL */
	const char *grouping;  /* "Disk" */
	const char *title;     /* the statistic's, short: "Disk: I/O operations per second" */
	const char *explanation;
	const char *unit;              /* "operations per second" */
	const char *const *drilldowns; /* the statistic's, NULL-terminated */
	bool suspended;
	int64_t ctime;
	size_t nkeys; /* drilldown keys seen so far */
	int64_t incore_bytes, ondisk_bytes;
};

/* Its title, the appliance's way: "Disk: I/O operations per second broken down by disk",
 * with a filter's disk or direction after it. */
void datasets_title(const struct dataset *d, char *buf, size_t len);

/* By name; a '|' in name also matches a '/' (a path segment cannot carry an encoded
 * slash, so arc.accesses[hit/miss] is arc.accesses[hit|miss] in a URL). */
struct dataset *datasets_find(const char *name);
struct dataset *datasets_find_id(int64_t id);
void datasets_info(const struct dataset *d, struct dataset_info *out);
/* In catalog order. */
void datasets_each(void (*cb)(void *arg, struct dataset *d), void *arg);

/* The dataset's series: out[0] is the total, then one per drilldown key. The array is
 * the caller's (free()); the series are referenced (series_unref() each). */
size_t datasets_series(const struct dataset *d, struct series ***out);

/* Whether a dataset of statistic[drilldown] can be made here: a drilldown the eBPF helper
 * feeds only while the helper is there (iohist.h). */
bool datasets_drilldown_offered(const char *statistic, const char *drilldown);

/* Catalog changes; actor and peer go to the audit trail. 0, or -1 with the fault. */
/* name: a statistic (drilldown apart, or NULL), or the appliance's whole name,
 * statistic[filter=value]...[drilldown], with drilldown NULL; the filters keep a dataset to
 * one disk ([disk=sda]) or io.ops's latency, size and offset to one op ([op=read]). */
int datasets_create(const char *name, const char *drilldown, const char *actor, const char *peer,
                    struct dataset **out, struct fault *f);
int datasets_suspend(struct dataset *d, bool suspended, const char *actor, const char *peer,
                     struct fault *f);
/* Removes it and, in steps, its data. d is gone afterwards. */
int datasets_delete(struct dataset *d, const char *actor, const char *peer, struct fault *f);

/* Retention in hours: second, minute and hour data. */
#define DATASETS_RETAIN_MAX (24 * 365 * 10)
void datasets_retention(struct series_retention *out);
int datasets_set_retention(const struct series_retention *r, const char *actor, const char *peer,
                           struct fault *f);

/* The values of sample s for dataset d, as the collector hands them in: cb(key, value)
 * for the total (key NULL) and each drilldown key. For the tests. */
void datasets_values(const struct dataset *d, const struct box_sample *s,
                     void (*cb)(void *arg, const char *key, double v), void *arg);

#endif
