/* SPDX-License-Identifier: ISC */
/* Counters a command prints, read as rates (cmdpoll.h). */
#define _GNU_SOURCE
#include "cmdpoll.h"
#include "base/child.h"
#include "base/log.h"
#include "base/sockcall.h"
#include "base/util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WHY_LEN 256

struct cmdpoll {
	const struct cmdpoll_spec *spec;
	struct event_base *base;
	char *socket[CMDPOLL_STEPS]; /* a step's helper, when its socket is there */
	struct sockcall *call;       /* the step under way asks a helper */
	bool want, running, orphaned, answered;
	int step;
	double *reading;         /* the round under way */
	double *last;            /* the last whole round while wanted, cumulative; NULL: none */
	uint64_t ticks;          /* cmdpoll_take calls while wanted: the collector's seconds */
	uint64_t last_tick;      /* the tick the last whole round started at */
	uint64_t reading_tick;   /* the tick the round under way started at */
	double *pending, *taken; /* the newest rates not taken yet; what cmdpoll_get gives */
	bool have_pending, have_taken;
	char why[WHY_LEN];
};

struct cmdpoll *cmdpoll_new(struct event_base *base, const struct cmdpoll_spec *spec)
{
	struct cmdpoll *p = xcalloc(1, sizeof(*p));
	p->spec = spec;
	p->base = base;
	p->reading = xcalloc(spec->n, sizeof(double));
	p->pending = xcalloc(spec->n, sizeof(double));
	p->taken = xcalloc(spec->n, sizeof(double));
	snprintf(p->why, sizeof(p->why), "not read yet");
	return p;
}

void cmdpoll_set_socket(struct cmdpoll *p, int step, const char *path)
{
	free(p->socket[step]);
	p->socket[step] = path ? xstrdup(path) : NULL;
}

static void cmdpoll_destroy(struct cmdpoll *p)
{
	sockcall_cancel(p->call);
	for (int i = 0; i < CMDPOLL_STEPS; i++)
		free(p->socket[i]);
	free(p->reading);
	free(p->last);
	free(p->pending);
	free(p->taken);
	free(p);
}

void cmdpoll_free(struct cmdpoll *p)
{
	if (!p)
		return;
	if (p->running && !p->call)
		p->orphaned = true; /* the child's exit (child_shutdown ends it) frees it */
	else
		cmdpoll_destroy(p);
}

/* The round is whole: its rates against the last round's, over the collector's seconds
 * between their starts. A round starts at a tick and reads the counters at once, so each
 * second's value is what was counted in that second and a window's values sum to the
 * counts: a clock read when a command ended would divide by a time the command's own
 * start-up and exit stretch or shrink on a busy box (two rounds 0.2 s apart by their
 * ends once made one second's figure five times what Samba counted). */
static void round_done(struct cmdpoll *p)
{
	size_t n = p->spec->n;
	p->running = false;
	p->answered = true;
	p->why[0] = '\0';
	if (!p->want) /* a probe: it only told whether the command answers */
		return;
	if (p->last) {
		double secs = (double)(p->reading_tick - p->last_tick);
		if (secs > 0) {
			for (size_t i = 0; i < n; i++)
				p->pending[i] = p->reading[i] >= p->last[i]
				                    ? (p->reading[i] - p->last[i]) / secs
				                    : 0;
			p->have_pending = true;
		}
	} else {
		p->last = xcalloc(n, sizeof(double));
	}
	memcpy(p->last, p->reading, n * sizeof(double));
	p->last_tick = p->reading_tick;
}

bool cmdpoll_helper_there(const struct cmdpoll *p, int step)
{
	return p->socket[step] && access(p->socket[step], F_OK) == 0;
}

static void step_exit(void *arg, const struct child_result *res);

static void step_start(struct cmdpoll *p)
{
	char err[200];
	bool started;
	if (cmdpoll_helper_there(p, p->step)) {
		struct sockcall_opts so = {
		    .path = p->socket[p->step],
		    .timeout_ms = p->spec->timeout_ms,
		    .max_output = 1 << 20,
		    .on_exit = step_exit,
		    .arg = p,
		};
		p->call = sockcall_start(p->base, &so, err, sizeof(err));
		started = p->call != NULL;
	} else {
		struct child_opts o = {
		    .argv = p->spec->argv[p->step],
		    .timeout_ms = p->spec->timeout_ms,
		    .kill_grace_ms = 1000,
		    .max_output = 1 << 20,
		    .on_exit = step_exit,
		    .arg = p,
		};
		started = child_spawn(&o, err, sizeof(err)) != NULL;
	}
	if (!started) {
		snprintf(p->why, sizeof(p->why), "%s: %s", p->spec->step_name[p->step], err);
		p->running = false;
	}
}

static void step_exit(void *arg, const struct child_result *res)
{
	struct cmdpoll *p = arg;
	p->call = NULL; /* a helper's call is freed before its on_exit */
	if (p->orphaned) {
		cmdpoll_destroy(p);
		return;
	}
	const char *name = p->spec->step_name[p->step];
	if (child_result_why(res, name, p->spec->timeout_ms, p->why, sizeof(p->why))) {
		p->running = false;
		log_debug("%s: %s", p->spec->what, p->why);
		return;
	}
	if (p->spec->parse(p->step, res->out ? res->out : "", p->reading, p->why, sizeof(p->why)) <
	    0) {
		p->running = false;
		log_debug("%s: %s", p->spec->what, p->why);
		return;
	}
	if (++p->step < CMDPOLL_STEPS && p->spec->argv[p->step])
		step_start(p);
	else
		round_done(p);
}

void cmdpoll_probe(struct cmdpoll *p)
{
	if (p->running)
		return;
	memset(p->reading, 0, p->spec->n * sizeof(double));
	p->running = true;
	p->reading_tick = p->ticks;
	p->step = 0;
	step_start(p);
}

void cmdpoll_want(struct cmdpoll *p, bool on)
{
	if (on == p->want)
		return;
	p->want = on;
	if (!on) {
		free(p->last);
		p->last = NULL;
		p->have_pending = false;
	}
}

bool cmdpoll_take(struct cmdpoll *p)
{
	p->have_taken = false;
	if (!p->want)
		return false;
	p->ticks++;
	if (p->have_pending) {
		double *old = p->taken;
		p->taken = p->pending;
		p->pending = old;
		p->have_pending = false;
		p->have_taken = true;
	}
	cmdpoll_probe(p);
	return p->have_taken;
}

const double *cmdpoll_get(const struct cmdpoll *p)
{
	return p->have_taken ? p->taken : NULL;
}

bool cmdpoll_ever_answered(const struct cmdpoll *p)
{
	return p->answered;
}

bool cmdpoll_wanted(const struct cmdpoll *p)
{
	return p->want;
}

const char *cmdpoll_why(const struct cmdpoll *p)
{
	return p->why;
}
