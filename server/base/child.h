/* SPDX-License-Identifier: ISC */
/* Child processes run off the loop: LED commands (ledctl, ipmitool) and benchmark workers.
 * Modelled on tmux's job.c: a child is finished only when its output pipes reached EOF
 * and it has been reaped; then on_exit runs exactly once and the child is freed. */
#ifndef SPINDLE_CHILD_H
#define SPINDLE_CHILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct event_base;
struct child;

struct child_result {
	bool exited; /* exited normally: exit_code is valid */
	int exit_code;
	int signal;      /* killed by this signal, else 0 */
	bool timed_out;  /* we killed it at timeout_ms */
	const char *out; /* captured stdout (when on_line is NULL), NUL-terminated */
	size_t out_len;
	const char *err; /* captured stderr, NUL-terminated, capped at max_output */
	size_t err_len;
};

struct child_opts {
	char *const *argv;      /* argv[0] is looked up in PATH */
	char *const *envp;      /* NULL: inherit */
	const char *stdin_data; /* written to stdin, then closed; NULL: /dev/null */
	size_t stdin_len;
	int timeout_ms;    /* 0: none. At the timeout SIGTERM, SIGKILL kill_grace_ms later */
	int kill_grace_ms; /* 0: 2000 */
	size_t max_output; /* cap on each captured stream; 0: 64 KiB; excess is dropped */
	/* stdout line by line as it arrives (without the newline); NULL: capture it whole */
	void (*on_line)(void *arg, const char *line, size_t len);
	void (*on_exit)(void *arg, const struct child_result *res);
	void *arg;
};

/* Why a child did not end well, in one line: "WHAT: exit status 2: <its stderr's first
 * line>", "WHAT: no answer in N ms" (timeout_ms: the one it was given) or "WHAT: killed by
 * signal 9". false, and buf untouched, when it exited with 0. */
bool child_result_why(const struct child_result *res, const char *what, int timeout_ms, char *buf,
                      size_t len);

/* Once, at start-up: installs the SIGCHLD watcher on the loop. */
int child_init(struct event_base *base);
/* Whether child_spawn would find name (on the daemon's PATH, or a path) executable. */
bool child_on_path(const char *name);
/* NULL with a reason in err (fork/pipe failure, or argv[0] not found/executable). */
struct child *child_spawn(const struct child_opts *o, char *err, size_t errlen);
pid_t child_pid(const struct child *c);
/* Signal the child (SIGTERM starts the grace timer towards SIGKILL). */
void child_kill(struct child *c, int sig);
/* Children still running. */
size_t child_count(void);
/* At shutdown: SIGTERM every child, wait up to the grace period, SIGKILL, reap, free;
 * their on_exit callbacks run. */
void child_shutdown(void);

#endif
