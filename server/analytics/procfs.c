/* SPDX-License-Identifier: ISC */
/* The kernel's counters, read by hand: each file with one read() into a buffer kept
 * between ticks, parsed in place without stdio or allocation. */
#define _GNU_SOURCE
#include "procfs.h"
#include "base/log.h"
#include "base/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum procfs_file {
	F_STAT,
	F_DISKSTATS,
	F_NETDEV,
	F_MEMINFO,
	F_PSI_CPU,
	F_PSI_IO,
	F_PSI_MEMORY,
	F_ARCSTATS,
	F_NFSD,
	F_SNMP,
	F_NETSTAT,
	F_SNMP6,
	F_COUNT
};

static const char *const procfs_rel[F_COUNT] = {
    "/proc/stat",
    "/proc/diskstats",
    "/proc/net/dev",
    "/proc/meminfo",
    "/proc/pressure/cpu",
    "/proc/pressure/io",
    "/proc/pressure/memory",
    "/proc/spl/kstat/zfs/arcstats",
    "/proc/net/rpc/nfsd",
    "/proc/net/snmp",
    "/proc/net/netstat",
    "/proc/net/snmp6",
};

/* A device seen in the last /proc/diskstats, with the class it was given. */
struct known_dev {
	char name[PROCFS_NAME_MAX];
	enum procfs_disk_class cls;
};

/* A NIC seen in the last /proc/net/dev, and whether it stands on others. */
struct known_nic {
	char name[PROCFS_NAME_MAX];
	bool stacked;
};

struct procfs {
	char *path[F_COUNT];
	char *sys_block; /* <sys-root>/sys/class/block */
	char *sys_net;   /* <sys-root>/sys/class/net */
	char *kstat_zfs; /* <proc-root>/proc/spl/kstat/zfs: a folder per pool */
	char *lio_root;  /* <sys-root>/sys/kernel/config/target: LIO's configfs */
	bool pools, lio;
	struct known_nic *knics, *knics_next;
	size_t nknics, knics_cap;
	bool partitions, loop_devices;
	char *buf;
	size_t cap;
	struct known_dev *known, *known_next;
	int nknown, known_cap;
};

static char *root_join(const char *root, const char *rel)
{
	size_t n = root ? strlen(root) : 0;
	while (n > 0 && root[n - 1] == '/')
		n--;
	return xasprintf("%.*s%s", (int)n, root ? root : "", rel);
}

struct procfs *procfs_new(const struct procfs_options *o)
{
	struct procfs *p = xcalloc(1, sizeof(*p));
	for (int i = 0; i < F_COUNT; i++)
		p->path[i] = root_join(o->proc_root, procfs_rel[i]);
	p->sys_block = root_join(o->sys_root, "/sys/class/block");
	p->sys_net = root_join(o->sys_root, "/sys/class/net");
	p->kstat_zfs = root_join(o->proc_root, "/proc/spl/kstat/zfs");
	p->lio_root = root_join(o->sys_root, "/sys/kernel/config/target");
	p->pools = o->pools;
	p->lio = o->lio;
	p->partitions = o->partitions;
	p->loop_devices = o->loop_devices;
	p->cap = 16384;
	p->buf = xmalloc(p->cap);
	return p;
}

void procfs_free(struct procfs *p)
{
	if (!p)
		return;
	for (int i = 0; i < F_COUNT; i++)
		free(p->path[i]);
	free(p->sys_block);
	free(p->sys_net);
	free(p->kstat_zfs);
	free(p->lio_root);
	free(p->knics);
	free(p->knics_next);
	free(p->buf);
	free(p->known);
	free(p->known_next);
	free(p);
}

void procfs_snapshot_free(struct procfs_snapshot *s)
{
	free(s->disks);
	free(s->nics);
	free(s->cpus);
	free(s->lio);
	memset(s, 0, sizeof(*s));
}

/* The whole file in p->buf, NUL-terminated, or NULL. A read that leaves more than half the
 * buffer unused has reached the end (seq_file fills what fits, record by record), so a
 * file costs one read() once the buffer has grown to twice its size. */
static const char *slurp_at(struct procfs *p, int dir, const char *path)
{
	int fd =
	    openat(dir, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK); /* a FIFO: no hang */
	if (fd < 0)
		return NULL;
	size_t len = 0;
	for (;;) {
		if (p->cap - len < 4096 || len > p->cap / 2) {
			p->cap *= 2;
			p->buf = xrealloc(p->buf, p->cap);
		}
		size_t want = p->cap - len - 1;
		ssize_t n = read(fd, p->buf + len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			close(fd);
			return NULL;
		}
		len += (size_t)n;
		if (n == 0 || ((size_t)n < want && len <= p->cap / 2))
			break;
	}
	close(fd);
	p->buf[len] = '\0';
	return p->buf;
}

static const char *slurp(struct procfs *p, enum procfs_file f)
{
	return slurp_at(p, AT_FDCWD, p->path[f]);
}

/* --- parsing helpers: the kernel's formats are fixed, so a hand-written scan is enough */

