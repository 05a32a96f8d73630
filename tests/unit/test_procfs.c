/* SPDX-License-Identifier: ISC */
/* The collector on synthetic /proc trees: the parsers, the per-second arithmetic (wraps,
 * hot-plug, ARC with and without iohits), the disk classes, and the whole way from two
 * readings one second apart to exactly the expected value of every dataset. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include "tap.h"
#include "analytics/collector.h"
#include "analytics/datasets.h"
#include "db/db.h"
#include "analytics/procfs.h"
#include "analytics/zpoolhist.h"
#include "analytics/smbstat.h"
#include "analytics/series.h"
#include "base/util.h"

static char root[256];

static void write_file(const char *rel, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void write_file(const char *rel, const char *fmt, ...)
{
	char path[512], tmp[520], *dir;
	snprintf(path, sizeof(path), "%s%s", root, rel);
	dir = xstrdup(path);
	*strrchr(dir, '/') = '\0';
	util_mkdirs(dir, 0755);
	free(dir);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	FILE *f = fopen(tmp, "w");
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fclose(f);
	rename(tmp, path); /* the collector never sees half a file */
}

static void remove_file(const char *rel)
{
	char path[512];
	snprintf(path, sizeof(path), "%s%s", root, rel);
	unlink(path);
}

static bool near(double got, double want)
{
	return fabs(got - want) <= 1e-9 * (fabs(want) > 1 ? fabs(want) : 1);
}

#define is_num(got, want, ...)                                                                     \
	do {                                                                                       \
		double g_ = (got), w_ = (want);                                                    \
		if (!ok(near(g_, w_), __VA_ARGS__))                                                \
			diag("got %.9g, want %.9g", g_, w_);                                       \
	} while (0)

/* --- snapshot A and B, one second apart; the comments give the deltas */

static const char stat_a[] = "cpu  1000 100 500 8000 200 50 50 100 0 0\n"
                             "cpu0 500 50 250 4000 100 25 25 50 0 0\n"
                             "cpu1 500 50 250 4000 100 25 25 50 0 0\n"
                             "intr 12345 0 0\nctxt 999\nbtime 1700000000\n";
/* user +50 nice +10 system +20 idle +100 iowait +10 irq +5 softirq +3 steal +2 = 200 */
static const char stat_b[] = "cpu  1050 110 520 8100 210 55 53 102 0 0\n"
                             "cpu0 525 55 260 4050 105 27 26 51 0 0\n"
                             "cpu1 525 55 260 4050 105 28 27 51 0 0\n"
                             "intr 12399 0 0\nctxt 1999\nbtime 1700000000\n";

#define DISK(maj, min, name, r, rs, rms, w, ws, wms, inf, io, wt)                                  \
	"   " #maj "       " #min " " name " " #r " 0 " #rs " " #rms " " #w " 0 " #ws " " #wms     \
	" " #inf " " #io " " #wt " 0 0 0 0 0 0\n"

static const char disks_a[] = DISK(8, 0, "sda", 1000, 20000, 500, 500, 10000, 1000, 2, 7000, 9000)
    DISK(8, 1, "sda1", 999, 19999, 499, 499, 9999, 999, 0, 6999, 8999)
        DISK(8, 16, "sdb", 10, 18446744073709551104, 100, 0, 0, 0, 0, 4294967000, 4294967200)
            DISK(8, 48, "sdd", 5, 5, 5, 5, 5, 5, 0, 5, 5)
                DISK(259, 0, "nvme0n1", 100, 800, 10, 50, 400, 20, 0, 100, 100)
                    DISK(259, 1, "nvme0n1p1", 100, 800, 10, 50, 400, 20, 0, 100, 100)
                        DISK(7, 0, "loop0", 1, 1, 1, 1, 1, 1, 0, 1, 1);
/* sda: reads +100, sectors +2048, ms +50; writes +50, sectors +1024, ms +100; io +250,
 *      weighted +1500. sdb: reads +20, sectors wrap 2^64 (+1024), ms +40; io_ms and
 *      weighted wrap 2^32 (+496, +196). sdc appears, sdd vanishes. nvme0n1: reads +10,
 *      sectors +80, ms +5; writes +5, sectors +40, ms +15; io +20, weighted +30. */
static const char disks_b[] = DISK(8, 0, "sda", 1100, 22048, 550, 550, 11024, 1100, 1, 7250, 10500)
    DISK(8, 1, "sda1", 1099, 22047, 549, 549, 11023, 1099, 0, 7249, 10499)
        DISK(8, 16, "sdb", 30, 512, 140, 0, 0, 0, 0, 200, 100)
            DISK(8, 32, "sdc", 77, 77, 77, 77, 77, 77, 0, 77, 77)
                DISK(259, 0, "nvme0n1", 110, 880, 15, 55, 440, 35, 0, 120, 130)
                    DISK(259, 1, "nvme0n1p1", 110, 880, 15, 55, 440, 35, 0, 120, 130)
                        DISK(7, 0, "loop0", 2, 2, 2, 2, 2, 2, 0, 2, 2);

static const char net_head[] =
    "Inter-|   Receive                                                |  Transmit\n"
    " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs "
    "drop fifo colls carrier compressed\n";
#define NIC(name, rx, tx) "  " name ": " #rx " 10 1 0 0 0 0 0 " #tx " 20 2 0 0 0 0 0\n"
/* eth0: rx +102400, tx +51200; eth1: rx wraps 2^64 (+2048), tx +0; lo is left out */
static const char net_a[] =
    NIC("lo", 5000, 5000) NIC("eth0", 1000000, 2000000) NIC("eth1", 18446744073709550592, 7);
