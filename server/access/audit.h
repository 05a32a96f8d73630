/* SPDX-License-Identifier: ISC */
/* The audit trail: who did what to the box, from where. */
#ifndef SPINDLE_AUDIT_H
#define SPINDLE_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <event2/event.h>
#include <jansson.h>

struct db;
struct db_audit;

void audit_init(struct db *db);
/* Entries older than days are deleted now and every hour after, by the database writer
 * (dbw.h); the retry of waiting entries runs on base too. audit_retention_stop() before
 * the loop's base is freed. */
int audit_retention(struct event_base *base, int days);
void audit_retention_stop(void);
/* action: "login", "logout", "token.create", "user.create", ...; never fails the caller. */
void audit_log(const char *user, const char *address, const char *action, const char *target,
               bool ok, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Entries go to the database writer (dbw.h): the caller does not wait for the disk. One
 * the disk refuses for want of space waits in memory (at most 4096 of them, then the
 * oldest are lost, and logged) with those logged after it, and all are tried again every
 * 5 s and at shutdown. */

/* The entry audit_log would write, for a caller that stores it in one transaction with
 * the change it records (db_led_put_audited). */
void audit_entry(struct db_audit *a, const char *user, const char *address, const char *action,
                 const char *target, bool ok, const char *fmt, ...)
    __attribute__((format(printf, 7, 8)));

/* {"logs":[{"id","time","user","address","action","target","details","result"}]}, read
 * here on the loop's connection: entries still with the writer are not in it yet. */
int audit_list(int64_t start, int limit, json_t **out);
/* The same, read by the writer after every entry logged before the call; cb gets it
 * (a new reference) or NULL on an error, on the loop. */
typedef void (*audit_list_fn)(void *arg, json_t *out);
void audit_list_async(int64_t start, int limit, audit_list_fn cb, void *arg);

#endif
