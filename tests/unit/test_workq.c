/* SPDX-License-Identifier: ISC */
/* The helper threads (server/base/workq.c): every job's work runs once on a helper thread
 * and its done callback once on the loop thread, in the order each thread finished; the
 * limit refuses and counts; the threads run at the nice value asked for; workq_free runs
 * what is left. */
#define _GNU_SOURCE /* gettid */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/event.h>

#include "tap.h"
#include "base/util.h"
#include "base/workq.h"

#define JOBS 2000

static pthread_t loop_thread;
static int done_on_loop, work_off_loop, works, dones, nice_seen;
static struct event_base *base;
static struct workq *wq;

struct job {
	int id, worked, answered;
};

static void work(void *arg)
{
	struct job *j = arg;
	j->worked++;
	__atomic_add_fetch(&works, 1, __ATOMIC_RELAXED);
	if (!pthread_equal(pthread_self(), loop_thread))
		__atomic_add_fetch(&work_off_loop, 1, __ATOMIC_RELAXED);
	errno = 0;
	int n = getpriority(PRIO_PROCESS, (id_t)gettid());
	__atomic_store_n(&nice_seen, n, __ATOMIC_RELAXED);
}

static void done(void *arg)
{
	struct job *j = arg;
	j->answered++;
	dones++;
	done_on_loop += pthread_equal(pthread_self(), loop_thread);
	if (dones == JOBS)
		event_base_loopbreak(base);
}

/* a done callback may submit more: the chain runs to its end */
static int chain_left = 100;
static void chain_done(void *arg)
{
	(void)arg;
	if (--chain_left > 0)
		workq_submit(wq, NULL, chain_done, NULL);
	else
		event_base_loopbreak(base);
}

int main(void)
{
	loop_thread = pthread_self();
	base = event_base_new();
	wq = workq_new_nice(base, 3, 7);
	ok(wq != NULL, "a queue of 3 threads");
	is_int(workq_threads(wq), 3, "3 threads");
	workq_set_limit(wq, 0);
	struct job *jobs = xcalloc(JOBS, sizeof(*jobs));
	int submitted = 0;
	for (int i = 0; i < JOBS; i++)
		submitted += workq_submit(wq, work, done, &jobs[i]) == 0;
	is_int(submitted, JOBS, "every job submitted (no limit)");
	event_base_dispatch(base);
	is_int(dones, JOBS, "every done callback ran");
	is_int(done_on_loop, JOBS, "each on the loop thread");
	is_int(works, JOBS, "every job worked");
	is_int(work_off_loop, JOBS, "each on a helper thread");
	int once = 1;
	for (int i = 0; i < JOBS; i++)
		once = once && jobs[i].worked == 1 && jobs[i].answered == 1;
	ok(once, "each job worked and answered once");
	is_int(workq_pending(wq), 0, "nothing pending");
	is_int(nice_seen, 7, "the helper threads run at the nice value asked for");

	workq_submit(wq, NULL, chain_done, NULL);
	event_base_dispatch(base);
	is_int(chain_left, 0, "done callbacks that submit more run to the chain's end");

	/* the limit: counted until the done callbacks run */
	workq_set_limit(wq, 4);
	struct job more[6] = {{0}};
	int taken = 0;
	for (int i = 0; i < 6; i++)
		taken += workq_submit(wq, work, NULL, &more[i]) == 0;
	is_int(taken, 4, "past the limit submit refuses");
	ok(workq_pending(wq) == 4, "4 pending");
	/* workq_free finishes queued work and runs its done callbacks */
	workq_set_limit(wq, 0);
	is_int(workq_submit(wq, work, done, &jobs[0]), 0, "no limit again");
	workq_free(wq);
	is_int(more[0].worked + more[1].worked + more[2].worked + more[3].worked, 4,
	       "what was queued is worked at the stop");
	is_int(jobs[0].answered, 2, "and answered");

	/* dropped: the work is skipped, the done callback runs */
	struct workq *dropped = workq_new(base, 1);
	struct job skipped = {0};
	workq_drop_queued(dropped);
	workq_submit(dropped, work, done, &skipped);
	workq_free(dropped);
	ok(skipped.worked == 0 && skipped.answered == 1, "a dropped job is answered, not worked");

	struct workq *plain = workq_new(base, 1);
	struct job one = {0};
	workq_submit(plain, work, NULL, &one);
	workq_free(plain);
	is_int(nice_seen, UTIL_NICE_BACKGROUND, "workq_new's threads run at the background nice");

	free(jobs);
	event_base_free(base);
	done_testing();
}