static const char net_b[] =
    NIC("lo", 9000, 9000) NIC("eth0", 1102400, 2051200) NIC("eth1", 1024, 7);

static const char meminfo[] = "MemTotal:       16000000 kB\nMemFree:         4000000 kB\n"
                              "MemAvailable:   10000000 kB\nBuffers:         1000000 kB\n"
                              "Cached:          5000000 kB\nSwapCached:            0 kB\n"
                              "SReclaimable:    1000000 kB\n";

#define PSI(some, full)                                                                            \
	"some avg10=1.00 avg60=2.00 avg300=3.00 total=" #some "\n"                                 \
	"full avg10=0.00 avg60=0.00 avg300=0.00 total=" #full "\n"

#define ARC_HEAD "13 1 0x01 123 33456 1234567 7654321\nname                            type data\n"
/* The accesses by kind: all of them demand data here, the other kinds 0 */
#define ARC_KINDS_OF(hits, misses)                                                                 \
	"demand_data_hits 4 " #hits "\ndemand_data_misses 4 " #misses "\n"                         \
	"demand_metadata_hits 4 0\ndemand_metadata_misses 4 0\nprefetch_data_hits 4 0\n"           \
	"prefetch_data_misses 4 0\nprefetch_metadata_hits 4 0\nprefetch_metadata_misses 4 0\n"
/* hits +750, misses +250 (no iohits: 75% as arcstat) */
#define ARC_OLD(hits, misses)                                                                      \
	ARC_HEAD                                                                                   \
	"hits                            4    " #hits "\n"                                         \
	"misses                          4    " #misses                                            \
	"\n" ARC_KINDS_OF(hits, misses) "c                               4    2147483648\n"        \
	                                "size                            4    1073741824\n"        \
	                                "mfu_size                        4    400000000\n"         \
	                                "mru_size                        4    500000000\n"         \
	                                "arc_meta_used                   4    200000000\n"
/* hits +900, misses +50, iohits +50: 90% */
#define ARC_NEW(hits, misses, iohits)                                                              \
	ARC_HEAD "hits                            4    " #hits "\n"                                \
	         "iohits                          4    " #iohits "\n" ARC_KINDS_OF(                \
	             hits, misses) "demand_data_iohits 4 " #iohits                                 \
	                           "\ndemand_metadata_iohits 4 0\n"                                \
	                           "prefetch_data_iohits 4 0\nprefetch_metadata_iohits 4 0\n"      \
	                           "misses                          4    " #misses "\n"            \
	                           "c                               4    2147483648\n"             \
	                           "size                            4    1073741824\n"             \
	                           "data_size                       4    800000000\n"              \
	                           "metadata_size                   4    200000000\n"              \
	                           "mfu_size                        4    400000000\n"              \
	                           "mru_size                        4    500000000\n"

static void tree_a(void)
{
	write_file("/proc/stat", "%s", stat_a);
	write_file("/proc/diskstats", "%s", disks_a);
	write_file("/proc/net/dev", "%s%s", net_head, net_a);
	write_file("/proc/meminfo", "%s", meminfo);
	write_file("/proc/pressure/cpu", PSI(1000000, 0));
	write_file("/proc/pressure/io", PSI(500000, 400000));
	write_file("/proc/pressure/memory", PSI(7, 3));
}

static void tree_b(void)
{
	write_file("/proc/stat", "%s", stat_b);
	write_file("/proc/diskstats", "%s", disks_b);
	write_file("/proc/net/dev", "%s%s", net_head, net_b);
	write_file("/proc/pressure/cpu", PSI(1250000, 0));
	write_file("/proc/pressure/io", PSI(600000, 400000));
	write_file("/proc/pressure/memory", PSI(7, 3));
}

/* --- the parts */

static void test_counter_delta(void)
{
	is_int(procfs_counter_delta(10, 25), 15, "a counter that grew");
	is_int(procfs_counter_delta(4294967000u, 200), 496, "a 32-bit counter that wrapped");
	is_int(procfs_counter_delta(UINT64_MAX - 99, 50), 150, "a 64-bit counter that wrapped");
	is_int(procfs_counter_delta(5000000, 300), 300, "a reset counts from zero, not as a wrap");
	is_int(procfs_counter_delta(7, 7), 0, "no change");
}

