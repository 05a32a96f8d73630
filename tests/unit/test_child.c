/* SPDX-License-Identifier: ISC */
/* server/base/child.c: real /bin/sh children on a real event loop. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "tap.h"
#include "base/child.h"
#include "base/log.h"
#include "base/util.h"

#define MAX_LINES 16

/* What one child reported. */
struct rec {
	int exits; /* on_exit calls: must end at exactly 1 */
	struct child_result res;
	char *out, *err;
	int nlines;
	char *lines[MAX_LINES];
	size_t line_len[MAX_LINES];
	struct child *c;
	int kill_after_lines; /* child_kill(SIGTERM) once this many lines arrived; 0: never */
	uint64_t done_ns;
};

static struct event_base *base;
static int pending; /* children whose on_exit has not run yet */
static int ticks;   /* a 20 ms timer: proves the loop kept turning */

static void rec_exit(void *arg, const struct child_result *r)
{
	struct rec *rec = arg;
	rec->exits++;
	rec->res = *r;
	rec->out = xstrndup(r->out, r->out_len);
	rec->err = xstrndup(r->err, r->err_len);
	rec->res.out = rec->out;
	rec->res.err = rec->err;
	rec->done_ns = util_mono_ns();
	if (--pending == 0)
		event_base_loopbreak(base);
}

static void rec_line(void *arg, const char *line, size_t len)
{
	struct rec *rec = arg;
	if (rec->nlines < MAX_LINES) {
		rec->lines[rec->nlines] = xstrndup(line, len);
		rec->line_len[rec->nlines] = len;
	}
	rec->nlines++;
	if (rec->kill_after_lines && rec->nlines == rec->kill_after_lines)
		child_kill(rec->c, SIGTERM);
}

static void rec_clear(struct rec *rec)
{
	free(rec->out);
	free(rec->err);
	for (int i = 0; i < rec->nlines && i < MAX_LINES; i++)
		free(rec->lines[i]);
	memset(rec, 0, sizeof(*rec));
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
	ticks++;
}

static void on_guard(evutil_socket_t fd, short what, void *arg)
{
	diag("guard timer: children did not finish in time");
	event_base_loopbreak(base);
}

/* Runs the loop until every child started is done (or 20 s pass). */
static void run_loop(void)
{
	struct event *guard = evtimer_new(base, on_guard, NULL);
	struct timeval tv = {20, 0};
	evtimer_add(guard, &tv);
	if (pending > 0)
		event_base_dispatch(base);
	event_free(guard);
}

/* A few more turns of the loop, to catch a second on_exit. */
static void spin_ms(int ms)
{
	struct timeval tv = {0, ms * 1000};
	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static struct child *start(struct rec *rec, const char *script, struct child_opts *o)
{
	static char *argv[4];
	char err[256] = "";
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	argv[3] = NULL;
	o->argv = argv;
	o->on_exit = rec_exit;
	o->arg = rec;
	struct child *c = child_spawn(o, err, sizeof(err));
	if (!c)
		diag("spawn failed: %s", err);
	else
		pending++;
	rec->c = c;
	return c;
}

static struct child *sh(struct rec *rec, const char *script)
{
	struct child_opts o = {0};
	return start(rec, script, &o);
}

static struct child *sh_lines(struct rec *rec, const char *script)
{
	struct child_opts o = {.on_line = rec_line};
	return start(rec, script, &o);
}

/* A process is gone, or a zombie nobody waits for: it runs no more. */
static bool process_dead(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 200; i++) {
		char *s = util_read_file(path, NULL);
		if (!s)
			return true;
		char *rp = strrchr(s, ')');
		bool zombie = rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
		free(s);
		if (zombie)
			return true;
		spin_ms(10);
	}
	return false;
}

