/* The audit trail: who did what to the box, from where. */
#ifndef SPINDLE_AUDIT_H
#define SPINDLE_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <jansson.h>

struct db;

void audit_init(struct db *db);
/* action: "login", "logout", "token.create", "user.create", ...; never fails the caller. */
void audit_log(const char *user, const char *address, const char *action, const char *target,
               bool ok, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* {"logs":[{"id","time","user","address","action","target","details","result"}]} */
int audit_list(int64_t start, int limit, json_t **out);

#endif