static const char *skip_blanks(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

static const char *next_line(const char *s)
{
	const char *nl = strchr(s, '\n');
	return nl ? nl + 1 : s + strlen(s);
}

/* A decimal number after optional blanks; NULL when there is none. */
static const char *parse_u64(const char *s, uint64_t *out)
{
	s = skip_blanks(s);
	if (*s < '0' || *s > '9')
		return NULL;
	uint64_t v = 0;
	while (*s >= '0' && *s <= '9')
		v = v * 10 + (uint64_t)(*s++ - '0');
	*out = v;
	return s;
}

/* n numbers in a row into out; NULL when fewer are there. */
static const char *parse_u64s(const char *s, uint64_t *out, int n)
{
	for (int i = 0; i < n && s; i++)
		s = parse_u64(s, &out[i]);
	return s;
}

/* A word (up to blank, newline or stop) into buf; NULL when it is empty or too long. */
static const char *parse_word(const char *s, char stop, char *buf, size_t len)
{
	s = skip_blanks(s);
	size_t n = 0;
	while (*s && *s != ' ' && *s != '\t' && *s != '\n' && *s != stop) {
		if (n + 1 >= len)
			return NULL;
		buf[n++] = *s++;
	}
	buf[n] = '\0';
	return n ? s : NULL;
}

static bool starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* --- the files */

int procfs_parse_stat(const char *text, struct procfs_snapshot *s)
{
	/* cpu user nice system idle iowait irq softirq steal [guest guest_nice]: guest time
	 * is already inside user and nice, so it is not added again. */
	static const enum cpu_mode order[] = {CPU_USER,   CPU_NICE, CPU_SYSTEM,  CPU_IDLE,
	                                      CPU_IOWAIT, CPU_IRQ,  CPU_SOFTIRQ, CPU_STEAL};
	s->have_cpu = false;
	s->ncpus = 0;
	bool total = false;
	for (const char *l = text; *l; l = next_line(l)) {
		if (!starts(l, "cpu"))
			continue;
		if (l[3] == ' ') {
			uint64_t v[8];
			if (!parse_u64s(l + 3, v, 8))
				return -1;
			for (int i = 0; i < 8; i++)
				s->cpu[order[i]] = v[i];
			total = true;
		} else if (l[3] >= '0' && l[3] <= '9') {
			char *end;
			long id = strtol(l + 3, &end, 10);
			uint64_t v[8];
			if (id < 0 || id > INT32_MAX || *end != ' ' || !parse_u64s(end, v, 8))
				continue;
			s->cpus =
			    util_grow(s->cpus, &s->cpus_cap, (size_t)s->ncpus, sizeof(*s->cpus));
			struct procfs_cpu *c = &s->cpus[s->ncpus++];
			c->id = (int)id;
			c->total = 0;
			for (int i = 0; i < 8; i++)
				c->total += v[i];
			c->busy = c->total - v[3]; /* all but idle, as cpu.utilization counts it */
		}
	}
	s->have_cpu = total;
	return total ? 0 : -1;
}

int procfs_parse_diskstats(const char *text, struct procfs_snapshot *s)
{
	s->ndisks = 0;
	for (const char *l = text; *l; l = next_line(l)) {
		uint64_t majmin[2], v[11], x[6];
		char name[PROCFS_NAME_MAX];
		const char *p = parse_u64s(l, majmin, 2);
		if (p)
			p = parse_word(p, '\0', name, sizeof(name));
		/* reads merged sectors ms, writes merged sectors ms, in_flight io_ms weighted */
		if (p)
			p = parse_u64s(p, v, 11);
		if (!p) {
			if (*skip_blanks(l) == '\n' || !*skip_blanks(l))
				continue;
			return -1;
		}
		s->disks = util_grow(s->disks, &s->disks_cap, (size_t)s->ndisks, sizeof(*s->disks));
		struct procfs_disk *d = &s->disks[s->ndisks++];
		memcpy(d->name, name, sizeof(name));
		d->cls = PROCFS_DISK_UNKNOWN;
		d->reads = v[0];
		d->read_merges = v[1];
		d->read_sectors = v[2];
		d->read_ms = v[3];
		d->writes = v[4];
		d->write_merges = v[5];
		d->write_sectors = v[6];
		d->write_ms = v[7];
		d->in_flight = v[8];
		d->io_ms = v[9];
		d->weighted_ms = v[10];
		/* discards merged sectors ms, then flushes ms, where the kernel has them */
		const char *q = parse_u64s(p, x, 4);
		d->have_discards = q != NULL;
		d->have_flushes = q && parse_u64s(q, x + 4, 2);
		d->discards = d->have_discards ? x[0] : 0;
		d->discard_sectors = d->have_discards ? x[2] : 0;
		d->discard_ms = d->have_discards ? x[3] : 0;
		d->flushes = d->have_flushes ? x[4] : 0;
		d->flush_ms = d->have_flushes ? x[5] : 0;
	}
	return 0;
}

int procfs_parse_netdev(const char *text, struct procfs_snapshot *s)
{
	s->nnics = 0;
	if (!strstr(text, "Receive") || !strstr(text, "Transmit"))
		return -1;
	/* Two header lines, then "  eth0: rx_bytes packets errs drop fifo frame compressed
	 * multicast tx_bytes packets errs drop fifo colls carrier compressed". */
	const char *l = next_line(next_line(text));
	for (; *l; l = next_line(l)) {
		char name[PROCFS_NAME_MAX];
		uint64_t v[16];
		const char *p = parse_word(l, ':', name, sizeof(name));
		if (!p || *p != ':' || !parse_u64s(p + 1, v, 16))
			continue;
		if (strcmp(name, "lo") == 0)
			continue; /* the box talking to itself is not traffic */
		s->nics = util_grow(s->nics, &s->nics_cap, (size_t)s->nnics, sizeof(*s->nics));
		struct procfs_nic *n = &s->nics[s->nnics++];
		memcpy(n->name, name, sizeof(name));
		n->stacked = false; /* sysfs tells, in classify_nics() */
		n->rx_bytes = v[0];
		n->rx_packets = v[1];
		n->rx_errors = v[2];
		n->tx_bytes = v[8];
		n->tx_packets = v[9];
		n->tx_errors = v[10];
	}
	return 0;
}

int procfs_parse_meminfo(const char *text, struct procfs_snapshot *s)
{
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
	    {"MemTotal:", offsetof(struct procfs_snapshot, mem_total)},
	    {"MemFree:", offsetof(struct procfs_snapshot, mem_free)},
	    {"Buffers:", offsetof(struct procfs_snapshot, mem_buffers)},
	    {"Cached:", offsetof(struct procfs_snapshot, mem_cached)},
	    {"SReclaimable:", offsetof(struct procfs_snapshot, mem_sreclaimable)},
	    {"SUnreclaim:", offsetof(struct procfs_snapshot, mem_kernel)},
	    {"KernelStack:", offsetof(struct procfs_snapshot, mem_kstack)},
	    {"PageTables:", offsetof(struct procfs_snapshot, mem_pagetables)},
	};
	unsigned found = 0;
	s->have_mem = false;
	s->mem_sreclaimable = s->mem_kernel = s->mem_kstack = s->mem_pagetables = 0;
	for (const char *l = text; *l; l = next_line(l)) {
		for (size_t i = 0; i < nitems(keys); i++) {
			uint64_t v;
			if (!starts(l, keys[i].key) || !parse_u64(l + strlen(keys[i].key), &v))
				continue;
			*(uint64_t *)((char *)s + keys[i].off) = v * 1024; /* "kB" is KiB */
			found |= 1u << i;
			break;
		}
	}
	/* SReclaimable and the kernel's own are optional (old kernels); the first four not. */
	s->have_mem = (found & 0xf) == 0xf;
	s->mem_have_kernel = (found & (1u << 5)) != 0;
	s->mem_kernel += s->mem_kstack + s->mem_pagetables;
	return s->have_mem ? 0 : -1;
}

int procfs_parse_psi(const char *text, enum procfs_psi which, struct procfs_snapshot *s)
{
	s->have_psi[which] = false;
	for (const char *l = text; *l; l = next_line(l)) {
		if (!starts(l, "some "))
			continue;
		const char *t = strstr(l, "total=");
		const char *eol = next_line(l);
		if (!t || t > eol || !parse_u64(t + 6, &s->psi_some_us[which]))
			return -1;
		s->have_psi[which] = true;
		return 0;
	}
	return -1;
}

/* "proc3 22 v0 v1 ...": the count, then that many counters (at most max kept, the rest
 * read past); -1 when the line is not one. */
static int counters_line(const char *l, uint64_t *out, int max)
{
	uint64_t n, v;
	const char *p = parse_u64(l, &n);
	if (!p || n > 1024)
		return -1;
	int kept = 0;
	for (uint64_t i = 0; i < n; i++) {
		if (!(p = parse_u64(p, &v)))
			return -1;
		if (kept < max)
			out[kept++] = v;
	}
	return kept;
}

int procfs_parse_nfsd(const char *text, struct procfs_snapshot *s)
{
	s->have_nfs3 = s->have_nfs4 = false;
	s->nfs4_n = 0;
	memset(s->nfs3, 0, sizeof(s->nfs3));
	memset(s->nfs4, 0, sizeof(s->nfs4));
	for (const char *l = text; *l; l = next_line(l)) {
		int n;
		if (starts(l, "proc3 ") &&
		    (n = counters_line(l + 6, s->nfs3, NFS3_PROCS)) == NFS3_PROCS)
			s->have_nfs3 = true;
		else if (starts(l, "proc4ops ") &&
		         (n = counters_line(l + 9, s->nfs4, NFS4_OPS)) > 0) {
			s->have_nfs4 = true;
			s->nfs4_n = n;
		}
	}
	return s->have_nfs3 || s->have_nfs4 ? 0 : -1;
}

