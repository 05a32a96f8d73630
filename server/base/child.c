/* SPDX-License-Identifier: ISC */
/* Child processes off the loop, as tmux's job.c: spawn with pipes for stdin, stdout and
 * stderr, read them as they fill, reap on SIGCHLD, and call on_exit once both pipes hit
 * EOF and the process was reaped.
 *
 * Spawning uses posix_spawn rather than fork: glibc clones with CLONE_VM|CLONE_VFORK, so
 * the loop never copies the daemon's page tables, and it does what a careful fork would
 * do by hand: all signals blocked around the clone, handlers reset (POSIX_SPAWN_SETSIGDEF
 * with every signal, which also undoes inherited SIG_IGN such as our SIGPIPE), an empty
 * signal mask (POSIX_SPAWN_SETSIGMASK), its own process group (POSIX_SPAWN_SETPGROUP, so
 * a kill reaches grandchildren), every fd but 0-2 closed (addclosefrom_np), and exec
 * failures reported synchronously. The pipes are O_CLOEXEC besides.
 *
 * SIGCHLD reaps with waitpid(-1, WNOHANG): every child of the daemon, so anything else
 * that starts processes must do it through child_spawn (a pid not ours is logged and
 * dropped). Everything here runs on the loop thread. */
#define _GNU_SOURCE
#include "child.h"
#include "log.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

extern char **environ;

#define CHILD_MAX_OUTPUT_DEFAULT (64 * 1024)
#define CHILD_GRACE_MS_DEFAULT   2000
#define CHILD_READ_CHUNK         16384
#define CHILD_DEFAULT_PATH       "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

struct child;

struct child_stream {
	struct child *owner;
	int fd; /* -1 once at EOF (or closed) */
	struct event *ev;
	struct evbuffer *buf; /* capture: the bytes kept; lines: the partial line */
	bool lines;           /* deliver to on_line rather than capture */
	bool skipping;        /* lines: dropping the tail of an overlong line */
};

/* What the timer does when it fires next. */
enum child_timer_state {
	TIMER_IDLE,
	TIMER_TIMEOUT, /* timeout_ms reached: SIGTERM, then TIMER_KILL */
	TIMER_KILL,    /* the grace after SIGTERM is over: SIGKILL */
	TIMER_LINGER,  /* reaped, pipes still open: SIGKILL the group, then TIMER_ABANDON */
	TIMER_ABANDON, /* still open: something left the group holding them; close our ends */
};

struct child {
	LIST_ENTRY(child) link; /* child_list */
	pid_t pid;
	char name[64]; /* argv[0], for logs */
	void (*on_line)(void *arg, const char *line, size_t len);
	void (*on_exit)(void *arg, const struct child_result *res);
	void *arg;
	size_t max_output;
	int grace_ms;

	struct child_stream out, err;
	int in_fd; /* -1 when closed or never opened */
	struct event *in_ev;
	char *in_data;
	size_t in_len, in_off;

	struct event *timer;
	enum child_timer_state timer_state;
	bool reaped;
	int status;
	bool timed_out;
};

/* Running or finishing, newest first. */
static LIST_HEAD(child_head, child) child_list = LIST_HEAD_INITIALIZER(child_list);
static size_t child_n;
static struct event_base *child_base;
static struct event *child_sigchld;
static bool child_stopping;

static void child_check_done(struct child *c);
static void child_drain_now(struct child *c);

static struct child *child_by_pid(pid_t pid)
{
	for (struct child *c = LIST_FIRST(&child_list); c; c = LIST_NEXT(c, link))
		if (c->pid == pid && !c->reaped)
			return c;
	return NULL;
}

/* The whole process group, and the leader itself in case it left the group. A group id
 * stays reserved while any member lives, so signalling it after the reap is safe. */
static void child_signal(struct child *c, int sig)
{
	if (kill(-c->pid, sig) < 0 && errno != ESRCH)
		log_debug("child %s[%d]: kill(-pgid, %d): %s", c->name, (int)c->pid, sig,
		          strerror(errno));
	if (!c->reaped)
		kill(c->pid, sig);
}