static void test_parsers(void)
{
	struct procfs_snapshot s = {0};
	ok(procfs_parse_stat(stat_a, &s) == 0 && s.have_cpu, "/proc/stat parses");
	is_int(s.ncpus, 2, "two CPUs");
	is_int(s.cpu[CPU_IDLE], 8000, "idle is the 4th number");
	is_int(s.cpu[CPU_STEAL], 100, "steal the 8th");
	ok(procfs_parse_stat("intr 1 2 3\n", &s) < 0 && !s.have_cpu, "no cpu line: no CPU data");

	ok(procfs_parse_diskstats(disks_a, &s) == 0, "/proc/diskstats parses");
	is_int(s.ndisks, 7, "every device is listed before filtering");
	is_str(s.disks[2].name, "sdb", "names");
	is_int(s.disks[2].read_sectors, 18446744073709551104u, "64-bit sectors");
	is_int(s.disks[0].weighted_ms, 9000, "weighted time is the 11th number");
	ok(s.disks[0].have_discards && s.disks[0].have_flushes, "discards and flushes are there");
	ok(procfs_parse_diskstats("   8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n", &s) ==
	           0 &&
	       s.disks[0].discards == 12 && s.disks[0].discard_sectors == 14 &&
	       s.disks[0].discard_ms == 15 && s.disks[0].flushes == 16 && s.disks[0].flush_ms == 17,
	   "discards (fields 15-18) and flushes (19-20) are read");
	ok(procfs_parse_diskstats("   8 0 sda 1 2 3 4 5 6 7 8 9 10 11\n", &s) == 0 &&
	       !s.disks[0].have_discards && !s.disks[0].have_flushes && s.disks[0].discards == 0,
	   "a line of eleven fields (before Linux 4.18) has neither");
	ok(procfs_parse_diskstats("   8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15\n", &s) == 0 &&
	       s.disks[0].have_discards && !s.disks[0].have_flushes,
	   "fifteen (4.18 to 5.4): discards only");
	ok(procfs_parse_diskstats("   8 0 sda 1 2\n", &s) < 0, "a short line is refused");
	ok(procfs_parse_diskstats("", &s) == 0 && s.ndisks == 0, "no devices at all");

	char net[1024];
	snprintf(net, sizeof(net), "%s%s", net_head, net_a);
	ok(procfs_parse_netdev(net, &s) == 0, "/proc/net/dev parses");
	is_int(s.nnics, 2, "the loopback device is left out");
	is_str(s.nics[0].name, "eth0", "names");
	is_int(s.nics[0].tx_bytes, 2000000, "tx bytes are the 9th number");
	ok(procfs_parse_netdev("garbage\n", &s) < 0, "not /proc/net/dev");

	ok(procfs_parse_meminfo(meminfo, &s) == 0 && s.have_mem, "/proc/meminfo parses");
	is_int(s.mem_total, 16000000ull * 1024, "kB are KiB");
	is_int(s.mem_sreclaimable, 1000000ull * 1024, "SReclaimable");
	ok(procfs_parse_meminfo("MemTotal: 5 kB\n", &s) < 0 && !s.have_mem, "MemFree missing");

	ok(procfs_parse_psi(PSI(123, 4), PROCFS_PSI_IO, &s) == 0 &&
	       s.psi_some_us[PROCFS_PSI_IO] == 123,
	   "pressure: the some line's total");
	ok(procfs_parse_psi("full avg10=0 total=3\n", PROCFS_PSI_CPU, &s) < 0, "no some line");

	ok(procfs_parse_arcstats(ARC_NEW(1, 2, 3), &s) == 0 && s.have_arc, "arcstats parse");
	ok(s.arc_have_iohits && s.arc_iohits == 3, "iohits where the kernel has them");
	is_int(s.arc_meta, 200000000, "metadata_size");
	ok(procfs_parse_arcstats(ARC_OLD(1, 2), &s) == 0 && !s.arc_have_iohits,
	   "older arcstats without iohits");
	is_int(s.arc_meta, 200000000, "arc_meta_used before OpenZFS 2.2");
	ok(procfs_parse_arcstats("nothing\n", &s) < 0 && !s.have_arc, "not arcstats");

	ok(procfs_parse_meminfo("MemTotal: 100 kB\nMemFree: 10 kB\nBuffers: 1 kB\nCached: 2 kB\n"
	                        "SwapCached: 99 kB\nSUnreclaim: 5 kB\nKernelStack: 3 kB\n"
	                        "PageTables: 2 kB\n",
	                        &s) == 0 &&
	       s.mem_have_kernel && s.mem_kernel == 10 * 1024 && s.mem_cached == 2 * 1024,
	   "the kernel's own memory: unreclaimable slab, stacks and page tables");
	ok(procfs_parse_meminfo(meminfo, &s) == 0 && !s.mem_have_kernel && s.mem_kernel == 0,
	   "none where meminfo has no SUnreclaim");

	static const char snmp[] = "Ip: Forwarding DefaultTTL InReceives OutRequests\n"
	                           "Ip: 1 64 500 400\n"
	                           "Tcp: RtoAlgorithm MaxConn InSegs OutSegs RetransSegs\n"
	                           "Tcp: 1 -1 30 20 2\n";
	ok(procfs_parse_snmp(snmp, &s) == 0 && s.have_ip4 && s.have_tcp &&
	       s.ip4_in_packets == 500 && s.ip4_out_packets == 400 && s.tcp_in_segs == 30 &&
	       s.tcp_out_segs == 20 && s.tcp_retrans_segs == 2,
	   "/proc/net/snmp: columns by name, a signed one read past");
	ok(procfs_parse_snmp("Ip: InReceives OutRequests\nTcp: 1 2\n", &s) < 0 && !s.have_ip4 &&
	       !s.have_tcp,
	   "a header without its values line is no reading");
	ok(procfs_parse_snmp("Ip: InReceives\nIp: 5\n", &s) < 0 && !s.have_ip4,
	   "a column missing is no reading");
	ok(procfs_parse_netstat("TcpExt: InOctets\nTcpExt: 9\nIpExt: InNoRoutes InOctets "
	                        "OutOctets\nIpExt: 0 700 600\n",
	                        &s) == 0 &&
	       s.have_ip4_bytes && s.ip4_in_bytes == 700 && s.ip4_out_bytes == 600,
	   "/proc/net/netstat: IpExt's octets, not another group's column of the same name");
	ok(procfs_parse_snmp6("Ip6InReceives \t11\nIp6OutRequests\t12\nIp6InOctets 13\n"
	                      "Ip6OutOctets 14\nIp6InOctetsX 99\n",
	                      &s) == 0 &&
	       s.have_ip6 && s.ip6_in_packets == 11 && s.ip6_out_bytes == 14 &&
	       s.ip6_in_bytes == 13,
	   "/proc/net/snmp6: name and value a line");
	ok(procfs_parse_snmp6("Ip6InReceives 1\n", &s) < 0 && !s.have_ip6, "snmp6 short of one");

	struct procfs_pool pool = {0};
	static const char objset[] = "28 1 0x01 7 2160 5214370505 7498394793098\n"
	                             "name                            type data\n"
	                             "dataset_name                    7    tank/fs\n"
	                             "writes                          4    3\n"
	                             "nwritten                        4    4096\n"
	                             "reads                           4    5\n"
	                             "nread                           4    8192\n";
	ok(procfs_parse_objset(objset, &pool) == 0 && procfs_parse_objset(objset, &pool) == 0 &&
	       pool.reads == 10 && pool.writes == 6 && pool.nread == 16384 && pool.nwritten == 8192,
	   "objset kstats add up to their pool");
	ok(procfs_parse_objset("dataset_name 7 x\nreads 4 1\n", &pool) < 0 && pool.reads == 10,
	   "an objset short of a counter adds nothing");
	procfs_snapshot_free(&s);
}