/* Past n words of a line; NULL at its end. */
static const char *skip_words(const char *s, int n)
{
	for (int i = 0; i < n; i++) {
		s = skip_blanks(s);
		if (!*s || *s == '\n')
			return NULL;
		s += strcspn(s, " \t\n");
	}
	return s;
}

/* /proc/net/snmp and /proc/net/netstat hold pairs of lines, "Ip: Forwarding DefaultTTL ..."
 * naming the columns, then "Ip: 1 64 ..." their values (some signed: those are not read).
 * Each of names found in the pair of prefix ("Ip:") goes to out[i] and sets bit i of the
 * answer. */
static unsigned mib_values(const char *text, const char *prefix, const char *const *names, int n,
                           uint64_t *out)
{
	size_t plen = strlen(prefix);
	unsigned found = 0;
	for (const char *l = text; *l; l = next_line(l)) {
		if (strncmp(l, prefix, plen) != 0)
			continue;
		const char *vals = next_line(l);
		if (strncmp(vals, prefix, plen) != 0)
			return 0;
		const char *h = l + plen;
		for (int col = 0;; col++) {
			h = skip_blanks(h);
			size_t len = strcspn(h, " \t\n");
			if (!len)
				break;
			for (int i = 0; i < n; i++) {
				const char *v;
				if (strlen(names[i]) == len && strncmp(h, names[i], len) == 0 &&
				    (v = skip_words(vals + plen, col)) && parse_u64(v, &out[i]))
					found |= 1u << i;
			}
			h += len;
		}
		return found;
	}
	return 0;
}

int procfs_parse_snmp(const char *text, struct procfs_snapshot *s)
{
	static const char *const ip[] = {"InReceives", "OutRequests"},
	                         *tcp[] = {"InSegs", "OutSegs", "RetransSegs"};
	uint64_t v[3];
	s->have_ip4 = mib_values(text, "Ip:", ip, 2, v) == 3;
	s->ip4_in_packets = s->have_ip4 ? v[0] : 0;
	s->ip4_out_packets = s->have_ip4 ? v[1] : 0;
	s->have_tcp = mib_values(text, "Tcp:", tcp, 3, v) == 7;
	s->tcp_in_segs = s->have_tcp ? v[0] : 0;
	s->tcp_out_segs = s->have_tcp ? v[1] : 0;
	s->tcp_retrans_segs = s->have_tcp ? v[2] : 0;
	return s->have_ip4 || s->have_tcp ? 0 : -1;
}

int procfs_parse_netstat(const char *text, struct procfs_snapshot *s)
{
	static const char *const ipext[] = {"InOctets", "OutOctets"};
	uint64_t v[2];
	s->have_ip4_bytes = mib_values(text, "IpExt:", ipext, 2, v) == 3;
	s->ip4_in_bytes = s->have_ip4_bytes ? v[0] : 0;
	s->ip4_out_bytes = s->have_ip4_bytes ? v[1] : 0;
	return s->have_ip4_bytes ? 0 : -1;
}

int procfs_parse_snmp6(const char *text, struct procfs_snapshot *s)
{
	/* one "Name value" a line */
	static const struct {
		const char *key;
		size_t off;
	} keys[] = {
	    {"Ip6InReceives", offsetof(struct procfs_snapshot, ip6_in_packets)},
	    {"Ip6OutRequests", offsetof(struct procfs_snapshot, ip6_out_packets)},
	    {"Ip6InOctets", offsetof(struct procfs_snapshot, ip6_in_bytes)},
	    {"Ip6OutOctets", offsetof(struct procfs_snapshot, ip6_out_bytes)},
	};
	unsigned found = 0;
	for (const char *l = text; *l; l = next_line(l)) {
		size_t len = strcspn(l, " \t\n");
		for (size_t i = 0; i < nitems(keys); i++) {
			uint64_t v;
			if (strlen(keys[i].key) != len || strncmp(l, keys[i].key, len) != 0 ||
			    !parse_u64(l + len, &v))
				continue;
			*(uint64_t *)((char *)s + keys[i].off) = v;
			found |= 1u << i;
		}
	}
	s->have_ip6 = found == 0xf;
	return s->have_ip6 ? 0 : -1;
}

int procfs_parse_objset(const char *text, struct procfs_pool *pool)
{
	/* "name type data" rows after a header line: reads, writes, nread, nwritten */
	static const char *const names[] = {"reads", "writes", "nread", "nwritten"};
	uint64_t v[4];
	unsigned found = 0;
	if (!strstr(text, "dataset_name"))
		return -1;
	for (const char *l = text; *l; l = next_line(l)) {
		size_t len = strcspn(l, " \t\n");
		for (int i = 0; i < 4; i++) {
			const char *p;
			if (strlen(names[i]) == len && strncmp(l, names[i], len) == 0 &&
			    (p = skip_words(l, 2)) && parse_u64(p, &v[i]))
				found |= 1u << i;
		}
	}
	if (found != 0xf)
		return -1;
	pool->reads += v[0];
	pool->writes += v[1];
	pool->nread += v[2];
	pool->nwritten += v[3];
	return 0;
}

