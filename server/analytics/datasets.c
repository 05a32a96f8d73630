/* SPDX-License-Identifier: ISC */
/* The analytics datasets: the statistics the box offers, the catalog of what is
 * collected, and the turning of each collector sample into series values. */
#define _GNU_SOURCE
#include "datasets.h"
#include "access/audit.h"
#include "collector.h"
#include "iohist.h"
#include "zpoolhist.h"
#include "smbstat.h"
#include "base/child.h"
#include "base/hmap.h"
#include "db/db.h"
#include "db/dbw.h"
#include "hardware/smart.h"
#include "base/log.h"
#include "base/util.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- statistics */

struct emit {
	void (*cb)(void *arg, const char *key, double v);
	void *arg;
	int dir; /* the helper's histograms of one direction (enum below), -1: both */
};

static void put(struct emit *e, const char *key, double v)
{
	e->cb(e->arg, key, v);
}

/* A total of two parts and, broken down (the statistic's first drilldown), each part under
 * its key: read and write, in and out, hits and misses. */
static void put_parts(struct emit *e, int drill, const char *ka, double a, const char *kb, double b)
{
	put(e, NULL, a + b);
	if (drill == 0) {
		put(e, ka, a);
		put(e, kb, b);
	}
}

typedef void (*extract_fn)(const struct box_sample *s, int drill, struct emit *e);

struct statistic {
	const char *name;
	const char *title; /* short, as the appliance's explanation: "Disk: I/O bytes per second" */
	const char *grouping, *explanation, *unit;
	const char *drilldowns[6]; /* NULL-terminated; extract gets the index, -1 for none */
	extract_fn extract;
	bool of_disks; /* reads only the sample's disks: a dataset may keep to one ([disk=X]) */
};

/* A heat map of shares (percent): how many of the things (disks, CPUs) fell in each 5 % of
 * the second, keyed "0-5" .. "95-100" (all of it in the last), a key for each with any. */
enum { SHARE_STEP = 5, SHARE_BUCKETS = 100 / SHARE_STEP };

static void share_count(int *count, double pct)
{
	int b = (int)(pct / SHARE_STEP);
	count[b < 0 ? 0 : b >= SHARE_BUCKETS ? SHARE_BUCKETS - 1 : b]++;
}

static void put_shares(struct emit *e, const int *count)
{
	for (int b = 0; b < SHARE_BUCKETS; b++) {
		char key[16];
		snprintf(key, sizeof(key), "%d-%d", b * SHARE_STEP, (b + 1) * SHARE_STEP);
		if (count[b])
			put(e, key, count[b]);
	}
}

static void x_cpu(const struct box_sample *s, int drill, struct emit *e)
{
	static const char *const modes[CPU_MODES] = {
	    [CPU_USER] = "user",     [CPU_NICE] = "nice", [CPU_SYSTEM] = "system",
	    [CPU_IOWAIT] = "iowait", [CPU_IRQ] = "irq",   [CPU_SOFTIRQ] = "softirq",
	    [CPU_STEAL] = "steal",   [CPU_IDLE] = "idle",
	};
	double all = 0;
	for (int m = 0; m < CPU_MODES; m++)
		all += s->cpu_pct[m];
	if (all <= 0)
		return; /* no /proc/stat */
	put(e, NULL, 100 - s->cpu_pct[CPU_IDLE]);
	for (int m = 0; drill == 0 && m < CPU_MODES; m++)
		put(e, modes[m], s->cpu_pct[m]);
	/* by CPU: the appliance's CPU identifier, the kernel's number of it */
	for (int i = 0; drill == 1 && i < s->ncpu_rated; i++) {
		char id[16];
		snprintf(id, sizeof(id), "%d", s->cpus[i].id);
		put(e, id, s->cpus[i].busy_pct);
	}
	/* the appliance's heat map of the CPUs: how many were that busy */
	int count[SHARE_BUCKETS] = {0};
	for (int i = 0; drill == 2 && i < s->ncpu_rated; i++)
		share_count(count, s->cpus[i].busy_pct);
	if (drill == 2)
		put_shares(e, count);
}

/* io.ops's drilldowns from the eBPF helper: latency, size, offset, in enum iohist_kind's
 * order from here. */
enum { DRILL_LATENCY = 2 };

/* io.ops[latency], io.ops[size], io.ops[offset]: the completions of the second by bucket,
 * summed over the disks io.ops counts (both directions), a key for each bucket with any;
 * the total is their sum. Nothing while the helper does not stream. */
static void io_hists(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->have_iohist)
		return;
	enum iohist_kind k = (enum iohist_kind)(drill - DRILL_LATENCY);
	unsigned n = iohist_buckets(k);
	uint64_t sum[IOHIST_MAX_BUCKETS] = {0};
	for (int i = 0; i < s->ndisks; i++) {
		const struct iohist_disk *h = iohist_get(s->disks[i].name);
		for (int dir = 0; h && dir < IOLAT_DIRS; dir++) {
			if (e->dir >= 0 && dir != e->dir)
				continue;
			const uint64_t *c = iohist_counts(h, k, dir);
			for (unsigned b = 0; b < n; b++)
				sum[b] += c[b];
		}
	}
	uint64_t all = 0;
	for (unsigned b = 0; b < n; b++)
		all += sum[b];
	put(e, NULL, (double)all);
	for (unsigned b = 0; b < n; b++)
		if (sum[b])
			put(e, iohist_key(k, b), (double)sum[b]);
}

static void x_io_ops(const struct box_sample *s, int drill, struct emit *e)
{
	if (drill >= DRILL_LATENCY) {
		io_hists(s, drill, e);
		return;
	}
	/* every operation the disks completed: discards and flushes, which the kernel counts
	 * apart, as well, each a key of its own where it counts them */
	double r = 0, w = 0, dis = 0, fl = 0;
	bool have_dis = false, have_fl = false;
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		r += d->reads_per_s;
		w += d->writes_per_s;
		dis += d->discards_per_s;
		fl += d->flushes_per_s;
		have_dis |= d->have_discards;
		have_fl |= d->have_flushes;
	}
	put(e, NULL, r + w + dis + fl);
	if (drill == 0) {
		put(e, "read", r);
		put(e, "write", w);
		if (have_dis)
			put(e, "discard", dis);
		if (have_fl)
			put(e, "flush", fl);
	}
	for (int i = 0; drill == 1 && i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		put(e, d->name,
		    d->reads_per_s + d->writes_per_s + d->discards_per_s + d->flushes_per_s);
	}
}

static void x_io_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	double r = 0, w = 0;
	for (int i = 0; i < s->ndisks; i++) {
		r += s->disks[i].read_bytes_per_s;
		w += s->disks[i].write_bytes_per_s;
	}
	put_parts(e, drill, "read", r, "write", w);
	for (int i = 0; drill == 1 && i < s->ndisks; i++)
		put(e, s->disks[i].name,
		    s->disks[i].read_bytes_per_s + s->disks[i].write_bytes_per_s);
}

/* Mean milliseconds per operation; a second without operations has no latency at all
 * (rather than 0 ms, which would drag every mean over time down). */
static void x_io_latency(const struct box_sample *s, int drill, struct emit *e)
{
	double r = 0, w = 0, rms = 0, wms = 0;
	for (int i = 0; i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		r += d->reads_per_s;
		w += d->writes_per_s;
		rms += d->read_latency_ms * d->reads_per_s;
		wms += d->write_latency_ms * d->writes_per_s;
	}
	if (r + w > 0)
		put(e, NULL, (rms + wms) / (r + w));
	if (drill == 0 && r > 0)
		put(e, "read", rms / r);
	if (drill == 0 && w > 0)
		put(e, "write", wms / w);
	for (int i = 0; drill == 1 && i < s->ndisks; i++) {
		const struct disk_sample *d = &s->disks[i];
		double ops = d->reads_per_s + d->writes_per_s;
		if (ops > 0)
			put(e, d->name,
			    (d->read_latency_ms * d->reads_per_s +
			     d->write_latency_ms * d->writes_per_s) /
			        ops);
	}
}

/* The appliance's heat map of the disks by utilization; the value is the number of disks. */
static void x_io_disks(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->ndisks)
		return;
	put(e, NULL, s->ndisks);
	int count[SHARE_BUCKETS] = {0};
	for (int i = 0; drill == 0 && i < s->ndisks; i++)
		share_count(count, s->disks[i].busy_pct);
	put_shares(e, count);
}

/* How busy the disks were: the busiest's share of the second, and each disk's. */
static void x_io_busy(const struct box_sample *s, int drill, struct emit *e)
{
	double busiest = 0;
	for (int i = 0; i < s->ndisks; i++)
		if (s->disks[i].busy_pct > busiest)
			busiest = s->disks[i].busy_pct;
	if (s->ndisks)
		put(e, NULL, busiest);
	for (int i = 0; drill == 0 && i < s->ndisks; i++)
		put(e, s->disks[i].name, s->disks[i].busy_pct);
}

/* Each disk's temperature at its last health reading (smart.h: read on a slow cycle, the
 * value kept between readings, as the appliance keeps a statistic every second); the value
 * is the hottest disk's. The sample is not read. */
struct temps {
	struct emit *e;
	double hottest;
	bool any, keys;
};

static void temp_of(void *arg, const char *device, const struct smart_info *s)
{
	struct temps *t = arg;
	if (!s->read_at || s->temperature_c == SMART_NONE)
		return;
	if (t->keys) {
		put(t->e, device, (double)s->temperature_c);
	} else if (!t->any || s->temperature_c > t->hottest) {
		t->hottest = (double)s->temperature_c;
		t->any = true;
	}
}