static void test_classes(void)
{
	struct procfs_snapshot s = {0};
	procfs_parse_diskstats(disks_a, &s);
	is_int(procfs_classify_name("sda", &s), PROCFS_DISK_WHOLE, "sda is a disk");
	is_int(procfs_classify_name("sda1", &s), PROCFS_DISK_PARTITION, "sda1 is sda's partition");
	is_int(procfs_classify_name("nvme0n1", &s), PROCFS_DISK_WHOLE, "nvme0n1 is a disk");
	is_int(procfs_classify_name("nvme0n1p1", &s), PROCFS_DISK_PARTITION, "nvme0n1p1 is not");
	is_int(procfs_classify_name("loop0", &s), PROCFS_DISK_VIRTUAL, "loop devices");
	is_int(procfs_classify_name("zram0", &s), PROCFS_DISK_VIRTUAL, "zram devices");
	is_int(procfs_classify_name("ram3", &s), PROCFS_DISK_VIRTUAL, "ram devices");
	is_int(procfs_classify_name("md0", &s), PROCFS_DISK_WHOLE, "md0 has no md device");
	procfs_snapshot_free(&s);

	/* sysfs knows better than names: here "sdz9" is declared a whole disk. */
	write_file("/proc/diskstats", "%s",
	           DISK(8, 0, "sdz", 1, 1, 1, 1, 1, 1, 0, 1, 1)
	               DISK(8, 1, "sdz9", 1, 1, 1, 1, 1, 1, 0, 1, 1)
	                   DISK(8, 2, "sdz10", 1, 1, 1, 1, 1, 1, 0, 1, 1));
	write_file("/sys/class/block/sdz/size", "1\n");
	write_file("/sys/class/block/sdz9/size", "1\n");
	write_file("/sys/class/block/sdz10/partition", "10\n");
	struct procfs_options o = {root, root, false, false, false, false};
	struct procfs *p = procfs_new(&o);
	procfs_read(p, &s);
	is_int(s.ndisks, 2, "sysfs: the partition is left out");
	ok(s.ndisks == 2 && strcmp(s.disks[1].name, "sdz9") == 0, "and sdz9 is kept");
	procfs_free(p);

	o.partitions = o.loop_devices = true;
	p = procfs_new(&o);
	write_file("/proc/diskstats", "%s", disks_a);
	procfs_read(p, &s);
	is_int(s.ndisks, 7, "--analytics-partitions and --analytics-loop-devices keep them all");
	procfs_free(p);
	procfs_snapshot_free(&s);
	char sys[512];
	snprintf(sys, sizeof(sys), "rm -rf '%s/sys'", root);
	ok(system(sys) == 0, "sysfs removed again");
}

static void test_big_file(void)
{
	/* Larger than the first buffer: it grows, and the whole file is read. */
	size_t cap = 400 * 96, len = 0;
	char *text = xmalloc(cap);
	for (int i = 0; i < 400; i++)
		len += (size_t)snprintf(text + len, cap - len,
		                        "   8 %d sd%c%c 1 0 2 3 4 0 5 6 0 7 8 0 0 0 0\n", i,
		                        'a' + i / 26, 'a' + i % 26);
	write_file("/proc/diskstats", "%s", text);
	free(text);
	struct procfs_options o = {root, root, false, false, false, false};
	struct procfs *p = procfs_new(&o);
	struct procfs_snapshot s = {0};
	procfs_read(p, &s);
	is_int(s.ndisks, 400, "a 25 KB diskstats is read whole");
	procfs_read(p, &s);
	is_int(s.ndisks, 400, "and again with the grown buffer");
	procfs_free(p);
	procfs_snapshot_free(&s);
}

static void test_pools(void)
{
	struct procfs_options o = {root, root, false, false, false, false};
	struct procfs *p = procfs_new(&o);
	struct procfs_snapshot s = {0};
	static const char objset[] = "28 1 0x01 7 2160 5214370505 7498394793098\n"
	                             "name type data\ndataset_name 7 %s\nwrites 4 1\n"
	                             "nwritten 4 512\nreads 4 2\nnread 4 1024\n";
	write_file("/proc/spl/kstat/zfs/tank/objset-0x36", objset, "tank/a");
	write_file("/proc/spl/kstat/zfs/tank/objset-0x54", objset, "tank/b");
	write_file("/proc/spl/kstat/zfs/tank/state", "ONLINE\n");
	write_file("/proc/spl/kstat/zfs/empty/state", "ONLINE\n");
	write_file("/proc/spl/kstat/zfs/arcstats", ARC_NEW(1, 2, 3));
	procfs_read(p, &s);
	is_int(s.npools, 0, "no pool is read while none is wanted");
	procfs_want_pools(p, true);
	procfs_read(p, &s);
	ok(s.npools == 1 && strcmp(s.pools[0].name, "tank") == 0 && s.pools[0].reads == 4 &&
	       s.pools[0].nwritten == 1024,
	   "a pool's objsets summed; a pool without any (and arcstats beside) left out");
	procfs_free(p);
	procfs_snapshot_free(&s);
	remove_file("/proc/spl/kstat/zfs/tank/objset-0x36");
	remove_file("/proc/spl/kstat/zfs/tank/objset-0x54");
}

