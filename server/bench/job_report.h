/* SPDX-License-Identifier: ISC */
/* A job's result for the API: as stored or in fio's JSON output shape, and the results of
 * several jobs side by side. Loop thread only (it reads the live jobs' rows). */
#ifndef SPINDLE_JOB_REPORT_H
#define SPINDLE_JOB_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#include "base/fault.h"

#define JOB_REPORT_COMPARE_MAX 16 /* jobs in one comparison */

/* {"result":{...}} as stored, or fio's document when fio; ERR_NOT_FOUND without a result. */
int job_report_result(int64_t id, bool fio, json_t **out, struct fault *f);
/* The complete results of n jobs (1 to JOB_REPORT_COMPARE_MAX) side by side, each figure's
 * difference from the job ids[base] in percent. */
int job_report_compare(const int64_t *ids, size_t n, size_t base, json_t **out, struct fault *f);

#endif