static void x_disk_temperature(const struct box_sample *s, int drill, struct emit *e)
{
	(void)s;
	struct temps t = {e, 0, false, false};
	smart_each(temp_of, &t);
	if (!t.any)
		return;
	put(e, NULL, t.hottest);
	t.keys = drill == 0;
	if (t.keys)
		smart_each(temp_of, &t);
}

static void x_io_queue(const struct box_sample *s, int drill, struct emit *e)
{
	double q = 0;
	for (int i = 0; i < s->ndisks; i++)
		q += s->disks[i].queue;
	put(e, NULL, q);
	for (int i = 0; drill == 0 && i < s->ndisks; i++)
		put(e, s->disks[i].name, s->disks[i].queue);
}

static void x_nic_kb(const struct box_sample *s, int drill, struct emit *e)
{
	/* a byte counted once: a bond's or a VLAN's are its lower links' too */
	double in = 0, out = 0;
	for (int i = 0; i < s->nnics; i++) {
		if (s->nics[i].stacked)
			continue;
		in += s->nics[i].rx_kb_per_s;
		out += s->nics[i].tx_kb_per_s;
	}
	put_parts(e, drill, "in", in, "out", out);
	for (int i = 0; drill == 1 && i < s->nnics; i++)
		put(e, s->nics[i].name, s->nics[i].rx_kb_per_s + s->nics[i].tx_kb_per_s);
}

static void x_mem(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->mem_total)
		return;
	put(e, NULL, (double)s->mem_total);
	if (drill == 0) {
		/* The kernel counts the ZFS ARC as used: it is shown apart, as what the box may
		 * give back when programs need the memory. */
		uint64_t arc = s->have_arc && s->arc_size < s->mem_used ? s->arc_size : 0;
		/* and the kernel's own (unreclaimable slab, stacks, page tables), where counted */
		uint64_t kernel =
		    s->mem_have_kernel && s->mem_kernel <= s->mem_used - arc ? s->mem_kernel : 0;
		put(e, "used", (double)(s->mem_used - arc - kernel));
		if (s->mem_have_kernel)
			put(e, "kernel", (double)kernel);
		if (s->have_arc)
			put(e, "arc", (double)arc);
		put(e, "cache", (double)s->mem_cache);
		put(e, "buffers", (double)s->mem_buffers);
		put(e, "free", (double)s->mem_free);
	}
}

static void x_psi(const struct box_sample *s, int drill, struct emit *e)
{
	static const char *const res[3] = {"cpu", "io", "memory"};
	if (!s->have_psi)
		return;
	double worst = 0;
	for (int i = 0; i < 3; i++)
		if (s->psi_some_pct[i] > worst)
			worst = s->psi_some_pct[i];
	put(e, NULL, worst);
	for (int i = 0; drill == 0 && i < 3; i++)
		put(e, res[i], s->psi_some_pct[i]);
}

/* As the appliance breaks ARC accesses down by hit/miss: demand and prefetch, data and
 * metadata; the I/O hits OpenZFS 2.2 counts (a buffer found while its read was still in
 * flight) are keys of their own where the kernel has them. */
static void x_arc_accesses(const struct box_sample *s, int drill, struct emit *e)
{
	static const char *const keys[ARC_KINDS] = {
	    [ARC_DATA_HITS] = "data hits",
	    [ARC_DATA_MISSES] = "data misses",
	    [ARC_META_HITS] = "metadata hits",
	    [ARC_META_MISSES] = "metadata misses",
	    [ARC_PF_DATA_HITS] = "prefetch data hits",
	    [ARC_PF_DATA_MISSES] = "prefetch data misses",
	    [ARC_PF_META_HITS] = "prefetch metadata hits",
	    [ARC_PF_META_MISSES] = "prefetch metadata misses",
	    [ARC_DATA_IOHITS] = "data iohits",
	    [ARC_META_IOHITS] = "metadata iohits",
	    [ARC_PF_DATA_IOHITS] = "prefetch data iohits",
	    [ARC_PF_META_IOHITS] = "prefetch metadata iohits",
	};
	if (!s->have_arc)
		return;
	put(e, NULL, s->arc_hits_per_s + s->arc_misses_per_s + s->arc_iohits_per_s);
	if (drill != 0 || !s->arc_have_kinds)
		return;
	int n = s->arc_have_iohits ? ARC_KINDS : ARC_DATA_IOHITS;
	for (int k = 0; k < n; k++)
		put(e, keys[k], s->arc_kind_per_s[k]);
}

/* The share of the accesses the ARC served, as arcstat's hit%: hits over every access (I/O
 * hits and misses included); a second without accesses has no value. */
static void x_arc_hitratio(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_arc && s->arc_hits_per_s + s->arc_misses_per_s + s->arc_iohits_per_s > 0)
		put(e, NULL, s->arc_hit_pct);
}

static void x_arc_l2_accesses(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->have_l2)
		return;
	put_parts(e, drill, "hits", s->l2_hits_per_s, "misses", s->l2_misses_per_s);
}

static void x_arc_l2_size(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_l2)
		put(e, NULL, (double)s->l2_size);
}

static void x_arc_l2_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->have_l2)
		return;
	put_parts(e, drill, "read", s->l2_read_bytes_per_s, "write", s->l2_write_bytes_per_s);
}

/* The size the ARC aims at (c), with the bounds it moves between. */
static void x_arc_target(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->have_arc)
		return;
	put(e, NULL, (double)s->arc_target);
	if (drill == 0 && s->arc_c_max) {
		put(e, "min", (double)s->arc_c_min);
		put(e, "max", (double)s->arc_c_max);
	}
}

static void x_arc_size(const struct box_sample *s, int drill, struct emit *e)
{
	if (!s->have_arc)
		return;
	put(e, NULL, (double)s->arc_size);
	if (drill == 0) {
		/* Without data_size (before OpenZFS 2.2) all that is not metadata is data. */
		uint64_t meta = s->arc_meta < s->arc_size ? s->arc_meta : s->arc_size;
		uint64_t data = s->arc_data ? s->arc_data : s->arc_size - meta;
		uint64_t other = s->arc_size > meta + data ? s->arc_size - meta - data : 0;
		put(e, "data", (double)data);
		put(e, "metadata", (double)meta);
		put(e, "other", (double)other);
	}
}

/* The NFS server's operations per second, by procedure (NFSv3) or operation (NFSv4), named
 * as the protocols name them, in lower case as the appliance writes them. */
static void nfs_ops(const double *per_s, const char *const *names, int n, int drill, struct emit *e)
{
	double all = 0;
	for (int i = 0; i < n; i++)
		all += names[i] ? per_s[i] : 0;
	put(e, NULL, all);
	for (int i = 0; drill == 0 && i < n; i++)
		if (names[i])
			put(e, names[i], per_s[i]);
}

static void x_nfs3_ops(const struct box_sample *s, int drill, struct emit *e)
{
	static const char *const procs[NFS3_PROCS] = {
	    "null",   "getattr", "setattr",  "lookup", "access",  "readlink",
	    "read",   "write",   "create",   "mkdir",  "symlink", "mknod",
	    "remove", "rmdir",   "rename",   "link",   "readdir", "readdirplus",
	    "fsstat", "fsinfo",  "pathconf", "commit"};
	if (s->have_nfs3)
		nfs_ops(s->nfs3_per_s, procs, NFS3_PROCS, drill, e);
}

/* Samba's operations per second of one protocol version (smbstat.h), by type as Samba
 * names them; only the types that had any in the second. */
static void smb_ops(const struct box_sample *s, enum smb_version want, int drill, struct emit *e)
{
	const double *per_s = s->have_smb ? smbstat_get() : NULL;
	if (!per_s)
		return;
	double all = 0;
	enum smb_version v;
	for (size_t i = 0; smbstat_op(i, &v); i++)
		all += v == want ? per_s[i] : 0;
	put(e, NULL, all);
	const char *name;
	for (size_t i = 0; drill == 0 && (name = smbstat_op(i, &v)); i++)
		if (v == want && per_s[i] > 0)
			put(e, name, per_s[i]);
}

static void x_smb_ops(const struct box_sample *s, int drill, struct emit *e)
{
	smb_ops(s, SMB_V1, drill, e);
}

static void x_smb2_ops(const struct box_sample *s, int drill, struct emit *e)
{
	smb_ops(s, SMB_V2, drill, e);
}

static void x_nfs4_ops(const struct box_sample *s, int drill, struct emit *e)
{
	/* by operation number; 0 to 2 are none */
	static const char *const ops[NFS4_OPS] = {NULL,
	                                          NULL,
	                                          NULL,
	                                          "access",
	                                          "close",
	                                          "commit",
	                                          "create",
	                                          "delegpurge",
	                                          "delegreturn",
	                                          "getattr",
	                                          "getfh",
	                                          "link",
	                                          "lock",
	                                          "lockt",
	                                          "locku",
	                                          "lookup",
	                                          "lookupp",
	                                          "nverify",
	                                          "open",
	                                          "openattr",
	                                          "open_confirm",
	                                          "open_downgrade",
	                                          "putfh",
	                                          "putpubfh",
	                                          "putrootfh",
	                                          "read",
	                                          "readdir",
	                                          "readlink",
	                                          "remove",
	                                          "rename",
	                                          "renew",
	                                          "restorefh",
	                                          "savefh",
	                                          "secinfo",
	                                          "setattr",
	                                          "setclientid",
	                                          "setclientid_confirm",
	                                          "verify",
	                                          "write",
	                                          "release_lockowner",
	                                          "backchannel_ctl",
	                                          "bind_conn_to_session",
	                                          "exchange_id",
	                                          "create_session",
	                                          "destroy_session",
	                                          "free_stateid",
	                                          "get_dir_delegation",
	                                          "getdeviceinfo",
	                                          "getdevicelist",
	                                          "layoutcommit",
	                                          "layoutget",
	                                          "layoutreturn",
	                                          "secinfo_no_name",
	                                          "sequence",
	                                          "set_ssv",
	                                          "test_stateid",
	                                          "want_delegation",
	                                          "destroy_clientid",
	                                          "reclaim_complete",
	                                          "allocate",
	                                          "copy",
	                                          "copy_notify",
	                                          "deallocate",
	                                          "io_advise",
	                                          "layouterror",
	                                          "layoutstats",
	                                          "offload_cancel",
	                                          "offload_status",
	                                          "read_plus",
	                                          "seek",
	                                          "write_same",
	                                          "clone",
	                                          "getxattr",
	                                          "setxattr",
	                                          "listxattrs",
	                                          "removexattr"};
	if (s->have_nfs4)
		nfs_ops(s->nfs4_per_s, ops, NFS4_OPS, drill, e);
}

