/* SPDX-License-Identifier: ISC */
/* Configuration: every setting is both a command-line flag (--state-dir) and an INI key
 * (state_dir), parsed once at start-up and handed down read-only. */
#ifndef SPINDLE_CONFIG_H
#define SPINDLE_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include "base/log.h"

struct config {
	char *config_file;
	char *state_dir;
	char *listen;      /* HTTPS, ADDR:PORT */
	char *http_listen; /* plain HTTP, NULL when off */
	bool allow_insecure_http;
	char *webroot;
	enum log_level log_level;
	bool foreground;
	long long kdf_iterations;
	long long max_body;
	long long max_header;
	long long max_connections;
	long long timeout_s;
	long long header_timeout_s;
	long long hsts_max_age_s;     /* 0: no Strict-Transport-Security */
	long long tls_handshake_rate; /* per address and second; 0: no bound */
	long long session_timeout_min;
	long long session_max_hours;
	long long helper_threads;
	long long audit_days;
	char *metrics_allow; /* who scrapes /metrics without a token: CIDR list or "none" */

	/* Hardware and locator LEDs (server/hardware/leds.c) */
	char *sys_root;           /* hardware inventory and LEDs read <sys_root>/sys */
	char *system_led;         /* /sys/class/leds name of the system identify LED, or NULL */
	char *system_led_backend; /* auto, leds, ipmi, virtual */
	char *disk_led_backend;   /* auto, ses, ledctl, virtual */
	long long led_command_timeout_s;
	long long hardware_watch_s;
	char *ledctl_socket;        /* the root helper's socket (spindle-ledctl.socket), if there */
	long long smart_interval_s; /* disk health (server/hardware/smart.c); 0: off */
	long long smart_timeout_s;
	char *smart_socket; /* smartctl's root helper (spindle-smart.socket), if there */

	char *proc_root;                 /* the collector reads <proc_root>/proc */
	bool analytics_partitions;       /* keep partitions in the per-disk analytics series */
	bool analytics_loop_devices;     /* keep loop, ram and zram devices too */
	long long analytics_memory_mb;   /* the series store's budget of packed seconds */
	long long analytics_heavy_reads; /* heavy analytics reads one user may have in flight */
	char *iolat_socket;              /* the eBPF helper's socket (spindle-iolat.socket) */
	char *smbstatus_socket;          /* smbstatus's root helper (spindle-smbstatus.socket) */

	char *bench_dirs;   /* where job targets may live, ':'-separated; NULL: STATE/bench */
	char *bench_worker; /* spindle-worker; NULL: the build tree's, else from PATH */
	long long bench_concurrency;
	bool bench_allow_devices; /* raw block devices as targets (jobs still need confirm) */
	long long bench_max_runtime_s;
	long long bench_limit_slack_s;
	char *bench_reserve; /* "10G" or "5%" as given; parsed into: */
	unsigned long long bench_reserve_bytes;
	int bench_reserve_pct; /* of the filesystem's size, when not 0 */
};

enum config_result { CONFIG_OK, CONFIG_EXIT_OK, CONFIG_ERROR };

/* Fills cfg from defaults, the config file, then the flags. On CONFIG_ERROR a one-line
 * message has been printed to stderr (exit 2); CONFIG_EXIT_OK after --help/--version. */
enum config_result config_load(struct config *cfg, int argc, char **argv);
void config_free(struct config *cfg);

#endif
