/* SPDX-License-Identifier: ISC */
/* Worksheets: saved sets of dataset views ({name, drilldowns, seconds}), built in the
 * browser and read on a phone. The rules (names unique per owner, dataset names from the
 * catalog, who may change what) over db/. */
#ifndef SPINDLE_WORKSHEETS_H
#define SPINDLE_WORKSHEETS_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>
#include "access/auth.h"
#include "base/fault.h"

struct db;

#define WORKSHEETS_PER_OWNER      256
#define WORKSHEET_DATASETS_MAX    64
#define WORKSHEET_DRILLDOWNS_MAX  64
#define WORKSHEET_SECONDS_DEFAULT 60
#define WORKSHEET_SECONDS_MAX     31536000 /* a year */
/* The bytes (names and datasets as stored) one owner's worksheets may take in all. A view
 * with a few drilldowns is under 100 bytes, so 256 worksheets of ten views fit 16 times
 * over; the largest shape (64 views of 64 drilldowns) takes up to ~1 MB, and without a
 * cap one account could fill the database with them. */
#define WORKSHEET_BYTES_PER_OWNER (4 << 20)
/* Listings are pages of summaries: at most ~600 bytes each, so a page stays under 1 MB. */
#define WORKSHEETS_LIST_DEFAULT 100
#define WORKSHEETS_LIST_MAX     1000

void worksheets_init(struct db *db);

/* Summaries, ordered by owner, then name: {"uuid","name","owner","ctime","mtime",
 * "dataset_count"}, from the start-th (0: the first) on, at most limit of them; *more
 * tells whether others follow. *out (an array) is a new reference. */
int worksheets_list(const char *owner /* NULL: all */, int64_t start, int limit, json_t **out,
                    bool *more, struct fault *f);
/* Worksheet objects: {"uuid","name","owner","ctime","mtime","datasets":[{"name",
 * "drilldowns":[...],"seconds"}]}. *out is a new reference. */
int worksheets_get(const char *uuid, json_t **out, struct fault *f);
/* The uuid a path names: a uuid, or the appliance's "name=<name>" (the caller's worksheet
 * of that name, else the first of anyone's). 0, or -1 with ERR_NOT_FOUND. */
int worksheets_resolve(const char *param, const char *user, char uuid[37], struct fault *f);
/* body: name, datasets? (types already checked by the HTTP layer). The actor owns it.
 * ERR_OVER_LIMIT past WORKSHEETS_PER_OWNER or WORKSHEET_BYTES_PER_OWNER. */
int worksheets_create(const json_t *body, const struct identity *actor, const char *peer,
                      json_t **out, struct fault *f);
/* body: name?, datasets?. Only the owner, or a holder of user:modify, may change or
 * delete a worksheet (ERR_DENIED otherwise). ERR_OVER_LIMIT when it grows the owner's
 * worksheets past WORKSHEET_BYTES_PER_OWNER. */
int worksheets_update(const char *uuid, const json_t *body, const struct identity *actor,
                      const char *peer, json_t **out, struct fault *f);
int worksheets_delete(const char *uuid, const struct identity *actor, const char *peer,
                      struct fault *f);

#endif