/* IP, both versions together, by direction. */
static void x_ip_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_ip)
		put_parts(e, drill, "in", s->ip_in_bytes_per_s, "out", s->ip_out_bytes_per_s);
}

static void x_ip_packets(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_ip)
		put_parts(e, drill, "in", s->ip_in_packets_per_s, "out", s->ip_out_packets_per_s);
}

static void x_tcp_packets(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_tcp)
		put_parts(e, drill, "in", s->tcp_in_segs_per_s, "out", s->tcp_out_segs_per_s);
}

static void x_tcp_retransmits(const struct box_sample *s, int drill, struct emit *e)
{
	if (s->have_tcp)
		put(e, NULL, s->tcp_retrans_per_s);
}

/* The pools' logical I/O (what their datasets were asked, before the ARC and the vdevs),
 * by operation or by pool; nothing where no pool is read. */
static void pool_io(const struct box_sample *s, int drill, bool bytes, struct emit *e)
{
	if (!s->npools)
		return;
	double r = 0, w = 0;
	for (int i = 0; i < s->npools; i++) {
		r += bytes ? s->pools[i].read_bytes_per_s : s->pools[i].reads_per_s;
		w += bytes ? s->pools[i].write_bytes_per_s : s->pools[i].writes_per_s;
	}
	put_parts(e, drill, "read", r, "write", w);
	for (int i = 0; drill == 1 && i < s->npools; i++) {
		const struct pool_sample *p = &s->pools[i];
		put(e, p->name,
		    bytes ? p->read_bytes_per_s + p->write_bytes_per_s
		          : p->reads_per_s + p->writes_per_s);
	}
}

static void x_zpool_ops(const struct box_sample *s, int drill, struct emit *e)
{
	pool_io(s, drill, false, e);
}

static void x_zpool_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	pool_io(s, drill, true, e);
}

/* The pools' vdev operations as zpool iostat counts them: the total is what total_wait
 * timed; broken down by one of its waits (a heat map of power-of-two latency ranges) or by
 * size (the requests ZFS issued, individual and aggregated). [op=read] keeps a direction. */
static void x_zpool_vdev_ops(const struct box_sample *s, int drill, struct emit *e)
{
	const struct zpoolhist_counts *c = s->have_zpoolhist ? zpoolhist_get() : NULL;
	if (!c)
		return;
	bool latency = drill < ZH_WAITS;
	unsigned n = latency ? ZPOOLHIST_LAT_BUCKETS : ZPOOLHIST_SIZE_BUCKETS;
	double all = 0, v[ZPOOLHIST_LAT_BUCKETS] = {0};
	for (int d = 0; d < 2; d++) {
		if (e->dir >= 0 && d != e->dir)
			continue;
		for (unsigned b = 0; b < ZPOOLHIST_LAT_BUCKETS; b++)
			all += c->lat[ZH_TOTAL][d][b];
		for (unsigned b = 0; drill >= 0 && b < n; b++)
			v[b] += latency ? c->lat[drill][d][b] : c->size[d][b];
	}
	put(e, NULL, all);
	for (unsigned b = 0; drill >= 0 && b < n; b++) {
		char key[48];
		zpoolhist_key(latency, b, key, sizeof(key));
		if (v[b] > 0)
			put(e, key, v[b]);
	}
}

/* iSCSI's or Fibre Channel's commands or bytes per second, from LIO's counters: the total
 * over the targets' LUNs; by initiator (each its commands to every target), by target or
 * by LUN ("TARGET/lun_0"); bytes also by op. Entries come sorted (procfs.h), so a target's
 * LUNs and an initiator's targets stand together and each key is put once. */
enum lio_drill { LIO_BY_OP, LIO_BY_INITIATOR, LIO_BY_TARGET, LIO_BY_LUN, LIO_TOTAL };

static double lio_value(const struct lio_sample *l, bool bytes)
{
	return bytes ? l->read_bytes_per_s + l->write_bytes_per_s : l->ops_per_s;
}

static void lio_values(const struct box_sample *s, enum lio_fabric fab, enum lio_drill by,
                       bool bytes, struct emit *e)
{
	if (!s->have_lio[fab])
		return;
	double r = 0, w = 0, all = 0;
	for (int i = 0; i < s->nlio; i++)
		if (s->lio[i].fabric == fab && !s->lio[i].initiator) {
			r += s->lio[i].read_bytes_per_s;
			w += s->lio[i].write_bytes_per_s;
			all += lio_value(&s->lio[i], bytes);
		}
	if (by == LIO_BY_OP) {
		put_parts(e, 0, "read", r, "write", w);
		return;
	}
	put(e, NULL, all);
	if (by == LIO_TOTAL)
		return;
	bool initiators = by == LIO_BY_INITIATOR;
	for (int i = 0; i < s->nlio;) {
		const struct lio_sample *l = &s->lio[i];
		if (l->fabric != fab || l->initiator != initiators) {
			i++;
		} else if (by == LIO_BY_LUN) {
			char key[256];
			snprintf(key, sizeof(key), "%s/%s", l->target, l->lun);
			put(e, key, lio_value(l, bytes));
			i++;
		} else { /* a run of the same initiator, or the same target */
			const char *name = initiators ? l->who : l->target;
			double sum = 0;
			for (; i < s->nlio && s->lio[i].fabric == fab &&
			       s->lio[i].initiator == initiators &&
			       strcmp(initiators ? s->lio[i].who : s->lio[i].target, name) == 0;
			     i++)
				sum += lio_value(&s->lio[i], bytes);
			put(e, name, sum);
		}
	}
}

/* ops: by initiator, target, lun; bytes: by op, initiator, target, lun */
static void x_iscsi_ops(const struct box_sample *s, int drill, struct emit *e)
{
	lio_values(s, LIO_ISCSI, drill < 0 ? LIO_TOTAL : (enum lio_drill)(drill + 1), false, e);
}

static void x_iscsi_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	lio_values(s, LIO_ISCSI, drill < 0 ? LIO_TOTAL : (enum lio_drill)drill, true, e);
}

static void x_fc_ops(const struct box_sample *s, int drill, struct emit *e)
{
	lio_values(s, LIO_FC, drill < 0 ? LIO_TOTAL : (enum lio_drill)(drill + 1), false, e);
}

static void x_fc_bytes(const struct box_sample *s, int drill, struct emit *e)
{
	lio_values(s, LIO_FC, drill < 0 ? LIO_TOTAL : (enum lio_drill)drill, true, e);
}

/* The running benchmark jobs (filled in by the job supervisor through collector_set_fill()):
 * operations per second summed over the jobs; 0 while none runs, like io.ops of an idle box. */
static void x_bench_ops(const struct box_sample *s, int drill, struct emit *e)
{
	put_parts(e, drill, "read", s->bench_ops_per_s[0], "write", s->bench_ops_per_s[1]);
}

/* The jobs' mean latency, weighted by operations; as io.latency, a second (or direction)
 * without operations has no value, so idle time does not drag the means down. */
static void x_bench_latency(const struct box_sample *s, int drill, struct emit *e)
{
	const double *ops = s->bench_ops_per_s, *ms = s->bench_latency_ms;
	if (ops[0] + ops[1] > 0)
		put(e, NULL, (ops[0] * ms[0] + ops[1] * ms[1]) / (ops[0] + ops[1]));
	if (drill == 0 && ops[0] > 0)
		put(e, "read", ms[0]);
	if (drill == 0 && ops[1] > 0)
		put(e, "write", ms[1]);
}

