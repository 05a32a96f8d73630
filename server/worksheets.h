/* Worksheets: saved sets of dataset views ({name, drilldowns, seconds}), built in the
 * browser and read on a phone. The rules (names unique per owner, dataset names from the
 * catalog, who may change what) over db/. */
#ifndef SPINDLE_WORKSHEETS_H
#define SPINDLE_WORKSHEETS_H

#include <jansson.h>
#include "auth.h"
#include "fault.h"

struct db;

#define WORKSHEETS_PER_OWNER      256
#define WORKSHEET_DATASETS_MAX    64
#define WORKSHEET_DRILLDOWNS_MAX  64
#define WORKSHEET_SECONDS_DEFAULT 60
#define WORKSHEET_SECONDS_MAX     31536000 /* a year */

void worksheets_init(struct db *db);

/* Worksheet objects: {"uuid","name","owner","ctime","mtime","datasets":[{"name",
 * "drilldowns":[...],"seconds"}],"href"}. *out is a new reference. */
int worksheets_list(const char *owner /* NULL: all */, json_t **out /* array */, struct fault *f);
int worksheets_get(const char *uuid, json_t **out, struct fault *f);
/* body: name, datasets? (types already checked by the HTTP layer). The actor owns it. */
int worksheets_create(const json_t *body, const struct identity *actor, const char *peer,
                      json_t **out, struct fault *f);
/* body: name?, datasets?. Only the owner, or a holder of user:modify, may change or
 * delete a worksheet (ERR_DENIED otherwise). */
int worksheets_update(const char *uuid, const json_t *body, const struct identity *actor,
                      const char *peer, json_t **out, struct fault *f);
int worksheets_delete(const char *uuid, const struct identity *actor, const char *peer,
                      struct fault *f);

#endif
