/* SPDX-License-Identifier: ISC */
/* spindled: parse the configuration, open the state, start the loop, stop cleanly. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "access/accounts.h"
#include "access/audit.h"
#include "access/auth.h"
#include "base/child.h"
#include "analytics/capacity.h"
#include "analytics/collector.h"
#include "config.h"
#include "status/dashboard.h"
#include "analytics/datasets.h"
#include "analytics/iohist.h"
#include "analytics/zpoolhist.h"
#include "analytics/smbstat.h"
#include "db/dbw.h"
#include "db/db.h"
#include "net/http.h"
#include "net/inflight.h"
#include "bench/jobs.h"
#include "hardware/leds.h"
#include "hardware/smart.h"
#include "hardware/problems.h"
#include "inventory/network.h"
#include "inventory/storage.h"
#include "base/log.h"
#include "status/metrics.h"
#include "analytics/series.h"
#include "bench/sweeps.h"
#include "net/tls.h"
#include "base/util.h"
#include "base/workq.h"
#include "analytics/worksheets.h"
#include "api/api.h"
#include "api/routes.h"

#define SHUTDOWN_GRACE_S 10
#define FLUSH_GRACE_NS   (1000 * 1000000ull)

struct daemon {
	struct event_base *base;
	struct http_server *http;
	struct event *drain;
	uint64_t stop_deadline_ns;
	uint64_t answered_at_ns; /* when nothing was in flight any more */
	bool stopping;
};

/* Every 20 ms while stopping: leave the loop once nothing is in flight and the last
 * replies are written out (that wait is short: a vanished client's reply never is). */
static void drain_check(evutil_socket_t fd, short what, void *arg)
{
	struct daemon *d = arg;
	uint64_t now = util_mono_ns();
	size_t n = http_inflight(d->http);
	if (n > 0 && now < d->stop_deadline_ns)
		return;
	if (n > 0) {
		log_warn("stopping with %zu requests unanswered after %d s", n, SHUTDOWN_GRACE_S);
	} else {
		if (!d->answered_at_ns)
			d->answered_at_ns = now;
		if (http_unflushed(d->http) > 0 && now - d->answered_at_ns < FLUSH_GRACE_NS &&
		    now < d->stop_deadline_ns)
			return;
	}
	event_base_loopexit(d->base, NULL);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
	struct daemon *d = arg;
	if (d->stopping) {
		log_warn("second signal: stopping now");
		event_base_loopbreak(d->base);
		return;
	}
	d->stopping = true;
	log_info("%s: no longer accepting; finishing %zu requests in flight",
	         sig == SIGTERM ? "SIGTERM" : "SIGINT", http_inflight(d->http));
	http_stop_accepting(d->http);
	d->stop_deadline_ns = util_mono_ns() + (uint64_t)SHUTDOWN_GRACE_S * 1000000000u;
	struct timeval tv = {0, 20000};
	d->drain = event_new(d->base, -1, EV_PERSIST, drain_check, d);
	event_add(d->drain, &tv);
	drain_check(-1, 0, d);
}

/* Every connection is a descriptor. systemd and shells start us with a soft limit of 1024:
 * raise it to room for the cap on HTTPS connections, the plain listener's, the database,
 * the workers' pipes and the files read, as far as the hard limit allows. */
static void raise_fd_limit(long long max_connections)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return;
	rlim_t want = (rlim_t)max_connections * 2 + 256;
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	if (rl.rlim_cur >= want)
		return;
	rlim_t had = rl.rlim_cur;
	rl.rlim_cur = want;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0) {
		log_warn("cannot raise the open file limit to %llu: %s", (unsigned long long)want,
		         strerror(errno));
		rl.rlim_cur = had;
	}
	if (rl.rlim_cur < (rlim_t)max_connections + 64)
		log_warn("the open file limit (%llu) is below --max-connections %lld: connections "
		         "beyond it will be refused",
		         (unsigned long long)rl.rlim_cur, max_connections);
}

