/* SPDX-License-Identifier: ISC */
/* The /proc parsers on any text, as procfs_read() runs them on what slurp() read: the
 * input is up to 16 files separated by the byte 0x1e (ASCII record separator), in the
 * order stat, diskstats, net/dev, meminfo, pressure/cpu, pressure/io, pressure/memory,
 * arcstats (read as /proc/net/rpc/nfsd, /proc/net/snmp, /proc/net/netstat, /proc/net/snmp6
 * and an objset kstat too, and as what smbstatus --profile, zpool iostat -w and -r print),
 * then the same eight again a second later. Each file is
 * parsed, NUL-terminated, into its snapshot; the disks get their class by name; procfs_rates() then
 * makes the per-second sample of the two, which must hold percentages within 0..100. */
#include <string.h>

#include "fuzz.h"
#include "analytics/procfs.h"
#include "analytics/smbstat.h"
#include "analytics/zpoolhist.h"
#include "base/util.h"

#define NFILES 8

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

/* The next file of the input, NUL-terminated, for free(); "" once the input is used up. */
static char *next_file(const char **p, const char *end)
{
	if (*p >= end)
		return xstrdup("");
	const char *rs = memchr(*p, 0x1e, (size_t)(end - *p));
	const char *stop = rs ? rs : end;
	char *text = xstrndup(*p, (size_t)(stop - *p));
	*p = rs ? rs + 1 : end;
	return text;
}

static void parse(const char **p, const char *end, struct procfs_snapshot *s)
{
	for (int f = 0; f < NFILES; f++) {
		char *t = next_file(p, end);
		int rc = 0;
		switch (f) {
		case 0:
			rc = procfs_parse_stat(t, s);
			fuzz_assert((rc == 0) == s->have_cpu);
			break;
		case 1:
			if (procfs_parse_diskstats(t, s) < 0)
				s->ndisks = 0;
			fuzz_assert(s->ndisks >= 0 && (size_t)s->ndisks <= s->disks_cap);
			break;
		case 2:
			if (procfs_parse_netdev(t, s) < 0)
				s->nnics = 0;
			fuzz_assert(s->nnics >= 0 && (size_t)s->nnics <= s->nics_cap);
			break;
		case 3:
			rc = procfs_parse_meminfo(t, s);
			fuzz_assert((rc == 0) == s->have_mem);
			break;
		case 4:
		case 5:
		case 6:
			rc = procfs_parse_psi(t, (enum procfs_psi)(f - 4), s);
			fuzz_assert((rc == 0) == s->have_psi[f - 4]);
			break;
		case 7:
			rc = procfs_parse_arcstats(t, s);
			fuzz_assert((rc == 0) == s->have_arc);
			/* the same text as /proc/net/rpc/nfsd too: its proc3 and proc4ops lines */
			rc = procfs_parse_nfsd(t, s);
			fuzz_assert((rc == 0) == (s->have_nfs3 || s->have_nfs4));
			fuzz_assert(s->nfs4_n >= 0 && s->nfs4_n <= NFS4_OPS);
			rc = procfs_parse_snmp(t, s);
			fuzz_assert((rc == 0) == (s->have_ip4 || s->have_tcp));
			rc = procfs_parse_netstat(t, s);
			fuzz_assert((rc == 0) == s->have_ip4_bytes);
			rc = procfs_parse_snmp6(t, s);
			fuzz_assert((rc == 0) == s->have_ip6);
			/* as one pool's only objset */
			memset(&s->pools[0], 0, sizeof(s->pools[0]));
			s->npools = procfs_parse_objset(t, &s->pools[0]) == 0;
			snprintf(s->pools[0].name, sizeof(s->pools[0].name), "tank");
			/* as the commands' output: counts that are never negative */
			{
				static double smb[128];
				static struct zpoolhist_counts zc;
				char why[256];
				fuzz_assert(smbstat_nops() <= 128);
				memset(smb, 0, sizeof(smb));
				if (smbstat_parse(t, smb, why, sizeof(why)) < 0)
					fuzz_assert(why[0]);
				for (size_t i = 0; i < smbstat_nops(); i++)
					fuzz_assert(smb[i] >= 0);
				memset(&zc, 0, sizeof(zc));
				if (zpoolhist_parse(t, true, &zc, why, sizeof(why)) < 0)
					fuzz_assert(why[0]);
				memset(&zc, 0, sizeof(zc));
				if (zpoolhist_parse(t, false, &zc, why, sizeof(why)) < 0)
					fuzz_assert(why[0]);
			}
			break;
		}
		free(t);
	}
	for (int i = 0; i < s->ndisks; i++) {
		struct procfs_disk *d = &s->disks[i];
		fuzz_assert(strnlen(d->name, sizeof(d->name)) < sizeof(d->name) && d->name[0]);
		d->cls = procfs_classify_name(d->name, s);
	}
	for (int i = 0; i < s->nnics; i++)
		fuzz_assert(strnlen(s->nics[i].name, sizeof(s->nics[i].name)) <
		            sizeof(s->nics[i].name));
}

