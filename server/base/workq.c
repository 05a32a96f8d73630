/* SPDX-License-Identifier: ISC */
/* Helper threads. The loop never waits on a lock a helper may hold: helpers run at a lower
 * priority, and one preempted inside a critical section on a busy machine held the loop
 * for tens of ms (pthread_cond_signal and the mutex, and libevent's base lock taken by
 * event_active). So every step the loop takes is lock-free:
 *   submit: a push on the inbox (a lock-free stack) and a sem_post;
 *   done:   helpers push on the done stack and write an eventfd the loop reads.
 * Helpers take the inbox into their FIFO under a mutex only helpers hold. */
#define _GNU_SOURCE /* gettid */
#include "workq.h"
#include "log.h"
#include "loopwork.h"
#include "util.h"

#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
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
	int efd;                       /* written by a helper when it pushed on done */
	struct workq_job *inbox;       /* submitted, newest first (lock-free stack) */
	struct workq_job *done;        /* worked, newest first (lock-free stack) */
	pthread_mutex_t lock;          /* helpers only: head and tail */
	struct workq_job *head, *tail; /* taken from the inbox, oldest first */
	sem_t ready;                   /* one post a job submitted, one a thread at the stop */
	size_t pending;                /* submitted, done callback not yet run (atomic) */
	size_t max_pending;            /* 0: no limit */
	bool stopping;                 /* (atomic) */
	bool dropping;                 /* (atomic) jobs not started skip their work */
	int nice;                      /* each thread's, set by itself */
	int nthreads;
	pthread_t *threads;
};

static void push(struct workq_job **stack, struct workq_job *j)
{
	j->next = __atomic_load_n(stack, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(stack, &j->next, j, true, __ATOMIC_RELEASE,
	                                    __ATOMIC_RELAXED))
		;
}

/* The whole stack, oldest first. */
static struct workq_job *take_all(struct workq_job **stack)
{
	struct workq_job *j = __atomic_exchange_n(stack, NULL, __ATOMIC_ACQUIRE), *fifo = NULL;
	while (j) {
		struct workq_job *next = j->next;
		j->next = fifo;
		fifo = j;
		j = next;
	}
	return fifo;
}

/* The oldest job, or NULL (only when stopping). */
static struct workq_job *next_job(struct workq *wq)
{
	while (sem_wait(&wq->ready) < 0 && errno == EINTR)
		;
	pthread_mutex_lock(&wq->lock);
	struct workq_job *more = take_all(&wq->inbox);
	if (more) {
		if (wq->tail)
			wq->tail->next = more;
		else
			wq->head = more;
		for (wq->tail = more; wq->tail->next;)
			wq->tail = wq->tail->next;
	}
	struct workq_job *j = wq->head;
	if (j) {
		wq->head = j->next;
		if (!wq->head)
			wq->tail = NULL;
	}
	pthread_mutex_unlock(&wq->lock);
	return j;
}

static void *workq_thread(void *p)
{
	struct workq *wq = p;

	/* Linux keeps a nice value per thread: PRIO_PROCESS with a thread's id renices it alone. */
	if (wq->nice && setpriority(PRIO_PROCESS, (id_t)gettid(), wq->nice) < 0)
		log_warn("workq: cannot lower a helper thread's priority: %s", strerror(errno));
	/* Every post is a job pushed before it, but for the one each thread gets at the stop:
	 * a thread finds none only then, once the jobs before it are all taken. */
	struct workq_job *j;
	while ((j = next_job(wq)) != NULL) {
		if (j->work && !__atomic_load_n(&wq->dropping, __ATOMIC_RELAXED))
			j->work(j->arg);
		push(&wq->done, j);
		uint64_t one = 1;
		/* (an eventfd's counter only fails to take 1 past 2^64 - 2 unread) */
		if (write(wq->efd, &one, sizeof(one)) < 0)
			log_err("workq: eventfd: %s", strerror(errno));
	}
	return NULL;
}

/* Runs the done callbacks: they may submit more work. */
static void workq_run_done(struct workq *wq)
{
	struct workq_job *j = take_all(&wq->done);
	while (j) {
		struct workq_job *next = j->next;
		/* A done callback is a turn of the loop too (a request's answer, often): timed. */
		struct loopwork w;
		loopwork_begin(&w);
		if (j->done)
			j->done(j->arg);
		loopwork_end(&w);
		free(j);
		__atomic_sub_fetch(&wq->pending, 1, __ATOMIC_RELAXED);
		j = next;
	}
}

static void workq_on_done(evutil_socket_t fd, short what, void *arg)
{
	(void)what;
	uint64_t n;
	if (read(fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_err("workq: eventfd: %s", strerror(errno));
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
	sem_init(&wq->ready, 0, 0);
	wq->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	wq->ev_done =
	    wq->efd < 0 ? NULL : event_new(base, wq->efd, EV_READ | EV_PERSIST, workq_on_done, wq);
	if (!wq->ev_done || event_add(wq->ev_done, NULL) < 0) {
		log_err("workq: cannot watch its eventfd: %s", strerror(errno));
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
	if (wq->ev_done)
		event_free(wq->ev_done);
	if (wq->efd >= 0)
		close(wq->efd);
	sem_destroy(&wq->ready);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
	return NULL;
}

int workq_submit(struct workq *wq, workq_fn work, workq_fn done, void *arg)
{
	size_t max = __atomic_load_n(&wq->max_pending, __ATOMIC_RELAXED);
	if (__atomic_load_n(&wq->stopping, __ATOMIC_ACQUIRE) ||
	    (max && __atomic_load_n(&wq->pending, __ATOMIC_RELAXED) >= max))
		return -1;
	struct workq_job *j = xmalloc(sizeof(*j));
	j->work = work;
	j->done = done;
	j->arg = arg;
	__atomic_add_fetch(&wq->pending, 1, __ATOMIC_RELAXED);
	push(&wq->inbox, j);
	sem_post(&wq->ready); /* an atomic add, and a futex wake when a thread sleeps: no lock */
	return 0;
}

void workq_set_limit(struct workq *wq, size_t max_pending)
{
	__atomic_store_n(&wq->max_pending, max_pending, __ATOMIC_RELAXED);
}

int workq_threads(const struct workq *wq)
{
	return wq->nthreads;
}

size_t workq_pending(const struct workq *wq)
{
	return __atomic_load_n(&wq->pending, __ATOMIC_RELAXED);
}

void workq_drop_queued(struct workq *wq)
{
	__atomic_store_n(&wq->dropping, true, __ATOMIC_RELAXED);
}

void workq_free(struct workq *wq)
{
	if (!wq)
		return;
	__atomic_store_n(&wq->stopping, true, __ATOMIC_RELEASE);
	for (int i = 0; i < wq->nthreads; i++)
		sem_post(&wq->ready);
	for (int i = 0; i < wq->nthreads; i++)
		pthread_join(wq->threads[i], NULL);
	/* The threads are gone: whatever they finished still owes its done callback. A done
	 * callback that submits more work is refused (stopping), so this terminates. */
	workq_run_done(wq);
	event_free(wq->ev_done);
	close(wq->efd);
	free(wq->threads);
	sem_destroy(&wq->ready);
	pthread_mutex_destroy(&wq->lock);
	free(wq);
}
