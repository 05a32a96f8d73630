/* SPDX-License-Identifier: ISC */
/* Open problems: faults spindled has noticed and not yet seen go away, listed by the
 * problem service (/api/problem/v1) and counted by the dashboard and /metrics.
 *
 * A source raises a problem under a stable key of its own ("disk/<id>", "collector",
 * "state-dir", ...) and clears it by the same key when the cause is gone; raising a key
 * that is open only refreshes its text and keeps its uuid and first time. Nothing is
 * stored: a problem lives as long as its cause is seen in this process. Loop thread only.
 * The state directory is watched here too: a statvfs every few seconds. */
#ifndef SPINDLE_PROBLEMS_H
#define SPINDLE_PROBLEMS_H

#include <stdbool.h>
#include <jansson.h>

struct event_base;

enum problem_severity { PROBLEM_MINOR, PROBLEM_MAJOR, PROBLEM_CRITICAL };

/* The thing at fault, for the guide's "components" (NULLs leave keys out). */
struct problem_component {
	const char *chassis; /* chassis id */
	const char *label;   /* what a person reads: "Slot 03", "/proc/meminfo" */
	const char *href;    /* the component's own route, if it has one */
};

/* state_dir is watched for free space (near full: PROBLEMS_STATE_FULL_PCT used, or less
 * than PROBLEMS_STATE_MIN_FREE bytes left). 0, or -1 when the timer cannot be set. */
int problems_init(struct event_base *base, const char *state_dir);
void problems_shutdown(void);

/* What a source says about its problem. */
struct problem_text {
	const char *code;   /* short and stable: "SP-DISK-FAULT" */
	const char *type;   /* "Fault" (hardware) or "Defect" (software, configuration) */
	const char *impact; /* what it means for the box */
	const char *action; /* what to do */
};

/* The description (what is wrong) is fmt; comp may be NULL. */
void problems_raise(const char *key, enum problem_severity severity, const struct problem_text *t,
                    const struct problem_component *comp, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
void problems_clear(const char *key);
/* Clears every open problem whose key starts with prefix and is not in keep (n keys). */
void problems_clear_others(const char *prefix, const char *const *keep, size_t n);
unsigned problems_count(void);

/* {"problems":[...]} as the guide shapes them, each with its href; and one by uuid
 * (NULL when there is none). New references. */
json_t *problems_list_json(void);
json_t *problems_get_json(const char *uuid);
/* The dashboard's short list: the max newest (last first seen) open problems, newest first,
 * each {"id": uuid, "severity", "summary": the description's first line, cut to at most
 * PROBLEMS_SUMMARY_MAX bytes with an ellipsis}. New reference. */
#define PROBLEMS_SUMMARY_MAX 80
json_t *problems_recent_json(size_t max);

/* Sources that live in other modules call these one-liners. */
/* The collector: names of the sources it could not read this tick ("" for none). */
void problems_collector(const char *unread);
/* A benchmark job ended in state (done, failed, cancelled, interrupted). */
void problems_job_ended(long long id, const char *name, const char *state, const char *reason);
/* The state directory's file system (also called from the timer), for tests: 0 or -1. */
int problems_check_state_dir(void);

#endif