static void test_capture(void)
{
	struct rec r = {0};
	ok(sh(&r, "echo hello; printf world; echo oops >&2; exit 0"), "spawn a capture child");
	run_loop();
	is_int(r.exits, 1, "capture: on_exit once");
	ok(r.res.exited && r.res.exit_code == 0, "capture: exited 0");
	is_str(r.res.out, "hello\nworld", "capture: stdout whole");
	is_int(r.res.out_len, 11, "capture: out_len");
	is_str(r.res.err, "oops\n", "capture: stderr");
	ok(!r.res.timed_out && r.res.signal == 0, "capture: no signal, no timeout");
	rec_clear(&r);

	ok(sh(&r, "echo partial; exit 3"), "spawn exit 3");
	run_loop();
	ok(r.res.exited, "exit 3: exited normally");
	is_int(r.res.exit_code, 3, "exit 3: the code");
	is_str(r.res.out, "partial\n", "exit 3: output kept");
	rec_clear(&r);

	ok(sh(&r, "exit 255"), "spawn exit 255");
	run_loop();
	is_int(r.res.exit_code, 255, "exit 255");
	rec_clear(&r);
}

static void test_lines(void)
{
	struct rec r = {0};
	ok(sh_lines(&r, "printf 'a\\nbb\\n\\nccc'; echo err >&2"), "spawn a lines child");
	run_loop();
	is_int(r.nlines, 4, "lines: four, the last without a newline");
	is_str(r.lines[0], "a", "line 1");
	is_str(r.lines[1], "bb", "line 2");
	is_str(r.lines[2], "", "line 3 is empty");
	is_str(r.lines[3], "ccc", "line 4 delivered at EOF");
	is_int(r.res.out_len, 0, "lines: nothing captured in out");
	is_str(r.res.err, "err\n", "lines: stderr still captured");
	rec_clear(&r);

	/* Lines arriving over time, across reads. */
	ok(sh_lines(&r, "for i in 1 2 3; do echo line$i; sleep 0.05; done"), "spawn slow lines");
	run_loop();
	is_int(r.nlines, 3, "slow lines: three");
	is_str(r.lines[2], "line3", "slow lines: the last");
	rec_clear(&r);

	/* An overlong line is cut at max_output and the rest of it dropped. */
	struct child_opts o = {.on_line = rec_line, .max_output = 100};
	ok(start(&r, "head -c 5000 /dev/zero | tr '\\0' b; echo; echo short", &o),
	   "spawn an overlong line");
	run_loop();
	is_int(r.nlines, 2, "overlong: two lines");
	is_int(r.line_len[0], 100, "overlong: cut at max_output");
	is_str(r.lines[1], "short", "overlong: the next line intact");
	rec_clear(&r);

	/* The same when the whole line and its newline come in one read (awk writes all its
	 * output at exit): cut all the same; a line of exactly max_output stays whole. */
	ok(start(&r,
	         "awk 'BEGIN { s = sprintf(\"%5000s\", \"\"); gsub(/ /, \"b\", s); print s;"
	         " t = sprintf(\"%100s\", \"\"); gsub(/ /, \"c\", t); print t; print \"short\" }'",
	         &o),
	   "spawn an overlong line written at once");
	run_loop();
	is_int(r.nlines, 3, "at once: three lines");
	is_int(r.line_len[0], 100, "at once: cut at max_output");
	ok(r.lines[0] && r.lines[0][0] == 'b' && r.lines[0][99] == 'b', "at once: its first bytes");
	is_int(r.line_len[1], 100, "a line of exactly max_output is whole");
	is_str(r.lines[2], "short", "at once: the next line intact");
	rec_clear(&r);
}