static const struct statistic statistics[] = {
    {"cpu.utilization",
     "CPU: percent utilization",
     "CPU",
     "CPU: percent of the CPUs' time not idle; broken down by mode, the share of each mode "
     "(idle included) over all CPUs, by cpu, each CPU's own (keyed by its number), or by "
     "utilization, the appliance's heat map: how many CPUs were that busy, for each 5 % of the "
     "second (\"0-5\" .. \"95-100\")",
     "percent",
     {"mode", "cpu", "utilization"},
     x_cpu,
     false},
    {"io.ops",
     "Disk: I/O operations per second",
     "Disk",
     "Disk: I/O operations per second completed, by type of operation (read, write, and "
     "where the kernel counts them apart, discard and flush) or by disk (partitions, loop, "
     "ram and zram devices left out unless configured); where the eBPF helper runs "
     "(spindle-iolat), also as heat maps of the operations completed each second by latency "
     "(keys: ranges of nanoseconds from the request's start to its completion, \"1024-1280\", "
     "4 to a power of two), by size (ranges of bytes, a power of two each) and by offset "
     "(where on the device they started, in 64ths of its capacity: \"0-1\" .. \"63-64\")",
     "operations per second",
     {"op", "disk", "latency", "size", "offset"},
     x_io_ops,
     true},
    {"io.bytes",
     "Disk: I/O bytes per second",
     "Disk",
     "Disk: bytes per second read and written, by operation or by disk",
     "bytes per second",
     {"op", "disk"},
     x_io_bytes,
     true},
    {"io.latency",
     "Disk: mean latency per operation",
     "Disk",
     "Disk: mean milliseconds per completed operation, from the kernel's time spent on reads "
     "and writes; a second without operations has no value",
     "milliseconds",
     {"op", "disk"},
     x_io_latency,
     true},
    {"io.disks",
     "Disk: disks",
     "Disk",
     "Disk: the disks, broken down by utilization as the appliance's heat map: how many disks "
     "were busy (had I/O in flight) for each 5 % of the second, keyed by the range (\"0-5\" .. "
     "\"95-100\"; a share without disks has no key); the value is the number of disks",
     "disks",
     {"utilization"},
     x_io_disks,
     false},
    {"io.busy",
     "Disk: percent of the time busy",
     "Disk",
     "Disk: percent of the time each disk was busy (had I/O in flight), by disk; the value is "
     "the busiest disk's",
     "percent",
     {"disk"},
     x_io_busy,
     true},
    {"io.queue",
     "Disk: requests in flight",
     "Disk",
     "Disk: mean number of requests in flight, in total and by disk",
     "requests",
     {"disk"},
     x_io_queue,
     true},
    {"disk.temperature",
     "Disk: temperature",
     "Disk",
     "Disk: each disk's temperature from its SMART or NVMe health log, read every "
     "--smart-interval (the value kept between readings), by disk; the value is the hottest "
     "disk's",
     "degrees Celsius",
     {"disk"},
     x_disk_temperature,
     false},
    {"nic.kilobytes",
     "Network: device kilobytes per second",
     "Network",
     "Network: kilobytes (1024 bytes) per second received (in) and sent (out), by direction "
     "or by device; the loopback device is left out",
     "kilobytes per second",
     {"direction", "device"},
     x_nic_kb,
     false},
    {"mem.bytes",
     "Memory: physical memory",
     "Memory",
     "Memory: bytes of physical memory; the value is the total, broken down into used (by "
     "programs), kernel (the kernel's own: unreclaimable slab, kernel stacks and page tables), "
     "arc (the ZFS ARC; the kernel counts it and its own as used: both apart), cache (page "
     "cache and reclaimable slab), buffers and free",
     "bytes",
     {"component"},
     x_mem,
     false},
    {"psi.some",
     "Pressure: percent of the time tasks stalled",
     "Pressure",
     "Pressure stall information: percent of the time at least one task stalled on the CPU, "
     "I/O or memory; the value is the worst of the three",
     "percent",
     {"resource"},
     x_psi,
     false},
    {"arc.accesses",
     "Cache: ARC accesses per second",
     "Cache",
     "ZFS ARC: accesses per second, broken down by hit/miss into data hits, data misses, "
     "metadata hits, metadata misses and the same for prefetches (prefetch data hits ...), "
     "and on OpenZFS 2.2 and later their I/O hits (data iohits ...: found while the read was "
     "still in flight)",
     "accesses per second",
     {"hit/miss"},
     x_arc_accesses,
     false},
    {"arc.hitratio",
     "Cache: ARC hit ratio",
     "Cache",
     "ZFS ARC: percent of the accesses served from the ARC, hits over all accesses (I/O hits "
     "and misses included), as arcstat's hit%; no value in a second without accesses",
     "percent",
     {NULL},
     x_arc_hitratio,
     false},
    {"arc.target",
     "Cache: ARC target size",
     "Cache",
     "ZFS ARC: the size the ARC aims at (c), broken down by its bounds (min, max: c_min, "
     "c_max)",
     "bytes",
     {"bound"},
     x_arc_target,
     false},
    {"arc.l2_accesses",
     "Cache: L2ARC accesses per second",
     "Cache",
     "ZFS L2ARC: accesses per second to the cache devices, broken down by hit/miss into hits "
     "and misses (0 without a cache device)",
     "accesses per second",
     {"hit/miss"},
     x_arc_l2_accesses,
     false},
    {"arc.l2_size",
     "Cache: L2ARC size",
     "Cache",
     "ZFS L2ARC: bytes the cache devices hold (the logical size of what they cache)",
     "bytes",
     {NULL},
     x_arc_l2_size,
     false},
    {"arc.l2_bytes",
     "Cache: L2ARC bytes per second",
     "Cache",
     "ZFS L2ARC: bytes per second read from and written to the cache devices, by operation",
     "bytes per second",
     {"op"},
     x_arc_l2_bytes,
     false},
    {"arc.size",
     "Cache: ARC size",
     "Cache",
     "ZFS ARC: bytes the ARC holds, broken down into cached data, metadata and other (headers, "
     "dbufs, dnodes)",
     "bytes",
     {"component"},
     x_arc_size,
     false},
    {"nfs3.ops",
     "Protocol: NFSv3 operations per second",
     "Protocol",
     "NFSv3: operations per second the box's NFS server answered, by type of operation "
     "(getattr, lookup, read, write ...), from /proc/net/rpc/nfsd",
     "operations per second",
     {"op"},
     x_nfs3_ops,
     false},
    {"nfs4.ops",
     "Protocol: NFSv4 operations per second",
     "Protocol",
     "NFSv4: operations per second the box's NFS server answered (every minor version; each "
     "operation of a compound counts), by type of operation (sequence, putfh, read, write "
     "...), from /proc/net/rpc/nfsd",
     "operations per second",
     {"op"},
     x_nfs4_ops,
     false},
    {"smb.ops",
     "Protocol: SMB operations per second",
     "Protocol",
     "SMB: SMB1 requests per second the box's Samba answered, by type of operation as Samba "
     "names its calls (ntcreateX, readX, writeX, close, trans2 ...), from smbstatus --profile "
     "(smb.conf must set \"smbd profiling level = count\"); listed once it gives counters",
     "operations per second",
     {"op"},
     x_smb_ops,
     false},
    {"smb2.ops",
     "Protocol: SMB2 operations per second",
     "Protocol",
     "SMB2: SMB2 and SMB3 requests per second the box's Samba answered (every dialect: "
     "Samba counts them together), by type of operation (create, read, write, close, "
     "getinfo, find, ioctl ...), from smbstatus --profile, run each second while such a "
     "dataset is collected",
     "operations per second",
     {"op"},
     x_smb2_ops,
     false},
    {"iscsi.ops",
     "Protocol: iSCSI operations per second",
     "Protocol",
     "iSCSI: SCSI commands per second the box's iSCSI targets (LIO) received, by initiator "
     "(its name), by target (its IQN) or by LUN (\"TARGET/lun_0\"), from the targets' "
     "statistics in configfs; listed once the box serves iSCSI",
     "operations per second",
     {"initiator", "target", "lun"},
     x_iscsi_ops,
     false},
    {"iscsi.bytes",
     "Protocol: iSCSI bytes per second",
     "Protocol",
     "iSCSI: bytes per second read and written through the box's iSCSI targets (LIO counts "
     "whole MiB: a second's value is a multiple of 1048576), by op (read, write), initiator, "
     "target or LUN",
     "bytes per second",
     {"op", "initiator", "target", "lun"},
     x_iscsi_bytes,
     false},
    {"fc.ops",
     "Protocol: Fibre Channel operations per second",
     "Protocol",
     "Fibre Channel: SCSI commands per second the box's FC targets (LIO: qla2xxx, tcm_fc, "
     "efct) received, by initiator (its WWN), target (its WWN) or LUN; listed once the box "
     "serves FC",
     "operations per second",
     {"initiator", "target", "lun"},
     x_fc_ops,
     false},
    {"fc.bytes",
     "Protocol: Fibre Channel bytes per second",
     "Protocol",
     "Fibre Channel: bytes per second read and written through the box's FC targets (whole "
     "MiB, as LIO counts them), by op (read, write), initiator, target or LUN",
     "bytes per second",
     {"op", "initiator", "target", "lun"},
     x_fc_bytes,
     false},
    {"zpool.vdev_ops",
     "Disk: ZFS vdev I/O operations per second",
     "Disk",
     "Disk: I/O operations per second the ZFS pools' vdevs completed, as zpool iostat counts "
     "them (every pool; the eBPF helper's io.ops[latency] needs no ZFS), broken down as heat "
     "maps by latency, a power of two each in nanoseconds (\"1024-2048\"), of one of its "
     "waits: total_wait (in ZFS's queues and on the disk), disk_wait (on the disk), "
     "syncq_wait and asyncq_wait (in the sync and async queues); or by size, the requests "
     "ZFS issued, individual and aggregated (\"4096-8192\" bytes); [op=read] or [op=write] "
     "keeps one direction. Read by running zpool iostat -w and -r each second while such a "
     "dataset is collected",
     "operations per second",
     {"total_wait", "disk_wait", "syncq_wait", "asyncq_wait", "size"},
     x_zpool_vdev_ops,
     false},
    {"ip.bytes",
     "Network: IP bytes per second",
     "Network",
     "Network: IP bytes per second received (in) and sent (out), IPv4 and IPv6 together, "
     "headers included, by direction (from /proc/net/netstat and /proc/net/snmp6)",
     "bytes per second",
     {"direction"},
     x_ip_bytes,
     false},
    {"ip.packets",
     "Network: IP packets per second",
     "Network",
     "Network: IP packets per second received (in) and sent (out), IPv4 and IPv6 together, by "
     "direction (from /proc/net/snmp and /proc/net/snmp6)",
     "packets per second",
     {"direction"},
     x_ip_packets,
     false},
    {"tcp.packets",
     "Network: TCP packets per second",
     "Network",
     "Network: TCP segments per second received (in) and sent (out), IPv4 and IPv6 together, "
     "by direction; retransmissions are among those sent",
     "packets per second",
     {"direction"},
     x_tcp_packets,
     false},
    {"tcp.retransmits",
     "Network: TCP retransmissions per second",
     "Network",
     "Network: TCP segments retransmitted per second, IPv4 and IPv6 together",
     "packets per second",
     {NULL},
     x_tcp_retransmits,
     false},
    {"zpool.ops",
     "Disk: ZFS logical I/O operations per second",
     "Disk",
     "Disk: ZFS logical I/O operations per second, what the pools' filesystems and volumes "
     "were asked to read and write before the ARC and the disks, by type of operation (read, "
     "write) or by pool (from each dataset's objset kstat, read only while such a dataset is "
     "collected)",
     "operations per second",
     {"op", "pool"},
     x_zpool_ops,
     false},
    {"zpool.bytes",
     "Disk: ZFS logical I/O bytes per second",
     "Disk",
     "Disk: ZFS logical I/O bytes per second, read and written through the pools' filesystems "
     "and volumes, by type of operation (read, write) or by pool",
     "bytes per second",
     {"op", "pool"},
     x_zpool_bytes,
     false},
    {"bench.ops",
     "Benchmark: operations per second",
     "Benchmark",
     "Benchmark: operations per second the running benchmark jobs complete, from each job's "
     "newest interval line, summed over the jobs, by direction (read, write); always listed, "
     "0 while no job runs",
     "operations per second",
     {"direction"},
     x_bench_ops,
     false},
    {"bench.latency",
     "Benchmark: mean latency per operation",
     "Benchmark",
     "Benchmark: the running jobs' mean milliseconds per operation, from each job's newest "
     "interval line (the mean of that second, not a percentile), weighted by the jobs' "
     "operations, by direction (read, write); always listed, no value while no job runs or a "
     "direction has no operations",
     "milliseconds",
     {"direction"},
     x_bench_latency,
     false},
};