int procfs_parse_arcstats(const char *text, struct procfs_snapshot *s)
{
#define ARC_KEY(k, field, bit)                                                                     \
	{                                                                                          \
		k, offsetof(struct procfs_snapshot, field), 1ull << (bit)                          \
	}
#define KIND(k, kind, bit)                                                                         \
	{                                                                                          \
		k, offsetof(struct procfs_snapshot, arc_kind) + (kind) * sizeof(uint64_t),         \
		    1ull << (bit)                                                                  \
	}
	static const struct {
		const char *key;
		size_t off;
		uint64_t bit;
	} keys[] = {
	    ARC_KEY("hits", arc_hits, 0),
	    ARC_KEY("misses", arc_misses, 1),
	    ARC_KEY("size", arc_size, 2),
	    ARC_KEY("c", arc_c, 3),
	    ARC_KEY("iohits", arc_iohits, 4),
	    ARC_KEY("mfu_size", arc_mfu, 5),
	    ARC_KEY("mru_size", arc_mru, 6),
	    ARC_KEY("data_size", arc_data, 7),
	    ARC_KEY("metadata_size", arc_meta, 8),
	    /* before OpenZFS 2.2 */
	    ARC_KEY("arc_meta_used", arc_meta, 9),
	    /* bits 10 to 17: the eight kinds every release has */
	    KIND("demand_data_hits", ARC_DATA_HITS, 10),
	    KIND("demand_data_misses", ARC_DATA_MISSES, 11),
	    KIND("demand_metadata_hits", ARC_META_HITS, 12),
	    KIND("demand_metadata_misses", ARC_META_MISSES, 13),
	    KIND("prefetch_data_hits", ARC_PF_DATA_HITS, 14),
	    KIND("prefetch_data_misses", ARC_PF_DATA_MISSES, 15),
	    KIND("prefetch_metadata_hits", ARC_PF_META_HITS, 16),
	    KIND("prefetch_metadata_misses", ARC_PF_META_MISSES, 17),
	    /* OpenZFS 2.2 and later */
	    KIND("demand_data_iohits", ARC_DATA_IOHITS, 18),
	    KIND("demand_metadata_iohits", ARC_META_IOHITS, 19),
	    KIND("prefetch_data_iohits", ARC_PF_DATA_IOHITS, 20),
	    KIND("prefetch_metadata_iohits", ARC_PF_META_IOHITS, 21),
	    ARC_KEY("c_min", arc_c_min, 22),
	    ARC_KEY("c_max", arc_c_max, 23),
	    /* bits 24 to 29: the L2ARC */
	    ARC_KEY("l2_hits", l2_hits, 24),
	    ARC_KEY("l2_misses", l2_misses, 25),
	    ARC_KEY("l2_read_bytes", l2_read_bytes, 26),
	    ARC_KEY("l2_write_bytes", l2_write_bytes, 27),
	    ARC_KEY("l2_size", l2_size, 28),
	    ARC_KEY("l2_asize", l2_asize, 29),
	};
#undef ARC_KEY
#undef KIND
	uint64_t found = 0;
	s->have_arc = s->arc_have_kinds = s->have_l2 = false;
	s->arc_iohits = s->arc_mfu = s->arc_mru = s->arc_data = s->arc_meta = 0;
	s->arc_c_min = s->arc_c_max = 0;
	memset(s->arc_kind, 0, sizeof(s->arc_kind));
	s->l2_hits = s->l2_misses = s->l2_read_bytes = s->l2_write_bytes = 0;
	s->l2_size = s->l2_asize = 0;
	if (!starts(next_line(text), "name"))
		return -1;
	/* "name type data" rows after the kstat header and the column line */
	for (const char *l = next_line(next_line(text)); *l; l = next_line(l)) {
		char name[64];
		uint64_t type, v;
		const char *p = parse_word(l, '\0', name, sizeof(name));
		if (!p || !(p = parse_u64(p, &type)) || !parse_u64(p, &v))
			continue;
		for (size_t i = 0; i < nitems(keys); i++) {
			if (strcmp(name, keys[i].key) != 0)
				continue;
			/* metadata_size wins over the older arc_meta_used when both exist */
			if (keys[i].bit == (1ull << 9) && (found & (1ull << 8)))
				break;
			*(uint64_t *)((char *)s + keys[i].off) = v;
			found |= keys[i].bit;
			break;
		}
	}
	s->arc_have_iohits = found & (1ull << 4);
	s->have_arc = (found & 0xf) == 0xf;
	s->arc_have_kinds = (found & (0xffull << 10)) == (0xffull << 10);
	s->have_l2 = (found & (0x3full << 24)) == (0x3full << 24);
	return s->have_arc ? 0 : -1;
}

/* --- disk classes */

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool virtual_name(const char *name)
{
	return (starts(name, "loop") && all_digits(name + 4)) ||
	       (starts(name, "ram") && all_digits(name + 3)) ||
	       (starts(name, "zram") && all_digits(name + 4));
}

static bool device_named(const struct procfs_snapshot *s, const char *name, size_t len)
{
	for (int i = 0; i < s->ndisks; i++)
		if (strncmp(s->disks[i].name, name, len) == 0 && s->disks[i].name[len] == '\0')
			return true;
	return false;
}

enum procfs_disk_class procfs_classify_name(const char *name, const struct procfs_snapshot *s)
{
	if (virtual_name(name))
		return PROCFS_DISK_VIRTUAL;
	size_t n = strlen(name), k = n;
	while (k > 0 && name[k - 1] >= '0' && name[k - 1] <= '9')
		k--;
	if (k == n || k == 0)
		return PROCFS_DISK_WHOLE;
	if (device_named(s, name, k) ||
	    (k > 1 && name[k - 1] == 'p' && device_named(s, name, k - 1)))
		return PROCFS_DISK_PARTITION;
	return PROCFS_DISK_WHOLE;
}

/* sysfs knows for sure: a partition has a "partition" attribute. Without the directory
 * (a synthetic tree, a container without /sys) the name decides. */
static enum procfs_disk_class classify(const struct procfs *p, const char *name,
                                       const struct procfs_snapshot *s)
{
	struct stat st;
	if (virtual_name(name))
		return PROCFS_DISK_VIRTUAL;
	if (stat(p->sys_block, &st) == 0 && S_ISDIR(st.st_mode)) {
		char *dev = xasprintf("%s/%s", p->sys_block, name);
		char *part = xasprintf("%s/partition", dev);
		enum procfs_disk_class c = PROCFS_DISK_UNKNOWN;
		if (stat(part, &st) == 0)
			c = PROCFS_DISK_PARTITION;
		else if (stat(dev, &st) == 0)
			c = PROCFS_DISK_WHOLE;
		free(dev);
		free(part);
		if (c != PROCFS_DISK_UNKNOWN)
			return c;
	}
	return procfs_classify_name(name, s);
}

/* Does <sys-root>/sys/class/net/<name> have a lower_* link (it stands on other links)? */
static bool nic_stacked(const struct procfs *p, const char *name)
{
	char *dir = xasprintf("%s/%s", p->sys_net, name);
	DIR *d = opendir(dir);
	free(dir);
	bool stacked = false;
	struct dirent *e;
	while (d && !stacked && (e = readdir(d)))
		stacked = strncmp(e->d_name, "lower_", 6) == 0;
	if (d)
		closedir(d);
	return stacked;
}

/* Tells every NIC whether it is stacked: asked of sysfs when a name first appears, then
 * remembered while it stays. */
static void classify_nics(struct procfs *p, struct procfs_snapshot *s)
{
	size_t n = (size_t)s->nnics;
	if (n > p->knics_cap) {
		p->knics_cap = n;
		p->knics = xrealloc(p->knics, n * sizeof(*p->knics));
		p->knics_next = xrealloc(p->knics_next, n * sizeof(*p->knics_next));
	}
	for (size_t i = 0; i < n; i++) {
		struct procfs_nic *c = &s->nics[i];
		/* where it stood last time first: /proc/net/dev keeps its order */
		size_t j = i < p->nknics && strcmp(p->knics[i].name, c->name) == 0 ? i : 0;
		while (j < p->nknics && strcmp(p->knics[j].name, c->name) != 0)
			j++;
		c->stacked = j < p->nknics ? p->knics[j].stacked : nic_stacked(p, c->name);
		memcpy(p->knics_next[i].name, c->name, sizeof(c->name));
		p->knics_next[i].stacked = c->stacked;
	}
	struct known_nic *t = p->knics;
	p->knics = p->knics_next;
	p->knics_next = t;
	p->nknics = n;
}

/* Gives every disk its class, the same as last time while the list is unchanged (one
 * strcmp a device), then drops the disks the options leave out. */