static void child_timer_arm(struct child *c, enum child_timer_state st, int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	if (!c->timer)
		return;
	c->timer_state = st;
	evtimer_add(c->timer, &tv);
}

/* --- output */

static void stream_close(struct child_stream *s)
{
	if (s->fd < 0)
		return;
	event_del(s->ev);
	close(s->fd);
	s->fd = -1;
}

/* Lines mode: hands over every complete line; an overlong one is cut at max_output,
 * delivered, and the rest of it up to its newline dropped. */
static void stream_deliver_lines(struct child *c, struct child_stream *s, bool eof)
{
	for (;;) {
		if (s->skipping) {
			struct evbuffer_ptr nl = evbuffer_search(s->buf, "\n", 1, NULL);
			if (nl.pos < 0) {
				evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
				return;
			}
			evbuffer_drain(s->buf, (size_t)nl.pos + 1);
			s->skipping = false;
		}
		struct evbuffer_ptr nl = evbuffer_search(s->buf, "\n", 1, NULL);
		size_t pending = evbuffer_get_length(s->buf);
		if (nl.pos >= 0 && (size_t)nl.pos <= c->max_output) {
			size_t len;
			char *line = evbuffer_readln(s->buf, &len, EVBUFFER_EOL_LF);
			c->on_line(c->arg, line, len);
			free(line);
			continue;
		}
		/* too long, with its end here (one read may bring all of it) or not yet */
		if (nl.pos >= 0 || pending > c->max_output || (eof && pending > 0)) {
			size_t n = pending > c->max_output ? c->max_output : pending;
			char *part = xmalloc(n + 1);
			evbuffer_remove(s->buf, part, n);
			part[n] = '\0';
			if (nl.pos >= 0)
				evbuffer_drain(s->buf, (size_t)nl.pos + 1 - n);
			else if (eof)
				evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
			else
				s->skipping = true;
			c->on_line(c->arg, part, n);
			free(part);
			continue;
		}
		return;
	}
}

/* One read; false at EOF (or a read error, which ends the stream the same way). */
static bool stream_read(struct child *c, struct child_stream *s)
{
	char chunk[CHILD_READ_CHUNK];
	ssize_t n = read(s->fd, chunk, sizeof(chunk));
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		if (n < 0)
			log_debug("child %s[%d]: read: %s", c->name, (int)c->pid, strerror(errno));
		stream_close(s);
		if (s->lines)
			stream_deliver_lines(c, s, true);
		return false;
	}
	if (s->lines) {
		evbuffer_add(s->buf, chunk, (size_t)n);
		stream_deliver_lines(c, s, false);
	} else {
		/* Keep reading past the cap so the child never blocks on a full pipe. */
		size_t have = evbuffer_get_length(s->buf);
		size_t room = have < c->max_output ? c->max_output - have : 0;
		evbuffer_add(s->buf, chunk, (size_t)n < room ? (size_t)n : room);
	}
	return true;
}

static void child_on_read(evutil_socket_t fd, short what, void *arg)
{
	struct child_stream *s = arg;
	struct child *c = s->owner;
	if (!stream_read(c, s))
		child_check_done(c);
}

/* --- stdin */

static void child_stdin_close(struct child *c)
{
	if (c->in_fd >= 0) {
		event_del(c->in_ev);
		close(c->in_fd);
		c->in_fd = -1;
	}
	free(c->in_data);
	c->in_data = NULL;
}

static void child_on_write(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	while (c->in_off < c->in_len) {
		ssize_t n = write(c->in_fd, c->in_data + c->in_off, c->in_len - c->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			/* EPIPE: the child closed its stdin early, which is its business. */
			log_debug("child %s[%d]: stdin: %s", c->name, (int)c->pid, strerror(errno));
			break;
		}
		c->in_off += (size_t)n;
	}
	child_stdin_close(c);
}

/* --- ending */