static size_t smb_index(enum smb_version want, const char *name)
{
	enum smb_version v;
	const char *n;
	for (size_t i = 0; (n = smbstat_op(i, &v)); i++)
		if (v == want && strcmp(n, name) == 0)
			return i;
	return (size_t)-1;
}

/* `smbstatus --profile` as Samba 4.17 prints it (sections, counts, times and bytes). */
static void test_smbstat(void)
{
	double c[256] = {0};
	char why[256] = "";
	ok(smbstat_nops() == 75 + 19 && smbstat_nops() <= nitems(c), "94 types of call");
	static const char text[] =
	    "**** SMBD loop ****************************************************************\n"
	    "connect_count:                                                                1\n"
	    "**** System Calls *************************************************************\n"
	    "syscall_pread_count:                                                         12\n"
	    "**** SMB Calls ****************************************************************\n"
	    "SMBreadX_count:                                                              16\n"
	    "SMBreadX_time:                                                             3061\n"
	    "SMBwriteX_count:                                                              8\n"
	    "SMBfuture_count:                                                              5\n"
	    "**** Trans2 Calls *************************************************************\n"
	    "Trans2_findfirst_count:                                                       2\n"
	    "**** SMB2 Calls ***************************************************************\n"
	    "smb2_read_count:                                                              3\n"
	    "smb2_read_outbytes:                                                     1000080\n"
	    "smb2_break_count:                                                             1\n";
	ok(smbstat_parse(text, c, why, sizeof(why)) == 0, "parses (%s)", why);
	is_num(c[smb_index(SMB_V1, "readX")], 16, "SMBreadX_count: smb.ops readX");
	is_num(c[smb_index(SMB_V1, "writeX")], 8, "SMBwriteX_count");
	is_num(c[smb_index(SMB_V2, "read")], 3, "smb2_read_count: smb2.ops read");
	is_num(c[smb_index(SMB_V2, "break")], 1, "the last SMB2 call");
	is_num(c[smb_index(SMB_V1, "read")], 0, "SMBread is not SMBreadX");
	double sum = 0;
	for (size_t i = 0; i < smbstat_nops(); i++)
		sum += c[i];
	is_num(sum, 16 + 8 + 3 + 1,
	       "system calls, Trans2 subcalls, times, bytes and unknown calls "
	       "left out");
	ok(smbstat_parse("Failed to initialise profile memory\n", c, why, sizeof(why)) < 0 &&
	       strstr(why, "profiling level") && strstr(why, "Failed to initialise"),
	   "no counters (profiling off): refused, saying why: %s", why);
	ok(smbstat_parse("smb2_read_count: many\n", c, why, sizeof(why)) < 0 &&
	       strstr(why, "not a count"),
	   "a count that is no number is refused: %s", why);
	ok(smbstat_parse("smb2_read_count: 12 13\n", c, why, sizeof(why)) < 0,
	   "nor one with more after it");
}

/* `zpool iostat -wHp` and `-rHp`, as OpenZFS 2.1 (10 and 12 columns) and 2.2 (one more
 * of each) print them. */
static void test_zpoolhist(void)
{
	static struct zpoolhist_counts c;
	char why[256] = "", key[48];
	ok(zpoolhist_parse("tank\n1\t0\t0\t0\t0\t0\t0\t0\t0\t0\t0\n"
	                   "65535\t7\t3\t6\t2\t1\t0\t0\t1\t0\t0\n"
	                   "backup\n65535\t1\t0\t1\t0\t0\t0\t0\t0\t0\t0\t9\n",
	                   true, &c, why, sizeof(why)) == 0,
	   "-w: pools' lines, 10 or 11 columns (%s)", why);
	is_num(c.lat[ZH_TOTAL][0][15], 8, "total_wait reads of [32768, 65536) ns, pools summed");
	is_num(c.lat[ZH_TOTAL][1][15], 3, "writes");
	is_num(c.lat[ZH_DISK][0][15], 7, "disk_wait");
	is_num(c.lat[ZH_ASYNCQ][1][15], 1, "asyncq_wait writes (the 8th column)");
	ok(zpoolhist_parse("tank\n8192\t1\t2\t3\t4\t5\t6\t7\t8\t0\t0\t0\t0\n", false, &c, why,
	                   sizeof(why)) == 0,
	   "-r parses");
	is_num(c.size[0][13], 1 + 2 + 5 + 6, "reads of [8192, 16384): sync and async, ind and agg");
	is_num(c.size[1][13], 3 + 4 + 7 + 8, "writes");
	ok(zpoolhist_parse("tank\n65534\t1\t1\t1\t1\t1\t1\t1\t1\t0\t0\n", true, &c, why,
	                   sizeof(why)) < 0 &&
	       strstr(why, "not a histogram line"),
	   "a latency label that is no bucket's end is refused: %s", why);
	ok(zpoolhist_parse("tank\n8192\t1\t2\t3\n", false, &c, why, sizeof(why)) < 0,
	   "a short line is refused");
	ok(zpoolhist_parse("tank\n8192\t1\tx\t3\t4\t5\t6\t7\t8\n", false, &c, why, sizeof(why)) < 0,
	   "a count that is no number is refused");
	ok(zpoolhist_parse("tank\n4294967296\t1\t2\t3\t4\t5\t6\t7\t8\n", false, &c, why,
	                   sizeof(why)) < 0,
	   "a size past the last bucket is refused");
	ok(zpoolhist_parse("", true, &c, why, sizeof(why)) == 0, "no pools: nothing");
	zpoolhist_key(true, 15, key, sizeof(key));
	is_str(key, "32768-65536", "a latency key");
	zpoolhist_key(true, 0, key, sizeof(key));
	is_str(key, "0-2", "the first from 0");
	zpoolhist_key(true, ZPOOLHIST_LAT_BUCKETS - 1, key, sizeof(key));
	is_str(key, "68719476736+", "the last open above");
	zpoolhist_key(false, 13, key, sizeof(key));
	is_str(key, "8192-16384", "a size key");
}