static void classify_disks(struct procfs *p, struct procfs_snapshot *s)
{
	bool same = s->ndisks == p->nknown;
	for (int i = 0; same && i < s->ndisks; i++)
		same = strcmp(s->disks[i].name, p->known[i].name) == 0;
	if (same) {
		for (int i = 0; i < s->ndisks; i++)
			s->disks[i].cls = p->known[i].cls;
	} else {
		if (s->ndisks > p->known_cap) {
			p->known_cap = s->ndisks;
			p->known_next =
			    xrealloc(p->known_next, (size_t)p->known_cap * sizeof(*p->known_next));
			p->known = xrealloc(p->known, (size_t)p->known_cap * sizeof(*p->known));
		}
		for (int i = 0; i < s->ndisks; i++) {
			struct procfs_disk *d = &s->disks[i];
			for (int j = 0; j < p->nknown && d->cls == PROCFS_DISK_UNKNOWN; j++)
				if (strcmp(p->known[j].name, d->name) == 0)
					d->cls = p->known[j].cls;
			if (d->cls == PROCFS_DISK_UNKNOWN)
				d->cls = classify(p, d->name, s);
			memcpy(p->known_next[i].name, d->name, sizeof(d->name));
			p->known_next[i].cls = d->cls;
		}
		struct known_dev *t = p->known;
		p->known = p->known_next;
		p->known_next = t;
		p->nknown = s->ndisks;
	}
	int n = 0;
	for (int i = 0; i < s->ndisks; i++) {
		enum procfs_disk_class c = s->disks[i].cls;
		if ((c == PROCFS_DISK_PARTITION && !p->partitions) ||
		    (c == PROCFS_DISK_VIRTUAL && !p->loop_devices))
			continue;
		if (n != i)
			s->disks[n] = s->disks[i];
		n++;
	}
	s->ndisks = n;
}

static void unread(struct procfs_snapshot *s, enum procfs_file f)
{
	size_t n = strlen(s->unread);
	snprintf(s->unread + n, sizeof(s->unread) - n, "%s%s", n ? ", " : "", procfs_rel[f]);
}

static bool is_dir_at(int dir, const struct dirent *e)
{
	struct stat st;
	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	return fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
}

/* The folder name in dir, or NULL. */
static DIR *opendir_at(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d && fd >= 0)
		close(fd);
	return d;
}

static int pool_cmp(const void *a, const void *b)
{
	return strcmp(((const struct procfs_pool *)a)->name, ((const struct procfs_pool *)b)->name);
}

/* Each pool's folder of kstats (those beside arcstats), its objset-* files summed: one
 * file per dataset of the pool, so only while wanted. A pool with none is left out. */
static void read_pools(struct procfs *p, struct procfs_snapshot *s)
{
	s->npools = 0;
	DIR *top = p->pools ? opendir(p->kstat_zfs) : NULL;
	if (!top)
		return;
	const struct dirent *e;
	while ((e = readdir(top)) && s->npools < SAMPLE_POOLS_MAX) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= SAMPLE_POOL_NAME ||
		    !is_dir_at(dirfd(top), e))
			continue;
		DIR *d = opendir_at(dirfd(top), e->d_name);
		if (!d)
			continue;
		struct procfs_pool *pool = &s->pools[s->npools];
		memset(pool, 0, sizeof(*pool));
		snprintf(pool->name, sizeof(pool->name), "%s", e->d_name);
		int objsets = 0;
		const struct dirent *o;
		const char *t;
		while ((o = readdir(d)))
			if (starts(o->d_name, "objset-") &&
			    (t = slurp_at(p, dirfd(d), o->d_name)) &&
			    procfs_parse_objset(t, pool) == 0)
				objsets++;
		closedir(d);
		if (objsets)
			s->npools++;
	}
	closedir(top);
	if (s->npools > 1)
		qsort(s->pools, (size_t)s->npools, sizeof(*s->pools), pool_cmp);
}

void procfs_want_pools(struct procfs *p, bool want)
{
	p->pools = want;
}

/* --- LIO, the kernel's SCSI target (configfs) */

static const struct {
	const char *dir;
	enum lio_fabric fabric;
} lio_fabrics[] = {
    {"iscsi", LIO_ISCSI},
    {"qla2xxx", LIO_FC},
    {"tcm_fc", LIO_FC},
    {"efct", LIO_FC},
};

/* The number an attribute file of dir holds. */
static bool attr_u64(struct procfs *p, int dir, const char *path, uint64_t *out)
{
	const char *t = slurp_at(p, dir, path);
	return t && parse_u64(t, out);
}

/* The three counters of a LUN's statistics folder (stats: scsi_tgt_port, whose commands
 * are in_cmds, or scsi_auth_intr, num_cmds). */
static bool lun_counters(struct procfs *p, int dir, const char *lun, bool port, uint64_t v[3])
{
	static const char *const names[2][3] = {
	    {"num_cmds", "read_mbytes", "write_mbytes"},
	    {"in_cmds", "read_mbytes", "write_mbytes"},
	};
	char path[PATH_MAX];
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/statistics/%s/%s", lun,
		         port ? "scsi_tgt_port" : "scsi_auth_intr", names[port][i]);
		if (!attr_u64(p, dir, path, &v[i]))
			return false;
	}
	return true;
}

static void lio_add(struct procfs_snapshot *s, enum lio_fabric fabric, bool initiator,
                    const char *target, const char *who, const char *lun, const uint64_t v[3])
{
	s->lio = util_grow(s->lio, &s->lio_cap, (size_t)s->nlio, sizeof(*s->lio));
	struct procfs_lio *l = &s->lio[s->nlio++];
	memset(l, 0, sizeof(*l));
	l->fabric = fabric;
	l->initiator = initiator;
	snprintf(l->target, sizeof(l->target), "%s", target);
	snprintf(l->who, sizeof(l->who), "%s", who);
	snprintf(l->lun, sizeof(l->lun), "%s", lun);
	/* sorted so a target's LUNs, and an initiator's targets, stand together */
	snprintf(l->key, sizeof(l->key), "%c|%d|%s|%s", initiator ? 'i' : 'p', (int)fabric,
	         initiator ? who : target, initiator ? target : lun);
	l->cmds = v[0];
	l->read_mb = v[1];
	l->write_mb = v[2];
}

/* A portal group's LUNs (lun/lun_N) and its initiators' LUNs summed (acls/NAME/lun_N). */
static void read_tpg(struct procfs *p, struct procfs_snapshot *s, int tpg, enum lio_fabric fabric,
                     const char *target)
{
	DIR *d = opendir_at(tpg, "lun");
	const struct dirent *e;
	uint64_t v[3];
	while (d && (e = readdir(d)))
		if (starts(e->d_name, "lun_") && strlen(e->d_name) < 16 &&
		    lun_counters(p, dirfd(d), e->d_name, true, v))
			lio_add(s, fabric, false, target, "", e->d_name, v);
	if (d)
		closedir(d);
	DIR *acls = opendir_at(tpg, "acls");
	while (acls && (e = readdir(acls))) {
		DIR *a;
		if (e->d_name[0] == '.' || strlen(e->d_name) >= 224 ||
		    !(a = opendir_at(dirfd(acls), e->d_name)))
			continue;
		uint64_t sum[3] = {0};
		bool any = false;
		const struct dirent *l;
		while ((l = readdir(a)))
			if (starts(l->d_name, "lun_") &&
			    lun_counters(p, dirfd(a), l->d_name, false, v)) {
				for (int i = 0; i < 3; i++)
					sum[i] += v[i];
				any = true;
			}
		closedir(a);
		if (any)
			lio_add(s, fabric, true, target, e->d_name, "", sum);
	}
	if (acls)
		closedir(acls);
}

