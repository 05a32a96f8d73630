/* SPDX-License-Identifier: ISC */
/* What a finished run says about itself: findings (read amplification, the share served
 * from a cache, system CPU per I/O, the limit, the tail, stability, warm-up), each with its
 * inputs and its rule, and for comparisons the differences in spec and environment between
 * runs and whether a difference in IOPS is beyond their noise. Pure: JSON in, JSON out,
 * no job, no I/O, no clock, so every number is unit-tested (tests/unit/test_findings.c). */
#ifndef SPINDLE_JOB_FINDINGS_H
#define SPINDLE_JOB_FINDINGS_H

#include <stddef.h>
#include <jansson.h>

/* The findings of a run as an array (a new reference): spec is the stored spec, environment
 * what the target sat on (NULL: not recorded), result the result with the collector's
 * figures added, intervals the worker's interval lines (NULL: none kept). A finding is in
 * it only when its inputs were measured. */
json_t *findings_compute(const json_t *spec, const json_t *environment, const json_t *result,
                         const json_t *intervals);

/* {"seconds", "iops_mean", "iops_stddev", "iops_cv"} of the measured whole seconds of
 * intervals, or NULL when fewer than two. */
json_t *findings_stability(const json_t *intervals);

/* {"text": "recordsize 131072 → 8192, ...", "fields": [{"name", "in", "values", "text"}]}:
 * every spec field and environment leaf that differs between the n runs, runs[base] first
 * in each text. specs[k] and envs[k] may be NULL. */
json_t *findings_differences(const json_t *const *specs, const json_t *const *envs, size_t n,
                             size_t base);

/* Whether the mean per-second IOPS of a run (stab) differs from the baseline's (base_stab)
 * beyond their spread (Welch's t): an object, or NULL when either lacks two seconds. */
json_t *findings_significance(const json_t *base_stab, const json_t *stab);

#endif