static void test_stdin(void)
{
	struct rec r = {0};
	struct child_opts o = {.on_line = rec_line, .stdin_data = "x\ny\n", .stdin_len = 4};
	ok(start(&r, "cat", &o), "spawn cat with stdin");
	run_loop();
	is_int(r.nlines, 2, "stdin: two lines back");
	is_str(r.lines[0], "x", "stdin: line 1");
	is_str(r.lines[1], "y", "stdin: line 2");
	rec_clear(&r);

	/* More than a pipe holds: written as the child reads. */
	size_t big = 1 << 20;
	char *data = xmalloc(big);
	memset(data, 'q', big);
	struct child_opts o2 = {.stdin_data = data, .stdin_len = big};
	ok(start(&r, "wc -c", &o2), "spawn wc -c with 1 MiB of stdin");
	free(data); /* child_spawn copied it */
	run_loop();
	is_int(r.res.out ? atol(r.res.out) : -1, (long)big, "stdin: 1 MiB arrived whole");
	rec_clear(&r);

	/* A child that never reads its stdin: EPIPE, not a dead daemon. */
	data = xcalloc(1, big);
	struct child_opts o3 = {.stdin_data = data, .stdin_len = big};
	ok(start(&r, "exit 0", &o3), "spawn a child ignoring 1 MiB of stdin");
	free(data);
	run_loop();
	ok(r.exits == 1 && r.res.exited && r.res.exit_code == 0, "stdin ignored: done, exit 0");
	rec_clear(&r);

	/* Without stdin_data, stdin is /dev/null. */
	ok(sh(&r, "cat; echo done"), "spawn cat without stdin");
	run_loop();
	is_str(r.res.out, "done\n", "no stdin: reads EOF at once");
	rec_clear(&r);
}

static void test_signals(void)
{
	struct rec r = {0};
	ok(sh(&r, "kill -USR1 $$; sleep 5"), "spawn a child that signals itself");
	run_loop();
	ok(!r.res.exited, "self-signal: not a normal exit");
	is_int(r.res.signal, SIGUSR1, "self-signal: SIGUSR1");
	ok(!r.res.timed_out, "self-signal: not a timeout");
	rec_clear(&r);

	struct child *c = sh(&r, "exec sleep 30");
	ok(c, "spawn sleep 30");
	pid_t pid = child_pid(c);
	ok(pid > 0 && getpgid(pid) == pid, "the child leads its own process group");
	child_kill(c, SIGTERM);
	run_loop();
	is_int(r.res.signal, SIGTERM, "child_kill SIGTERM: killed by it");
	ok(!r.res.timed_out, "child_kill: not a timeout");
	rec_clear(&r);

	/* A kill reaches the grandchildren too. */
	struct child_opts o = {.on_line = rec_line};
	r.kill_after_lines = 1;
	c = start(&r, "sleep 30 & echo $!; wait", &o);
	ok(c, "spawn a child with a grandchild");
	run_loop();
	ok(r.nlines >= 1 && r.lines[0], "grandchild pid reported");
	pid_t grand = r.nlines >= 1 ? (pid_t)atol(r.lines[0]) : 0;
	is_int(r.res.signal, SIGTERM, "parent killed by SIGTERM");
	ok(grand > 0 && process_dead(grand), "the grandchild %d is dead too", (int)grand);
	rec_clear(&r);
}

static void test_timeout(void)
{
	struct rec r = {0};
	struct child_opts o = {.timeout_ms = 200};
	uint64_t t0 = util_mono_ns();
	ok(start(&r, "exec sleep 30", &o), "spawn sleep 30 with a 200 ms timeout");
	run_loop();
	double s = (double)(r.done_ns - t0) / 1e9;
	ok(r.res.timed_out, "timeout: timed_out");
	is_int(r.res.signal, SIGTERM, "timeout: SIGTERM was enough");
	ok(s >= 0.19 && s < 3, "timeout: done after %.2f s", s);
	rec_clear(&r);

	/* Hung: ignores SIGTERM (and so do its sleeps); SIGKILL after the grace. The loop
	 * keeps turning meanwhile. */
	struct event *tick = event_new(base, -1, EV_PERSIST, on_tick, NULL);
	struct timeval tv = {0, 20000};
	event_add(tick, &tv);
	ticks = 0;
	struct child_opts h = {.timeout_ms = 200, .kill_grace_ms = 300, .on_line = rec_line};
	t0 = util_mono_ns();
	ok(start(&r, "trap '' TERM; echo ready; while :; do sleep 1; done", &h),
	   "spawn a hung child that ignores SIGTERM");
	run_loop();
	s = (double)(r.done_ns - t0) / 1e9;
	event_free(tick);
	ok(r.res.timed_out, "hung: timed_out");
	is_int(r.res.signal, SIGKILL, "hung: needed SIGKILL");
	ok(s >= 0.45 && s < 4, "hung: done after %.2f s (timeout + grace)", s);
	ok(ticks >= 15, "the loop kept turning meanwhile (%d ticks of 20 ms)", ticks);
	is_int(r.nlines, 1, "hung: its output still read");
	rec_clear(&r);

	/* The child exits, but a background grandchild holds stdout: after the grace the
	 * group is killed and the child completes with its own exit status. */
	struct child_opts l = {.kill_grace_ms = 200};
	t0 = util_mono_ns();
	ok(start(&r, "sleep 30 & echo $! >&2; exit 4", &l), "spawn a child leaving a grandchild");
	run_loop();
	s = (double)(r.done_ns - t0) / 1e9;
	is_int(r.res.exit_code, 4, "lingering output: the child's own exit status");
	ok(s >= 0.15 && s < 3, "lingering output: done after %.2f s", s);
	ok(process_dead((pid_t)atol(r.res.err)), "lingering grandchild killed");
	rec_clear(&r);
}