static int lio_cmp(const void *a, const void *b)
{
	return strcmp(((const struct procfs_lio *)a)->key, ((const struct procfs_lio *)b)->key);
}

/* Which fabrics have a target with a portal group; while wanted, their counters. */
static void read_lio(struct procfs *p, struct procfs_snapshot *s)
{
	memset(s->lio_served, 0, sizeof(s->lio_served));
	s->nlio = 0;
	DIR *top = opendir(p->lio_root);
	if (!top)
		return;
	for (size_t i = 0; i < nitems(lio_fabrics); i++) {
		enum lio_fabric fabric = lio_fabrics[i].fabric;
		DIR *f = opendir_at(dirfd(top), lio_fabrics[i].dir);
		const struct dirent *t;
		while (f && (t = readdir(f)) && (p->lio || !s->lio_served[fabric])) {
			DIR *td;
			if (t->d_name[0] == '.' || strlen(t->d_name) >= 224 ||
			    !(td = opendir_at(dirfd(f), t->d_name)))
				continue; /* (lio_version, discovery_auth: no portal groups) */
			const struct dirent *g;
			while ((g = readdir(td))) {
				DIR *tpg;
				if (!starts(g->d_name, "tpgt_") ||
				    !(tpg = opendir_at(dirfd(td), g->d_name)))
					continue;
				s->lio_served[fabric] = true;
				if (p->lio)
					read_tpg(p, s, dirfd(tpg), fabric, t->d_name);
				closedir(tpg);
				if (!p->lio)
					break;
			}
			closedir(td);
		}
		if (f)
			closedir(f);
	}
	closedir(top);
	if (s->nlio > 1) /* (none: no array at all yet) */
		qsort(s->lio, (size_t)s->nlio, sizeof(*s->lio), lio_cmp);
}

void procfs_want_lio(struct procfs *p, bool want)
{
	p->lio = want;
}

void procfs_read(struct procfs *p, struct procfs_snapshot *s)
{
	static const enum procfs_file psi_file[PROCFS_PSI_COUNT] = {F_PSI_CPU, F_PSI_IO,
	                                                            F_PSI_MEMORY};
	const char *t;

	s->unread[0] = '\0';
	if (!(t = slurp(p, F_STAT)) || procfs_parse_stat(t, s) < 0) {
		s->have_cpu = false;
		unread(s, F_STAT);
	}
	if ((t = slurp(p, F_DISKSTATS)) && procfs_parse_diskstats(t, s) == 0) {
		classify_disks(p, s);
	} else {
		s->ndisks = 0;
		unread(s, F_DISKSTATS);
	}
	if ((t = slurp(p, F_NETDEV)) && procfs_parse_netdev(t, s) == 0) {
		classify_nics(p, s);
	} else {
		s->nnics = 0;
		unread(s, F_NETDEV);
	}
	if (!(t = slurp(p, F_MEMINFO)) || procfs_parse_meminfo(t, s) < 0) {
		s->have_mem = false;
		unread(s, F_MEMINFO);
	}
	for (int i = 0; i < PROCFS_PSI_COUNT; i++)
		if (!(t = slurp(p, psi_file[i])) || procfs_parse_psi(t, i, s) < 0)
			s->have_psi[i] = false;
	if (!(t = slurp(p, F_NFSD)) || procfs_parse_nfsd(t, s) < 0)
		s->have_nfs3 = s->have_nfs4 = false;
	if (!(t = slurp(p, F_ARCSTATS)) || procfs_parse_arcstats(t, s) < 0)
		s->have_arc = false;
	if (!(t = slurp(p, F_SNMP)) || procfs_parse_snmp(t, s) < 0)
		s->have_ip4 = s->have_tcp = false;
	if (!(t = slurp(p, F_NETSTAT)) || procfs_parse_netstat(t, s) < 0)
		s->have_ip4_bytes = false;
	if (!(t = slurp(p, F_SNMP6)) || procfs_parse_snmp6(t, s) < 0)
		s->have_ip6 = false;
	read_pools(p, s);
	read_lio(p, s);
}

/* --- per-second values */

uint64_t procfs_counter_delta(uint64_t prev, uint64_t cur)
{
	if (cur >= prev)
		return cur - prev;
	/* Wrapped at 2^32: it was near the top, it is now near the bottom. */
	if (prev <= UINT32_MAX && prev - cur > (UINT64_C(1) << 31))
		return (UINT64_C(1) << 32) - prev + cur;
	/* Wrapped at 2^64, likewise. */
	if (prev > (UINT64_C(1) << 63) && cur < (UINT64_C(1) << 62))
		return cur - prev; /* modulo 2^64 */
	return cur;
}

/* The index of name in an array of structs that start with their name; hint first, as
 * the kernel lists devices in a stable order. */
static int find_named(const void *arr, size_t stride, int n, int hint, const char *name)
{
	const char *base = arr;
	if (hint < n && strcmp(base + (size_t)hint * stride, name) == 0)
		return hint;
	for (int i = 0; i < n; i++)
		if (strcmp(base + (size_t)i * stride, name) == 0)
			return i;
	return -1;
}

static double pct(double part, double whole)
{
	double v = whole > 0 ? 100.0 * part / whole : 0;
	return v > 100 ? 100 : v;
}

static void rates_disks(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                        double secs, struct box_sample *out)
{
	int n = 0;
	for (int i = 0; i < cur->ndisks; i++) {
		const struct procfs_disk *c = &cur->disks[i];
		int j = find_named(prev->disks, sizeof(*prev->disks), prev->ndisks, i, c->name);
		if (j < 0)
			continue; /* appeared: it has a rate from the next tick on */
		const struct procfs_disk *p = &prev->disks[j];
		struct disk_sample *d = &out->disks[n++];
		uint64_t reads = procfs_counter_delta(p->reads, c->reads);
		uint64_t writes = procfs_counter_delta(p->writes, c->writes);
		uint64_t rms = procfs_counter_delta(p->read_ms, c->read_ms);
		uint64_t wms = procfs_counter_delta(p->write_ms, c->write_ms);
		memcpy(d->name, c->name, sizeof(d->name));
		d->reads_per_s = (double)reads / secs;
		d->writes_per_s = (double)writes / secs;
		/* sectors here are always 512 bytes, whatever the device's own size */
		d->read_bytes_per_s =
		    (double)procfs_counter_delta(p->read_sectors, c->read_sectors) * 512 / secs;
		d->write_bytes_per_s =
		    (double)procfs_counter_delta(p->write_sectors, c->write_sectors) * 512 / secs;
		d->read_latency_ms = reads ? (double)rms / (double)reads : 0;
		d->write_latency_ms = writes ? (double)wms / (double)writes : 0;
		d->busy_pct = pct((double)procfs_counter_delta(p->io_ms, c->io_ms), secs * 1000);
		d->queue =
		    (double)procfs_counter_delta(p->weighted_ms, c->weighted_ms) / (secs * 1000);
		d->reads = c->reads;
		d->writes = c->writes;
		d->read_bytes = c->read_sectors * 512;
		d->write_bytes = c->write_sectors * 512;
		d->read_ms = c->read_ms;
		d->write_ms = c->write_ms;
		d->io_ms = c->io_ms;
		d->in_flight = c->in_flight;
		d->read_merges = c->read_merges;
		d->write_merges = c->write_merges;
		d->weighted_ms = c->weighted_ms;
		d->have_discards = p->have_discards && c->have_discards;
		d->have_flushes = p->have_flushes && c->have_flushes;
		d->discards_per_s =
		    d->have_discards ? (double)procfs_counter_delta(p->discards, c->discards) / secs
		                     : 0;
		d->flushes_per_s = d->have_flushes
		                       ? (double)procfs_counter_delta(p->flushes, c->flushes) / secs
		                       : 0;
		d->discards = c->discards;
		d->discard_bytes = c->discard_sectors * 512;
		d->flushes = c->flushes;
		d->discard_ms = c->discard_ms;
		d->flush_ms = c->flush_ms;
	}
	out->ndisks = n;
}

