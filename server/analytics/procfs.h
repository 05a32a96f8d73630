/* SPDX-License-Identifier: ISC */
/* Readers of the kernel's counters under --proc-root: /proc/stat, /proc/diskstats,
 * /proc/net/dev, /proc/meminfo, /proc/pressure/{cpu,io,memory} and, with ZFS,
 * /proc/spl/kstat/zfs/arcstats. A snapshot holds raw cumulative counters; two snapshots
 * some seconds apart give the per-second values of a struct box_sample (sample.h).
 * Snapshots grow their arrays as devices appear and never shrink them, so a tick
 * allocates nothing once the box is known. */
#ifndef SPINDLE_PROCFS_H
#define SPINDLE_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sample.h"

#define PROCFS_NAME_MAX 32

enum procfs_disk_class {
	PROCFS_DISK_UNKNOWN = 0,
	PROCFS_DISK_WHOLE,     /* a disk of its own: sda, nvme0n1, vdb, dm-0, md0 */
	PROCFS_DISK_PARTITION, /* sda1, nvme0n1p2 */
	PROCFS_DISK_VIRTUAL,   /* loop, ram and zram devices */
};

struct procfs_disk {
	char name[PROCFS_NAME_MAX];
	enum procfs_disk_class cls;
	uint64_t reads, read_sectors, read_ms;
	uint64_t writes, write_sectors, write_ms;
	uint64_t in_flight, io_ms, weighted_ms;
	uint64_t read_merges, write_merges;
	/* Linux 4.18 and later count discards apart (fields 15-18), 5.5 and later flushes
	 * (19-20); false where the line stops before them */
	bool have_discards, have_flushes;
	uint64_t discards, discard_sectors, discard_ms, flushes, flush_ms;
};

struct procfs_nic {
	char name[PROCFS_NAME_MAX];
	bool stacked; /* a link over others (bond, VLAN, bridge: lower_* in sysfs) */
	uint64_t rx_bytes, rx_packets, rx_errors;
	uint64_t tx_bytes, tx_packets, tx_errors;
};

enum procfs_psi { PROCFS_PSI_CPU, PROCFS_PSI_IO, PROCFS_PSI_MEMORY, PROCFS_PSI_COUNT };

struct procfs_snapshot {
	/* The files of the four core sources (stat, diskstats, net/dev, meminfo) that could
	 * not be read or parsed this time, as "/proc/stat, /proc/meminfo"; "" when none. */
	char unread[128];
	bool have_cpu;
	uint64_t cpu[CPU_MODES]; /* USER_HZ ticks over all CPUs, in enum cpu_mode order */
	int ncpus;
	/* Each CPU's cpuN line: its number, its ticks not idle and in all (ncpus of them) */
	struct procfs_cpu {
		int id;
		uint64_t busy, total;
	} * cpus;
	size_t cpus_cap;

	int ndisks; /* only the disks the options keep */
	size_t disks_cap;
	struct procfs_disk *disks;
	int nnics; /* without the loopback device */
	size_t nics_cap;
	struct procfs_nic *nics;

	bool have_mem; /* bytes */
	uint64_t mem_total, mem_free, mem_buffers, mem_cached, mem_sreclaimable;
	/* SUnreclaim + KernelStack + PageTables, where meminfo has SUnreclaim (2.6.19 on) */
	bool mem_have_kernel;
	uint64_t mem_kernel, mem_kstack, mem_pagetables; /* (the last two: parsing's own) */

	/* IPv4 (/proc/net/snmp's Ip, /proc/net/netstat's IpExt octets), IPv6
	 * (/proc/net/snmp6) and TCP (/proc/net/snmp's Tcp: one MIB for both versions) */
	bool have_ip4, have_ip4_bytes, have_ip6, have_tcp;
	uint64_t ip4_in_packets, ip4_out_packets, ip4_in_bytes, ip4_out_bytes;
	uint64_t ip6_in_packets, ip6_out_packets, ip6_in_bytes, ip6_out_bytes;
	uint64_t tcp_in_segs, tcp_out_segs, tcp_retrans_segs;

	/* LIO's SCSI targets (<sys-root>/sys/kernel/config/target): whether a fabric has a
	 * target with a portal group, and, while wanted, each LUN's port counters and each
	 * initiator's per target (read_mb and write_mb are MiB), sorted by key */
	bool lio_served[LIO_FABRICS];
	int nlio;
	size_t lio_cap;
	struct procfs_lio {
		char key[480]; /* fabric, port or initiator, names: what rates match on */
		enum lio_fabric fabric;
		bool initiator;
		char target[224], who[224], lun[16];
		uint64_t cmds, read_mb, write_mb;
	} * lio;

	/* ZFS logical I/O by pool: /proc/spl/kstat/zfs/<pool>/objset-* summed, while wanted */
	int npools;
	struct procfs_pool {
		char name[SAMPLE_POOL_NAME];
		uint64_t reads, writes, nread, nwritten;
	} pools[SAMPLE_POOLS_MAX];

