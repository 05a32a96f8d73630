/* SPDX-License-Identifier: ISC */
/* The loop's own periodic work and each request's turns, timed: how long each stretch held
 * the event loop (wall clock, and the loop thread's CPU time, which a busy machine's
 * preemption leaves out), so /metrics can say the longest of the last minute. Loop thread
 * only. */
#ifndef SPINDLE_LOOPWORK_H
#define SPINDLE_LOOPWORK_H

#include <stdint.h>

struct loopwork {
	int64_t wall_ns, cpu_ns;
};

void loopwork_begin(struct loopwork *w);
/* Records the stretch since loopwork_begin(w). */
void loopwork_end(const struct loopwork *w);
/* The longest stretch recorded in the last 60 seconds; 0 when none was. */
void loopwork_max(int64_t *wall_ns, int64_t *cpu_ns);

#endif