static void rates_nics(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                       double secs, struct box_sample *out)
{
	int n = 0;
	for (int i = 0; i < cur->nnics; i++) {
		const struct procfs_nic *c = &cur->nics[i];
		int j = find_named(prev->nics, sizeof(*prev->nics), prev->nnics, i, c->name);
		if (j < 0)
			continue;
		const struct procfs_nic *p = &prev->nics[j];
		struct nic_sample *s = &out->nics[n++];
		memcpy(s->name, c->name, sizeof(s->name));
		s->stacked = c->stacked;
		s->rx_kb_per_s =
		    (double)procfs_counter_delta(p->rx_bytes, c->rx_bytes) / 1024 / secs;
		s->tx_kb_per_s =
		    (double)procfs_counter_delta(p->tx_bytes, c->tx_bytes) / 1024 / secs;
		s->rx_bytes = c->rx_bytes;
		s->tx_bytes = c->tx_bytes;
		s->rx_packets = c->rx_packets;
		s->tx_packets = c->tx_packets;
		s->rx_errors = c->rx_errors;
		s->tx_errors = c->tx_errors;
	}
	out->nnics = n;
}

/* The kernel's counters of a protocol as rates: each a delta over the interval. */
static double rate(uint64_t prev, uint64_t cur, double secs)
{
	return (double)procfs_counter_delta(prev, cur) / secs;
}

static void rates_net(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                      double secs, struct box_sample *out)
{
	bool v4 = prev->have_ip4 && cur->have_ip4 && prev->have_ip4_bytes && cur->have_ip4_bytes;
	bool v6 = prev->have_ip6 && cur->have_ip6;
	out->have_ip = v4 || v6;
	out->ip_in_bytes_per_s = (v4 ? rate(prev->ip4_in_bytes, cur->ip4_in_bytes, secs) : 0) +
	                         (v6 ? rate(prev->ip6_in_bytes, cur->ip6_in_bytes, secs) : 0);
	out->ip_out_bytes_per_s = (v4 ? rate(prev->ip4_out_bytes, cur->ip4_out_bytes, secs) : 0) +
	                          (v6 ? rate(prev->ip6_out_bytes, cur->ip6_out_bytes, secs) : 0);
	out->ip_in_packets_per_s =
	    (v4 ? rate(prev->ip4_in_packets, cur->ip4_in_packets, secs) : 0) +
	    (v6 ? rate(prev->ip6_in_packets, cur->ip6_in_packets, secs) : 0);
	out->ip_out_packets_per_s =
	    (v4 ? rate(prev->ip4_out_packets, cur->ip4_out_packets, secs) : 0) +
	    (v6 ? rate(prev->ip6_out_packets, cur->ip6_out_packets, secs) : 0);
	out->have_tcp = prev->have_tcp && cur->have_tcp;
	out->tcp_in_segs_per_s =
	    out->have_tcp ? rate(prev->tcp_in_segs, cur->tcp_in_segs, secs) : 0;
	out->tcp_out_segs_per_s =
	    out->have_tcp ? rate(prev->tcp_out_segs, cur->tcp_out_segs, secs) : 0;
	out->tcp_retrans_per_s =
	    out->have_tcp ? rate(prev->tcp_retrans_segs, cur->tcp_retrans_segs, secs) : 0;
	out->tcp_retrans_segs = cur->have_tcp ? cur->tcp_retrans_segs : 0;
}

/* A pool read both times (one imported meanwhile has a rate from the next tick on). */
static void rates_pools(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                        double secs, struct box_sample *out)
{
	int n = 0;
	for (int i = 0; i < cur->npools; i++) {
		const struct procfs_pool *c = &cur->pools[i];
		int j = find_named(prev->pools, sizeof(*prev->pools), prev->npools, i, c->name);
		if (j < 0)
			continue;
		const struct procfs_pool *p = &prev->pools[j];
		struct pool_sample *o = &out->pools[n++];
		memcpy(o->name, c->name, sizeof(o->name));
		/* a dataset destroyed takes its counts along: no rate goes below zero */
		o->reads_per_s = c->reads >= p->reads ? (double)(c->reads - p->reads) / secs : 0;
		o->writes_per_s =
		    c->writes >= p->writes ? (double)(c->writes - p->writes) / secs : 0;
		o->read_bytes_per_s =
		    c->nread >= p->nread ? (double)(c->nread - p->nread) / secs : 0;
		o->write_bytes_per_s =
		    c->nwritten >= p->nwritten ? (double)(c->nwritten - p->nwritten) / secs : 0;
	}
	out->npools = n;
}

/* Each LIO port and initiator read both times, by its key. */
static void rates_lio(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                      double secs, struct box_sample *out)
{
	for (int f = 0; f < LIO_FABRICS; f++)
		out->have_lio[f] = prev->lio_served[f] && cur->lio_served[f];
	int n = 0;
	for (int i = 0; out->lio && i < cur->nlio; i++) {
		const struct procfs_lio *c = &cur->lio[i];
		int j = find_named(prev->lio, sizeof(*prev->lio), prev->nlio, i, c->key);
		if (j < 0)
			continue;
		const struct procfs_lio *p = &prev->lio[j];
		struct lio_sample *o = &out->lio[n++];
		memcpy(o->key, c->key, sizeof(o->key));
		o->fabric = c->fabric;
		o->initiator = c->initiator;
		memcpy(o->target, c->target, sizeof(o->target));
		memcpy(o->who, c->who, sizeof(o->who));
		memcpy(o->lun, c->lun, sizeof(o->lun));
		o->ops_per_s = rate(p->cmds, c->cmds, secs);
		o->read_bytes_per_s = rate(p->read_mb, c->read_mb, secs) * 1048576;
		o->write_bytes_per_s = rate(p->write_mb, c->write_mb, secs) * 1048576;
	}
	out->nlio = n;
}