/* One daemon per state dir: a second one would mark the first one's running jobs
 * interrupted and run its queue again. The lock is held until the process ends (the fd
 * stays open) and no child inherits it (O_CLOEXEC): a worker outliving its daemon must
 * not keep the next one from starting. The file holds the pid, for the message. */
static void state_lock(const char *dir)
{
	char path[PATH_MAX], pid[32] = "";
	snprintf(path, sizeof(path), "%s/spindled.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		fatal("state dir %s: cannot open its lock file: %s", dir, strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			fatal("state dir %s: cannot lock %s: %s", dir, path, strerror(errno));
		ssize_t n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		fatal("state dir %s is in use by another spindled (pid %s): stop it, or give this "
		      "one another --state-dir",
		      dir, pid[0] ? pid : "unknown");
	}
	/* best effort: the lock is what counts, not the text */
	if (ftruncate(fd, 0) == 0)
		dprintf(fd, "%ld\n", (long)getpid());
}

int main(int argc, char **argv)
{
	struct config cfg;
	switch (config_load(&cfg, argc, argv)) {
	case CONFIG_OK:
		break;
	case CONFIG_EXIT_OK:
		config_free(&cfg);
		return 0;
	case CONFIG_ERROR:
		config_free(&cfg);
		return 2;
	}
	log_init(cfg.foreground, cfg.log_level);
	/* Blocks of 64 KB and more (an hour's flush rows while the writer packs them, a big
	 * answer, a flush of a thousand disks) come from mmap and go back to the system when
	 * freed. glibc's own threshold rises to the largest such block freed, up to 32 MB,
	 * after which they stay in the heap of the thread that freed them: a 1,152-disk box's
	 * hourly packing left 60 MB in the writer thread's. */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	signal(SIGPIPE, SIG_IGN);
	umask(077);
	raise_fd_limit(cfg.max_connections);

	if (util_mkdirs(cfg.state_dir, 0700) < 0)
		fatal("cannot create state dir %s: %s", cfg.state_dir, strerror(errno));
	state_lock(cfg.state_dir);
	char path[PATH_MAX];

	/* evhttp is single-threaded, and helper threads wake the loop through eventfds
	 * (workq.c); libevent's own locks stay on as a guard for anything that crosses. */
	if (evthread_use_pthreads() < 0)
		fatal("libevent has no pthreads support");
	struct daemon d = {0};
	/* With the changelist, epoll_ctl calls for an fd are coalesced to one per loop
	 * iteration: a reply's write interest is added and dropped without a syscall each. */
	struct event_config *ecfg = event_config_new();
	if (ecfg)
		event_config_set_flag(ecfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
	d.base = ecfg ? event_base_new_with_config(ecfg) : NULL;
	if (ecfg)
		event_config_free(ecfg);
	if (!d.base)
		d.base = event_base_new();
	if (!d.base)
		fatal("cannot create the event loop");

	snprintf(path, sizeof(path), "%s/spindle.db", cfg.state_dir);
	char err[256];
	struct db *db = db_open(path, err, sizeof(err));
	if (!db)
		fatal("database %s: %s", path, err);
	audit_init(db);
	/* Writes whose truth is in memory go to a thread of their own (audit, last_seen, jobs) */
	if (dbw_init(d.base, path, err, sizeof(err)) < 0)
		fatal("database %s: the writer: %s", path, err);
	if (audit_retention(d.base, (int)cfg.audit_days) < 0)
		fatal("cannot start the audit log's retention");

	struct workq *wq = workq_new(d.base, (int)cfg.helper_threads);
	struct auth_config acfg = {
	    .state_dir = cfg.state_dir,
	    .kdf_iterations = (unsigned)cfg.kdf_iterations,
	    .session_timeout_min = (int)cfg.session_timeout_min,
	    .session_max_hours = (int)cfg.session_max_hours,
	};
	if (auth_init(d.base, db, wq, &acfg) < 0)
		fatal("cannot set up authentication in %s", cfg.state_dir);
	/* SIGCHLD is watched before anything may start a child (LED commands, workers). */
	if (child_init(d.base) < 0)
		fatal("cannot watch child processes");
	struct leds_config lcfg = {
	    .sys_root = cfg.sys_root,
	    .system_led = cfg.system_led,
	    .system_backend = cfg.system_led_backend,
	    .disk_backend = cfg.disk_led_backend,
	    .command_timeout_ms = (int)cfg.led_command_timeout_s * 1000,
	    .ledctl_socket = cfg.ledctl_socket,
	    .watch_s = (int)cfg.hardware_watch_s,
	};
	/* Problems first: the LEDs, the collector and the jobs raise them. */
	if (problems_init(d.base, cfg.state_dir) < 0)
		fatal("cannot watch the state dir");
	/* Disk health before the inventory that names the disks to read. */
	struct smart_config smcfg = {
	    .socket = cfg.smart_socket,
	    .interval_s = (int)cfg.smart_interval_s,
	    .retry_s = cfg.smart_interval_s < 300 ? (int)cfg.smart_interval_s : 300,
	    .timeout_ms = (int)cfg.smart_timeout_s * 1000,
	};
	if (smart_init(d.base, &smcfg) < 0)
		fatal("cannot set up disk health");
	if (leds_init(d.base, db, &lcfg) < 0)
		fatal("cannot set up the hardware inventory");
	/* Analytics: the series store (a connection and a writer thread of its own), the
	 * datasets, then the collector whose ticks feed them. */
	char dbpath[PATH_MAX];
	snprintf(dbpath, sizeof(dbpath), "%s/spindle.db", cfg.state_dir);
	struct series_config scfg = {.db_path = dbpath,
	                             .wq = wq,
	                             .retention = {24, 336, 8760},
	                             .memory_bytes = cfg.analytics_memory_mb << 20};
	if (series_init(&scfg, err, sizeof(err)) < 0)
		fatal("analytics: %s", err);
	inflight_set_limit((int)cfg.analytics_heavy_reads);
	/* The disks' I/O histograms, from the eBPF helper while a dataset needs them. */
	zpoolhist_init(d.base);
	smbstat_init(d.base, cfg.smbstatus_socket);
	if (iohist_init(d.base, cfg.iolat_socket) < 0)
		fatal("analytics: cannot set up the I/O histograms' reader");
	if (datasets_init(db) < 0)
		fatal("analytics: cannot read the datasets");
	struct collector_config ccfg = {
	    .proc_root = cfg.proc_root,
	    .sys_root = cfg.sys_root,
	    .partitions = cfg.analytics_partitions,
	    .loop_devices = cfg.analytics_loop_devices,
	};
	if (collector_init(d.base, &ccfg) < 0)
		fatal("analytics: cannot start the collector");
	/* Worksheets; the phone's dashboard and its events, rebuilt on each collector tick;
	 * /metrics with its allow-list. */
	worksheets_init(db);
	/* Capacity first: the dashboard lists it (statvfs on a thread of its own). */
	if (capacity_init(d.base, cfg.proc_root) < 0)
		fatal("cannot watch the filesystems' capacity");
	/* ZFS and the network as the storage and network services show them (zpool, zfs as
	 * children; /sys and /proc read on their threads). */
	storage_service_init();
	if (storage_init(d.base, cfg.sys_root) < 0)
		fatal("cannot watch the ZFS pools");
	if (network_init(d.base, cfg.sys_root, cfg.proc_root) < 0)
		fatal("cannot read the network configuration");
	if (dashboard_init(d.base, cfg.timeout_s) < 0)
		fatal("cannot set up the dashboard");
	if (metrics_init(cfg.metrics_allow) < 0)
		fatal("cannot set up /metrics");
	/* Benchmark jobs: workers are children (child_init above), figures from the collector. */
	struct jobs_config jcfg = {
	    .worker = cfg.bench_worker,
	    .state_dir = cfg.state_dir,
	    .bench_dirs = cfg.bench_dirs,
	    .concurrency = (int)cfg.bench_concurrency,
	    .allow_devices = cfg.bench_allow_devices,
	    .max_runtime_s = (int)cfg.bench_max_runtime_s,
	    .limit_slack_s = (int)cfg.bench_limit_slack_s,
	    .sys_root = cfg.sys_root,
	    .proc_root = cfg.proc_root,
	    .reserve_bytes = cfg.bench_reserve_bytes,
	    .reserve_pct = cfg.bench_reserve_pct,
	    .reserve_text = cfg.bench_reserve,
	};
	if (jobs_init(d.base, db, &jcfg) < 0)
		fatal("cannot set up the benchmark jobs");
	sweeps_init(db);

	snprintf(path, sizeof(path), "%s/tls", cfg.state_dir);
	SSL_CTX *ssl = tls_ctx_new(path);
	if (!ssl)
		fatal("cannot set up TLS in %s", path);

	struct router *rt = router_new(api_routes, api_routes_count);
	openapi_route_queries(rt);
	struct http_service services[16];
	size_t nservices = 0;
	for (size_t i = 0; i < api_services_count && i < nitems(services); i++, nservices++)
		services[i] = (struct http_service){api_services[i].name, api_services[i].version};
	struct http_options hopt = {
	    .listen = cfg.listen,
	    .http_listen = cfg.http_listen,
	    .webroot = cfg.webroot,
	    .max_body = cfg.max_body,
	    .max_header = cfg.max_header,
	    .max_connections = cfg.max_connections,
	    .timeout_s = cfg.timeout_s,
	    .header_timeout_s = cfg.header_timeout_s,
	    .hsts_max_age_s = cfg.hsts_max_age_s,
	    .handshake_rate = cfg.tls_handshake_rate,
	    .services = services,
	    .nservices = nservices,
	};
	d.http = http_new(d.base, rt, &hopt, ssl);
	if (http_start(d.http) < 0)
		fatal("cannot start listening");

	struct event *sigterm = evsignal_new(d.base, SIGTERM, on_signal, &d);
	struct event *sigint = evsignal_new(d.base, SIGINT, on_signal, &d);
	event_add(sigterm, NULL);
	event_add(sigint, NULL);
	system_started(cfg.proc_root, cfg.sys_root, cfg.state_dir);
	log_info("spindled %s ready; state in %s", PACKAGE_VERSION, cfg.state_dir);

	event_base_dispatch(d.base);

	log_info("stopping");
	if (d.drain)
		event_free(d.drain);
	event_free(sigterm);
	event_free(sigint);
	audit_retention_stop();
	/* Helpers first: their completions may still answer requests on live connections. */
	workq_free(wq);
	/* Analytics once no query reads the samples: no more ticks, then what memory holds
	 * and the disk does not is flushed, so a SIGTERM loses no second. */
	/* Its event streams ended at SIGTERM; it stops listening to the collector first. */
	/* Workers get SIGTERM; child_shutdown() below reaps them as interrupted runs. */
	jobs_shutdown();
	dashboard_shutdown();
	capacity_shutdown();
	storage_shutdown();
	network_shutdown();
	metrics_shutdown();
	collector_shutdown();
	datasets_shutdown();
	iohist_shutdown();
	zpoolhist_shutdown();
	smbstat_shutdown();
	series_shutdown();
	leds_shutdown();
	smart_shutdown();
	problems_shutdown();
	/* Children last among the answerers: killed, reaped, their callbacks run. */
	child_shutdown();
	/* What was handed to the writer is stored (jobs that ended meanwhile are recorded), and
	 * its done callbacks, some of which answer requests (a sweep stored), run while the
	 * connections live; what comes later (sessions' last use) is written in place. */
	dbw_shutdown();
	http_free(d.http);
	auth_shutdown();
	db_close(db);
	router_free(rt);
	SSL_CTX_free(ssl);
	event_base_free(d.base);
	config_free(&cfg);
	log_info("stopped");
	return 0;
}
