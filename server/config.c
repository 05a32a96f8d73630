/* SPDX-License-Identifier: ISC */
/* Configuration: one table of options drives the flags, the INI keys, --help and checks. */
#define _GNU_SOURCE
#include "config.h"
#include "net/cidr.h"
#include "access/kdf.h"
#include "base/suggest.h"
#include "base/util.h"
#include "worker/spec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <ini.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum opt_type { OPT_STRING, OPT_BOOL, OPT_INT, OPT_LOGLEVEL, OPT_ADDR };

struct opt {
	const char *name; /* flag without dashes; the INI key is the same with '_' */
	enum opt_type type;
	size_t offset;
	long long min, max;
	const char *arg;
	const char *help;
};

#define OFF(f) offsetof(struct config, f)

static const struct opt opts[] = {
    {"config", OPT_STRING, OFF(config_file), 0, 0, "FILE",
     "read settings from an INI file (keys as below, '-' written '_')"},
    {"state-dir", OPT_STRING, OFF(state_dir), 0, 0, "DIR",
     "database, TLS certificate, JWT key, initial admin password; one spindled per dir "
     "(spindled.lock)"},
    {"listen", OPT_ADDR, OFF(listen), 0, 0, "ADDR:PORT", "HTTPS listener (0.0.0.0:8215)"},
    {"http-listen", OPT_ADDR, OFF(http_listen), 0, 0, "ADDR:PORT",
     "plain HTTP listener, off by default; loopback only unless --allow-insecure-http"},
    {"allow-insecure-http", OPT_BOOL, OFF(allow_insecure_http), 0, 0, NULL,
     "allow --http-listen on a non-loopback address"},
    {"webroot", OPT_STRING, OFF(webroot), 0, 0, "DIR", "browser UI files served at /"},
    {"log-level", OPT_LOGLEVEL, OFF(log_level), 0, 0, "LEVEL", "error, warn, info or debug (info)"},
    {"foreground", OPT_BOOL, OFF(foreground), 0, 0, NULL,
     "log to stderr instead of syslog (spindled never forks; systemd runs it as is)"},
    {"kdf-iterations", OPT_INT, OFF(kdf_iterations), KDF_MIN_ITERATIONS, 10000000, "N",
     "PBKDF2-HMAC-SHA256 iterations for new password hashes (600000)"},
    {"max-body", OPT_INT, OFF(max_body), 1024, 64 << 20, "BYTES",
     "largest request body accepted (1048576)"},
    {"max-header", OPT_INT, OFF(max_header), 1024, 1 << 20, "BYTES",
     "largest request header block accepted (16384)"},
    {"max-connections", OPT_INT, OFF(max_connections), 1, 100000, "N",
     "concurrent HTTPS connections (1024)"},
    {"timeout", OPT_INT, OFF(timeout_s), 1, 3600, "SECONDS",
     "idle, read and write timeout of a connection (60)"},
    {"header-timeout", OPT_INT, OFF(header_timeout_s), 1, 3600, "SECONDS",
     "time an HTTPS request may take to arrive whole, handshake included (20)"},
    {"tls-handshake-rate", OPT_INT, OFF(tls_handshake_rate), 0, 1000000, "N",
     "TLS handshakes a second one address (an IPv6 /64) may start, four seconds' worth at "
     "once; more are refused before the key exchange; 0: no bound (100)"},
    {"hsts-max-age", OPT_INT, OFF(hsts_max_age_s), 0, 63072000, "SECONDS",
     "Strict-Transport-Security on HTTPS answers, once browsers trust the box's "
     "certificate; 0: not sent (0)"},
    {"session-timeout", OPT_INT, OFF(session_timeout_min), 1, 1440, "MINUTES",
     "idle timeout of a login session for new users (15)"},
    {"session-max-hours", OPT_INT, OFF(session_max_hours), 1, 720, "HOURS",
     "longest life of a login session however active (12)"},
    {"audit-days", OPT_INT, OFF(audit_days), 1, 36500, "DAYS",
     "how long audit log entries are kept (365)"},
    {"helper-threads", OPT_INT, OFF(helper_threads), 1, 64, "N",
     "threads for slow work such as password hashing (2)"},
    {"metrics-allow", OPT_STRING, OFF(metrics_allow), 0, 0, "CIDRS",
     "addresses that may read /metrics without a token, or none (127.0.0.0/8,::1)"},
    {"sys-root", OPT_STRING, OFF(sys_root), 0, 0, "DIR",
     "root of the sys/ tree read for hardware, LEDs, disks and jobs' devices (/)"},
    {"proc-root", OPT_STRING, OFF(proc_root), 0, 0, "DIR",
     "root of the proc/ tree read by the collector and for jobs' environments (/)"},
    {"analytics-partitions", OPT_BOOL, OFF(analytics_partitions), 0, 0, NULL,
     "keep disk partitions in the per-disk analytics (off)"},
    {"analytics-loop-devices", OPT_BOOL, OFF(analytics_loop_devices), 0, 0, NULL,
     "keep loop, ram and zram devices in the per-disk analytics (off)"},
    {"analytics-memory", OPT_INT, OFF(analytics_memory_mb), 1, 65536, "MB",
     "memory the analytics' newest seconds may take; past it memory keeps fewer than the "
     "last 4096 and queries read the rest from disk (16)"},
    {"analytics-heavy-reads", OPT_INT, OFF(analytics_heavy_reads), 1, 1024, "N",
     "analytics reads of more than 4000 numbers one user (all its sessions and tokens) may "
     "have in flight; past them the answer is 429 (2)"},
    {"iolat-socket", OPT_STRING, OFF(iolat_socket), 0, 0, "PATH",
     "the disks' latency, size and offset histograms from the eBPF helper at this socket, "
     "if it is there (/run/spindle/iolat.sock)"},
    {"smbstatus-socket", OPT_STRING, OFF(smbstatus_socket), 0, 0, "PATH",
     "Samba's counters from the root helper at this socket, if it is there, rather than "
     "from running smbstatus (/run/spindle/smbstatus.sock)"},
    {"system-led", OPT_STRING, OFF(system_led), 0, 0, "NAME",
     "the system identify LED under /sys/class/leds (none)"},
    {"system-led-backend", OPT_STRING, OFF(system_led_backend), 0, 0, "BACKEND",
     "system locator LED: auto, leds, ipmi or virtual (auto)"},
    {"disk-led-backend", OPT_STRING, OFF(disk_led_backend), 0, 0, "BACKEND",
     "disk locator LEDs: auto, ses, ledctl or virtual (auto)"},
    {"led-command-timeout", OPT_INT, OFF(led_command_timeout_s), 1, 300, "SECONDS",
     "time ledctl or ipmitool may take before it is killed (10)"},
    {"hardware-watch", OPT_INT, OFF(hardware_watch_s), 0, 86400, "SECONDS",
     "how often each enclosure slot's status and fault are read, so a faulted disk is a "
     "problem with nobody looking; 0: only when the hardware is read (60)"},
    {"ledctl-socket", OPT_STRING, OFF(ledctl_socket), 0, 0, "PATH",
     "ledctl through the root helper at this socket if it is there (/run/spindle/ledctl.sock)"},
    {"smart-interval", OPT_INT, OFF(smart_interval_s), 0, 7 * 86400, "SECONDS",
     "how often each disk's SMART or NVMe health is read (a disk not ok, or asleep, every "
     "300 at most); 0: never (1800)"},
    {"smart-timeout", OPT_INT, OFF(smart_timeout_s), 1, 300, "SECONDS",
     "time one disk's reading may take (40; the helper stops smartctl at 30)"},
    {"smart-socket", OPT_STRING, OFF(smart_socket), 0, 0, "PATH",
     "smartctl through the root helper at this socket if it is there, rather than running "
     "it (/run/spindle/smart.sock)"},
    {"bench-dirs", OPT_STRING, OFF(bench_dirs), 0, 0, "DIRS",
     "directories benchmark targets may live in, ':'-separated (STATE/bench)"},
    {"bench-worker", OPT_STRING, OFF(bench_worker), 0, 0, "PATH",
     "the spindle-worker program (the build tree's, else spindle-worker from PATH)"},
    {"bench-concurrency", OPT_INT, OFF(bench_concurrency), 1, 64, "N",
     "benchmark jobs running at once; the rest wait in the queue (1)"},
    {"bench-allow-devices", OPT_BOOL, OFF(bench_allow_devices), 0, 0, NULL,
     "allow raw block devices as targets, each job with \"confirm\": true (off)"},
    {"bench-max-runtime", OPT_INT, OFF(bench_max_runtime_s), 1, 30 * 86400, "SECONDS",
     "longest ramp + runtime of a job, and the limit of one that moves an amount (86400)"},
    {"bench-limit-slack", OPT_INT, OFF(bench_limit_slack_s), 1, 86400, "SECONDS",
     "time a worker may run past its job's time (layout, drain) before it is stopped (300)"},
    {"bench-reserve", OPT_STRING, OFF(bench_reserve), 0, 0, "SIZE|PCT%",
     "free space a job's layout must leave on its filesystem, e.g. 10G or 5% of it (5%)"},
};