static void test_many(void)
{
	enum { N = 64 };
	static struct rec recs[N];
	char scripts[N][64];
	int started = 0;
	for (int i = 0; i < N; i++) {
		snprintf(scripts[i], sizeof(scripts[i]), "echo child%d; exit %d", i, i % 7);
		started += sh(&recs[i], scripts[i]) != NULL;
	}
	is_int(started, N, "%d children started at once", N);
	is_int(child_count(), N, "child_count sees them all");
	run_loop();
	spin_ms(50);
	int right = 0, once = 0;
	for (int i = 0; i < N; i++) {
		char want[32];
		snprintf(want, sizeof(want), "child%d\n", i);
		once += recs[i].exits == 1;
		right += recs[i].out && strcmp(recs[i].out, want) == 0 && recs[i].res.exited &&
		         recs[i].res.exit_code == i % 7;
		rec_clear(&recs[i]);
	}
	is_int(once, N, "many: every on_exit ran exactly once");
	is_int(right, N, "many: every output and exit code right");
	is_int(child_count(), 0, "many: none left");
}

static void test_limits(void)
{
	struct rec r = {0};
	struct child_opts o = {.max_output = 1000};
	ok(start(&r, "head -c 200000 /dev/zero | tr '\\0' a; head -c 5000 /dev/zero >&2", &o),
	   "spawn a child writing past max_output");
	run_loop();
	is_int(r.res.out_len, 1000, "stdout capped at max_output");
	is_int(r.res.err_len, 1000, "stderr capped at max_output");
	ok(r.res.exited && r.res.exit_code == 0, "the child was never blocked on a full pipe");
	rec_clear(&r);

	char err[256] = "";
	char *argv1[] = {"spindle-no-such-program", NULL};
	struct child_opts n = {.argv = argv1, .on_exit = rec_exit, .arg = &r};
	ok(!child_spawn(&n, err, sizeof(err)) && strstr(err, "not found in PATH"),
	   "a program not in PATH: NULL (%s)", err);
	char *argv2[] = {"/nonexistent/prog", NULL};
	n.argv = argv2;
	ok(!child_spawn(&n, err, sizeof(err)) && strstr(err, "/nonexistent/prog"),
	   "a missing path: NULL (%s)", err);
	char tmpl[] = "/tmp/spindle-child-XXXXXX";
	int fd = mkstemp(tmpl);
	close(fd);
	chmod(tmpl, 0644);
	char *argv3[] = {tmpl, NULL};
	n.argv = argv3;
	ok(!child_spawn(&n, err, sizeof(err)) && strstr(err, "not an executable"),
	   "a file without x: NULL (%s)", err);
	unlink(tmpl);
	is_int(child_count(), 0, "failed spawns leave nothing behind");

	/* PATH lookup of a bare name, and an explicit environment. */
	char *argv4[] = {"sh", "-c", "echo $SPINDLE_T", NULL};
	char *envp[] = {"SPINDLE_T=42", NULL};
	struct child_opts e = {.argv = argv4, .envp = envp, .on_exit = rec_exit, .arg = &r};
	ok(child_spawn(&e, err, sizeof(err)), "a bare name found in PATH");
	pending++;
	run_loop();
	is_str(r.res.out, "42\n", "envp given to the child");
	rec_clear(&r);
}