static void test_rates(void)
{
	struct procfs_options o = {root, root, false, false, false, false};
	struct procfs *p = procfs_new(&o);
	struct procfs_snapshot a = {0}, b = {0};
	tree_a();
	remove_file("/proc/spl/kstat/zfs/arcstats");
	procfs_read(p, &a);
	tree_b();
	procfs_read(p, &b);
	struct box_sample s = {0};
	s.disks = xcalloc((size_t)b.ndisks, sizeof(*s.disks));
	s.nics = xcalloc((size_t)b.nnics, sizeof(*s.nics));
	procfs_rates(&a, &b, 1, &s);

	is_num(s.cpu_pct[CPU_USER], 25, "cpu user 50/200");
	is_num(s.cpu_pct[CPU_NICE], 5, "cpu nice");
	is_num(s.cpu_pct[CPU_SYSTEM], 10, "cpu system");
	is_num(s.cpu_pct[CPU_IDLE], 50, "cpu idle");
	is_num(s.cpu_pct[CPU_IOWAIT], 5, "cpu iowait");
	is_num(s.cpu_pct[CPU_IRQ], 2.5, "cpu irq");
	is_num(s.cpu_pct[CPU_SOFTIRQ], 1.5, "cpu softirq");
	is_num(s.cpu_pct[CPU_STEAL], 1, "cpu steal");
	is_int(s.ncpus, 2, "ncpus");

	is_int(s.ndisks, 3, "sda, sdb, nvme0n1: sdc appeared, sdd vanished, the rest left out");
	is_str(s.disks[0].name, "sda", "sda first");
	is_num(s.disks[0].reads_per_s, 100, "sda reads");
	is_num(s.disks[0].read_bytes_per_s, 1048576, "sda read bytes (512-byte sectors)");
	is_num(s.disks[0].read_latency_ms, 0.5, "sda read latency 50 ms / 100 reads");
	is_num(s.disks[0].write_latency_ms, 2, "sda write latency 100 ms / 50 writes");
	is_num(s.disks[0].busy_pct, 25, "sda busy 250 ms of 1000");
	is_num(s.disks[0].queue, 1.5, "sda queue 1500 weighted ms of 1000");
	is_int(s.disks[0].in_flight, 1, "raw in flight");
	is_str(s.disks[1].name, "sdb", "sdb second");
	is_num(s.disks[1].read_bytes_per_s, 524288, "sdb: 64-bit sectors wrapped");
	is_num(s.disks[1].busy_pct, 49.6, "sdb: 32-bit io_ms wrapped");
	is_num(s.disks[1].queue, 0.196, "sdb: 32-bit weighted ms wrapped");
	is_num(s.disks[1].write_latency_ms, 0, "no writes: latency 0");
	is_str(s.disks[2].name, "nvme0n1", "nvme0n1 third");

	is_int(s.nnics, 2, "two NICs");
	is_num(s.nics[0].rx_kb_per_s, 100, "eth0 in");
	is_num(s.nics[0].tx_kb_per_s, 50, "eth0 out");
	is_num(s.nics[1].rx_kb_per_s, 2, "eth1 in: 64-bit wrap");

	is_int(s.mem_total, 16000000ull * 1024, "mem total");
	is_int(s.mem_cache, 6000000ull * 1024, "cache: Cached + SReclaimable");
	is_int(s.mem_used, 5000000ull * 1024, "used: total - free - buffers - cache");
	ok(s.have_psi, "pressure");
	is_num(s.psi_some_pct[0], 25, "cpu pressure 250 ms of 1 s");
	is_num(s.psi_some_pct[1], 10, "io pressure");
	is_num(s.psi_some_pct[2], 0, "memory pressure");
	ok(!s.have_arc, "no ARC without arcstats");

	/* Two seconds apart: rates halve. */
	procfs_rates(&a, &b, 2, &s);
	is_num(s.disks[0].reads_per_s, 50, "over two seconds: per second");
	is_num(s.disks[0].busy_pct, 12.5, "busy over two seconds");
	is_num(s.disks[0].read_latency_ms, 0.5, "latency does not depend on the interval");

	free(s.disks);
	free(s.nics);
	procfs_snapshot_free(&a);
	procfs_snapshot_free(&b);
	procfs_free(p);
}

/* --- all the way: collector -> datasets -> series, read back through a query */

struct want {
	const char *key; /* NULL: the total */
	double value;
};

static void check_dataset(const char *name, int64_t t, const struct want *w, size_t nw)
{
	struct dataset *d = datasets_find(name);
	if (!ok(d != NULL, "%s exists", name))
		return;
	struct series_query q = {0};
	q.nseries = datasets_series(d, &q.series);
	q.start = t;
	q.gran = 1;
	q.width = 1;
	q.nbuckets = 1;
	q.out = xcalloc(q.nseries, sizeof(*q.out));
	series_query_memory(&q, t, t + 1);
	size_t seen = 0;
	for (size_t i = 0; i < q.nseries; i++)
		if (q.out[i].count)
			seen++;
	is_int(seen, nw, "%s: %zu values", name, nw);
	for (size_t k = 0; k < nw; k++) {
		size_t i = 0;
		for (; i < q.nseries; i++)
			if (strcmp(series_key(q.series[i]), w[k].key ? w[k].key : "") == 0)
				break;
		bool have = i < q.nseries && q.out[i].count == 1;
		if (!ok(have, "%s %s has a value", name, w[k].key ? w[k].key : "total"))
			continue;
		/* values are kept to 3 decimals */
		is_num(q.out[i].sum, series_round(w[k].value), "%s %s = %g", name,
		       w[k].key ? w[k].key : "total", w[k].value);
	}
	for (size_t i = 0; i < q.nseries; i++)
		series_unref(q.series[i]);
	free(q.series);
	free(q.out);
}

