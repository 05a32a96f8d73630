/* SPDX-License-Identifier: ISC */
/* A sample of the box: the per-second values of one interval, which the collector
 * (collector.h) computes from two snapshots of the kernel's counters (procfs.h), with the
 * raw cumulative counters beside them. The datasets, the dashboard and /metrics read it;
 * these are only the types, so a reader needs nothing else of the collector. */
#ifndef SPINDLE_SAMPLE_H
#define SPINDLE_SAMPLE_H

#include <stdbool.h>
#include <stdint.h>

enum cpu_mode {
	CPU_USER,
	CPU_NICE,
	CPU_SYSTEM,
	CPU_IOWAIT,
	CPU_IRQ,
	CPU_SOFTIRQ,
	CPU_STEAL,
	CPU_IDLE,
	CPU_MODES
};

/* The ARC's accesses as arcstats breaks them down: demand or prefetch, data or metadata,
 * hit, miss or (OpenZFS 2.2 and later) I/O hit, a buffer found in the ARC while its read
 * was still in flight. */
enum arc_kind {
	ARC_DATA_HITS,
	ARC_DATA_MISSES,
	ARC_META_HITS,
	ARC_META_MISSES,
	ARC_PF_DATA_HITS,
	ARC_PF_DATA_MISSES,
	ARC_PF_META_HITS,
	ARC_PF_META_MISSES,
	ARC_DATA_IOHITS,
	ARC_META_IOHITS,
	ARC_PF_DATA_IOHITS,
	ARC_PF_META_IOHITS,
	ARC_KINDS
};

/* The NFS server's operations, as /proc/net/rpc/nfsd counts them: the 22 procedures of
 * NFSv3 and the operations of NFSv4 by their number (RFC 8881, 7862, 8276: 3 ACCESS ...
 * 75 REMOVEXATTR). */
#define NFS3_PROCS 22
#define NFS4_OPS   76

/* ZFS pools whose logical I/O is counted (the first so many in the kstat tree's order), and
 * the longest pool name kept. */
#define SAMPLE_POOLS_MAX 64
#define SAMPLE_POOL_NAME 64

struct disk_sample {
	char name[32];
	/* per second over the last interval */
	double reads_per_s, writes_per_s;
	double read_bytes_per_s, write_bytes_per_s;
	double read_latency_ms, write_latency_ms; /* mean per op, 0 without ops */
	double busy_pct;                          /* io_ticks share of the interval */
	double queue;                             /* mean requests in flight (weighted ms / ms) */
	/* Discards and flushes, which the kernel counts apart from reads and writes (4.18 and
	 * 5.5 on): per second, and whether it counts them */
	bool have_discards, have_flushes;
	double discards_per_s, flushes_per_s;
	uint64_t discards, discard_bytes, flushes; /* raw cumulative */
	uint64_t discard_ms, flush_ms;             /* likewise, the time they took */
	/* raw cumulative counters, for /metrics */
	uint64_t reads, writes, read_bytes, write_bytes, read_ms, write_ms, io_ms;
	uint64_t in_flight;
	uint64_t read_merges, write_merges, weighted_ms; /* weighted: fio's in_queue */
};

struct nic_sample {
	char name[32];
	/* A link over others (a bond, a VLAN, a bridge): its bytes are its lower links' too,
	 * so the totals leave it out. */
	bool stacked;
	double rx_kb_per_s, tx_kb_per_s;
	uint64_t rx_bytes, tx_bytes, rx_packets, tx_packets, rx_errors, tx_errors;
};

/* The block protocols LIO serves (the kernel's SCSI target), by fabric. */
enum lio_fabric { LIO_ISCSI, LIO_FC, LIO_FABRICS };

/* A LIO counter's per-second values: a target's LUN as its port counts it, or an
 * initiator's commands to one target (its LUNs summed). */
struct lio_sample {
	char key[480]; /* (the reader's own) */
	enum lio_fabric fabric;
	bool initiator;
	char target[224]; /* an IQN or WWN */
	char who[224];    /* the initiator's; "" for a port */
	char lun[16];     /* "lun_0"; "" for an initiator */
	double ops_per_s, read_bytes_per_s, write_bytes_per_s;
};