static const struct statistic *statistic_find(const char *name)
{
	for (size_t i = 0; i < nitems(statistics); i++)
		if (strcmp(statistics[i].name, name) == 0)
			return &statistics[i];
	return NULL;
}

static int drilldown_index(const struct statistic *st, const char *drill)
{
	for (int i = 0; st->drilldowns[i]; i++)
		if (strcmp(st->drilldowns[i], drill) == 0)
			return i;
	return -1;
}

/* A drilldown only the eBPF helper feeds (io.ops[latency], [size], [offset]). */
static bool drill_from_helper(const struct statistic *st, int drill)
{
	return st->extract == x_io_ops && drill >= DRILL_LATENCY;
}

bool datasets_drilldown_offered(const char *statistic, const char *drilldown)
{
	const struct statistic *st = statistic_find(statistic);
	int drill = st ? drilldown_index(st, drilldown) : -1;
	return drill >= 0 && (!drill_from_helper(st, drill) || iohist_available(NULL, 0));
}

/* --- filters: a dataset kept to one disk, or one direction of the helper's histograms */

/* As the appliance names such a dataset, statistic[k=v]...[drilldown]:
 * "io.ops[disk=sda][latency]", "io.ops[op=read][latency]". */
struct dfilter {
	char disk[32]; /* "": every disk */
	int op;        /* -1: both; else the helper's direction (0 read, 1 write) */
};

static const char *const op_names[IOLAT_DIRS] = {"read", "write"};

/* Splits name into its statistic, filters and drilldown ("" for none): the statistic up to
 * the first '[', then bracketed parts, each k=v a filter (disk, op; once each), the last
 * one without '=' the drilldown. -1 with f naming what is wrong. */
static int name_parse(const char *name, char *stat, size_t slen, struct dfilter *flt, char *drill,
                      size_t dlen, struct fault *f)
{
	memset(flt, 0, sizeof(*flt));
	flt->op = -1;
	drill[0] = '\0';
	size_t n = strcspn(name, "[");
	if (n == 0 || n >= slen)
		return fault_set(f, ERR_INVALID_ARG, "statistic: '%.64s' names no statistic", name);
	snprintf(stat, slen, "%.*s", (int)n, name);
	for (const char *p = name + n; *p;) {
		const char *end = strchr(p, ']');
		size_t len = end ? (size_t)(end - p - 1) : 0;
		if (*p != '[' || !end || !len || memchr(p + 1, '[', len) || drill[0])
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "statistic: '%.96s' is not statistic[filter=value]...[drilldown]",
			    name);
		const char *eq = memchr(p + 1, '=', len);
		if (!eq) {
			if (len >= dlen)
				return fault_set(f, ERR_INVALID_ARG, "drilldown: too long");
			snprintf(drill, dlen, "%.*s", (int)len, p + 1);
		} else {
			size_t klen = (size_t)(eq - p - 1), vlen = len - klen - 1;
			if (klen == 4 && strncmp(p + 1, "disk", 4) == 0 && !flt->disk[0] && vlen &&
			    vlen < sizeof(flt->disk)) {
				snprintf(flt->disk, sizeof(flt->disk), "%.*s", (int)vlen, eq + 1);
			} else if (klen == 2 && strncmp(p + 1, "op", 2) == 0 && flt->op < 0) {
				for (int d = 0; d < IOLAT_DIRS; d++)
					if (strlen(op_names[d]) == vlen &&
					    strncmp(eq + 1, op_names[d], vlen) == 0)
						flt->op = d;
				if (flt->op < 0)
					return fault_set(
					    f, ERR_INVALID_ARG,
					    "statistic: [op=%.*s]: op is read or write", (int)vlen,
					    eq + 1);
			} else {
				return fault_set(
				    f, ERR_INVALID_ARG,
				    "statistic: [%.*s]: a dataset may be kept to one disk "
				    "([disk=NAME]) and to one op of io.ops's latency, size "
				    "and offset ([op=read|write]), each once",
				    (int)len, p + 1);
			}
		}
		p = end + 1;
	}
	return 0;
}

/* The canonical name: statistic, [disk=X], [op=Y], [drilldown]. */
static void name_make(char *out, size_t len, const char *stat, const struct dfilter *flt,
                      const char *drill)
{
	int n = snprintf(out, len, "%s", stat);
	if (flt->disk[0] && n >= 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, "[disk=%s]", flt->disk);
	if (flt->op >= 0 && n >= 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, "[op=%s]", op_names[flt->op]);
	if (drill && drill[0] && n >= 0 && (size_t)n < len)
		snprintf(out + n, len - (size_t)n, "[%s]", drill);
}

/* --- the catalog */

struct dkey {
	struct series *s;
};

struct dataset {
	int64_t id;
	char name[DB_DATASET_NAME_MAX + 1];
	const struct statistic *stat;
	int drill; /* index in stat->drilldowns, -1: none */
	struct dfilter flt;
	bool suspended;
	int64_t ctime;
	struct series *total;
	struct series **keys; /* one per drilldown key, in the order they appeared */
	size_t nkeys, keys_cap;
	struct hmap key_at; /* a key's place in keys: a box's first second brings thousands */
};

static struct {
	struct db *db;
	struct dataset **all;
	size_t n, cap;
	bool arc_created;  /* the ARC datasets were made once: deleting them is for good */
	bool l2_created;   /* and the L2ARC's, which came later */
	bool nfs_created;  /* the NFS server's, once nfsd was seen */
	bool temp_created; /* disk.temperature[disk], once a disk gave its temperature */
	bool smb_created;  /* Samba's, once smbstatus gave its counters */
	bool lio_created[LIO_FABRICS]; /* iSCSI's and FC's, once a target was seen */
	struct series_retention ret;
} datasets;

static void add_key(void *arg, struct series *s)
{
	struct dataset *d = arg;
	if (!series_key(s)[0])
		return;
	d->keys = util_grow(d->keys, &d->keys_cap, d->nkeys, sizeof(*d->keys));
	hmap_index_put(&d->key_at, series_key(s), d->nkeys);
	d->keys[d->nkeys++] = s;
}

static struct dataset *dataset_add(const struct db_dataset *row, const struct statistic *st,
                                   int drill, const struct dfilter *flt)
{
	struct dataset *d = xcalloc(1, sizeof(*d));
	d->id = row->id;
	snprintf(d->name, sizeof(d->name), "%s", row->name);
	d->stat = st;
	d->drill = drill;
	d->flt = *flt;
	d->suspended = row->suspended;
	d->ctime = row->ctime;
	d->total = series_open(d->id, "");
	series_each(d->id, add_key, d); /* keys seen before, vanished disks included */
	datasets.all = util_grow(datasets.all, &datasets.cap, datasets.n, sizeof(*datasets.all));
	datasets.all[datasets.n++] = d;
	return d;
}

static void dataset_free(struct dataset *d)
{
	hmap_clear(&d->key_at, NULL);
	free(d->keys);
	free(d);
}

struct catalog_ids {
	int64_t *ids;
	size_t n, cap;
};

static int load_dataset(void *arg, const struct db_dataset *row)
{
	/* Every row's id, known or not: series of a dataset this build cannot collect (a
	 * newer one made it) keep their data. */
	struct catalog_ids *c = arg;
	c->ids = util_grow(c->ids, &c->cap, c->n, sizeof(*c->ids));
	c->ids[c->n++] = row->id;
	const struct statistic *st = statistic_find(row->statistic);
	int drill = row->drilldown[0] && st ? drilldown_index(st, row->drilldown) : -1;
	/* the filters are in the name only */
	char stat[64], dname[64];
	struct dfilter flt;
	struct fault f;
	if (!st || (row->drilldown[0] && drill < 0) ||
	    name_parse(row->name, stat, sizeof(stat), &flt, dname, sizeof(dname), &f) < 0 ||
	    strcmp(stat, row->statistic) != 0 || strcmp(dname, row->drilldown) != 0) {
		log_warn("datasets: %s: unknown statistic, filter or drilldown; not collected",
		         row->name);
		return 0;
	}
	dataset_add(row, st, drill, &flt);
	return 0;
}

