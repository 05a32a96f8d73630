/* SPDX-License-Identifier: ISC OR GPL-2.0-only */
/* The kernel half of spindle-iolat: at each block request's completion, one count in
 * its device and direction's latency, size and offset histograms (iolat.h), in a per-CPU
 * array. Completion only: the latency is from the request's start_time_ns, which blk-mq
 * stamps when the queue counts iostats (as diskstats' own times), so no map of start
 * times has to be kept at issue. A device the helper did not put in `devs` costs one hash
 * lookup.
 *
 * The kernel's types are declared here with only the fields read, and CO-RE
 * (preserve_access_index) finds them in the running kernel's BTF wherever they are. */
#include <linux/types.h>
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "iolat.h"

struct gendisk {
	int major;
	int first_minor;
} __attribute__((preserve_access_index));

struct request_queue {
	struct gendisk *disk;
} __attribute__((preserve_access_index));

struct request {
	struct request_queue *q;
	unsigned int cmd_flags;
	unsigned long long __sector;
	unsigned long long start_time_ns;
} __attribute__((preserve_access_index));

/* Before Linux 5.17 a request named its disk itself. */
struct request___old {
	struct gendisk *rq_disk;
} __attribute__((preserve_access_index));

#define REQ_OP_MASK 0xff

/* Sized by the helper before loading (bpf_map__set_max_entries). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iolat_dev);
} devs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct iolat_hist);
} hists SEC(".maps");

SEC("tp_btf/block_rq_complete")
int BPF_PROG(iolat_complete, struct request *rq, int error, unsigned int nr_bytes)
{
	struct gendisk *disk;
	if (bpf_core_field_exists(rq->q->disk))
		disk = rq->q->disk;
	else
		disk = BPF_CORE_READ((struct request___old *)rq, rq_disk);
	if (!disk)
		return 0;
	__u32 dev = IOLAT_DEV(disk->major, disk->first_minor);
	struct iolat_dev *d = bpf_map_lookup_elem(&devs, &dev);
	if (!d)
		return 0;
	__u32 op = rq->cmd_flags & REQ_OP_MASK;
	if (op >= IOLAT_DIRS)
		return 0;
	__u32 key = d->slot * IOLAT_DIRS + op;
	struct iolat_hist *h = bpf_map_lookup_elem(&hists, &key);
	if (!h)
		return 0;

	/* Atomic adds, though the copy is this CPU's: the program runs with migration, not
	 * always preemption, disabled, so a run preempted on this CPU by another run of it
	 * interleaves; plain increments lost about one count in 2,000 that way. */
	__u64 start = rq->start_time_ns, now = bpf_ktime_get_ns();
	if (start && now >= start) {
		__u32 i = iolat_lat_index(now - start);
		if (i < IOLAT_LAT_BUCKETS)
			__sync_fetch_and_add(&h->lat[i], 1);
	} else {
		__sync_fetch_and_add(&h->untimed, 1);
	}
	__u32 s = iolat_size_index(nr_bytes);
	if (s < IOLAT_SIZE_BUCKETS)
		__sync_fetch_and_add(&h->size[s], 1);
	if (d->sectors) {
		__u64 o = rq->__sector * IOLAT_OFF_BUCKETS / d->sectors;
		if (o >= IOLAT_OFF_BUCKETS)
			o = IOLAT_OFF_BUCKETS - 1;
		__sync_fetch_and_add(&h->off[o], 1);
	}
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
