/* SPDX-License-Identifier: ISC */
/* Helper threads: a mutex/cond queue in, a done list out, and one persistent event that
 * the threads activate (the only libevent call that may cross threads) so that every
 * done callback runs on the loop thread. */
#define _GNU_SOURCE /* gettid */
#include "workq.h"
#include "log.h"
#include "loopwork.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

/* Jobs queued, running or waiting for their done callback: each is a request the
 * client is waiting on, so beyond this the caller answers 503 rather than queue minutes. */
#define WORKQ_MAX_PENDING 64

struct workq_job {
	workq_fn work, done;
	void *arg;
	struct workq_job *next;
};

struct workq {
	struct event_base *base;
	struct event *ev_done;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct workq_job *head, *tail;           /* waiting for a thread */
	struct workq_job *done_head, *done_tail; /* waiting for the loop */
	size_t pending;                          /* submitted, done callback not yet run */
	size_t max_pending;                      /* 0: no limit */
	bool stopping;
	int nice; /* each thread's, set by itself */
	int nthreads;
	pthread_t *threads;
};

static void *workq_thread(void *p)
{
	struct workq *wq = p;

	/* Linux keeps a nice value per thread: PRIO_PROCESS with a thread's id renices it alone. */
	if (wq->nice && setpriority(PRIO_PROCESS, (id_t)gettid(), wq->nice) < 0)
		log_warn("workq: cannot lower a helper thread's priority: %s", strerror(errno));
	pthread_mutex_lock(&wq->lock);
	for (;;) {
		while (!wq->head && !wq->stopping)
			pthread_cond_wait(&wq->cond, &wq->lock);
		struct workq_job *j = wq->head;
		if (!j)
			break; /* stopping and the queue is drained */
		wq->head = j->next;
		if (!wq->head)
			wq->tail = NULL;
		pthread_mutex_unlock(&wq->lock);

		if (j->work)
			j->work(j->arg);

		pthread_mutex_lock(&wq->lock);
		j->next = NULL;
		if (wq->done_tail)
			wq->done_tail->next = j;
		else
			wq->done_head = j;
		wq->done_tail = j;
		pthread_mutex_unlock(&wq->lock);
		/* Safe unlocked: workq_free joins every thread before it frees the event. */
		event_active(wq->ev_done, EV_READ, 0);
		pthread_mutex_lock(&wq->lock);
	}
	pthread_mutex_unlock(&wq->lock);
	return NULL;
}

/* Runs the done callbacks outside the lock: they may submit more work. */
static void workq_run_done(struct workq *wq)
{
	pthread_mutex_lock(&wq->lock);
	struct workq_job *j = wq->done_head;
	wq->done_head = wq->done_tail = NULL;
	pthread_mutex_unlock(&wq->lock);

	while (j) {
		struct workq_job *next = j->next;
		/* A done callback is a turn of the loop too (a request's answer, often): timed. */
		struct loopwork w;
		loopwork_begin(&w);
		if (j->done)
			j->done(j->arg);
		loopwork_end(&w);
		free(j);
		pthread_mutex_lock(&wq->lock);
		__atomic_store_n(&wq->pending, wq->pending - 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&wq->lock);
		j = next;
	}
}

static void workq_on_done(evutil_socket_t fd, short what, void *arg)
{
	workq_run_done(arg);
}

struct workq *workq_new(struct event_base *base, int nthreads)
{
	return workq_new_nice(base, nthreads, UTIL_NICE_BACKGROUND);
}

struct workq *workq_new_nice(struct event_base *base, int nthreads, int nice)
{
	struct workq *wq = xcalloc(1, sizeof(*wq));
	sigset_t all, old;

	if (nthreads < 1)
		nthreads = 1;
	wq->base = base;
	wq->nice = nice < 0 ? 0 : nice > 19 ? 19 : nice;
	wq->max_pending = WORKQ_MAX_PENDING;
	pthread_mutex_init(&wq->lock, NULL);
	pthread_cond_init(&wq->cond, NULL);
	wq->ev_done = event_new(base, -1, EV_PERSIST, workq_on_done, wq);
	if (!wq->ev_done) {
		log_err("workq: event_new failed");
		goto fail;
	}
	wq->threads = xcalloc((size_t)nthreads, sizeof(*wq->threads));
	/* Helper threads take no signals: SIGCHLD, SIGTERM and friends belong to the loop. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < nthreads; i++) {
		int e = pthread_create(&wq->threads[i], NULL, workq_thread, wq);
		if (e != 0) {
			log_err("workq: pthread_create: %s", strerror(e));
			pthread_sigmask(SIG_SETMASK, &old, NULL);
			workq_free(wq);
			return NULL;
		}
		wq->nthreads++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return wq;
fail:
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
	return NULL;
}

int workq_submit(struct workq *wq, workq_fn work, workq_fn done, void *arg)
{
	pthread_mutex_lock(&wq->lock);
	if (wq->stopping || (wq->max_pending && wq->pending >= wq->max_pending)) {
		pthread_mutex_unlock(&wq->lock);
		return -1;
	}
	struct workq_job *j = xmalloc(sizeof(*j));
	j->work = work;
	j->done = done;
	j->arg = arg;
	j->next = NULL;
	if (wq->tail)
		wq->tail->next = j;
	else
		wq->head = j;
	wq->tail = j;
	__atomic_store_n(&wq->pending, wq->pending + 1, __ATOMIC_RELAXED);
	pthread_cond_signal(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	return 0;
}

void workq_set_limit(struct workq *wq, size_t max_pending)
{
	pthread_mutex_lock(&wq->lock);
	wq->max_pending = max_pending;
	pthread_mutex_unlock(&wq->lock);
}

int workq_threads(const struct workq *wq)
{
	return wq->nthreads;
}

size_t workq_pending(const struct workq *wq)
{
	/* Read without the lock (it's const): a gauge for metrics, not a decision. */
	return __atomic_load_n(&wq->pending, __ATOMIC_RELAXED);
}

void workq_free(struct workq *wq)
{
	if (!wq)
		return;
	pthread_mutex_lock(&wq->lock);
	wq->stopping = true;
	pthread_cond_broadcast(&wq->cond);
	pthread_mutex_unlock(&wq->lock);
	for (int i = 0; i < wq->nthreads; i++)
		pthread_join(wq->threads[i], NULL);
	/* The threads are gone: whatever they finished still owes its done callback. A done
	 * callback that submits more work is refused (stopping), so this terminates. */
	workq_run_done(wq);
	event_free(wq->ev_done);
	free(wq->threads);
	pthread_cond_destroy(&wq->cond);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
}