static char *buffer_text(struct evbuffer *buf, size_t *len)
{
	*len = buf ? evbuffer_get_length(buf) : 0;
	char *s = xmalloc(*len + 1);
	if (*len)
		evbuffer_copyout(buf, s, *len);
	s[*len] = '\0';
	return s;
}

static void child_free(struct child *c)
{
	stream_close(&c->out);
	stream_close(&c->err);
	child_stdin_close(c);
	if (c->out.ev)
		event_free(c->out.ev);
	if (c->err.ev)
		event_free(c->err.ev);
	if (c->in_ev)
		event_free(c->in_ev);
	if (c->timer)
		event_free(c->timer);
	if (c->out.buf)
		evbuffer_free(c->out.buf);
	if (c->err.buf)
		evbuffer_free(c->err.buf);
	free(c);
}

/* Done when reaped and both pipes reached EOF: on_exit once, then the child is gone. */
static void child_check_done(struct child *c)
{
	if (!c->reaped)
		return;
	if (c->out.fd >= 0 || c->err.fd >= 0) {
		/* Something the child started still holds its output: give it the grace. */
		if (c->timer_state != TIMER_LINGER && c->timer_state != TIMER_ABANDON)
			child_timer_arm(c, TIMER_LINGER, c->grace_ms);
		return;
	}
	if (c->timer)
		evtimer_del(c->timer);
	child_stdin_close(c);
	LIST_REMOVE(c, link);
	child_n--;

	struct child_result res = {0};
	res.exited = WIFEXITED(c->status);
	res.exit_code = res.exited ? WEXITSTATUS(c->status) : -1;
	res.signal = WIFSIGNALED(c->status) ? WTERMSIG(c->status) : 0;
	res.timed_out = c->timed_out;
	char *out = buffer_text(c->on_line ? NULL : c->out.buf, &res.out_len);
	char *err = buffer_text(c->err.buf, &res.err_len);
	res.out = out;
	res.err = err;
	log_debug("child %s[%d]: done (%s %d%s)", c->name, (int)c->pid,
	          res.exited ? "exit" : "signal", res.exited ? res.exit_code : res.signal,
	          res.timed_out ? ", timed out" : "");
	if (c->on_exit)
		c->on_exit(c->arg, &res);
	free(out);
	free(err);
	child_free(c);
}

static void child_on_timer(evutil_socket_t fd, short what, void *arg)
{
	struct child *c = arg;
	enum child_timer_state st = c->timer_state;
	c->timer_state = TIMER_IDLE;
	switch (st) {
	case TIMER_TIMEOUT:
		log_info("child %s[%d]: timed out; SIGTERM", c->name, (int)c->pid);
		c->timed_out = true;
		child_signal(c, SIGTERM);
		child_timer_arm(c, TIMER_KILL, c->grace_ms);
		break;
	case TIMER_KILL:
		log_info("child %s[%d]: still there %d ms after SIGTERM; SIGKILL", c->name,
		         (int)c->pid, c->grace_ms);
		child_signal(c, SIGKILL);
		break;
	case TIMER_LINGER:
		log_info("child %s[%d]: exited but its output is still held open; SIGKILL to its "
		         "process group",
		         c->name, (int)c->pid);
		child_signal(c, SIGKILL);
		child_timer_arm(c, TIMER_ABANDON, c->grace_ms);
		break;
	case TIMER_ABANDON:
		log_warn("child %s[%d]: output still held open by a process outside its group; "
		         "closing it",
		         c->name, (int)c->pid);
		/* Take what is buffered, then close our ends: that counts as EOF. */
		child_drain_now(c);
		stream_close(&c->out);
		stream_close(&c->err);
		if (c->out.lines)
			stream_deliver_lines(c, &c->out, true);
		c->timer_state = TIMER_ABANDON; /* keeps check_done from arming LINGER again */
		child_check_done(c);
		break;
	case TIMER_IDLE:
		break;
	}
}

