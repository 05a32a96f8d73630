/* SPDX-License-Identifier: ISC */
/* Helper threads for slow work (password KDFs, commands): run off the loop, below its
 * priority, and complete back onto it. What crosses threads is lock-free on the loop's side
 * (a job pushed, a done job taken, an eventfd): the loop never waits on a helper. */
#ifndef SPINDLE_WORKQ_H
#define SPINDLE_WORKQ_H

#include <event2/event.h>

struct workq;

/* work runs on a helper thread; done runs on the loop thread afterwards, with the same arg. */
typedef void (*workq_fn)(void *arg);

/* nthreads threads at UTIL_NICE_BACKGROUND (util.h): below the loop. */
struct workq *workq_new(struct event_base *base, int nthreads);
/* The same at nice value nice (0 to 19): 0 for work others wait on in turn and that never
 * spins, such as the database writer's short transactions. */
struct workq *workq_new_nice(struct event_base *base, int nthreads, int nice);
/* Returns 0, or -1 when the queue holds max_pending jobs already (caller answers 503). */
int workq_submit(struct workq *wq, workq_fn work, workq_fn done, void *arg);
/* How much may be pending before workq_submit refuses (default 64); 0: no limit, for a
 * queue whose callers must not be refused (what they hand over is already in memory). */
void workq_set_limit(struct workq *wq, size_t max_pending);
size_t workq_pending(const struct workq *wq);
int workq_threads(const struct workq *wq);
/* From now on a job not yet started skips its work; its done callback still runs, and
 * must cope (for work whose result a stopping daemon drops anyway). */
void workq_drop_queued(struct workq *wq);
/* Finishes queued work, runs its done callbacks, joins the threads. */
void workq_free(struct workq *wq);

#endif
