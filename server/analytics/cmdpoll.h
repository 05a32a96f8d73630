/* SPDX-License-Identifier: ISC */
/* Counters a command prints, cumulative, read as rates: `zpool iostat -w` and `-r`
 * (zpoolhist), `smbstatus --profile` (smbstat). While wanted, each tick (cmdpoll_take)
 * starts a round if none is under way: the spec's commands run one after the other as
 * children of the loop (never two rounds at once), each one's output parsed into one
 * reading of n doubles. A whole round, less the round before, over the ticks between the
 * two rounds' starts, gives the rates the next take hands out; a counter
 * that went down (a pool exported, a server restarted) gives 0. A round can also be asked
 * for while not wanted (cmdpoll_probe): it only tells whether the command answers.
 * A step may instead be asked of a root helper behind a socket (cmdpoll_set_socket,
 * sockcall.h) while that socket is there: the same output, from a command the daemon's
 * user may not run. Loop thread only. */
#ifndef SPINDLE_CMDPOLL_H
#define SPINDLE_CMDPOLL_H

#include <stdbool.h>
#include <stddef.h>

#define CMDPOLL_STEPS 2

struct cmdpoll_spec {
	const char *what; /* in the log: "zpoolhist" */
	/* argv of each step (argv[0] looked up on PATH); steps after the first may be NULL */
	char *const *argv[CMDPOLL_STEPS];
	const char *step_name[CMDPOLL_STEPS]; /* in why texts: "zpool iostat -w" */
	size_t n;                             /* doubles in a reading */
	int timeout_ms;                       /* a step that hangs is killed */
	/* Adds what step printed into reading: 0, or -1 with why (the round gives nothing). */
	int (*parse)(int step, const char *out, double *reading, char *why, size_t len);
};

struct cmdpoll;
struct event_base;

/* spec is kept (a static). */
struct cmdpoll *cmdpoll_new(struct event_base *base, const struct cmdpoll_spec *spec);
/* From now on, while a socket is at path (NULL: never), step reads its output from the
 * helper there rather than running its argv. */
void cmdpoll_set_socket(struct cmdpoll *p, int step, const char *path);
/* A round under way is left to end: its child's exit frees what is left. */
void cmdpoll_free(struct cmdpoll *p);
/* A dataset needs the rates, or none does any more (the next start compares with nothing
 * older than itself). */
void cmdpoll_want(struct cmdpoll *p, bool on);
/* Once a tick, while wanted: the newest round's rates become what cmdpoll_get gives, and a
 * round starts if none is under way; false when there are none (not wanted, the command
 * missing or failing, or no two rounds yet). */
bool cmdpoll_take(struct cmdpoll *p);
const double *cmdpoll_get(const struct cmdpoll *p);
/* Starts a round now if none is under way, wanted or not. */
void cmdpoll_probe(struct cmdpoll *p);
/* Whether a round was ever parsed whole; whether the rates are wanted; whether step's
 * helper socket is there (the step asks it rather than running its argv). */
bool cmdpoll_ever_answered(const struct cmdpoll *p);
bool cmdpoll_wanted(const struct cmdpoll *p);
bool cmdpoll_helper_there(const struct cmdpoll *p, int step);
/* Why the last round gave nothing ("" when it did; "not read yet" before the first). */
const char *cmdpoll_why(const struct cmdpoll *p);

#endif
