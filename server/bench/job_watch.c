/* SPDX-License-Identifier: ISC */
/* A job's progress (jobs.h): a stream starts following a live job (what it wrote so far
 * first, from the store and from memory), and a finished job's lines are answered whole.
 * The streams' lines and ends come from jobs.c as the job runs. */
#include "jobs_int.h"

#include <assert.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "base/log.h"
#include "base/util.h"
#include "db/db.h"
#include "net/stream.h"

/* ---- progress */

/* Lines out to a stream, or into one buffer for a whole answer. */
struct replay_ctx {
	struct watcher *w;
	bool sse;
	int64_t upto; /* stored lines past this seq are in memory too: skipped */
	struct buf out;
};

static void replay_add(struct replay_ctx *c, const char *event, const char *line, size_t len)
{
	if (c->w) {
		watcher_send(c->w, event, line, len);
	} else if (c->sse) {
		stream_event_format(&c->out, NULL, event, line, len);
	} else {
		buf_add(&c->out, line, len);
		buf_add(&c->out, "\n", 1);
	}
}

static int replay_row(void *arg, int64_t seq, const char *line)
{
	struct replay_ctx *c = arg;
	if (seq <= c->upto)
		replay_add(c, "interval", line, strlen(line));
	return 0;
}

bool jobs_watchable(int64_t id)
{
	return job_live(id) != NULL;
}

int jobs_replay(int64_t id, bool sse, struct buf *out, struct fault *f)
{
	struct db_run *run = xmalloc(sizeof(*run));
	int rc = db_run_get(jobs.db, id, run);
	if (rc) {
		free(run);
		return fault_set(f, rc == DB_NOTFOUND ? ERR_NOT_FOUND : ERR_INTERNAL,
		                 "job: no job %lld", (long long)id);
	}
	struct replay_ctx c = {.sse = sse, .upto = INT64_MAX, .out = *out};
	db_run_intervals(jobs.db, id, replay_row, &c);
	json_t *end = job_end_line(run);
	char *text = json_dumps(end, JSON_COMPACT);
	json_decref(end);
	replay_add(&c, "end", text, strlen(text));
	free(text);
	*out = c.out;
	db_run_clear(run);
	free(run);
	return 0;
}

int jobs_watch_admit(struct fault *f)
{
	if (jobs.watchers < JOBS_MAX_WATCHERS)
		return 0;
	fault_set(f, ERR_BUSY, "progress: %d streams are open, the most served", JOBS_MAX_WATCHERS);
	f->retry_after = 5; /* (after fault_set, which clears it) */
	return -1;
}

void jobs_watch(int64_t id, struct stream *s, bool sse)
{
	struct job *j = job_live(id);
	if (!j) { /* (jobs_watchable said it was; nothing ran in between) */
		stream_end(s);
		return;
	}
	struct watcher *w = xcalloc(1, sizeof(*w));
	w->job = j;
	w->s = s;
	w->sse = sse;
	LIST_INSERT_HEAD(&j->watchers, w, link);
	jobs.watchers++;
	stream_set_hook(s, watcher_hook, w);
	log_debug("jobs: job %lld: progress stream for %s (%u streams)", (long long)id,
	          stream_peer(s), jobs.watchers);
	/* what is recorded first: the stored lines, then those still in memory */
	struct replay_ctx c = {.w = w, .sse = sse, .upto = j->flushed};
	db_run_intervals(jobs.db, id, replay_row, &c);
	for (size_t i = 0; i < j->nlines; i++)
		replay_add(&c, "interval", j->lines[i], strlen(j->lines[i]));
}