/* The child inherits no fds beyond 0-2, no blocked or ignored signals. */
static void test_hygiene(void)
{
	struct rec r = {0};
	int fd = open("/dev/null", O_RDONLY); /* deliberately not O_CLOEXEC */
	dup2(fd, 100);
	close(fd);
	ok(sh(&r, "ls /proc/self/fd | tr '\\n' ' '"), "spawn an fd lister");
	run_loop();
	ok(r.res.out && strncmp(r.res.out, "0 1 2 3 ", 8) == 0 && !strstr(r.res.out, "100"),
	   "only 0-2 inherited (ls's own dir fd is 3): %s", r.res.out ? r.res.out : "");
	close(100);
	rec_clear(&r);

	sigset_t usr2, old;
	sigemptyset(&usr2);
	sigaddset(&usr2, SIGUSR2);
	sigprocmask(SIG_BLOCK, &usr2, &old);
	signal(SIGHUP, SIG_IGN);
	char err[256];
	char *argv[] = {"cat", "/proc/self/status", NULL};
	struct child_opts o = {.argv = argv, .on_exit = rec_exit, .arg = &r};
	ok(child_spawn(&o, err, sizeof(err)), "spawn cat /proc/self/status");
	pending++;
	run_loop();
	sigprocmask(SIG_SETMASK, &old, NULL);
	signal(SIGHUP, SIG_DFL);
	ok(r.res.out && strstr(r.res.out, "SigBlk:\t0000000000000000\n"), "no signal blocked");
	/* glibc's posix_spawn leaves its two internal signals (32, 33) ignored; the new
	 * program's libc installs its own handlers for them. Every other one is default. */
	const char *ign = r.res.out ? strstr(r.res.out, "SigIgn:\t") : NULL;
	unsigned long long mask = ign ? strtoull(ign + 8, NULL, 16) : ~0ull;
	ok((mask & ~(3ull << 31)) == 0, "no signal ignored (SIGPIPE and SIGHUP reset): %llx", mask);
	rec_clear(&r);
}

static void test_shutdown(void)
{
	static struct rec recs[4];
	struct child_opts o = {.kill_grace_ms = 300};
	for (int i = 0; i < 3; i++)
		start(&recs[i], "exec sleep 30", &o);
	struct child_opts h = {.kill_grace_ms = 300, .on_line = rec_line};
	start(&recs[3], "trap '' TERM; echo ready; while :; do sleep 1; done", &h);
	for (int i = 0; i < 300 && recs[3].nlines == 0; i++)
		spin_ms(10); /* until its trap is set */
	is_int(child_count(), 4, "four children before shutdown");
	uint64_t t0 = util_mono_ns();
	child_shutdown();
	double s = (double)(util_mono_ns() - t0) / 1e9;
	int once = 0;
	for (int i = 0; i < 4; i++)
		once += recs[i].exits == 1;
	is_int(once, 4, "shutdown: every on_exit ran once");
	is_int(recs[0].res.signal, SIGTERM, "shutdown: SIGTERM first");
	is_int(recs[3].res.signal, SIGKILL, "shutdown: SIGKILL for the one ignoring it");
	ok(s < 3, "shutdown took %.2f s", s);
	is_int(child_count(), 0, "shutdown: none left");
	struct rec r = {0};
	ok(!sh(&r, "true"), "no spawning after shutdown");
	for (int i = 0; i < 4; i++)
		rec_clear(&recs[i]);
}

int main(void)
{
	log_init(true, getenv("TEST_DEBUG") ? LOG_LEVEL_DEBUG : LOG_LEVEL_ERR);
	base = event_base_new();
	ok(child_init(base) == 0, "child_init");
	test_capture();
	test_lines();
	test_stdin();
	test_signals();
	test_timeout();
	test_many();
	test_limits();
	test_hygiene();
	test_shutdown();
	event_base_free(base);
	return done_testing();
}