#define CHECK(name, t, ...)                                                                        \
	do {                                                                                       \
		const struct want w_[] = {__VA_ARGS__};                                            \
		check_dataset(name, t, w_, sizeof(w_) / sizeof(w_[0]));                            \
	} while (0)

struct got {
	double total, read, write;
	int n;
};

static void got_value(void *arg, const char *key, double v)
{
	struct got *g = arg;
	g->n++;
	if (!key)
		g->total = v;
	else if (strcmp(key, "read") == 0)
		g->read = v;
	else if (strcmp(key, "write") == 0)
		g->write = v;
}

/* The running jobs' figures as the collector hands them in. */
static void test_bench_values(void)
{
	const struct dataset *ops = datasets_find("bench.ops[direction]");
	const struct dataset *lat = datasets_find("bench.latency[direction]");
	if (!ok(ops && lat, "bench datasets listed"))
		return;
	struct box_sample s = {.bench_ops_per_s = {300, 100}, .bench_latency_ms = {2, 6}};
	struct got g = {0};
	datasets_values(ops, &s, got_value, &g);
	ok(g.n == 3 && g.total == 400 && g.read == 300 && g.write == 100, "bench.ops: sum, r, w");
	g = (struct got){0};
	datasets_values(lat, &s, got_value, &g);
	ok(g.n == 3, "bench.latency: total, read, write");
	is_num(g.total, (300 * 2 + 100 * 6) / 400.0, "bench.latency total weighted by ops");
	is_num(g.read, 2, "bench.latency read");
	is_num(g.write, 6, "bench.latency write");
	s = (struct box_sample){.bench_ops_per_s = {50, 0}, .bench_latency_ms = {0.25, 0}};
	g = (struct got){0};
	datasets_values(lat, &s, got_value, &g);
	ok(g.n == 2 && g.total == 0.25 && g.read == 0.25, "no writes: no write latency");
	s = (struct box_sample){0};
	g = (struct got){0};
	datasets_values(lat, &s, got_value, &g);
	ok(g.n == 0, "no job: no latency");
	g = (struct got){0};
	datasets_values(ops, &s, got_value, &g);
	ok(g.n == 3 && g.total == 0, "no job: 0 ops");
}

