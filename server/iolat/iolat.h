/* SPDX-License-Identifier: ISC OR GPL-2.0-only */
/* What the kernel program (iolat.bpf.c), the helper that holds it (helper.c) and spindled's
 * reader of the helper (analytics/iolat.c) share: the layout of a device's histograms and
 * the bucket of a value. One definition, compiled for BPF and for the host alike, so the
 * three cannot disagree; changing a bucket changes IOLAT_PROTO_VERSION.
 *
 * - Latency, in nanoseconds from the request's start (blk-mq's start_time_ns, the time
 *   the kernel's own iostats count from) to its completion: log-linear, each power of two
 *   from 2^10 ns (1.024 us) to 2^36 ns (68.7 s) cut into 4, below it one bucket, above it
 *   one. Every bucket is a whole number of hist.h's buckets (128 to a power of two, exact
 *   below 128 ns): these coarsen that scheme exactly, so a run's worker histogram and the
 *   disks' can be laid over each other.
 * - Size, in bytes of the completion: [0, 512), then one bucket per power of two from 512
 *   to 2^25 (32 MiB), and one above.
 * - Offset: where on the device the request started, in 64 equal slices of its capacity. */
#ifndef SPINDLE_IOLAT_H
#define SPINDLE_IOLAT_H

#include <linux/types.h>

#define IOLAT_PROTO_VERSION 1

#define IOLAT_LAT_LOW_BITS  10 /* below 2^10 ns: bucket 0 */
#define IOLAT_LAT_HIGH_BITS 36 /* from 2^36 ns up: the last bucket */
#define IOLAT_LAT_SUB_BITS  2  /* 4 buckets to a power of two */
#define IOLAT_LAT_BUCKETS                                                                          \
	(2 + (IOLAT_LAT_HIGH_BITS - IOLAT_LAT_LOW_BITS) * (1 << IOLAT_LAT_SUB_BITS)) /* 106 */
#define IOLAT_SIZE_LOW_BITS  9  /* below 512 bytes: bucket 0 */
#define IOLAT_SIZE_HIGH_BITS 25 /* from 32 MiB up: the last bucket */
#define IOLAT_SIZE_BUCKETS   (2 + IOLAT_SIZE_HIGH_BITS - IOLAT_SIZE_LOW_BITS) /* 18 */
#define IOLAT_OFF_BUCKETS    64

/* Directions counted: the kernel's REQ_OP_READ and REQ_OP_WRITE (flushes and discards are
 * diskstats' own counters). */
#define IOLAT_DIRS 2

/* One device and direction's counts since the program was loaded, one copy per CPU (a
 * per-CPU array: no CPU waits for another). 32 bits wrap; a reader once a second takes
 * differences modulo 2^32, which stay right below 4 billion completions a second. */
struct iolat_hist {
	__u32 lat[IOLAT_LAT_BUCKETS];
	__u32 size[IOLAT_SIZE_BUCKETS];
	__u32 off[IOLAT_OFF_BUCKETS];
	__u32 untimed; /* completions without a start time: the queue's iostats are off */
	__u32 pad;
};

/* A device the helper watches, keyed by its dev_t as the kernel makes it (major << 20 |
 * minor): its slot (histograms slot * 2 + direction) and capacity in 512-byte sectors. */
struct iolat_dev {
	__u32 slot;
	__u32 pad;
	__u64 sectors;
};

#define IOLAT_DEV(major, minor) (((__u32)(major) << 20) | (__u32)(minor))

static inline __u32 iolat_msb(__u64 v)
{
	__u32 r = 0;
	if (v >> 32) {
		v >>= 32;
		r += 32;
	}
	if (v >> 16) {
		v >>= 16;
		r += 16;
	}
	if (v >> 8) {
		v >>= 8;
		r += 8;
	}
	if (v >> 4) {
		v >>= 4;
		r += 4;
	}
	if (v >> 2) {
		v >>= 2;
		r += 2;
	}
	if (v >> 1)
		r += 1;
	return r;
}

static inline __u32 iolat_lat_index(__u64 ns)
{
	if (ns < (1ULL << IOLAT_LAT_LOW_BITS))
		return 0;
	if (ns >= (1ULL << IOLAT_LAT_HIGH_BITS))
		return IOLAT_LAT_BUCKETS - 1;
	__u32 m = iolat_msb(ns);
	return 1 + ((m - IOLAT_LAT_LOW_BITS) << IOLAT_LAT_SUB_BITS) +
	       (__u32)((ns >> (m - IOLAT_LAT_SUB_BITS)) & ((1u << IOLAT_LAT_SUB_BITS) - 1));
}

static inline __u32 iolat_size_index(__u64 bytes)
{
	if (bytes < (1ULL << IOLAT_SIZE_LOW_BITS))
		return 0;
	if (bytes >= (1ULL << IOLAT_SIZE_HIGH_BITS))
		return IOLAT_SIZE_BUCKETS - 1;
	return 1 + iolat_msb(bytes) - IOLAT_SIZE_LOW_BITS;
}

/* The lowest value of a bucket; its highest is one below the next bucket's lowest (the
 * last bucket has none: UINT64_MAX). */
static inline __u64 iolat_lat_low(__u32 idx)
{
	if (idx == 0)
		return 0;
	if (idx >= IOLAT_LAT_BUCKETS - 1)
		return 1ULL << IOLAT_LAT_HIGH_BITS;
	__u32 g = (idx - 1) >> IOLAT_LAT_SUB_BITS, k = (idx - 1) & ((1u << IOLAT_LAT_SUB_BITS) - 1);
	__u32 m = IOLAT_LAT_LOW_BITS + g;
	return (1ULL << m) + ((__u64)k << (m - IOLAT_LAT_SUB_BITS));
}

static inline __u64 iolat_size_low(__u32 idx)
{
	if (idx == 0)
		return 0;
	return 1ULL << (IOLAT_SIZE_LOW_BITS + idx - 1);
}

#endif