static void config_usage(FILE *out)
{
	fprintf(out, "Usage: spindled [OPTION]...\n"
	             "Spindle storage management server: analytics, benchmarks, hardware and\n"
	             "locator LEDs over a token-authenticated JSON API on HTTPS.\n\n");
	for (size_t i = 0; i < nitems(opts); i++) {
		char left[64];
		snprintf(left, sizeof(left), "--%s%s%s", opts[i].name, opts[i].arg ? " " : "",
		         opts[i].arg ? opts[i].arg : "");
		fprintf(out, "  %-28s %s\n", left, opts[i].help);
	}
	fprintf(out, "  %-28s %s\n", "--help", "show this help and exit");
	fprintf(out, "  %-28s %s\n", "--version", "show the version and exit");
	fprintf(
	    out,
	    "\nEvery option is also a key in the --config file, e.g. state_dir=/var/lib/spindle.\n"
	    "Exit status: 0 on a clean stop, 1 on a start-up failure, 2 on bad options.\n");
}

static bool config_addr_is_loopback(const char *host)
{
	struct in_addr a4;
	struct in6_addr a6;
	if (inet_pton(AF_INET, host, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	if (inet_pton(AF_INET6, host, &a6) == 1)
		return IN6_IS_ADDR_LOOPBACK(&a6);
	return false;
}

static const struct opt *opt_find(const char *name, bool ini)
{
	for (size_t i = 0; i < nitems(opts); i++) {
		const char *o = opts[i].name;
		size_t k = 0;
		for (; o[k] && name[k]; k++) {
			char want = (ini && o[k] == '-') ? '_' : o[k];
			if (name[k] != want)
				break;
		}
		if (!o[k] && !name[k])
			return &opts[i];
	}
	return NULL;
}

/* "; did you mean --listen?" (or "listen" for the file) when name is a typo of an option,
 * else "". name may be "--lisen=ADDR" as written on the command line. */
static const char *opt_near(const char *name, bool ini, char *buf, size_t len)
{
	char word[SUGGEST_NAME_MAX + 1], spelt[SUGGEST_NAME_MAX + 1];
	struct suggest s;
	if (!ini && strncmp(name, "--", 2) == 0)
		name += 2;
	snprintf(word, sizeof(word), "%.*s", (int)strcspn(name, "="), name);
	suggest_init(&s, word);
	for (size_t i = 0; i < nitems(opts); i++)
		if (!ini || strcmp(opts[i].name, "config") != 0)
			suggest_try(&s, opts[i].name);
	buf[0] = '\0';
	if (!suggest_best(&s))
		return buf;
	snprintf(spelt, sizeof(spelt), "%s", suggest_best(&s));
	for (char *p = spelt; ini && *p; p++)
		if (*p == '-')
			*p = '_'; /* the file's spelling */
	snprintf(buf, len, "; did you mean %s%s?", ini ? "" : "--", spelt);
	return buf;
}

/* Sets one option from its text; prints the one-line error itself. */
static int opt_set(struct config *cfg, const struct opt *o, const char *val, const char *where)
{
	char *field = (char *)cfg + o->offset;
	switch (o->type) {
	case OPT_STRING:
	case OPT_ADDR: {
		if (!val || !*val) {
			fprintf(stderr, "spindled: %s: --%s needs a value\n", where, o->name);
			return -1;
		}
		char host[INET6_ADDRSTRLEN];
		unsigned port;
		if (o->type == OPT_ADDR && util_split_addr(val, host, sizeof(host), &port) < 0) {
			fprintf(
			    stderr,
			    "spindled: %s: --%s: '%s' is not ADDR:PORT with a numeric address\n",
			    where, o->name, val);
			return -1;
		}
		char **s = (char **)field;
		free(*s);
		*s = xstrdup(val);
		return 0;
	}
	case OPT_BOOL: {
		bool *b = (bool *)field;
		if (!val || strcmp(val, "true") == 0 || strcmp(val, "yes") == 0 ||
		    strcmp(val, "1") == 0 || strcmp(val, "on") == 0) {
			*b = true;
		} else if (strcmp(val, "false") == 0 || strcmp(val, "no") == 0 ||
		           strcmp(val, "0") == 0 || strcmp(val, "off") == 0) {
			*b = false;
		} else {
			fprintf(stderr, "spindled: %s: %s: '%s' is not true or false\n", where,
			        o->name, val);
			return -1;
		}
		return 0;
	}
	case OPT_INT: {
		long long v;
		if (!val || util_parse_ll(val, o->min, o->max, &v) < 0) {
			fprintf(
			    stderr,
			    "spindled: %s: --%s: '%s' is not a whole number from %lld to %lld\n",
			    where, o->name, val ? val : "", o->min, o->max);
			return -1;
		}
		*(long long *)field = v;
		return 0;
	}
	case OPT_LOGLEVEL:
		if (!val || log_level_parse(val, (enum log_level *)field) < 0) {
			fprintf(stderr,
			        "spindled: %s: --%s: '%s' is not error, warn, info or debug\n",
			        where, o->name, val ? val : "");
			return -1;
		}
		return 0;
	}
	return -1;
}

struct ini_ctx {
	struct config *cfg;
	const char *path;
	bool reported; /* the handler printed why it stopped */
};

/* inih stops at the first handler error and returns its line; opt_set prints the reason
 * naming the file, so the message stays one line. */
static int config_ini_entry(void *user, const char *section, const char *name, const char *value)
{
	struct ini_ctx *ctx = user;
	char where[PATH_MAX + 16];
	snprintf(where, sizeof(where), "%s", ctx->path);
	if (section[0] && strcmp(section, "spindled") != 0) {
		fprintf(stderr, "spindled: %s: unknown section [%s]\n", where, section);
		ctx->reported = true;
		return 0;
	}
	const struct opt *o = opt_find(name, true);
	if (!o || strcmp(o->name, "config") == 0) {
		char near[96];
		fprintf(stderr, "spindled: %s: unknown key '%s'%s\n", where, name,
		        opt_near(name, true, near, sizeof(near)));
		ctx->reported = true;
		return 0;
	}
	if (opt_set(ctx->cfg, o, value, where) < 0) {
		ctx->reported = true;
		return 0;
	}
	return 1;
}

/* The build tree's own binary keeps its state in the build tree (var/, and the sources'
 * webroot/), so running it never touches an installed spindled's. */
static bool running_from_build_tree(void)
{
#ifdef SPINDLE_BUILDDIR
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return false;
	self[n] = '\0';
	return strcmp(self, SPINDLE_BUILDDIR "/server/spindled") == 0;
#else
	return false;
#endif
}

static void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	if (running_from_build_tree()) {
#ifdef SPINDLE_BUILDDIR
		cfg->state_dir = xstrdup(SPINDLE_BUILDDIR "/var");
		cfg->webroot = xstrdup(SPINDLE_SRCDIR "/webroot");
#endif
	} else {
		cfg->state_dir = xstrdup(SPINDLE_LOCALSTATEDIR "/lib/spindle");
		cfg->webroot = xstrdup(SPINDLE_WEBROOT);
	}
	cfg->listen = xstrdup("0.0.0.0:8215");
	cfg->log_level = LOG_LEVEL_INFO;
	cfg->kdf_iterations = KDF_DEFAULT_ITERATIONS;
	cfg->max_body = 1 << 20;
	cfg->max_header = 16384;
	cfg->max_connections = 1024;
	cfg->timeout_s = 60;
	cfg->header_timeout_s = 20;
	cfg->tls_handshake_rate = 100;
	cfg->session_timeout_min = 15;
	cfg->session_max_hours = 12;
	cfg->helper_threads = 2;
	cfg->analytics_memory_mb = 16;
	cfg->analytics_heavy_reads = 2;
	cfg->audit_days = 365;
	cfg->metrics_allow = xstrdup("127.0.0.0/8,::1");
	cfg->sys_root = xstrdup("/");
	cfg->proc_root = xstrdup("/");
	cfg->system_led_backend = xstrdup("auto");
	cfg->disk_led_backend = xstrdup("auto");
	cfg->led_command_timeout_s = 10;
	cfg->hardware_watch_s = 60;
	cfg->ledctl_socket = xstrdup("/run/spindle/ledctl.sock");
	cfg->smart_interval_s = 1800;
	cfg->smart_timeout_s = 40;
	cfg->smart_socket = xstrdup("/run/spindle/smart.sock");
	cfg->iolat_socket = xstrdup("/run/spindle/iolat.sock");
	cfg->smbstatus_socket = xstrdup("/run/spindle/smbstatus.sock");
	cfg->bench_concurrency = 1;
	cfg->bench_max_runtime_s = 86400;
	cfg->bench_limit_slack_s = 300;
	/* as mke2fs keeps 5 % for root: a share scales from a small state filesystem (the
	 * database grows on it) to a large pool, where a fixed size would be most of the
	 * one or nothing of the other */
	cfg->bench_reserve = xstrdup("5%");
}

/* "10G" (bytes) or "5%" (0 to 90 percent of a filesystem); -1 when it is neither. */
static int config_parse_reserve(const char *text, unsigned long long *bytes, int *pct)
{
	size_t n = strlen(text);
	*bytes = 0;
	*pct = 0;
	if (n > 1 && text[n - 1] == '%') {
		char num[16];
		long long v;
		if (n - 1 >= sizeof(num))
			return -1;
		memcpy(num, text, n - 1);
		num[n - 1] = '\0';
		if (util_parse_ll(num, 0, 90, &v) < 0)
			return -1;
		*pct = (int)v;
		return 0;
	}
	uint64_t b;
	if (spec_parse_size(text, &b) < 0)
		return -1;
	*bytes = b;
	return 0;
}

enum config_result config_load(struct config *cfg, int argc, char **argv)
{
	struct option lopts[nitems(opts) + 3];
	size_t i;
	for (i = 0; i < nitems(opts); i++) {
		lopts[i].name = opts[i].name;
		lopts[i].has_arg = opts[i].type == OPT_BOOL ? optional_argument : required_argument;
		lopts[i].flag = NULL;
		lopts[i].val = 256 + (int)i;
	}
	lopts[i++] = (struct option){"help", no_argument, NULL, 'h'};
	lopts[i++] = (struct option){"version", no_argument, NULL, 'V'};
	lopts[i] = (struct option){NULL, 0, NULL, 0};

	config_defaults(cfg);

	/* Pass 1: --help, --version and --config, so the file comes before the flags. */
	const char *file = NULL;
	int c;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hV", lopts, NULL)) != -1) {
		if (c == 'h') {
			config_usage(stdout);
			return CONFIG_EXIT_OK;
		}
		if (c == 'V') {
			printf("spindled %s\n", PACKAGE_VERSION);
			return CONFIG_EXIT_OK;
		}
		if (c == '?') {
			char near[96];
			fprintf(stderr, "spindled: unknown option '%s'%s (see --help)\n",
			        argv[optind - 1],
			        opt_near(argv[optind - 1], false, near, sizeof(near)));
			return CONFIG_ERROR;
		}
		if (c == ':') {
			fprintf(stderr, "spindled: option '%s' needs a value (see --help)\n",
			        argv[optind - 1]);
			return CONFIG_ERROR;
		}
		if (c >= 256 && strcmp(opts[c - 256].name, "config") == 0)
			file = optarg;
	}
	if (optind < argc) {
		fprintf(stderr, "spindled: unexpected argument '%s' (see --help)\n", argv[optind]);
		return CONFIG_ERROR;
	}
	if (!file && !running_from_build_tree() &&
	    access(SPINDLE_SYSCONFDIR "/spindle/spindled.conf", F_OK) == 0)
		file = SPINDLE_SYSCONFDIR "/spindle/spindled.conf";
	if (file) {
		struct ini_ctx ctx = {cfg, file, false};
		errno = 0;
		int r = ini_parse(file, config_ini_entry, &ctx);
		if (r < 0) {
			fprintf(stderr, "spindled: %s: cannot read: %s\n", file,
			        errno ? strerror(errno) : "out of memory");
			return CONFIG_ERROR;
		}
		if (r > 0) {
			if (!ctx.reported)
				fprintf(stderr, "spindled: %s:%d: not a 'key = value' line\n", file,
				        r);
			return CONFIG_ERROR;
		}
		free(cfg->config_file);
		cfg->config_file = xstrdup(file);
	}

	/* Pass 2: the flags override the file. */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":hV", lopts, NULL)) != -1) {
		if (c < 256 || strcmp(opts[c - 256].name, "config") == 0)
			continue;
		if (opt_set(cfg, &opts[c - 256], optarg, "command line") < 0)
			return CONFIG_ERROR;
	}

	if (cfg->http_listen && !cfg->allow_insecure_http) {
		char host[INET6_ADDRSTRLEN];
		unsigned port;
		util_split_addr(cfg->http_listen, host, sizeof(host), &port);
		if (!config_addr_is_loopback(host)) {
			fprintf(stderr,
			        "spindled: --http-listen %s is not a loopback address; "
			        "plain HTTP there needs --allow-insecure-http\n",
			        cfg->http_listen);
			return CONFIG_ERROR;
		}
	}
	char why[200];
	struct cidr_list *allow = cidr_list_parse(cfg->metrics_allow, why, sizeof(why));
	if (!allow) {
		fprintf(stderr, "spindled: --metrics-allow: %s\n", why);
		return CONFIG_ERROR;
	}
	cidr_list_free(allow);
	if (config_parse_reserve(cfg->bench_reserve, &cfg->bench_reserve_bytes,
	                         &cfg->bench_reserve_pct) < 0) {
		fprintf(stderr,
		        "spindled: --bench-reserve: '%s' is neither a size (10G) nor a percentage "
		        "from 0%% to 90%% (5%%)\n",
		        cfg->bench_reserve);
		return CONFIG_ERROR;
	}
	/* The LED backends one may force (server/hardware/leds.c); "auto" picks by the hardware. */
	static const char *const sys_backends[] = {"auto", "leds", "ipmi", "virtual", NULL};
	static const char *const disk_backends[] = {"auto", "ses", "ledctl", "virtual", NULL};
	const char *const *b = sys_backends;
	while (*b && strcmp(*b, cfg->system_led_backend) != 0)
		b++;
	if (!*b) {
		fprintf(stderr,
		        "spindled: --system-led-backend: '%s' is not auto, leds, ipmi or virtual\n",
		        cfg->system_led_backend);
		return CONFIG_ERROR;
	}
	for (b = disk_backends; *b && strcmp(*b, cfg->disk_led_backend) != 0;)
		b++;
	if (!*b) {
		fprintf(stderr,
		        "spindled: --disk-led-backend: '%s' is not auto, ses, ledctl or virtual\n",
		        cfg->disk_led_backend);
		return CONFIG_ERROR;
	}
	return CONFIG_OK;
}

void config_free(struct config *cfg)
{
	for (size_t i = 0; i < nitems(opts); i++) {
		if (opts[i].type == OPT_STRING || opts[i].type == OPT_ADDR) {
			char **s = (char **)((char *)cfg + opts[i].offset);
			free(*s);
			*s = NULL;
		}
	}
}
