/* SPDX-License-Identifier: ISC */
/* The Prometheus exposition. Counters are the collector's raw cumulative values (as
 * /proc has them, scaled to base units), so a scraper computes its own rates; the text
 * for one sample is built once and reused by every scrape until the next tick.
 *
 * Every line of the sample carries the sample's own time (ms): the counters change once a
 * second, on the collector's tick, not when a scraper asks. Stamped with the scrape's time,
 * a scrape just after a tick and one just before the next would be a second apart in
 * Prometheus but two ticks apart in the counters (irate doubles), and two scrapes within
 * one second a second apart with no change (irate drops to 0). With the sample's time, a
 * repeated sample is the same point again, which Prometheus drops. The daemon's own
 * gauges (jobs, LEDs, problems) are read at each scrape and carry no time. */
#include <strings.h>

#include "metrics.h"
#include "net/cidr.h"
#include "analytics/collector.h"
#include "base/loopwork.h"
#include "dashboard.h"
#include "base/log.h"
#include "bench/jobs.h"
#include "hardware/leds.h"
#include "hardware/problems.h"
#include "hardware/smart.h"
#include "inventory/storage.h"
#include "base/util.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	struct cidr_list *allow;
	struct buf sample; /* the text of sample seq */
	uint64_t seq;
	struct buf out;
	int64_t started;
	long user_hz;
} metrics;