/* Reaps everything that has exited; children that are not ours are only logged. */
static void child_reap_all(void)
{
	int status;
	pid_t pid;
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		struct child *c = child_by_pid(pid);
		if (!c) {
			log_debug("child: reaped pid %d, not one of ours", (int)pid);
			continue;
		}
		c->reaped = true;
		c->status = status;
		if (c->timer && (c->timer_state == TIMER_TIMEOUT || c->timer_state == TIMER_KILL)) {
			/* The leader is gone; a straggler in its group is LINGER's business. */
			evtimer_del(c->timer);
			c->timer_state = TIMER_IDLE;
		}
		child_check_done(c);
	}
}

static void child_on_sigchld(evutil_socket_t sig, short what, void *arg)
{
	child_reap_all();
}

/* --- starting */

int child_init(struct event_base *base)
{
	if (child_sigchld)
		return 0;
	child_base = base;
	child_stopping = false;
	child_sigchld = evsignal_new(base, SIGCHLD, child_on_sigchld, NULL);
	if (!child_sigchld || event_add(child_sigchld, NULL) < 0) {
		log_err("child: cannot watch SIGCHLD");
		return -1;
	}
	/* A child that closes its stdin early must cost an EPIPE, not the daemon. */
	struct sigaction sa;
	if (sigaction(SIGPIPE, NULL, &sa) == 0 && sa.sa_handler == SIG_DFL)
		signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* argv[0] as execvp would find it, with the daemon's PATH; NULL with the reason. */
static char *child_find(const char *name, char *err, size_t errlen)
{
	struct stat st;
	if (strchr(name, '/')) {
		if (stat(name, &st) < 0) {
			snprintf(err, errlen, "%s: %s", name, strerror(errno));
			return NULL;
		}
		if (!S_ISREG(st.st_mode) || access(name, X_OK) < 0) {
			snprintf(err, errlen, "%s: not an executable file", name);
			return NULL;
		}
		return xstrdup(name);
	}
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = CHILD_DEFAULT_PATH;
	bool seen = false;
	for (const char *p = path;;) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *full = xasprintf("%.*s/%s", (int)n, n ? p : ".", name);
		if (stat(full, &st) == 0 && S_ISREG(st.st_mode)) {
			if (access(full, X_OK) == 0)
				return full;
			seen = true;
		}
		free(full);
		if (!colon)
			break;
		p = colon + 1;
	}
	snprintf(err, errlen, "%s: %s", name, seen ? "not executable" : "not found in PATH");
	return NULL;
}

bool child_result_why(const struct child_result *res, const char *what, int timeout_ms, char *buf,
                      size_t len)
{
	if (res->exited && res->exit_code == 0)
		return false;
	const char *err = res->err ? res->err : "";
	int errlen = (int)strcspn(err, "\n");
	if (errlen > 160)
		errlen = 160;
	if (res->timed_out)
		snprintf(buf, len, "%s: no answer in %d ms", what, timeout_ms);
	else if (res->exited)
		snprintf(buf, len, "%s: exit status %d%s%.*s", what, res->exit_code,
		         errlen ? ": " : "", errlen, err);
	else
		snprintf(buf, len, "%s: killed by signal %d", what, res->signal);
	return true;
}

bool child_on_path(const char *name)
{
	char err[64];
	char *full = child_find(name, err, sizeof(err));
	bool found = full != NULL;
	free(full);
	return found;
}

/* A pipe whose ends are O_CLOEXEC and above 2, so the dup2s onto 0-2 never collide. */
static int child_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	for (int i = 0; i < 2; i++) {
		if (p[i] > 2)
			continue;
		int fd = fcntl(p[i], F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			close(p[0]);
			close(p[1]);
			return -1;
		}
		close(p[i]);
		p[i] = fd;
	}
	return 0;
}

static void close_pair(int p[2])
{
	for (int i = 0; i < 2; i++)
		if (p[i] >= 0) {
			close(p[i]);
			p[i] = -1;
		}
}