struct dataset *datasets_find(const char *name)
{
	for (size_t i = 0; i < datasets.n; i++)
		if (strcmp(datasets.all[i]->name, name) == 0)
			return datasets.all[i];
	if (!strchr(name, '|'))
		return NULL;
	char alt[DB_DATASET_NAME_MAX + 1];
	snprintf(alt, sizeof(alt), "%s", name);
	for (char *p = alt; *p; p++)
		if (*p == '|')
			*p = '/';
	return datasets_find(alt);
}

struct dataset *datasets_find_id(int64_t id)
{
	for (size_t i = 0; i < datasets.n; i++)
		if (datasets.all[i]->id == id)
			return datasets.all[i];
	return NULL;
}

void datasets_each(void (*cb)(void *arg, struct dataset *d), void *arg)
{
	for (size_t i = 0; i < datasets.n; i++)
		cb(arg, datasets.all[i]);
}

/* How a title says a drilldown: "broken down by type of operation". */
static const char *drill_phrase(const char *drill)
{
	static const char *const words[][2] = {
	    {"op", "type of operation"},
	    {"mode", "CPU mode"},
	    {"cpu", "CPU"},
	    {"lun", "LUN"},
	    {"total_wait", "total wait"},
	    {"disk_wait", "disk wait"},
	    {"syncq_wait", "sync queue wait"},
	    {"asyncq_wait", "async queue wait"},
	};
	for (size_t i = 0; i < nitems(words); i++)
		if (strcmp(drill, words[i][0]) == 0)
			return words[i][1];
	return drill;
}

void datasets_title(const struct dataset *d, char *buf, size_t len)
{
	/* a heat map of shares counts the things, not the statistic's percent */
	static const char *const shares[][2] = {
	    {"cpu.utilization", "CPU: CPUs broken down by percent utilization"},
	    {"io.disks", "Disk: disks broken down by percent utilization"},
	};
	const char *drill = d->drill >= 0 ? d->stat->drilldowns[d->drill] : NULL;
	size_t n = 0;
	for (size_t i = 0; drill && strcmp(drill, "utilization") == 0 && i < nitems(shares); i++)
		if (strcmp(d->stat->name, shares[i][0]) == 0)
			n = (size_t)snprintf(buf, len, "%s", shares[i][1]);
	if (n == 0)
		n = (size_t)snprintf(buf, len, "%s", d->stat->title);
	else
		drill = NULL;
	if (drill && n < len)
		n += (size_t)snprintf(buf + n, len - n, " broken down by %s", drill_phrase(drill));
	if (d->flt.disk[0] && n < len)
		n += (size_t)snprintf(buf + n, len - n, ", of disk %s", d->flt.disk);
	if (d->flt.op >= 0 && n < len)
		snprintf(buf + n, len - n, ", %ss only", op_names[d->flt.op]);
}

void datasets_info(const struct dataset *d, struct dataset_info *out)
{
	memset(out, 0, sizeof(*out));
	out->id = d->id;
	out->name = d->name;
	out->statistic = d->stat->name;
	out->drilldown = d->drill >= 0 ? d->stat->drilldowns[d->drill] : NULL;
	out->grouping = d->stat->grouping;
	out->title = d->stat->title;
	out->explanation = d->stat->explanation;
	out->unit = d->stat->unit;
	out->drilldowns = d->stat->drilldowns;
	out->suspended = d->suspended;
	out->ctime = d->ctime;
	out->nkeys = d->nkeys;
	out->incore_bytes =
	    (int64_t)(sizeof(*d) + d->keys_cap * sizeof(*d->keys)) + series_incore_bytes(d->total);
	out->ondisk_bytes = series_disk_bytes(d->total);
	for (size_t i = 0; i < d->nkeys; i++) {
		out->incore_bytes += series_incore_bytes(d->keys[i]);
		out->ondisk_bytes += series_disk_bytes(d->keys[i]);
	}
}

size_t datasets_series(const struct dataset *d, struct series ***out)
{
	struct series **s = xcalloc(d->nkeys + 1, sizeof(*s));
	s[0] = d->total;
	/* keys is NULL until a first key appears (never, for a dataset without drilldown). */
	if (d->nkeys)
		memcpy(s + 1, d->keys, d->nkeys * sizeof(*s));
	for (size_t i = 0; i <= d->nkeys; i++)
		series_ref(s[i]);
	*out = s;
	return d->nkeys + 1;
}

void datasets_values(const struct dataset *d, const struct box_sample *s,
                     void (*cb)(void *arg, const char *key, double v), void *arg)
{
	struct emit e = {cb, arg, d->flt.op};
	if (!d->flt.disk[0]) {
		d->stat->extract(s, d->drill, &e);
		return;
	}
	/* the sample as if the disk were the box's only one; none while it is not there */
	struct box_sample one = *s;
	one.ndisks = 0;
	for (int i = 0; i < s->ndisks && !one.ndisks; i++)
		if (strcmp(s->disks[i].name, d->flt.disk) == 0) {
			one.disks = &s->disks[i];
			one.ndisks = 1;
		}
	if (one.ndisks)
		d->stat->extract(&one, d->drill, &e);
}

/* --- every second */

struct ingest {
	struct dataset *d;
	int64_t t;
	size_t next; /* where the next key is likely: the kernel lists devices in order */
	bool late;   /* after series_commit(t): series_put_late */
};

static void ingest_put(const struct ingest *g, struct series *s, double v)
{
	if (g->late)
		series_put_late(s, g->t, v);
	else
		series_put(s, g->t, v);
}

static void ingest_value(void *arg, const char *key, double v)
{
	struct ingest *g = arg;
	struct dataset *d = g->d;
	if (!key) {
		ingest_put(g, d->total, v);
		return;
	}
	/* Each second's keys come in the order of the last: the next one is tried first. */
	size_t i = g->next;
	if (i >= d->nkeys || strcmp(series_key(d->keys[i]), key) != 0) {
		long at = hmap_index_get(&d->key_at, key);
		if (at < 0) { /* a disk appeared: its series starts now, the last key */
			size_t n = d->nkeys;
			add_key(d, series_open(d->id, key));
			if (d->nkeys == n)
				return;
			at = (long)n;
		}
		i = (size_t)at;
	}
	g->next = i + 1;
	ingest_put(g, d->keys[i], v);
}

static void create_arc_datasets(void);
static void create_nfs_datasets(void);
static void create_temperature_datasets(void);
static void create_smb_datasets(void);
static void create_lio_datasets(enum lio_fabric f);

/* The helper streams while a dataset it feeds is collected, and only then; so are the
 * pools' objset kstats read. */
static void helper_want(void)
{
	bool want = false, pools = false, lio = false, vdevs = false, smb = false;
	for (size_t i = 0; i < datasets.n; i++) {
		const struct dataset *d = datasets.all[i];
		if (d->suspended)
			continue;
		want |= drill_from_helper(d->stat, d->drill);
		pools |= d->stat->extract == x_zpool_ops || d->stat->extract == x_zpool_bytes;
		vdevs |= d->stat->extract == x_zpool_vdev_ops;
		smb |= d->stat->extract == x_smb_ops || d->stat->extract == x_smb2_ops;
		lio |= d->stat->extract == x_iscsi_ops || d->stat->extract == x_iscsi_bytes ||
		       d->stat->extract == x_fc_ops || d->stat->extract == x_fc_bytes;
	}
	iohist_want(IOHIST_FOR_DATASETS, want);
	collector_want_pools(pools);
	collector_want_lio(lio);
	zpoolhist_want(vdevs);
	smbstat_want(smb);
}

static void datasets_tick(void *arg, const struct box_sample *s)
{
	if (s->have_arc && (!datasets.arc_created || !datasets.l2_created))
		create_arc_datasets();
	if (!datasets.temp_created && smart_have_temperature())
		create_temperature_datasets();
	if ((s->have_nfs3 || s->have_nfs4) && !datasets.nfs_created)
		create_nfs_datasets();
	if (s->smb_served && !datasets.smb_created)
		create_smb_datasets();
	for (int f = 0; f < LIO_FABRICS; f++)
		if (s->have_lio[f] && !datasets.lio_created[f])
			create_lio_datasets(f);
	/* The sample ends at s->time: it is the second that starts a second before. */
	int64_t t = s->time - 1;
	for (size_t i = 0; i < datasets.n; i++) {
		struct dataset *d = datasets.all[i];
		if (d->suspended)
			continue;
		struct ingest g = {d, t, 0, false};
		datasets_values(d, s, ingest_value, &g);
	}
	series_commit(t);
}

/* --- catalog changes */

/* The row of a dataset, named as the appliance names it. */
static void row_make(struct db_dataset *row, const struct statistic *st, int drill,
                     const struct dfilter *flt)
{
	*row = (struct db_dataset){0};
	name_make(row->name, sizeof(row->name), st->name, flt,
	          drill >= 0 ? st->drilldowns[drill] : NULL);
	snprintf(row->statistic, sizeof(row->statistic), "%s", st->name);
	snprintf(row->drilldown, sizeof(row->drilldown), "%s",
	         drill >= 0 ? st->drilldowns[drill] : "");
}