static bool is_pct(double v)
{
	return v >= 0 && v <= 100;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	struct procfs_snapshot a, b;
	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	parse(&p, end, &a);
	parse(&p, end, &b);

	struct box_sample out;
	memset(&out, 0, sizeof(out));
	out.disks = xcalloc((size_t)b.ndisks + 1, sizeof(*out.disks));
	out.nics = xcalloc((size_t)b.nnics + 1, sizeof(*out.nics));
	out.cpus = xcalloc((size_t)b.ncpus + 1, sizeof(*out.cpus));
	procfs_rates(&a, &b, 1, &out);
	fuzz_assert(out.ncpu_rated <= b.ncpus);
	for (int i = 0; i < out.ncpu_rated; i++)
		fuzz_assert(is_pct(out.cpus[i].busy_pct));
	for (int k = 0; k < ARC_KINDS; k++)
		fuzz_assert(out.arc_kind_per_s[k] >= 0);
	for (int i = 0; i < NFS3_PROCS; i++)
		fuzz_assert(out.nfs3_per_s[i] >= 0);
	for (int i = 0; i < NFS4_OPS; i++)
		fuzz_assert(out.nfs4_per_s[i] >= 0);
	fuzz_assert(out.ndisks <= b.ndisks && out.nnics <= b.nnics);
	for (int m = 0; m < CPU_MODES; m++)
		fuzz_assert(is_pct(out.cpu_pct[m]));
	for (int i = 0; i < PROCFS_PSI_COUNT; i++)
		fuzz_assert(is_pct(out.psi_some_pct[i]));
	fuzz_assert(is_pct(out.arc_hit_pct));
	fuzz_assert(out.ip_in_bytes_per_s >= 0 && out.ip_out_bytes_per_s >= 0 &&
	            out.ip_in_packets_per_s >= 0 && out.ip_out_packets_per_s >= 0 &&
	            out.tcp_in_segs_per_s >= 0 && out.tcp_out_segs_per_s >= 0 &&
	            out.tcp_retrans_per_s >= 0);
	fuzz_assert(out.npools <= b.npools);
	for (int i = 0; i < out.npools; i++)
		fuzz_assert(out.pools[i].reads_per_s >= 0 && out.pools[i].writes_per_s >= 0 &&
		            out.pools[i].read_bytes_per_s >= 0 &&
		            out.pools[i].write_bytes_per_s >= 0);
	for (int i = 0; i < out.ndisks; i++)
		fuzz_assert(is_pct(out.disks[i].busy_pct));

	free(out.disks);
	free(out.nics);
	free(out.cpus);
	procfs_snapshot_free(&a);
	procfs_snapshot_free(&b);
	return 0;
}