static int child_stream_open(struct child *c, struct child_stream *s, int fd, bool lines)
{
	s->owner = c;
	s->fd = fd;
	s->lines = lines;
	s->buf = evbuffer_new();
	s->ev = event_new(child_base, fd, EV_READ | EV_PERSIST, child_on_read, s);
	if (!s->buf || !s->ev || event_add(s->ev, NULL) < 0)
		return -1;
	return 0;
}

struct child *child_spawn(const struct child_opts *o, char *err, size_t errlen)
{
	int outp[2] = {-1, -1}, errp[2] = {-1, -1}, inp[2] = {-1, -1};
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t all, none;
	pid_t pid;
	int rc;

	if (!child_base) {
		snprintf(err, errlen, "child processes are not set up (child_init)");
		return NULL;
	}
	if (child_stopping) {
		snprintf(err, errlen, "shutting down");
		return NULL;
	}
	if (!o->argv || !o->argv[0] || !o->argv[0][0]) {
		snprintf(err, errlen, "argv: no program given");
		return NULL;
	}
	char *path = child_find(o->argv[0], err, errlen);
	if (!path)
		return NULL;
	if (child_pipe(outp) < 0 || child_pipe(errp) < 0 ||
	    (o->stdin_data && child_pipe(inp) < 0)) {
		snprintf(err, errlen, "pipe: %s", strerror(errno));
		close_pair(outp);
		close_pair(errp);
		free(path);
		return NULL;
	}

	posix_spawn_file_actions_init(&fa);
	if (o->stdin_data)
		posix_spawn_file_actions_adddup2(&fa, inp[0], 0);
	else
		posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_init(&attr);
	sigfillset(&all);
	sigemptyset(&none);
	posix_spawnattr_setsigdefault(&attr, &all);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
	                                    POSIX_SPAWN_SETPGROUP);
	rc = posix_spawn(&pid, path, &fa, &attr, o->argv, o->envp ? o->envp : environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	free(path);
	/* The child's ends live on in the child only. */
	close(outp[1]);
	close(errp[1]);
	if (inp[0] >= 0)
		close(inp[0]);
	if (rc != 0) {
		snprintf(err, errlen, "%s: cannot run: %s", o->argv[0], strerror(rc));
		close(outp[0]);
		close(errp[0]);
		if (inp[1] >= 0)
			close(inp[1]);
		return NULL;
	}
	/* Below the loop (posix_spawn has no attribute for it; what the child ran until now
	 * is a few instructions of exec). */
	if (setpriority(PRIO_PROCESS, (id_t)pid, UTIL_NICE_BACKGROUND) < 0 && errno != ESRCH)
		log_warn("%s: cannot lower its priority: %s", o->argv[0], strerror(errno));

	struct child *c = xcalloc(1, sizeof(*c));
	c->pid = pid;
	snprintf(c->name, sizeof(c->name), "%s", o->argv[0]);
	c->on_line = o->on_line;
	c->on_exit = o->on_exit;
	c->arg = o->arg;
	c->max_output = o->max_output ? o->max_output : CHILD_MAX_OUTPUT_DEFAULT;
	c->grace_ms = o->kill_grace_ms > 0 ? o->kill_grace_ms : CHILD_GRACE_MS_DEFAULT;
	c->in_fd = -1;
	c->out.fd = c->err.fd = -1;
	LIST_INSERT_HEAD(&child_list, c, link);
	child_n++;

	fcntl(outp[0], F_SETFL, O_NONBLOCK);
	fcntl(errp[0], F_SETFL, O_NONBLOCK);
	bool ok = child_stream_open(c, &c->out, outp[0], o->on_line != NULL) == 0 &&
	          child_stream_open(c, &c->err, errp[0], false) == 0;
	c->timer = evtimer_new(child_base, child_on_timer, c);
	ok = ok && c->timer;
	if (ok && inp[1] >= 0) {
		fcntl(inp[1], F_SETFL, O_NONBLOCK);
		c->in_fd = inp[1];
		c->in_len = o->stdin_len;
		c->in_data = xmalloc(o->stdin_len ? o->stdin_len : 1);
		memcpy(c->in_data, o->stdin_data, o->stdin_len);
		c->in_ev =
		    event_new(child_base, c->in_fd, EV_WRITE | EV_PERSIST, child_on_write, c);
		ok = c->in_ev && event_add(c->in_ev, NULL) == 0;
	} else if (inp[1] >= 0) {
		close(inp[1]);
	}
	if (!ok) {
		/* Out of libevent resources: the process runs already, so end it the normal way
		 * and let on_exit report it. */
		log_err("child %s[%d]: cannot watch its pipes; killing it", c->name, (int)pid);
		child_signal(c, SIGKILL);
		stream_close(&c->out);
		stream_close(&c->err);
		child_stdin_close(c);
		return c;
	}
	if (o->timeout_ms > 0)
		child_timer_arm(c, TIMER_TIMEOUT, o->timeout_ms);
	log_debug("child %s[%d]: started", c->name, (int)pid);
	return c;
}