static int dataset_insert(const struct statistic *st, int drill, const struct dfilter *flt,
                          struct dataset **out, struct fault *f)
{
	struct db_dataset row;
	row_make(&row, st, drill, flt);
	if (datasets_find(row.name))
		return fault_set(f, ERR_OBJECT_EXISTS, "name: %s exists", row.name);
	int rc = db_dataset_insert(datasets.db, &row);
	if (rc == DB_EXISTS)
		return fault_set(f, ERR_OBJECT_EXISTS, "name: %s exists", row.name);
	if (rc != 0)
		return fault_store(f, db_full(datasets.db), "dataset");
	struct dataset *d = dataset_add(&row, st, drill, flt);
	if (out)
		*out = d;
	return 0;
}

struct dataset_spec {
	const char *statistic;
	int drill; /* -1: none */
};

#define GROUP_MAX 8

/* A group of datasets made once (see create_group): its rows as the loop named them, what
 * the writer made of each, and the setting that says the group was made. */
struct group {
	const char *setting, *what;
	size_t n;
	bool noted;
	struct {
		const struct statistic *st;
		int drill;
		int rc; /* 0: inserted; DB_EXISTS: there already */
		struct db_dataset row;
	} item[GROUP_MAX];
};

/* On the database writer's connection (or the loop's at start-up). */
static void group_write(struct db *db, void *arg)
{
	struct group *g = arg;
	for (size_t i = 0; i < g->n; i++)
		g->item[i].rc = db_dataset_insert(db, &g->item[i].row);
	int64_t one = 1;
	g->noted = db_analytics_settings_set(db, &g->setting, &one, 1) == 0;
}

/* On the loop: the rows written are collected from now on. After datasets_shutdown (the
 * writer drains after it) they are left to the next start, which loads them. */
static void group_done(void *arg)
{
	struct group *g = arg;
	/* The second that showed the group's need, when it is still the newest: its values
	 * are kept, as they were when the rows were written on the tick. */
	const struct box_sample *s = collector_latest();
	for (size_t i = 0; datasets.db && i < g->n; i++) {
		if (g->item[i].rc == 0) {
			struct dataset *d =
			    dataset_add(&g->item[i].row, g->item[i].st, g->item[i].drill,
			                &(struct dfilter){.op = -1});
			struct ingest late = {d, s ? s->time - 1 : 0, 0, true};
			if (s && late.t == series_newest())
				datasets_values(d, s, ingest_value, &late);
		} else if (g->item[i].rc != DB_EXISTS)
			log_warn("datasets: cannot make %s", g->item[i].row.name);
	}
	if (!g->noted)
		log_warn("datasets: cannot note that the %s datasets exist", g->what);
	if (datasets.db)
		helper_want();
	free(g);
}

/* How long the tick's group waits for another writer's lock on the loop's connection
 * before handing the rest to the database writer: spindled's own writers hold it for
 * milliseconds; another process (an administrator's sqlite3, a backup) may hold it for
 * minutes. */
#define GROUP_LOCK_WAIT_MS 500

/* Makes a group of datasets once: each that is not there (one that is stays), then a note
 * in the settings that the group was made, so that deleting one is for good. In place, so
 * the datasets take the second that showed them; from the tick (in_place false) a lock
 * held past GROUP_LOCK_WAIT_MS hands what is left to the database writer, which waits it
 * out off the loop: those datasets are collected from the second after they are stored. */
static void create_group(const struct dataset_spec *specs, size_t n, const char *setting,
                         const char *what, bool in_place)
{
	struct group *g = xcalloc(1, sizeof(*g));
	assert(n <= GROUP_MAX);
	g->setting = setting;
	g->what = what;
	for (size_t i = 0; i < n; i++) {
		const struct statistic *st = statistic_find(specs[i].statistic);
		row_make(&g->item[g->n].row, st, specs[i].drill, &(struct dfilter){.op = -1});
		if (datasets_find(g->item[g->n].row.name))
			continue;
		g->item[g->n].st = st;
		g->item[g->n].drill = specs[i].drill;
		g->n++;
	}
	if (!in_place)
		db_busy_timeout(datasets.db, GROUP_LOCK_WAIT_MS);
	size_t stored = 0;
	bool locked = false;
	while (stored < g->n) {
		g->item[stored].rc = db_dataset_insert(datasets.db, &g->item[stored].row);
		locked = !in_place && g->item[stored].rc < 0 && db_locked(datasets.db);
		if (locked)
			break; /* this one and the rest go to the writer */
		stored++;
	}
	if (!locked) {
		int64_t one = 1;
		g->noted = db_analytics_settings_set(datasets.db, &g->setting, &one, 1) == 0;
		locked = !in_place && !g->noted && db_locked(datasets.db);
	}
	if (!in_place)
		db_busy_timeout(datasets.db, DB_BUSY_TIMEOUT_MS);
	if (!locked) {
		group_done(g);
		return;
	}
	/* the rows stored are collected now; the rest, and the note, go to the writer */
	struct group *rest = xcalloc(1, sizeof(*rest));
	rest->setting = g->setting;
	rest->what = g->what;
	for (size_t i = stored; i < g->n; i++)
		rest->item[rest->n++] = g->item[i];
	g->n = stored;
	g->noted = true; /* (the writer notes the group) */
	group_done(g);
	log_warn("datasets: the database is locked by another writer; the %s datasets are "
	         "stored when it lets go",
	         what);
	dbw_submit(datasets.db, group_write, group_done, rest);
}

/* What a fresh appliance with an ARC collects: arc.accesses[hit/miss], arc.size and
 * arc.size[component], arc.l2_accesses[hit/miss] and arc.l2_size. Each group once (a box
 * that had the ARC's before the L2ARC's were known gets those at its next start). */
static void create_arc_datasets(void)
{
	static const struct dataset_spec arc[] = {{"arc.accesses", 0},
	                                          {"arc.size", 0},
	                                          {"arc.size", -1}},
	                                 l2[] = {{"arc.l2_accesses", 0}, {"arc.l2_size", -1}};
	if (!datasets.arc_created) {
		datasets.arc_created = true;
		create_group(arc, nitems(arc), "arc_datasets_created", "ARC", false);
		log_info("datasets: ZFS ARC found; collecting arc.accesses[hit/miss] and "
		         "arc.size[component]");
	}
	if (!datasets.l2_created) {
		datasets.l2_created = true;
		create_group(l2, nitems(l2), "arc_l2_datasets_created", "L2ARC", false);
		log_info("datasets: collecting arc.l2_accesses[hit/miss] and arc.l2_size");
	}
}

/* What a fresh appliance serving NFS collects, once the box's NFS server is first seen (a
 * box that serves none does not list them). */
static void create_nfs_datasets(void)
{
	static const struct dataset_spec nfs[] = {
	    {"nfs3.ops", -1}, {"nfs3.ops", 0}, {"nfs4.ops", -1}, {"nfs4.ops", 0}};
	datasets.nfs_created = true;
	create_group(nfs, nitems(nfs), "nfs_datasets_created", "NFS", false);
	log_info("datasets: an NFS server found; collecting nfs3.ops[op] and nfs4.ops[op]");
}

/* The disks' temperatures, once a disk's health reading first gives one. */
static void create_temperature_datasets(void)
{
	static const struct dataset_spec temp[] = {{"disk.temperature", 0}};
	datasets.temp_created = true;
	create_group(temp, nitems(temp), "temperature_datasets_created", "disk temperature", false);
	log_info("datasets: a disk's temperature read; collecting disk.temperature[disk]");
}

/* What a fresh appliance serving SMB collects, once smbstatus first gives Samba's counters:
 * the SMB and SMB2 operations, and each by type of operation. */
static void create_smb_datasets(void)
{
	static const struct dataset_spec smb[] = {
	    {"smb.ops", -1}, {"smb.ops", 0}, {"smb2.ops", -1}, {"smb2.ops", 0}};
	datasets.smb_created = true;
	create_group(smb, nitems(smb), "smb_datasets_created", "SMB", false);
	log_info("datasets: Samba's counters found; collecting smb.ops[op] and smb2.ops[op]");
}

/* What a fresh appliance serving iSCSI (or FC) collects, once the box's first target of
 * that fabric is seen: the commands, by initiator, and the bytes by op. */
static void create_lio_datasets(enum lio_fabric f)
{
	static const struct dataset_spec iscsi[] = {{"iscsi.ops", -1},
	                                            {"iscsi.ops", 0},
	                                            {"iscsi.bytes", 0}},
	                                 fc[] = {{"fc.ops", -1}, {"fc.ops", 0}, {"fc.bytes", 0}};
	datasets.lio_created[f] = true;
	create_group(f == LIO_ISCSI ? iscsi : fc, 3,
	             f == LIO_ISCSI ? "iscsi_datasets_created" : "fc_datasets_created",
	             f == LIO_ISCSI ? "iSCSI" : "Fibre Channel", false);
	log_info("datasets: %s targets found; collecting %s.ops[initiator] and %s.bytes[op]",
	         f == LIO_ISCSI ? "iSCSI" : "Fibre Channel", f == LIO_ISCSI ? "iscsi" : "fc",
	         f == LIO_ISCSI ? "iscsi" : "fc");
}

/* Once, at the first start with them (after series_keep_only, which would purge their
 * new series): listed from then on so worksheets can name them; deleting them is for
 * good, as with the ARC's. */
static void create_bench_datasets(void)
{
	static const struct dataset_spec bench[] = {{"bench.ops", 0}, {"bench.latency", 0}};
	create_group(bench, nitems(bench), "bench_datasets_created", "benchmark", true);
}