void procfs_rates(const struct procfs_snapshot *prev, const struct procfs_snapshot *cur,
                  int seconds, struct box_sample *out)
{
	double secs = seconds > 0 ? seconds : 1;

	memset(out->cpu_pct, 0, sizeof(out->cpu_pct));
	if (prev->have_cpu && cur->have_cpu) {
		uint64_t d[CPU_MODES], total = 0;
		for (int m = 0; m < CPU_MODES; m++) {
			/* iowait is known to step back on some kernels: that is no wrap */
			d[m] = cur->cpu[m] >= prev->cpu[m] ? cur->cpu[m] - prev->cpu[m] : 0;
			total += d[m];
		}
		for (int m = 0; m < CPU_MODES; m++)
			out->cpu_pct[m] = pct((double)d[m], (double)total);
	}
	memcpy(out->cpu_ticks, cur->cpu, sizeof(out->cpu_ticks));
	out->ncpus = cur->ncpus;
	/* each CPU read both times, by its number (a CPU taken offline leaves the others be) */
	out->ncpu_rated = 0;
	for (int i = 0; out->cpus && i < cur->ncpus; i++) {
		const struct procfs_cpu *c = &cur->cpus[i], *p = NULL;
		if (i < prev->ncpus && prev->cpus[i].id == c->id)
			p = &prev->cpus[i];
		for (int j = 0; !p && j < prev->ncpus; j++)
			if (prev->cpus[j].id == c->id)
				p = &prev->cpus[j];
		if (!p || c->total <= p->total)
			continue;
		uint64_t busy = c->busy >= p->busy ? c->busy - p->busy : 0;
		out->cpus[out->ncpu_rated++] =
		    (struct cpu_sample){c->id, pct((double)busy, (double)(c->total - p->total))};
	}

	rates_disks(prev, cur, secs, out);
	rates_nics(prev, cur, secs, out);
	rates_net(prev, cur, secs, out);
	rates_pools(prev, cur, secs, out);
	rates_lio(prev, cur, secs, out);

	if (cur->have_mem) {
		uint64_t cache = cur->mem_cached + cur->mem_sreclaimable;
		uint64_t taken = cur->mem_free + cur->mem_buffers + cache;
		out->mem_total = cur->mem_total;
		out->mem_free = cur->mem_free;
		out->mem_buffers = cur->mem_buffers;
		out->mem_cache = cache;
		out->mem_used = cur->mem_total > taken ? cur->mem_total - taken : 0;
		out->mem_have_kernel = cur->mem_have_kernel;
		out->mem_kernel = cur->mem_kernel < out->mem_used ? cur->mem_kernel : out->mem_used;
	} else {
		out->mem_have_kernel = false;
		out->mem_kernel = 0;
		out->mem_total = out->mem_used = out->mem_cache = out->mem_buffers = 0;
		out->mem_free = 0;
	}

	out->have_psi = true;
	for (int i = 0; i < PROCFS_PSI_COUNT; i++) {
		bool have = prev->have_psi[i] && cur->have_psi[i];
		out->have_psi = out->have_psi && have;
		out->psi_some_pct[i] = have ? pct((double)procfs_counter_delta(prev->psi_some_us[i],
		                                                               cur->psi_some_us[i]),
		                                  secs * 1e6)
		                            : 0;
	}

	/* the NFS server: a counter read both times (nfsd reloaded: the counters start over) */
	out->have_nfs3 = prev->have_nfs3 && cur->have_nfs3;
	for (int i = 0; i < NFS3_PROCS; i++)
		out->nfs3_per_s[i] =
		    out->have_nfs3
		        ? (double)procfs_counter_delta(prev->nfs3[i], cur->nfs3[i]) / secs
		        : 0;
	out->have_nfs4 = prev->have_nfs4 && cur->have_nfs4;
	for (int i = 0; i < NFS4_OPS; i++)
		out->nfs4_per_s[i] =
		    out->have_nfs4 && i < cur->nfs4_n && i < prev->nfs4_n
		        ? (double)procfs_counter_delta(prev->nfs4[i], cur->nfs4[i]) / secs
		        : 0;

	out->have_arc = prev->have_arc && cur->have_arc;
	if (out->have_arc) {
		uint64_t hits = procfs_counter_delta(prev->arc_hits, cur->arc_hits);
		uint64_t misses = procfs_counter_delta(prev->arc_misses, cur->arc_misses);
		uint64_t iohits = cur->arc_have_iohits && prev->arc_have_iohits
		                      ? procfs_counter_delta(prev->arc_iohits, cur->arc_iohits)
		                      : 0;
		out->arc_have_iohits = cur->arc_have_iohits;
		out->arc_hits_per_s = (double)hits / secs;
		out->arc_misses_per_s = (double)misses / secs;
		out->arc_iohits_per_s = (double)iohits / secs;
		/* arcstat: hit% = hits / (hits + iohits + misses) */
		out->arc_hit_pct = pct((double)hits, (double)(hits + misses + iohits));
		out->arc_hits = cur->arc_hits;
		out->arc_misses = cur->arc_misses;
		out->arc_iohits = cur->arc_iohits;
		out->arc_size = cur->arc_size;
		out->arc_target = cur->arc_c;
		out->arc_mfu = cur->arc_mfu;
		out->arc_mru = cur->arc_mru;
		out->arc_meta = cur->arc_meta;
		out->arc_data = cur->arc_data;
		out->arc_c_min = cur->arc_c_min;
		out->arc_c_max = cur->arc_c_max;
		out->arc_have_kinds = prev->arc_have_kinds && cur->arc_have_kinds;
		for (int k = 0; k < ARC_KINDS; k++)
			out->arc_kind_per_s[k] =
			    out->arc_have_kinds ? (double)procfs_counter_delta(prev->arc_kind[k],
			                                                       cur->arc_kind[k]) /
			                              secs
			                        : 0;
		out->have_l2 = prev->have_l2 && cur->have_l2;
		out->l2_hits_per_s =
		    (double)procfs_counter_delta(prev->l2_hits, cur->l2_hits) / secs;
		out->l2_misses_per_s =
		    (double)procfs_counter_delta(prev->l2_misses, cur->l2_misses) / secs;
		out->l2_read_bytes_per_s =
		    (double)procfs_counter_delta(prev->l2_read_bytes, cur->l2_read_bytes) / secs;
		out->l2_write_bytes_per_s =
		    (double)procfs_counter_delta(prev->l2_write_bytes, cur->l2_write_bytes) / secs;
		out->l2_hits = cur->l2_hits;
		out->l2_misses = cur->l2_misses;
		out->l2_size = cur->l2_size;
		out->l2_asize = cur->l2_asize;
		if (!out->have_l2) {
			out->l2_hits_per_s = out->l2_misses_per_s = 0;
			out->l2_read_bytes_per_s = out->l2_write_bytes_per_s = 0;
		}
	} else {
		out->arc_have_iohits = false;
		out->arc_hits_per_s = out->arc_misses_per_s = out->arc_iohits_per_s = 0;
		out->arc_hit_pct = 0;
		out->arc_hits = out->arc_misses = out->arc_iohits = 0;
		out->arc_size = out->arc_target = out->arc_mfu = out->arc_mru = 0;
		out->arc_meta = out->arc_data = 0;
		out->arc_c_min = out->arc_c_max = 0;
		out->arc_have_kinds = out->have_l2 = false;
		memset(out->arc_kind_per_s, 0, sizeof(out->arc_kind_per_s));
		out->l2_hits_per_s = out->l2_misses_per_s = 0;
		out->l2_read_bytes_per_s = out->l2_write_bytes_per_s = 0;
		out->l2_hits = out->l2_misses = out->l2_size = out->l2_asize = 0;
	}
}