pid_t child_pid(const struct child *c)
{
	return c->pid;
}

void child_kill(struct child *c, int sig)
{
	child_signal(c, sig);
	if (sig == SIGTERM && c->timer_state != TIMER_KILL && c->timer_state != TIMER_LINGER &&
	    c->timer_state != TIMER_ABANDON && !c->reaped)
		child_timer_arm(c, TIMER_KILL, c->grace_ms);
}

size_t child_count(void)
{
	return child_n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Reads whatever the pipes hold now, without waiting. */
static void child_drain_now(struct child *c)
{
	struct child_stream *ss[] = {&c->out, &c->err};
	for (size_t i = 0; i < nitems(ss); i++) {
		for (int n = 0; ss[i]->fd >= 0 && n < 64; n++) {
			errno = 0;
			if (!stream_read(c, ss[i]) || errno == EAGAIN)
				break;
		}
	}
}

void child_shutdown(void)
{
	struct child *c, *next;
	int grace = 0;

	child_stopping = true;
	for (c = LIST_FIRST(&child_list); c; c = LIST_NEXT(c, link)) {
		if (c->grace_ms > grace)
			grace = c->grace_ms;
		child_signal(c, SIGTERM);
	}
	/* The loop no longer runs: poll for exits, reading pipes so nobody blocks on them. */
	uint64_t deadline = util_mono_ns() + (uint64_t)grace * 1000000u;
	for (;;) {
		bool waiting = false;
		for (c = LIST_FIRST(&child_list); c; c = LIST_NEXT(c, link)) {
			child_drain_now(c);
			waiting = waiting || !c->reaped || c->out.fd >= 0 || c->err.fd >= 0;
		}
		if (!waiting || util_mono_ns() >= deadline)
			break;
		sleep_ms(10);
		for (c = LIST_FIRST(&child_list); c; c = LIST_NEXT(c, link)) {
			int status;
			if (!c->reaped && waitpid(c->pid, &status, WNOHANG) == c->pid) {
				c->reaped = true;
				c->status = status;
			}
		}
	}
	/* Whoever is left: SIGKILL, reap for sure, take what the pipes hold, close them. */
	for (c = LIST_FIRST(&child_list); c; c = next) {
		next = LIST_NEXT(c, link);
		child_signal(c, SIGKILL);
		int status;
		while (!c->reaped) {
			pid_t r = waitpid(c->pid, &status, 0);
			if (r == c->pid) {
				c->reaped = true;
				c->status = status;
			} else if (r < 0 && errno != EINTR) {
				c->reaped = true; /* ECHILD: someone else reaped it */
				c->status = SIGKILL;
			}
		}
		child_drain_now(c);
		stream_close(&c->out);
		stream_close(&c->err);
		if (c->out.lines)
			stream_deliver_lines(c, &c->out, true);
		child_check_done(c);
	}
	if (child_sigchld) {
		event_free(child_sigchld);
		child_sigchld = NULL;
	}
	child_base = NULL;
}