static void family(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value: backslash, double quote and newline escaped, as the format wants. */
static const char *label(const char *v, char *buf, size_t len)
{
	size_t o = 0;
	for (; *v && o + 3 < len; v++) {
		if (*v == '\\' || *v == '"') {
			buf[o++] = '\\';
			buf[o++] = *v;
		} else if (*v == '\n') {
			buf[o++] = '\\';
			buf[o++] = 'n';
		} else {
			buf[o++] = *v;
		}
	}
	buf[o] = '\0';
	return buf;
}

/* Cumulative disk and NIC counters: which field, its unit's divisor. */
struct dev_metric {
	const char *name, *type, *help;
	size_t off;
	unsigned divisor; /* 1000: milliseconds -> seconds */
};

static const struct dev_metric disk_metrics[] = {
    {"spindle_disk_reads_completed_total", "counter", "Reads completed.",
     offsetof(struct disk_sample, reads), 1},
    {"spindle_disk_writes_completed_total", "counter", "Writes completed.",
     offsetof(struct disk_sample, writes), 1},
    {"spindle_disk_read_bytes_total", "counter", "Bytes read.",
     offsetof(struct disk_sample, read_bytes), 1},
    {"spindle_disk_written_bytes_total", "counter", "Bytes written.",
     offsetof(struct disk_sample, write_bytes), 1},
    {"spindle_disk_read_time_seconds_total", "counter", "Time spent on reads, summed over them.",
     offsetof(struct disk_sample, read_ms), 1000},
    {"spindle_disk_write_time_seconds_total", "counter", "Time spent on writes, summed over them.",
     offsetof(struct disk_sample, write_ms), 1000},
    {"spindle_disk_io_time_seconds_total", "counter",
     "Time the device had I/O in flight (busy time).", offsetof(struct disk_sample, io_ms), 1000},
    {"spindle_disk_io_now", "gauge", "Requests in flight at the sample.",
     offsetof(struct disk_sample, in_flight), 1},
    {"spindle_disk_discards_completed_total", "counter",
     "Discards completed (0 where the kernel does not count them, before Linux 4.18).",
     offsetof(struct disk_sample, discards), 1},
    {"spindle_disk_discarded_bytes_total", "counter", "Bytes discarded.",
     offsetof(struct disk_sample, discard_bytes), 1},
    {"spindle_disk_flush_requests_total", "counter",
     "Flushes completed (0 where the kernel does not count them, before Linux 5.5).",
     offsetof(struct disk_sample, flushes), 1},
    {"spindle_disk_discard_time_seconds_total", "counter",
     "Time spent on discards, summed over them.", offsetof(struct disk_sample, discard_ms), 1000},
    {"spindle_disk_flush_requests_time_seconds_total", "counter",
     "Time spent on flushes, summed over them.", offsetof(struct disk_sample, flush_ms), 1000},
};

static const struct dev_metric nic_metrics[] = {
    {"spindle_network_receive_bytes_total", "counter", "Bytes received.",
     offsetof(struct nic_sample, rx_bytes), 1},
    {"spindle_network_transmit_bytes_total", "counter", "Bytes sent.",
     offsetof(struct nic_sample, tx_bytes), 1},
    {"spindle_network_receive_packets_total", "counter", "Packets received.",
     offsetof(struct nic_sample, rx_packets), 1},
    {"spindle_network_transmit_packets_total", "counter", "Packets sent.",
     offsetof(struct nic_sample, tx_packets), 1},
    {"spindle_network_receive_errs_total", "counter", "Receive errors.",
     offsetof(struct nic_sample, rx_errors), 1},
    {"spindle_network_transmit_errs_total", "counter", "Transmit errors.",
     offsetof(struct nic_sample, tx_errors), 1},
};

/* ts: the sample's time as the line's ending, " <ms>". */
static void dev_value(struct buf *b, const struct dev_metric *dm, const char *dev,
                      const void *sample, const char *ts)
{
	char esc[80];
	uint64_t v;
	memcpy(&v, (const char *)sample + dm->off, sizeof(v));
	if (dm->divisor == 1)
		buf_printf(b, "%s{device=\"%s\"} %llu%s\n", dm->name, label(dev, esc, sizeof(esc)),
		           (unsigned long long)v, ts);
	else
		buf_printf(b, "%s{device=\"%s\"} %.3f%s\n", dm->name, label(dev, esc, sizeof(esc)),
		           (double)v / dm->divisor, ts);
}

static const char *const cpu_modes[CPU_MODES] = {
    [CPU_USER] = "user",     [CPU_NICE] = "nice", [CPU_SYSTEM] = "system",
    [CPU_IOWAIT] = "iowait", [CPU_IRQ] = "irq",   [CPU_SOFTIRQ] = "softirq",
    [CPU_STEAL] = "steal",   [CPU_IDLE] = "idle",
};

/* ts: "" (now) or " <ms>" (the sample's time). */
static void gauge_u64(struct buf *b, const char *name, const char *help, uint64_t v, const char *ts)
{
	family(b, name, "gauge", help);
	buf_printf(b, "%s %llu%s\n", name, (unsigned long long)v, ts);
}

static void counter_u64(struct buf *b, const char *name, const char *help, uint64_t v,
                        const char *ts)
{
	family(b, name, "counter", help);
	buf_printf(b, "%s %llu%s\n", name, (unsigned long long)v, ts);
}

static void build_sample(struct buf *b, const struct box_sample *s)
{
	size_t i;
	int d;
	char ts[32];

	snprintf(ts, sizeof(ts), " %lld", (long long)s->time * 1000);
	b->len = 0;
	family(b, "spindle_sample_timestamp_seconds", "gauge",
	       "When the sample these values come from ended (Unix time).");
	buf_printf(b, "spindle_sample_timestamp_seconds %lld%s\n", (long long)s->time, ts);

	family(b, "spindle_cpu_seconds_total", "counter",
	       "CPU time spent in each mode, summed over all CPUs.");
	for (i = 0; i < CPU_MODES; i++)
		buf_printf(b, "spindle_cpu_seconds_total{mode=\"%s\"} %.2f%s\n", cpu_modes[i],
		           (double)s->cpu_ticks[i] / (double)metrics.user_hz, ts);
	gauge_u64(b, "spindle_cpus", "CPUs online.", (uint64_t)(s->ncpus > 0 ? s->ncpus : 0), ts);

	gauge_u64(b, "spindle_memory_total_bytes", "Memory installed (MemTotal).", s->mem_total,
	          ts);
	gauge_u64(b, "spindle_memory_used_bytes",
	          "Memory in use: total less free, buffers and page cache.", s->mem_used, ts);
	gauge_u64(b, "spindle_memory_cached_bytes", "Page cache.", s->mem_cache, ts);
	gauge_u64(b, "spindle_memory_buffers_bytes", "Block device buffers.", s->mem_buffers, ts);
	gauge_u64(b, "spindle_memory_free_bytes", "Memory not used at all.", s->mem_free, ts);

	if (s->have_psi) {
		static const char *const res[3] = {"cpu", "io", "memory"};
		family(
		    b, "spindle_pressure_some_percent", "gauge",
		    "Share of the last second in which some task stalled on the resource (PSI).");
		for (i = 0; i < 3; i++)
			buf_printf(b, "spindle_pressure_some_percent{resource=\"%s\"} %.2f%s\n",
			           res[i], s->psi_some_pct[i], ts);
	}

	for (i = 0; i < nitems(disk_metrics); i++) {
		family(b, disk_metrics[i].name, disk_metrics[i].type, disk_metrics[i].help);
		for (d = 0; d < s->ndisks; d++)
			dev_value(b, &disk_metrics[i], s->disks[d].name, &s->disks[d], ts);
	}
	for (i = 0; i < nitems(nic_metrics); i++) {
		family(b, nic_metrics[i].name, nic_metrics[i].type, nic_metrics[i].help);
		for (d = 0; d < s->nnics; d++)
			dev_value(b, &nic_metrics[i], s->nics[d].name, &s->nics[d], ts);
	}

	if (s->have_arc) {
		counter_u64(b, "spindle_arc_hits_total", "ZFS ARC hits.", s->arc_hits, ts);
		counter_u64(b, "spindle_arc_misses_total", "ZFS ARC misses.", s->arc_misses, ts);
		counter_u64(b, "spindle_arc_iohits_total",
		            "ZFS ARC hits on blocks being read in (I/O in progress).",
		            s->arc_iohits, ts);
		gauge_u64(b, "spindle_arc_size_bytes", "ZFS ARC size.", s->arc_size, ts);
		gauge_u64(b, "spindle_arc_target_bytes", "ZFS ARC target size (c).", s->arc_target,
		          ts);
		gauge_u64(b, "spindle_arc_mfu_bytes", "ZFS ARC most-frequently-used list size.",
		          s->arc_mfu, ts);
		gauge_u64(b, "spindle_arc_mru_bytes", "ZFS ARC most-recently-used list size.",
		          s->arc_mru, ts);
		gauge_u64(b, "spindle_arc_meta_bytes", "ZFS ARC metadata size.", s->arc_meta, ts);
		if (s->arc_c_max) {
			gauge_u64(b, "spindle_arc_target_min_bytes",
			          "ZFS ARC target size's floor (c_min).", s->arc_c_min, ts);
			gauge_u64(b, "spindle_arc_target_max_bytes",
			          "ZFS ARC target size's ceiling (c_max).", s->arc_c_max, ts);
		}
	}
	if (s->have_l2) {
		counter_u64(b, "spindle_arc_l2_hits_total", "ZFS L2ARC hits.", s->l2_hits, ts);
		counter_u64(b, "spindle_arc_l2_misses_total", "ZFS L2ARC misses.", s->l2_misses,
		            ts);
		gauge_u64(b, "spindle_arc_l2_size_bytes", "ZFS L2ARC size (logical).", s->l2_size,
		          ts);
		gauge_u64(b, "spindle_arc_l2_allocated_bytes",
		          "ZFS L2ARC space allocated on the cache devices.", s->l2_asize, ts);
	}
	if (s->have_tcp)
		counter_u64(b, "spindle_tcp_retransmitted_segments_total",
		            "TCP segments retransmitted, IPv4 and IPv6 (RetransSegs).",
		            s->tcp_retrans_segs, ts);
}

/* --- disk health, in the names of Prometheus' smartctl exporter (its dashboards fit) */

struct smart_family {
	const char *name, *type, *help;
	size_t off;         /* an int64_t of struct smart_info; SIZE_MAX: the special below */
	int64_t scale;      /* power on hours -> seconds */
	const char *labels; /* more labels, or "" */
};

#define SMART_HEALTH SIZE_MAX
#define SMART_STATUS (SIZE_MAX - 1)
#define SMART_STATE  (SIZE_MAX - 2)

static const struct smart_family smart_families[] = {
    {"spindle_disk_health", "gauge",
     "The disk's health from its SMART or NVMe health log: 0 ok, 1 warning, 2 failing, -1 "
     "unknown (GET the disk for why).",
     SMART_HEALTH, 1, ""},
    {"smartctl_device_smart_status", "gauge", "The drive's own overall health check: 1 passed.",
     SMART_STATUS, 1, ""},
    {"smartctl_device_state", "gauge", "0 active, 1 standby (left asleep at the last reading).",
     SMART_STATE, 1, ""},
    {"smartctl_device_temperature", "gauge", "Device temperature celsius, at the last reading.",
     offsetof(struct smart_info, temperature_c), 1, ",temperature_type=\"current\""},
    {"smartctl_device_power_on_seconds", "gauge", "Device power on seconds.",
     offsetof(struct smart_info, power_on_hours), 3600, ""},
    {"smartctl_device_attribute", "gauge",
     "ATA attributes' raw values: 5, 197, 198 and 199 (sectors reallocated, pending, offline "
     "uncorrectable; CRC errors).",
     offsetof(struct smart_info, reallocated), 1,
     ",attribute_id=\"5\",attribute_name=\"Reallocated_Sector_Ct\",attribute_value_type="
     "\"raw\""},
    {"smartctl_device_attribute", NULL, NULL, offsetof(struct smart_info, pending), 1,
     ",attribute_id=\"197\",attribute_name=\"Current_Pending_Sector\",attribute_value_type="
     "\"raw\""},
    {"smartctl_device_attribute", NULL, NULL, offsetof(struct smart_info, offline_uncorrectable), 1,
     ",attribute_id=\"198\",attribute_name=\"Offline_Uncorrectable\",attribute_value_type="
     "\"raw\""},
    {"smartctl_device_attribute", NULL, NULL, offsetof(struct smart_info, crc_errors), 1,
     ",attribute_id=\"199\",attribute_name=\"UDMA_CRC_Error_Count\",attribute_value_type="
     "\"raw\""},
    {"smartctl_scsi_grown_defect_list", "gauge", "Device SCSI grown defect list counter.",
     offsetof(struct smart_info, grown_defects), 1, ""},
    {"smartctl_read_total_uncorrected_errors", "gauge", "Read Total Uncorrected Errors (SCSI).",
     offsetof(struct smart_info, uncorrected_read), 1, ""},
    {"smartctl_write_total_uncorrected_errors", "gauge", "Write Total Uncorrected Errors (SCSI).",
     offsetof(struct smart_info, uncorrected_write), 1, ""},
    {"smartctl_device_critical_warning", "gauge", "NVMe critical warning bits.",
     offsetof(struct smart_info, critical_warning), 1, ""},
    {"smartctl_device_percentage_used", "gauge", "NVMe: % of the rated endurance used.",
     offsetof(struct smart_info, percentage_used), 1, ""},
    {"smartctl_device_available_spare", "gauge", "NVMe: % of spare capacity left.",
     offsetof(struct smart_info, available_spare), 1, ""},
    {"smartctl_device_available_spare_threshold", "gauge", "NVMe: the spare's threshold, %.",
     offsetof(struct smart_info, available_spare_threshold), 1, ""},
    {"smartctl_device_media_errors", "gauge", "NVMe: media and data integrity errors.",
     offsetof(struct smart_info, media_errors), 1, ""},
};

struct smart_line {
	struct buf *b;
	const struct smart_family *f;
};

static void smart_line(void *arg, const char *device, const struct smart_info *s)
{
	const struct smart_line *l = arg;
	const struct smart_family *f = l->f;
	int64_t v;
	if (f->off == SMART_HEALTH) {
		static const int64_t health[] = {
		    [SMART_UNKNOWN] = -1, [SMART_OK] = 0, [SMART_WARNING] = 1, [SMART_FAILING] = 2};
		v = health[s->health];
	} else if (!s->read_at) {
		return; /* never read: no value to give */
	} else if (f->off == SMART_STATUS) {
		if (s->overall_passed == SMART_NONE)
			return;
		v = s->overall_passed;
	} else if (f->off == SMART_STATE) {
		v = s->asleep ? 1 : 0;
	} else {
		memcpy(&v, (const char *)s + f->off, sizeof(v));
		if (v == SMART_NONE)
			return;
		v *= f->scale;
	}
	char esc[80];
	buf_printf(l->b, "%s{device=\"%s\"%s} %lld\n", f->name, label(device, esc, sizeof(esc)),
	           f->labels, (long long)v);
}

static void smart_lines(struct buf *b)
{
	for (size_t i = 0; i < nitems(smart_families); i++) {
		const struct smart_family *f = &smart_families[i];
		if (f->help)
			family(b, f->name, f->type, f->help);
		struct smart_line l = {b, f};
		smart_each(smart_line, &l);
	}
}

static void lit_since_line(void *arg, const char *key, int64_t since)
{
	char esc[160];
	buf_printf(arg, "spindle_locator_led_lit_since_seconds{led=\"%s\"} %lld\n",
	           label(key, esc, sizeof(esc)), (long long)since);
}

/* The ZFS pools as zpool lists them; their state as node_exporter's zpool collector writes
 * it, one series per state, 1 for the one the pool is in. */
static void pool_lines(struct buf *b)
{
	static const char *const states[] = {"online",  "degraded", "faulted",  "offline",
	                                     "unavail", "removed",  "suspended"};
	static const char *const figs[][2] = {
	    {"spindle_pool_size_bytes", "A ZFS pool's size."},
	    {"spindle_pool_allocated_bytes", "A ZFS pool's space allocated."},
	    {"spindle_pool_free_bytes", "A ZFS pool's space free."},
	    {"spindle_pool_available_bytes", "What a ZFS pool's datasets may still write."},
	};
	size_t n;
	const struct storage_pool *p = storage_pools(&n);
	char name[256];
	for (size_t f = 0; f < nitems(figs); f++) {
		family(b, figs[f][0], "gauge", figs[f][1]);
		for (size_t i = 0; i < n; i++) {
			const uint64_t v[] = {p[i].size, p[i].allocated, p[i].free, p[i].available};
			buf_printf(b, "%s{pool=\"%s\"} %llu\n", figs[f][0],
			           label(p[i].name, name, sizeof(name)), (unsigned long long)v[f]);
		}
	}
	family(b, "spindle_pool_state", "gauge", "A ZFS pool's state: 1 for the one it is in.");
	for (size_t i = 0; i < n; i++)
		for (size_t k = 0; k < nitems(states); k++)
			buf_printf(b, "spindle_pool_state{pool=\"%s\",state=\"%s\"} %d\n",
			           label(p[i].name, name, sizeof(name)), states[k],
			           strcasecmp(p[i].health, states[k]) == 0);
}

static void build_daemon(struct buf *b)
{
	unsigned running = 0, queued = 0;
	char esc[64];

	jobs_counts(&running, &queued);
	family(b, "spindle_build_info", "gauge", "Always 1; the version of spindled in a label.");
	buf_printf(b, "spindle_build_info{version=\"%s\"} 1\n",
	           label(PACKAGE_VERSION, esc, sizeof(esc)));
	gauge_u64(b, "spindle_start_time_seconds", "When spindled started (Unix time).",
	          (uint64_t)metrics.started, "");
	family(b, "spindle_jobs", "gauge", "Benchmark jobs by state.");
	buf_printf(b, "spindle_jobs{state=\"running\"} %u\nspindle_jobs{state=\"queued\"} %u\n",
	           running, queued);
	/* Every end state from the start, at 0 too: increase() needs the series before its
	 * first failure to see it. */
	family(b, "spindle_jobs_ended_total", "counter",
	       "Benchmark jobs ended since spindled started, by end state.");
	for (int st = JOB_DONE; st < JOB_NSTATES; st++)
		buf_printf(b, "spindle_jobs_ended_total{state=\"%s\"} %llu\n",
		           jobs_state_name((enum job_state)st),
		           (unsigned long long)jobs_ended_count((enum job_state)st));
	gauge_u64(b, "spindle_locator_leds_lit", "Locator LEDs lit now (chassis and disks).",
	          leds_lit_count(), "");
	family(b, "spindle_hardware_scans_total", "counter",
	       "Scans of the hardware inventory since spindled started, by why: start, uevent "
	       "(the kernel said a disk or enclosure changed), request (a read found it stale), "
	       "watch (--hardware-watch: a pass over the enclosure slots' status and fault).");
	for (int w = 0; w < LEDS_SCAN_NWHY; w++)
		buf_printf(b, "spindle_hardware_scans_total{why=\"%s\"} %llu\n",
		           leds_scan_why_names[w],
		           (unsigned long long)leds_scans((enum leds_scan_why)w));
	family(b, "spindle_locator_led_lit_since_seconds", "gauge",
	       "When each lit locator LED was turned on (Unix time; one lit by other means: "
	       "when spindled first saw it lit).");
	leds_lit_each(lit_since_line, b);
	gauge_u64(b, "spindle_problems_open", "Open problems.", problems_count(), "");
	int64_t wall, cpu;
	loopwork_max(&wall, &cpu);
	family(b, "spindle_loop_work_max_seconds", "gauge",
	       "The longest the event loop's own periodic work or one request held it in the "
	       "last minute (each a turn of the loop of its own: reading /proc and /sys a "
	       "second; storing its samples, streams; a flush's finish; the hardware watch's "
	       "round and a rescan's inventory taken in; a request's handler, and each answer "
	       "of a helper thread taken in): clock=\"wall\", or clock=\"cpu\", the loop "
	       "thread's own time, without the machine's preemption.");
	buf_printf(b, "spindle_loop_work_max_seconds{clock=\"wall\"} %.6f\n", (double)wall / 1e9);
	buf_printf(b, "spindle_loop_work_max_seconds{clock=\"cpu\"} %.6f\n", (double)cpu / 1e9);
	pool_lines(b);
	smart_lines(b);
	gauge_u64(b, "spindle_sse_clients", "Server-Sent Events streams open now.",
	          dashboard_events_clients(), "");
}

const char *metrics_text(size_t *len)
{
	const struct box_sample *s = collector_latest();

	if (!s)
		metrics.sample.len = 0;
	else if (s->seq != metrics.seq || metrics.sample.len == 0) {
		build_sample(&metrics.sample, s);
		metrics.seq = s->seq;
	}
	metrics.out.len = 0;
	build_daemon(&metrics.out);
	if (metrics.sample.len)
		buf_add(&metrics.out, metrics.sample.p, metrics.sample.len);
	*len = metrics.out.len;
	return metrics.out.p;
}

bool metrics_peer_allowed(const char *peer)
{
	return cidr_list_match(metrics.allow, peer);
}

int metrics_init(const char *allow)
{
	char err[256];

	metrics.allow = cidr_list_parse(allow, err, sizeof(err));
	if (!metrics.allow) {
		log_err("--metrics-allow: %s", err);
		return -1;
	}
	metrics.started = util_now();
	metrics.user_hz = sysconf(_SC_CLK_TCK);
	if (metrics.user_hz <= 0)
		metrics.user_hz = 100;
	log_info("metrics: /metrics without a token from %zu address range(s)%s",
	         cidr_list_count(metrics.allow),
	         cidr_list_count(metrics.allow) ? "" : " (token only)");
	return 0;
}

void metrics_shutdown(void)
{
	cidr_list_free(metrics.allow);
	free(metrics.sample.p);
	free(metrics.out.p);
	memset(&metrics, 0, sizeof(metrics));
}
