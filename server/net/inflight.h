/* SPDX-License-Identifier: ISC */
/* Heavy requests in flight, counted per user: a bound on them, so that one account (all its
 * sessions and tokens together) cannot keep the helper threads and the loop's turns busy
 * for everyone else. The caller says what is heavy, takes a place before the work and
 * gives it back once the answer is made. Loop thread only. */
#ifndef SPINDLE_INFLIGHT_H
#define SPINDLE_INFLIGHT_H

/* The most a user may have in flight (start-up; at least 1). */
void inflight_set_limit(int limit);
int inflight_limit(void);
/* One more for user: 0, or -1 when it holds the limit already (then nothing is counted). */
int inflight_take(const char *user);
/* Gives back a place inflight_take() counted. */
void inflight_put(const char *user);

#endif