	bool have_psi[PROCFS_PSI_COUNT];
	uint64_t psi_some_us[PROCFS_PSI_COUNT]; /* "some" stall time, microseconds */

	bool have_arc;
	bool arc_have_iohits; /* OpenZFS 2.2 and later */
	uint64_t arc_hits, arc_misses, arc_iohits;
	uint64_t arc_size, arc_c, arc_mfu, arc_mru, arc_data, arc_meta;
	/* The accesses by kind (enum arc_kind), when arcstats breaks them down */
	bool arc_have_kinds;
	uint64_t arc_kind[ARC_KINDS];
	uint64_t arc_c_min, arc_c_max;
	/* The L2ARC (its counters are there, 0, without a cache device) */
	bool have_l2;
	uint64_t l2_hits, l2_misses, l2_read_bytes, l2_write_bytes, l2_size, l2_asize;
	/* /proc/net/rpc/nfsd's proc3 and proc4ops lines (nfs4_n operations counted) */
	bool have_nfs3, have_nfs4;
	uint64_t nfs3[NFS3_PROCS], nfs4[NFS4_OPS];
	int nfs4_n;
};

struct procfs_options {
	const char *proc_root; /* "/" on a live box */
	const char *sys_root;  /* tells partitions from disks; "/" on a live box */
	bool partitions;       /* keep partitions in the per-disk series */
	bool loop_devices;     /* keep loop, ram and zram devices */
	bool pools;            /* read the pools' objset kstats (procfs_want_pools changes it) */
	bool lio;              /* read LIO's ports and initiators (procfs_want_lio) */
};

struct procfs;

struct procfs *procfs_new(const struct procfs_options *o);
void procfs_free(struct procfs *p);
/* Reads every file into s. A file that is missing or unreadable leaves its part out
 * (have_* false, no devices); never fails. A device is classified (sysfs, else its name)
 * when it first appears, then remembered while it stays. */
void procfs_read(struct procfs *p, struct procfs_snapshot *s);
/* Whether procfs_read reads the pools' objset kstats: one file per dataset, so only while
 * a dataset of the pools' logical I/O is collected. */
void procfs_want_pools(struct procfs *p, bool want);
/* Whether it reads LIO's counters (a few files per LUN and initiator): only while a
 * dataset of iSCSI or Fibre Channel is collected. Whether each fabric is served is told
 * at every reading all the same. */
void procfs_want_lio(struct procfs *p, bool want);
void procfs_snapshot_free(struct procfs_snapshot *s);

/* The parsers, on a file's text (NUL-terminated), for procfs_read and the tests. Each
 * returns 0, or -1 when the text is not that file (then its have_* flag is false). */
int procfs_parse_stat(const char *text, struct procfs_snapshot *s);
/* Every block device, with cls left PROCFS_DISK_UNKNOWN. */
int procfs_parse_diskstats(const char *text, struct procfs_snapshot *s);
int procfs_parse_netdev(const char *text, struct procfs_snapshot *s);
int procfs_parse_meminfo(const char *text, struct procfs_snapshot *s);
int procfs_parse_psi(const char *text, enum procfs_psi which, struct procfs_snapshot *s);
int procfs_parse_arcstats(const char *text, struct procfs_snapshot *s);
/* /proc/net/rpc/nfsd: -1 when it has neither a proc3 nor a proc4ops line. */
int procfs_parse_nfsd(const char *text, struct procfs_snapshot *s);
/* /proc/net/snmp (Ip and Tcp), /proc/net/netstat (IpExt), /proc/net/snmp6: -1 when the
 * text has none of what is read from it. */
int procfs_parse_snmp(const char *text, struct procfs_snapshot *s);
int procfs_parse_netstat(const char *text, struct procfs_snapshot *s);
int procfs_parse_snmp6(const char *text, struct procfs_snapshot *s);
/* One objset kstat (/proc/spl/kstat/zfs/<pool>/objset-0x...): its reads, writes, nread and
 * nwritten added to pool; -1 when the text is not one. */
int procfs_parse_objset(const char *text, struct procfs_pool *pool);

/* Class from the name alone, given the other device names of the same snapshot: a name
 * that is another device's name plus a number (sda1, nvme0n1p1, mmcblk0p2) is a partition. */
enum procfs_disk_class procfs_classify_name(const char *name, const struct procfs_snapshot *s);

/* How much a counter grew from prev to cur. A 32-bit counter that wrapped (the kernel
 * prints some as unsigned int) and a 64-bit one that did are told apart by the values;
 * any other decrease is a reset (the device came back): the new value is the growth. */
uint64_t procfs_counter_delta(uint64_t prev, uint64_t cur);

/* Per-second values of cur over prev, taken `seconds` apart (a whole number: the ticks
 * are aligned to second boundaries). out->disks and out->nics must hold cur's device
 * counts; a device not in both snapshots is left out. Fills everything but time and seq. */
void procfs_rates(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                  int seconds, struct box_sample *out);

#endif
