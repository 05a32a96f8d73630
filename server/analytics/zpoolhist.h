/* SPDX-License-Identifier: ISC */
/* The pools' vdev I/O histograms as `zpool iostat -w` (latency) and `-r` (request size)
 * print them: the heat maps of a ZFS box without the eBPF helper. While a dataset needs
 * them (zpoolhist_want), each tick starts the two commands one after the other as
 * children of the loop (cmdpoll.h); a round's counts, cumulative since each pool was
 * imported, less the round before over the seconds between the two rounds' starts,
 * are the rates the next tick takes. ZFS keeps a power of two per bucket: latency from
 * 1 ns to 2^37 ns, sizes from 512 bytes to 2^25 (what zpool prints).
 * Loop thread only. */
#ifndef SPINDLE_ZPOOLHIST_H
#define SPINDLE_ZPOOLHIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZPOOLHIST_LAT_BUCKETS  37 /* [2^j, 2^(j+1)) ns, the last open above */
#define ZPOOLHIST_SIZE_BUCKETS 25 /* [2^j, 2^(j+1)) bytes from j = 9, the last open above */
#define ZPOOLHIST_SIZE_FIRST   9

/* The waits zpool iostat -w times, in its column order; and the directions. */
enum zpoolhist_wait { ZH_TOTAL, ZH_DISK, ZH_SYNCQ, ZH_ASYNCQ, ZH_WAITS };

/* Counts (cumulative in a reading, per second in a rate), every pool summed: [dir] is
 * read (0) or write (1). size is the requests ZFS issued by size, individual and aggregated
 * together, sync and async together. */
struct zpoolhist_counts {
	double lat[ZH_WAITS][2][ZPOOLHIST_LAT_BUCKETS];
	double size[2][ZPOOLHIST_SIZE_BUCKETS];
};

struct event_base;

void zpoolhist_init(struct event_base *base);
void zpoolhist_shutdown(void);
/* A dataset needs them, or none does any more. */
void zpoolhist_want(bool on);
/* Once a tick (the collector's): the newest round's rates become what zpoolhist_get gives,
 * and a round starts if none is under way; false when there are none (not wanted, zpool
 * missing or failing, or no two rounds yet). */
bool zpoolhist_take(void);
const struct zpoolhist_counts *zpoolhist_get(void);
/* Why the last round gave nothing ("" when it did). */
const char *zpoolhist_why(void);

/* What `zpool iostat -wHp` (latency true) or `-rHp` printed, added into out: per pool its
 * name alone on a line, then a line per bucket, its label (latency: the bucket's last
 * nanosecond, 2^(j+1)-1; size: its first byte, 2^j) and its counts tab-separated. 0, or -1
 * with why when a line is neither. */
int zpoolhist_parse(const char *text, bool latency, struct zpoolhist_counts *out, char *why,
                    size_t len);

/* The key of a bucket as the datasets name it: "1024-2048" (ns or bytes), the last open
 * above ("137438953472+"). */
void zpoolhist_key(bool latency, unsigned idx, char *buf, size_t len);

#endif