static void test_pipeline(void)
{
	char dir[300], err[256];
	snprintf(dir, sizeof(dir), "%s/state", root);
	util_mkdirs(dir, 0700);
	snprintf(dir, sizeof(dir), "%s/state/spindle.db", root);
	struct db *db = db_open(dir, err, sizeof(err));
	if (!ok(db != NULL, "database: %s", db ? "" : err))
		return;
	struct series_config sc = {.db_path = dir, .unpaced = true, .retention = {24, 336, 8760}};
	ok(series_init(&sc, err, sizeof(err)) == 0, "series store");
	ok(datasets_init(db) == 0, "datasets");
	struct event_base *base = event_base_new();
	struct collector_config cc = {root, root, false, false};
	ok(collector_init(base, &cc) == 0, "collector");

	const int64_t T = 1800000000; /* the boundary the first reading is taken at */
	tree_a();
	remove_file("/proc/spl/kstat/zfs/arcstats");
	collector_tick_at(T);
	ok(collector_latest() == NULL, "no sample after the first reading");
	tree_b();
	collector_tick_at(T + 1);
	const struct box_sample *s = collector_latest();
	ok(s && s->time == T + 1 && s->seq == 1, "a sample after the second, ending at T+1");

	/* The sample ending at T+1 is the second starting at T. */
	CHECK("cpu.utilization[mode]", T, {NULL, 50}, {"user", 25}, {"nice", 5}, {"system", 10},
	      {"iowait", 5}, {"irq", 2.5}, {"softirq", 1.5}, {"steal", 1}, {"idle", 50});
	/* the lines have the discard and flush fields (none counted): keys of 0 */
	CHECK("io.ops[op]", T, {NULL, 185}, {"read", 130}, {"write", 55}, {"discard", 0},
	      {"flush", 0});
	CHECK("io.ops[disk]", T, {NULL, 185}, {"sda", 150}, {"sdb", 20}, {"nvme0n1", 15});
	CHECK("io.bytes[op]", T, {NULL, 1048576 + 524288 + 40960 + 524288 + 20480},
	      {"read", 1048576 + 524288 + 40960}, {"write", 524288 + 20480});
	CHECK("io.bytes[disk]", T, {NULL, 1048576 + 524288 + 40960 + 524288 + 20480},
	      {"sda", 1572864}, {"sdb", 524288}, {"nvme0n1", 61440});
	/* reads: 50 + 40 + 5 ms over 130; writes: 100 + 15 ms over 55 */
	CHECK("io.latency[op]", T, {NULL, 210.0 / 185}, {"read", 95.0 / 130},
	      {"write", 115.0 / 55});
	CHECK("io.busy[disk]", T, {NULL, 49.6}, {"sda", 25}, {"sdb", 49.6}, {"nvme0n1", 2});
	CHECK("io.disks[utilization]", T, {NULL, 3}, {"0-5", 1}, {"25-30", 1}, {"45-50", 1});
	CHECK("io.queue[disk]", T, {NULL, 1.5 + 0.196 + 0.03}, {"sda", 1.5}, {"sdb", 0.196},
	      {"nvme0n1", 0.03});
	CHECK("nic.kilobytes[direction]", T, {NULL, 152}, {"in", 102}, {"out", 50});
	CHECK("nic.kilobytes[device]", T, {NULL, 152}, {"eth0", 150}, {"eth1", 2});
	CHECK("mem.bytes[component]", T, {NULL, 16000000.0 * 1024}, {"used", 5000000.0 * 1024},
	      {"cache", 6000000.0 * 1024}, {"buffers", 1000000.0 * 1024},
	      {"free", 4000000.0 * 1024});
	CHECK("psi.some[resource]", T, {NULL, 25}, {"cpu", 25}, {"io", 10}, {"memory", 0});
	ok(datasets_find("arc.accesses[hit/miss]") == NULL, "no ARC datasets without ZFS");
	/* Listed from the start; no job runs: 0 ops, no latency. */
	CHECK("bench.ops[direction]", T, {NULL, 0}, {"read", 0}, {"write", 0});
	check_dataset("bench.latency[direction]", T, NULL, 0);
	test_bench_values();

	/* A disk appears: the others go on exactly; it has values from its second reading. */
	collector_tick_at(T + 2); /* same files: all rates 0 */
	CHECK("io.ops[disk]", T + 1, {NULL, 0}, {"sda", 0}, {"sdb", 0}, {"sdc", 0}, {"nvme0n1", 0});

	/* ZFS arrives: arcstats (without iohits) in two readings, then with iohits. */
	write_file("/proc/spl/kstat/zfs/arcstats", ARC_OLD(10000, 5000));
	collector_tick_at(T + 3);
	ok(datasets_find("arc.size[component]") == NULL, "ARC seen once: no rate yet");
	write_file("/proc/spl/kstat/zfs/arcstats", ARC_OLD(10750, 5250));
	collector_tick_at(T + 4);
	s = collector_latest();
	ok(s->have_arc && !s->arc_have_iohits, "ARC without iohits");
	is_num(s->arc_hit_pct, 75, "hit ratio 750 / (750 + 250)");
	ok(datasets_find("arc.accesses[hit/miss]") && datasets_find("arc.size[component]"),
	   "the ARC datasets are created when the ARC is seen");
	ok(datasets_find("arc.accesses[hit|miss]") == datasets_find("arc.accesses[hit/miss]"),
	   "'|' stands for '/' in a name");
	CHECK("arc.accesses[hit/miss]", T + 3, {NULL, 1000}, {"data hits", 750},
	      {"data misses", 250}, {"metadata hits", 0}, {"metadata misses", 0},
	      {"prefetch data hits", 0}, {"prefetch data misses", 0}, {"prefetch metadata hits", 0},
	      {"prefetch metadata misses", 0});
	CHECK("arc.size[component]", T + 3, {NULL, 1073741824.0}, {"data", 873741824.0},
	      {"metadata", 200000000.0}, {"other", 0});

	write_file("/proc/spl/kstat/zfs/arcstats", ARC_NEW(20000, 6000, 1000));
	collector_tick_at(T + 5);
	write_file("/proc/spl/kstat/zfs/arcstats", ARC_NEW(20900, 6050, 1050));
	collector_tick_at(T + 6);
	s = collector_latest();
	ok(s->arc_have_iohits, "ARC with iohits");
	is_num(s->arc_hit_pct, 90, "hit ratio 900 / (900 + 50 + 50), as arcstat");
	CHECK("arc.accesses[hit/miss]", T + 5, {NULL, 1000}, {"data hits", 900},
	      {"data misses", 50}, {"metadata hits", 0}, {"metadata misses", 0},
	      {"prefetch data hits", 0}, {"prefetch data misses", 0}, {"prefetch metadata hits", 0},
	      {"prefetch metadata misses", 0}, {"data iohits", 50}, {"metadata iohits", 0},
	      {"prefetch data iohits", 0}, {"prefetch metadata iohits", 0});
	CHECK("arc.size[component]", T + 5, {NULL, 1073741824.0}, {"data", 800000000.0},
	      {"metadata", 200000000.0}, {"other", 73741824.0});

	/* ZFS goes away: no ARC values, the rest goes on. */
	remove_file("/proc/spl/kstat/zfs/arcstats");
	collector_tick_at(T + 7);
	s = collector_latest();
	ok(!s->have_arc, "ARC gone");
	check_dataset("arc.accesses[hit/miss]", T + 6, NULL, 0);
	CHECK("io.queue[disk]", T + 6, {NULL, 0}, {"sda", 0}, {"sdb", 0}, {"sdc", 0},
	      {"nvme0n1", 0});
	/* No CPU time passed in the files at all: no shares to give, so no values. */
	check_dataset("cpu.utilization[mode]", T + 6, NULL, 0);

	/* A suspended dataset gets no values. */
	struct fault f;
	ok(datasets_suspend(datasets_find("io.ops[op]"), true, "test", "", &f) == 0, "suspend");
	collector_tick_at(T + 8);
	check_dataset("io.ops[op]", T + 7, NULL, 0);

	collector_shutdown();
	datasets_shutdown();
	series_shutdown();
	event_base_free(base);
	db_close(db);
}

int main(void)
{
	snprintf(root, sizeof(root), "/tmp/spindle-test-procfs.XXXXXX");
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_counter_delta();
	test_parsers();
	test_classes();
	test_big_file();
	test_pools();
	test_zpoolhist();
	test_smbstat();
	test_rates();
	test_pipeline();
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd) != 0)
		diag("could not remove %s", root);
	return done_testing();
}
