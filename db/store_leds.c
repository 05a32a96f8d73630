/* SPDX-License-Identifier: ISC */
/* Locator LEDs as last set (led_state): one row per chassis or disk ever lit. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "db_int.h"
#include "base/log.h"

static const char sql_led_put[] =
    "INSERT INTO led_state (component, locate, backend, mtime) VALUES (?1, ?2, ?3, ?4)"
    " ON CONFLICT (component) DO UPDATE SET locate = excluded.locate,"
    " backend = excluded.backend, mtime = excluded.mtime";
static const char sql_led_list[] =
    "SELECT component, locate, backend, mtime FROM led_state ORDER BY component";

int db_led_put(struct db *db, const struct db_led *l)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_LED_PUT, sql_led_put);

	if (!st || db_bind_text(db, st, 1, l->component, sizeof(l->component)) == -1 ||
	    db_bind_int64(db, st, 2, l->locate ? 1 : 0) == -1 ||
	    db_bind_text(db, st, 3, l->backend, sizeof(l->backend)) == -1 ||
	    db_bind_int64(db, st, 4, db_time_or_now(l->mtime)) == -1 ||
	    db_write(db, st, "recording a locator LED") != 0)
		return -1;
	return 0;
}

int db_led_put_audited(struct db *db, const struct db_led *l, const struct db_audit *a)
{
	int rc = db_begin(db);
	if (rc == 0)
		rc = db_led_put(db, l);
	if (rc == 0)
		rc = db_audit_insert(db, a);
	return db_end(db, rc);
}

static void db_led_list_row(sqlite3_stmt *st, void *row)
{
	struct db_led *l = row;
	db_col_text(st, 0, l->component, sizeof(l->component));
	l->locate = sqlite3_column_int(st, 1) != 0;
	db_col_text(st, 2, l->backend, sizeof(l->backend));
	l->mtime = sqlite3_column_int64(st, 3);
}

int db_led_list(struct db *db, int (*cb)(void *arg, const struct db_led *l), void *arg)
{
	sqlite3_stmt *st = db_stmt(db, DB_STMT_LED_LIST, sql_led_list);
	struct db_led *all = NULL;
	size_t i, n = 0;
	int ret;

	if (!st)
		return -1;
	/* Read everything and reset before calling back: cb may use the store itself. */
	ret = db_read_rows(db, st, sizeof(*all), db_led_list_row, "reading the locator LEDs",
	                   (void **)&all, &n);
	for (i = 0; i < n && ret == 0; i++)
		ret = cb(arg, &all[i]);
	free(all);
	return ret;
}
