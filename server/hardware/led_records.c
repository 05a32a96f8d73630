/* SPDX-License-Identifier: ISC */
/* What was last set on each component (leds_int.h): loaded from led_state at start, kept
 * in memory, written by each change (leds.c). Where the hardware cannot tell, it is what
 * an LED shows. */
#include "leds_int.h"
#include "base/log.h"
#include "base/util.h"
#include "db/db.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
	struct rec *v;
	size_t n, cap;
} recs;

struct rec *rec_find(const char *key)
{
	for (size_t i = 0; i < recs.n; i++)
		if (strcmp(recs.v[i].key, key) == 0)
			return &recs.v[i];
	return NULL;
}

struct rec *rec_get(const char *key)
{
	struct rec *r = rec_find(key);
	if (r)
		return r;
	recs.v = util_grow(recs.v, &recs.cap, recs.n, sizeof(*recs.v));
	r = &recs.v[recs.n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	return r;
}

int comp_locate(const struct comp *c)
{
	if (led_backends[c->backend]->readable)
		return c->locate;
	const struct rec *r = rec_find(c->key);
	return r && r->locate ? 1 : 0;
}

static int rec_load(void *arg, const struct db_led *l)
{
	struct rec *r = rec_get(l->component);
	r->locate = l->locate;
	r->lit_since = l->locate ? l->mtime : 0; /* the row's time: when it was turned on */
	return 0;
}

void led_records_load(struct db *db)
{
	if (db_led_list(db, rec_load, NULL) != 0)
		log_warn("leds: the recorded LED states cannot be read; starting with none");
}

void led_records_clear(void)
{
	free(recs.v);
	memset(&recs, 0, sizeof(recs));
}