struct box_sample {
	int64_t time; /* the second this sample ends at (epoch seconds) */
	uint64_t seq; /* increments every tick: an ETag changes with it */
	double cpu_pct[CPU_MODES];
	/* Each CPU's percent of the interval not idle (ncpu_rated of them: those read both
	 * times; the collector sizes the array) */
	int ncpu_rated;
	struct cpu_sample {
		int id;
		double busy_pct;
	} * cpus;
	uint64_t cpu_ticks[CPU_MODES]; /* raw cumulative USER_HZ ticks over all CPUs */
	int ncpus;
	int ndisks;
	struct disk_sample *disks;
	int nnics;
	struct nic_sample *nics;
	uint64_t mem_total, mem_used, mem_cache, mem_buffers, mem_free; /* bytes */
	/* The kernel's own memory inside mem_used (unreclaimable slab, kernel stacks, page
	 * tables), where meminfo counts it */
	bool mem_have_kernel;
	uint64_t mem_kernel;
	/* IP, IPv4 and IPv6 together, and TCP (one MIB for both), per second */
	bool have_ip, have_tcp;
	double ip_in_bytes_per_s, ip_out_bytes_per_s, ip_in_packets_per_s, ip_out_packets_per_s;
	double tcp_in_segs_per_s, tcp_out_segs_per_s, tcp_retrans_per_s;
	uint64_t tcp_retrans_segs; /* raw cumulative */
	/* ZFS logical I/O, each pool's datasets summed (their objset kstats), per second; read
	 * only while a dataset needs it (collector_want_pools) */
	int npools;
	struct pool_sample {
		char name[SAMPLE_POOL_NAME];
		double reads_per_s, writes_per_s, read_bytes_per_s, write_bytes_per_s;
	} pools[SAMPLE_POOLS_MAX];
	bool have_psi;
	double psi_some_pct[3]; /* cpu, io, memory: share of the last second some task stalled */
	bool have_arc;
	double arc_hit_pct; /* hits / (hits + misses) over the interval, as arcstat */
	uint64_t arc_hits, arc_misses, arc_iohits;                 /* raw cumulative */
	uint64_t arc_size, arc_target, arc_mfu, arc_mru, arc_meta; /* bytes */

	/* What the analytics datasets need besides the above. */
	double arc_hits_per_s, arc_misses_per_s, arc_iohits_per_s;
	/* The kernel counts iohits (OpenZFS 2.2+): arc_hit_pct counts them among the accesses
	 * (hits / (hits + iohits + misses)), as arcstat does. */
	bool arc_have_iohits;
	/* Bytes of cached data (arc_meta: of metadata). */
	uint64_t arc_data;
	uint64_t arc_c_min, arc_c_max; /* the bounds of the target size, bytes */
	/* Accesses per second by kind (enum arc_kind), when the kernel counts them */
	bool arc_have_kinds;
	double arc_kind_per_s[ARC_KINDS];
	/* The L2ARC: accesses and bytes per second, its size (logical, allocated) */
	bool have_l2;
	double l2_hits_per_s, l2_misses_per_s, l2_read_bytes_per_s, l2_write_bytes_per_s;
	uint64_t l2_hits, l2_misses, l2_size, l2_asize;
	/* The NFS server (where nfsd runs): operations per second by procedure or operation */
	bool have_nfs3, have_nfs4;
	double nfs3_per_s[NFS3_PROCS], nfs4_per_s[NFS4_OPS];

	/* LIO's targets, where the box serves iSCSI or Fibre Channel (have_lio[fabric]); the
	 * ports and initiators read only while a dataset needs them, nlio of them, the
	 * collector sizes the array */
	bool have_lio[LIO_FABRICS];
	int nlio;
	struct lio_sample *lio;

	/* The disks' I/O histograms of this second are there, iohist_get()'s (iohist.h): the
	 * eBPF helper streams them. */
	bool have_iohist;
	/* The pools' vdev histograms are there, zpoolhist_get()'s (zpoolhist.h) */
	bool have_zpoolhist;
	/* Samba's operations per second are there, smbstat_get()'s (smbstat.h); smbstatus has
	 * given its counters since the start (the box serves SMB) */
	bool have_smb, smb_served;

	/* The running benchmark jobs' newest interval, as the job supervisor reports it, [0]
	 * read, [1] write: ops per second summed over the jobs, their mean latency weighted
	 * by ops; 0 when no job runs. */
	double bench_ops_per_s[2], bench_latency_ms[2];
};

#endif