/* Once: the undrilled datasets a fresh appliance has (cpu.utilization, io.ops, io.bytes,
 * nic.kilobytes, and arc.size where the ARC was found before: it is last, and otherwise
 * made with the other ARC datasets when the ARC appears), for the clients that poll them
 * by name; deleting them is for good, as with the others. */
static void create_appliance_datasets(void)
{
	static const struct dataset_spec undrilled[] = {{"cpu.utilization", -1},
	                                                {"io.ops", -1},
	                                                {"io.bytes", -1},
	                                                {"nic.kilobytes", -1},
	                                                {"arc.size", -1}};
	size_t n = nitems(undrilled) - (datasets.arc_created ? 0 : 1);
	create_group(undrilled, n, "appliance_datasets_created", "appliance's", true);
}

/* Whether the filters fit the statistic and drilldown: a disk the collector reports (any
 * name before its first sample) of a statistic of the disks not broken down by disk; an op
 * of the helper's histograms. */
static int filter_check(const struct statistic *st, int drill, const struct dfilter *flt,
                        struct fault *f)
{
	if (flt->disk[0]) {
		if (!st->of_disks)
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "statistic: %s cannot be kept to a disk ([disk=...]: io.ops, "
			    "io.bytes, io.latency, io.queue and io.busy can)",
			    st->name);
		if (drill >= 0 && strcmp(st->drilldowns[drill], "disk") == 0)
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "drilldown: %s[disk=%s] is one disk: it has no drilldown by disk",
			    st->name, flt->disk);
		const struct box_sample *s = collector_latest();
		bool known = !s;
		for (int i = 0; s && i < s->ndisks && !known; i++)
			known = strcmp(s->disks[i].name, flt->disk) == 0;
		if (!known) {
			char have[256] = "";
			for (int i = 0; i < s->ndisks && strlen(have) < sizeof(have) - 40; i++)
				snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
				         i ? ", " : "", s->disks[i].name);
			return fault_set(
			    f, ERR_INVALID_ARG,
			    "statistic: [disk=%s]: no such disk among those counted (%s)",
			    flt->disk, have[0] ? have : "none");
		}
	}
	if (flt->op >= 0 && st->extract != x_zpool_vdev_ops &&
	    (drill < 0 || !drill_from_helper(st, drill)))
		return fault_set(f, ERR_INVALID_ARG,
		                 "statistic: [op=%s] keeps io.ops's latency, size or offset (or "
		                 "zpool.vdev_ops) to one direction; %s has none of them",
		                 op_names[flt->op], st->name);
	if (st->extract == x_zpool_vdev_ops && !child_on_path("zpool"))
		return fault_set(f, ERR_INVALID_ARG,
		                 "statistic: %s needs ZFS: no zpool command on spindled's PATH",
		                 st->name);
	if ((st->extract == x_smb_ops || st->extract == x_smb2_ops) && !smbstat_available())
		return fault_set(
		    f, ERR_INVALID_ARG,
		    "statistic: %s needs Samba: no smbstatus command on spindled's PATH "
		    "and no spindle-smbstatus socket",
		    st->name);
	return 0;
}

int datasets_create(const char *name, const char *drilldown, const char *actor, const char *peer,
                    struct dataset **out, struct fault *f)
{
	/* a statistic and a drilldown, or, as the appliance writes it, the whole name */
	char statistic[64], drill_name[64];
	struct dfilter flt;
	if (name_parse(name, statistic, sizeof(statistic), &flt, drill_name, sizeof(drill_name),
	               f) < 0)
		return -1;
	if (drill_name[0] && drilldown)
		return fault_set(f, ERR_INVALID_ARG,
		                 "drilldown: given in statistic already ('%.64s'); leave one out",
		                 name);
	if (drill_name[0])
		drilldown = drill_name;
	const struct statistic *st = statistic_find(statistic);
	if (!st) {
		char have[1024] = "";
		for (size_t i = 0; i < nitems(statistics); i++)
			snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
			         i ? ", " : "", statistics[i].name);
		return fault_set(f, ERR_INVALID_ARG, "statistic: '%.64s' is not one of %s",
		                 statistic, have);
	}
	int drill = -1;
	if (drilldown && (drill = drilldown_index(st, drilldown)) < 0) {
		char have[128] = "";
		for (int i = 0; st->drilldowns[i]; i++)
			if (datasets_drilldown_offered(st->name, st->drilldowns[i]))
				snprintf(have + strlen(have), sizeof(have) - strlen(have), "%s%s",
				         have[0] ? ", " : "", st->drilldowns[i]);
		return fault_set(f, ERR_INVALID_ARG,
		                 "drilldown: %s is broken down by %s, not '%.64s'", st->name, have,
		                 drilldown);
	}
	char why[256];
	if (drill >= 0 && drill_from_helper(st, drill) && !iohist_available(why, sizeof(why)))
		return fault_set(f, ERR_INVALID_ARG,
		                 "drilldown: %s[%s] needs the eBPF helper (spindle-iolat.socket), "
		                 "which cannot serve it: %s",
		                 st->name, st->drilldowns[drill], why);
	if (filter_check(st, drill, &flt, f) < 0)
		return -1;
	int rc = dataset_insert(st, drill, &flt, out, f);
	audit_log(actor, peer, "dataset.create", out && rc == 0 ? (*out)->name : name, rc == 0,
	          "%s", rc == 0 ? "" : f->details);
	if (rc == 0)
		helper_want();
	return rc;
}

int datasets_suspend(struct dataset *d, bool suspended, const char *actor, const char *peer,
                     struct fault *f)
{
	int rc = db_dataset_set_suspended(datasets.db, d->id, suspended);
	if (rc != 0) {
		audit_log(actor, peer, suspended ? "dataset.suspend" : "dataset.resume", d->name,
		          false, "cannot be stored");
		return fault_store(f, db_full(datasets.db), "dataset");
	}
	d->suspended = suspended;
	audit_log(actor, peer, suspended ? "dataset.suspend" : "dataset.resume", d->name, true,
	          "%s", "");
	helper_want();
	return 0;
}

int datasets_delete(struct dataset *d, const char *actor, const char *peer, struct fault *f)
{
	int rc = db_dataset_delete(datasets.db, d->id);
	if (rc != 0 && rc != DB_NOTFOUND) {
		bool full = db_full(datasets.db);
		audit_log(actor, peer, "dataset.delete", d->name, false, "cannot be stored");
		return fault_store(f, full, "dataset");
	}
	audit_log(actor, peer, "dataset.delete", d->name, true, "%s", "");
	size_t i = 0;
	while (i < datasets.n && datasets.all[i] != d)
		i++;
	memmove(&datasets.all[i], &datasets.all[i + 1],
	        (datasets.n - i - 1) * sizeof(*datasets.all));
	datasets.n--;
	int64_t id = d->id;
	dataset_free(d);
	series_drop_dataset(id);
	helper_want();
	return 0;
}

void datasets_retention(struct series_retention *out)
{
	*out = datasets.ret;
}

int datasets_set_retention(const struct series_retention *r, const char *actor, const char *peer,
                           struct fault *f)
{
	static const char *const names[] = {"retain_second_data", "retain_minute_data",
	                                    "retain_hour_data"};
	const int64_t values[] = {r->second_h, r->minute_h, r->hour_h};
	if (db_analytics_settings_set(datasets.db, names, values, 3) < 0) {
		audit_log(actor, peer, "analytics.settings", "", false, "cannot be stored");
		return fault_store(f, db_full(datasets.db), "settings");
	}
	datasets.ret = *r;
	series_retention_set(r);
	audit_log(actor, peer, "analytics.settings", "", true,
	          "retain_second_data=%lld retain_minute_data=%lld retain_hour_data=%lld",
	          (long long)r->second_h, (long long)r->minute_h, (long long)r->hour_h);
	return 0;
}

/* --- start and stop */

static int64_t setting(const char *name, int64_t dflt)
{
	int64_t v;
	return db_analytics_setting_get(datasets.db, name, &v) == 0 ? v : dflt;
}

int datasets_init(struct db *db)
{
	datasets.db = db;
	struct catalog_ids cat = {0};
	if (db_dataset_list(db, load_dataset, &cat) < 0) {
		free(cat.ids);
		return -1;
	}
	datasets.arc_created = setting("arc_datasets_created", 0) != 0;
	datasets.l2_created = setting("arc_l2_datasets_created", 0) != 0;
	datasets.nfs_created = setting("nfs_datasets_created", 0) != 0;
	datasets.temp_created = setting("temperature_datasets_created", 0) != 0;
	datasets.smb_created = setting("smb_datasets_created", 0) != 0;
	datasets.lio_created[LIO_ISCSI] = setting("iscsi_datasets_created", 0) != 0;
	datasets.lio_created[LIO_FC] = setting("fc_datasets_created", 0) != 0;
	datasets.ret.second_h = setting("retain_second_data", 24);
	datasets.ret.minute_h = setting("retain_minute_data", 336);
	datasets.ret.hour_h = setting("retain_hour_data", 8760);
	series_retention_set(&datasets.ret);

	series_keep_only(cat.ids, cat.n);
	free(cat.ids);
	if (!setting("bench_datasets_created", 0))
		create_bench_datasets();
	if (!setting("appliance_datasets_created", 0))
		create_appliance_datasets();
	collector_subscribe(datasets_tick, NULL);
	helper_want();
	log_info("datasets: %zu datasets", datasets.n);
	return 0;
}

void datasets_shutdown(void)
{
	collector_unsubscribe(datasets_tick, NULL);
	for (size_t i = 0; i < datasets.n; i++)
		dataset_free(datasets.all[i]);
	free(datasets.all);
	memset(&datasets, 0, sizeof(datasets));
}
