/* SPDX-License-Identifier: ISC */
/* The benchmark engine. Each thread owns its buffers, its random state and its histograms;
 * the only shared writes are the phase flag (set by the calling thread) and the count of
 * threads still running. The calling thread reads the threads' histograms with relaxed
 * loads once a second and reports the difference to the previous second. */
#define _GNU_SOURCE
#include "engine.h"

#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum phase { PHASE_RAMP, PHASE_MEASURE, PHASE_STOP };
enum role { ROLE_READ, ROLE_WRITE, ROLE_MIX };

#define NS_PER_S  1000000000ull
#define NS_PER_MS 1000000ull
#define SECTOR    512u

struct engine;

struct ethread {
	struct engine *e;
	pthread_t tid;
	bool started;
	unsigned id;
	enum role role;
	uint64_t first_block, nblocks; /* its region */
	uint64_t cursor;               /* sequential: next block in the region */
	bool limited;                  /* does quota apply? */
	uint64_t quota;                /* measured I/Os it does */
	uint64_t measured;             /* measured I/Os submitted */
	uint64_t rng[4];
	uint64_t salt;
	unsigned char *pool; /* nslices buffers of block_size, in the engine's arena */
	size_t nslices;
	uint64_t writes; /* all writes done, for fsync_every and the data stamp */
	bool wrote;
	struct hist ramp[ENGINE_DIRS], meas[ENGINE_DIRS], sync;
	uint64_t imax[ENGINE_DIRS]; /* largest latency since the last interval */
	uint64_t end_ns;
	char err[200];
	/* the calling thread's view of the last interval */
	uint64_t seen[ENGINE_DIRS][HIST_BUCKETS];
	uint64_t seen_sum[ENGINE_DIRS];
};

struct engine {
	const struct engine_job *job;
	unsigned n;
	struct ethread *t;
	/* the start gate: threads set up, count themselves ready, and wait for go (1) or
	 * abort (-1), so the clock starts with every thread set up */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	unsigned ready;
	int gate;
	pthread_t main;
	int phase;
	unsigned running;
	int failed;
	unsigned char *arena; /* every thread's buffers (arena_alloc) */
	size_t arena_len;
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

/* xoshiro256**: fast, a period far beyond any run, good enough for offsets and filler. */
static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

static uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* splitmix64's finaliser: a bijection on 64 bits whose output looks random. */
static inline uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void rng_seed(uint64_t s[4], uint64_t seed)
{
	for (int i = 0; i < 4; i++)
		s[i] = splitmix(&seed);
}

/* Uniform in [0, n) without division (Lemire). */
static inline uint64_t rng_below(uint64_t s[4], uint64_t n)
{
	return (uint64_t)(((unsigned __int128)rng_next(s) * n) >> 64);
}

static void fill_random(void *buf, size_t len, uint64_t s[4])
{
	uint64_t *p = buf;
	for (size_t i = 0; i < len / 8; i++)
		p[i] = rng_next(s);
}

void engine_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGUSR1);
}

static bool stop_signal_pending(void)
{
	sigset_t p;
	sigpending(&p);
	return sigismember(&p, SIGINT) || sigismember(&p, SIGTERM);
}

int engine_layout(int fd, uint64_t from, uint64_t to, uint64_t seed, char *err, size_t errlen)
{
	const size_t chunk = 1u << 20;
	uint64_t s[4];
	rng_seed(s, seed ^ 0x6c61796f7574ull);
	unsigned char *buf = malloc(chunk);
	if (!buf) {
		snprintf(err, errlen, "size: no memory for the layout buffer");
		return -1;
	}
	/* Fresh random data for every chunk: no two blocks of the file are alike. */
	for (uint64_t off = from; off < to;) {
		if (stop_signal_pending()) {
			free(buf);
			return 1;
		}
		size_t n = to - off < chunk ? (size_t)(to - off) : chunk;
		fill_random(buf, chunk, s);
		ssize_t w = pwrite(fd, buf, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			snprintf(err, errlen, "target: laying out the file at offset %llu: %s",
			         (unsigned long long)off, w < 0 ? strerror(errno) : "short write");
			free(buf);
			return -1;
		}
		off += (uint64_t)w;
	}
	free(buf);
	if (fsync(fd) < 0) {
		snprintf(err, errlen, "target: fsync after laying out the file: %s",
		         strerror(errno));
		return -1;
	}
	return 0;
}

int engine_probe(int fd, uint32_t block_size, char *err, size_t errlen)
{
	void *buf;
	if (posix_memalign(&buf, 4096, block_size)) {
		snprintf(err, errlen, "block_size: no memory for a buffer");
		return -1;
	}
	ssize_t n = pread(fd, buf, block_size, 0);
	int e = errno;
	free(buf);
	if (n < 0 && e == EINVAL) {
		snprintf(err, errlen,
		         "block_size: %u is not a multiple of the device's logical block size: "
		         "O_DIRECT refused the read (EINVAL)",
		         block_size);
		return -1;
	}
	if (n < 0) {
		snprintf(err, errlen, "target: reading: %s", strerror(e));
		return -1;
	}
	return 0;
}

static void ethread_fail(struct ethread *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void ethread_fail(struct ethread *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(t->err, sizeof(t->err), fmt, ap);
	va_end(ap);
	__atomic_store_n(&t->e->failed, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&t->e->phase, PHASE_STOP, __ATOMIC_RELEASE);
}

static const char *io_error(int e, bool direct)
{
	if (e == EINVAL && direct)
		return "EINVAL: O_DIRECT refused the I/O (block_size not aligned to the "
		       "device's logical block size?)";
	return strerror(e);
}

/* I/O buffers: one arena for every thread's, of 2 MiB transparent huge pages where the
 * kernel has them (asked for by madvise). The pages of a buffer are then physically
 * contiguous, so an O_DIRECT transfer is one DMA segment per huge page it touches instead
 * of one per 4 KiB page: a 1 MiB transfer is not split for a device's segment limit
 * (virtio-blk's 254), and an 8 KiB one is one segment, not two, which a virtual disk
 * serves faster (8k randread at iodepth 32 on a 2-core virtual machine: ~70k IOPS on 4 KiB
 * pages, ~105k on huge pages). Without transparent huge pages it is plain memory. */
#define ARENA_HUGE (2u << 20)

static void *arena_alloc(size_t bytes, size_t *len)
{
	size_t want = (bytes + ARENA_HUGE - 1) & ~(size_t)(ARENA_HUGE - 1);
	unsigned char *m = mmap(NULL, want + ARENA_HUGE, PROT_READ | PROT_WRITE,
	                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	/* keep the 2 MiB-aligned part, give back the rest */
	size_t head = (ARENA_HUGE - ((uintptr_t)m & (ARENA_HUGE - 1))) & (ARENA_HUGE - 1);
	if (head)
		munmap(m, head);
	if (ARENA_HUGE - head)
		munmap(m + head + want, ARENA_HUGE - head);
	madvise(m + head, want, MADV_HUGEPAGE); /* a hint: without THP, 4 KiB pages */
	*len = want;
	return m + head;
}

/* Where each pool starts: block_size apart at least, so that no buffer of a power-of-two
 * size up to 2 MiB straddles a huge page. */
static size_t arena_align(uint32_t block_size)
{
	if (block_size && (block_size & (block_size - 1)) == 0 && block_size <= ARENA_HUGE)
		return block_size > 4096 ? block_size : 4096;
	return 4096;
}

/* A thread's pool in the arena, up to where the next may start. */
static size_t pool_span(const struct ethread *t, uint32_t block_size, size_t align)
{
	return (t->nslices * block_size + align - 1) & ~(align - 1);
}

static inline void ethread_record(struct ethread *t, int phase, int dir, uint64_t lat)
{
	hist_record(phase == PHASE_MEASURE ? &t->meas[dir] : &t->ramp[dir], lat);
	uint64_t cur = __atomic_load_n(&t->imax[dir], __ATOMIC_RELAXED);
	while (lat > cur && !__atomic_compare_exchange_n(&t->imax[dir], &cur, lat, true,
	                                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

static inline int ethread_dir(struct ethread *t)
{
	if (t->role != ROLE_MIX)
		return t->role == ROLE_READ ? ENGINE_READ : ENGINE_WRITE;
	return rng_below(t->rng, 100) < t->e->job->rwmix_read ? ENGINE_READ : ENGINE_WRITE;
}

static inline uint64_t ethread_offset(struct ethread *t)
{
	uint64_t b;
	if (t->e->job->random) {
		b = t->first_block + rng_below(t->rng, t->nblocks);
	} else {
		b = t->first_block + t->cursor;
		if (++t->cursor == t->nblocks)
			t->cursor = 0;
	}
	return b * t->e->job->block_size;
}

/* Stamp every sector of a write with its offset and the write's number, each through a
 * bijective mix: the filler makes the data incompressible, the stamp makes every sector
 * ever written unique, and being random-looking it compresses no better than the rest. */
static inline void ethread_stamp(struct ethread *t, unsigned char *buf, uint64_t off)
{
	uint32_t bs = t->e->job->block_size;
	uint64_t w = ++t->writes ^ (t->salt << 1);
	for (uint32_t s = 0; s < bs; s += SECTOR) {
		uint64_t a = mix64((off + s) ^ t->salt);
		uint64_t v[2] = {a, mix64(w) ^ a}; /* (a, b) unique as (offset, write) is */
		memcpy(buf + s, v, sizeof(v));
	}
	t->wrote = true;
}

/* May the thread start another I/O, and in which phase does it count? -1: no. */
static inline int ethread_may_submit(struct ethread *t)
{
	int ph = __atomic_load_n(&t->e->phase, __ATOMIC_ACQUIRE);
	if (ph == PHASE_STOP)
		return -1;
	if (ph == PHASE_MEASURE && t->limited && t->measured >= t->quota)
		return -1;
	return ph;
}

static int ethread_fsync(struct ethread *t, int phase)
{
	uint64_t t0 = now_ns();
	if (fsync(t->e->job->fd) < 0) {
		ethread_fail(t, "fsync: %s", strerror(errno));
		return -1;
	}
	if (phase == PHASE_MEASURE)
		hist_record(&t->sync, now_ns() - t0);
	return 0;
}

static void ethread_run_psync(struct ethread *t)
{
	const struct engine_job *j = t->e->job;
	size_t slice = 0;
	int ph;
	while ((ph = ethread_may_submit(t)) >= 0) {
		int dir = ethread_dir(t);
		uint64_t off = ethread_offset(t);
		unsigned char *buf = t->pool + slice * j->block_size;
		if (++slice == t->nslices)
			slice = 0;
		if (dir == ENGINE_WRITE)
			ethread_stamp(t, buf, off);
		if (ph == PHASE_MEASURE)
			t->measured++;
		uint64_t t0 = now_ns();
		ssize_t n = dir == ENGINE_READ ? pread(j->fd, buf, j->block_size, (off_t)off)
		                               : pwrite(j->fd, buf, j->block_size, (off_t)off);
		uint64_t t1 = now_ns();
		if (n != (ssize_t)j->block_size) {
			ethread_fail(t, "%s at offset %llu: %s", dir ? "write" : "read",
			             (unsigned long long)off,
			             n < 0 ? io_error(errno, j->direct) : "short transfer");
			return;
		}
		ethread_record(t, ph, dir, t1 - t0);
		if (dir == ENGINE_WRITE && j->fsync_every && t->writes % j->fsync_every == 0 &&
		    ethread_fsync(t, ph))
			return;
	}
}

struct uslot {
	uint64_t t0;
	uint32_t slice;
	uint8_t dir, phase;
};

/* The I/Os prepared since the last submit are timed from now. */
static inline void uring_stamp(struct uslot *slots, const unsigned *fresh, unsigned *nfresh)
{
	if (*nfresh) {
		uint64_t t0 = now_ns();
		for (unsigned i = 0; i < *nfresh; i++)
			slots[fresh[i]].t0 = t0;
		*nfresh = 0;
	}
}

static void ethread_run_uring(struct ethread *t, struct io_uring *ring, bool fixed_buf,
                              bool fixed_file)
{
	const struct engine_job *j = t->e->job;
	unsigned depth = j->iodepth, inflight = 0;
	unsigned batch = j->iodepth_batch ? j->iodepth_batch : 1;
	struct uslot *slots = calloc(depth, sizeof(*slots));
	unsigned *free_slots = calloc(depth, sizeof(*free_slots));
	uint32_t *fifo = calloc(t->nslices, sizeof(*fifo)); /* free slices, oldest first */
	unsigned *fresh = calloc(depth, sizeof(*fresh));
	if (!slots || !free_slots || !fifo || !fresh) {
		ethread_fail(t, "iodepth: no memory for %u slots", depth);
		goto out;
	}
	unsigned nfree = depth;
	for (unsigned i = 0; i < depth; i++)
		free_slots[i] = depth - 1 - i;
	size_t fhead = 0, fcount = t->nslices;
	for (size_t i = 0; i < t->nslices; i++)
		fifo[i] = (uint32_t)i;
	bool failing = false;
	uint64_t completed_writes = 0;

	for (;;) {
		unsigned nfresh = 0;
		int ph;
		while (!failing && inflight < depth && (ph = ethread_may_submit(t)) >= 0) {
			struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
			if (!sqe)
				break;
			unsigned si = free_slots[--nfree];
			struct uslot *sl = &slots[si];
			sl->slice = fifo[fhead];
			fhead = (fhead + 1) % t->nslices;
			fcount--;
			sl->dir = (uint8_t)ethread_dir(t);
			sl->phase = (uint8_t)ph;
			uint64_t off = ethread_offset(t);
			unsigned char *buf = t->pool + (size_t)sl->slice * j->block_size;
			int fd = fixed_file ? 0 : j->fd;
			if (sl->dir == ENGINE_WRITE) {
				ethread_stamp(t, buf, off);
				if (fixed_buf)
					io_uring_prep_write_fixed(sqe, fd, buf, j->block_size, off,
					                          0);
				else
					io_uring_prep_write(sqe, fd, buf, j->block_size, off);
			} else {
				if (fixed_buf)
					io_uring_prep_read_fixed(sqe, fd, buf, j->block_size, off,
					                         0);
				else
					io_uring_prep_read(sqe, fd, buf, j->block_size, off);
			}
			if (fixed_file)
				sqe->flags |= IOSQE_FIXED_FILE;
			io_uring_sqe_set_data64(sqe, si);
			if (ph == PHASE_MEASURE)
				t->measured++;
			fresh[nfresh++] = si;
			inflight++;
			if (nfresh == batch) {
				uring_stamp(slots, fresh, &nfresh);
				int rc = io_uring_submit(ring);
				if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
					ethread_fail(t, "io_uring_submit: %s", strerror(-rc));
					goto out;
				} /* else what is left goes with the wait below */
			}
		}
		uring_stamp(slots, fresh, &nfresh);
		if (inflight == 0)
			break;
		int rc = io_uring_submit_and_wait(ring, 1);
		if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) {
			if (!failing)
				ethread_fail(t, "io_uring_submit: %s", strerror(-rc));
			/* without a working ring nothing in flight can be waited for */
			goto out;
		}
		uint64_t t1 = now_ns();
		struct io_uring_cqe *cqe;
		unsigned head, seen = 0;
		bool want_fsync = false;
		io_uring_for_each_cqe(ring, head, cqe)
		{
			unsigned si = (unsigned)io_uring_cqe_get_data64(cqe);
			struct uslot *sl = &slots[si];
			seen++;
			inflight--;
			free_slots[nfree++] = si;
			fifo[(fhead + fcount) % t->nslices] = sl->slice;
			fcount++;
			if (cqe->res != (int)j->block_size) {
				if (!failing)
					ethread_fail(t, "%s: %s", sl->dir ? "write" : "read",
					             cqe->res < 0 ? io_error(-cqe->res, j->direct)
					                          : "short transfer");
				failing = true;
				continue;
			}
			ethread_record(t, sl->phase, sl->dir, t1 - sl->t0);
			if (sl->dir == ENGINE_WRITE && j->fsync_every &&
			    ++completed_writes % j->fsync_every == 0)
				want_fsync = true;
		}
		io_uring_cq_advance(ring, seen);
		if (want_fsync && !failing &&
		    ethread_fsync(t, __atomic_load_n(&t->e->phase, __ATOMIC_ACQUIRE)))
			failing = true;
	}
out:
	free(slots);
	free(free_slots);
	free(fifo);
	free(fresh);
}

static void ethread_done(struct ethread *t)
{
	t->end_ns = now_ns();
	if (__atomic_sub_fetch(&t->e->running, 1, __ATOMIC_ACQ_REL) == 0 || t->err[0])
		pthread_kill(t->e->main, SIGUSR1);
}

static void *ethread_main(void *arg)
{
	struct ethread *t = arg;
	const struct engine_job *j = t->e->job;
	struct io_uring ring;
	bool have_ring = false, fixed_buf = false, fixed_file = false;

	/* every page faulted in here, by this thread, before anything is timed */
	if (t->role != ROLE_READ)
		fill_random(t->pool, t->nslices * j->block_size, t->rng);
	else
		memset(t->pool, 0, t->nslices * j->block_size);
	if (j->engine == SPEC_IO_URING) {
		/* Completions wait for this thread's next io_uring_enter instead of
		 * interrupting it (fio asks for the same); older kernels refuse the flags. */
		static const unsigned setups[] = {IORING_SETUP_SINGLE_ISSUER |
		                                      IORING_SETUP_DEFER_TASKRUN,
		                                  IORING_SETUP_COOP_TASKRUN, 0};
		int rc = -EINVAL;
		for (size_t k = 0; k < sizeof(setups) / sizeof(setups[0]) && rc == -EINVAL; k++)
			rc = io_uring_queue_init(j->iodepth, &ring, setups[k]);
		if (rc < 0) {
			ethread_fail(t, "engine: io_uring is not available here: %s",
			             strerror(-rc));
		} else {
			have_ring = true;
			/* Registered buffers and file save a page pin and an fdget per I/O;
			 * without them (memlock limits) it works the same, a little dearer. */
			struct iovec iov = {t->pool, t->nslices * j->block_size};
			fixed_buf = io_uring_register_buffers(&ring, &iov, 1) == 0;
			fixed_file = io_uring_register_files(&ring, &j->fd, 1) == 0;
		}
	}
	pthread_mutex_lock(&t->e->mu);
	t->e->ready++;
	pthread_cond_broadcast(&t->e->cv);
	while (t->e->gate == 0)
		pthread_cond_wait(&t->e->cv, &t->e->mu);
	int gate = t->e->gate;
	pthread_mutex_unlock(&t->e->mu);
	if (gate > 0 && !t->err[0]) {
		if (have_ring)
			ethread_run_uring(t, &ring, fixed_buf, fixed_file);
		else
			ethread_run_psync(t);
	}
	if (!t->err[0] && j->fsync_at_end && t->wrote)
		ethread_fsync(t, PHASE_MEASURE);
	if (have_ring)
		io_uring_queue_exit(&ring);
	ethread_done(t);
	return NULL;
}

/* The interval since the last call, from the histograms of the phase being reported. */
/* delta holds ENGINE_DIRS * HIST_BUCKETS counts: each direction's interval histogram, which
 * the interval points to until the next call. */
static void engine_collect(struct engine *e, bool ramp, struct engine_interval *iv,
                           uint64_t *deltas)
{
	for (int d = 0; d < ENGINE_DIRS; d++) {
		struct engine_dir_interval *o = &iv->dir[d];
		uint64_t ops = 0, sum = 0, max = 0;
		uint64_t *delta = deltas + (size_t)d * HIST_BUCKETS;
		memset(delta, 0, sizeof(uint64_t) * HIST_BUCKETS);
		for (unsigned k = 0; k < e->n; k++) {
			struct ethread *t = &e->t[k];
			const struct hist *h = ramp ? &t->ramp[d] : &t->meas[d];
			for (unsigned i = 0; i < HIST_BUCKETS; i++) {
				uint64_t c = __atomic_load_n(&h->counts[i], __ATOMIC_RELAXED);
				uint64_t dc = c - t->seen[d][i];
				if (dc) {
					t->seen[d][i] = c;
					delta[i] += dc;
					ops += dc;
				}
			}
			uint64_t s = __atomic_load_n(&h->sum, __ATOMIC_RELAXED);
			sum += s - t->seen_sum[d];
			t->seen_sum[d] = s;
			uint64_t m = __atomic_exchange_n(&t->imax[d], 0, __ATOMIC_RELAXED);
			if (m > max)
				max = m;
		}
		o->ops = ops;
		o->bytes = ops * e->job->block_size;
		o->lat_mean_ns = ops ? (double)sum / (double)ops : 0;
		o->lat_max_ns = ops ? max : 0;
		o->lat_p99_ns = hist_counts_percentile(delta, ops, 99, 0, max);
		o->hist = delta;
	}
}

static void engine_reset_seen(struct engine *e)
{
	for (unsigned k = 0; k < e->n; k++) {
		memset(e->t[k].seen, 0, sizeof(e->t[k].seen));
		memset(e->t[k].seen_sum, 0, sizeof(e->t[k].seen_sum));
	}
}

static uint64_t engine_measured_ops(struct engine *e)
{
	uint64_t n = 0;
	for (unsigned k = 0; k < e->n; k++)
		for (int d = 0; d < ENGINE_DIRS; d++)
			n += __atomic_load_n(&e->t[k].meas[d].count, __ATOMIC_RELAXED);
	return n;
}

static double cpu_s(const struct timeval *tv)
{
	return (double)tv->tv_sec + (double)tv->tv_usec / 1e6;
}

/* Share out n things over k takers as evenly as possible: taker i's share. */
static uint64_t share(uint64_t n, unsigned k, unsigned i)
{
	return n / k + (i < n % k ? 1 : 0);
}

static int engine_setup(struct engine *e, const struct engine_job *j, char *err, size_t errlen)
{
	e->job = j;
	e->n = j->readers + j->writers + j->mixed;
	if (e->n == 0 || j->nblocks == 0 || (!j->random && j->nblocks < e->n)) {
		snprintf(err, errlen, "size: %llu blocks are too few for %u threads",
		         (unsigned long long)j->nblocks, e->n);
		return -1;
	}
	e->t = calloc(e->n, sizeof(*e->t));
	if (!e->t) {
		snprintf(err, errlen, "threads: no memory for %u threads", e->n);
		return -1;
	}
	unsigned writers = j->writers + j->mixed;
	/* A writer's pool is big enough that no compression window sees a block twice. */
	uint64_t wpool = writers ? (256ull << 20) / writers : 0;
	if (wpool < (2u << 20))
		wpool = 2u << 20;
	if (wpool > (16u << 20))
		wpool = 16u << 20;
	uint64_t first = 0, rseed = j->seed;
	size_t align = arena_align(j->block_size), arena_bytes = 0;
	for (unsigned i = 0; i < e->n; i++) {
		struct ethread *t = &e->t[i];
		t->e = e;
		t->id = i;
		t->role = i < j->readers ? ROLE_READ
		                         : (i < j->readers + j->writers ? ROLE_WRITE : ROLE_MIX);
		if (j->random) {
			t->first_block = 0;
			t->nblocks = j->nblocks;
		} else {
			t->first_block = first;
			t->nblocks = share(j->nblocks, e->n, i);
			first += t->nblocks;
		}
		t->limited = j->io_ops > 0;
		t->quota = j->io_ops ? share(j->io_ops, e->n, i) : 0;
		rng_seed(t->rng, splitmix(&rseed));
		t->salt = splitmix(&rseed);
		uint64_t need = (uint64_t)j->iodepth * j->block_size;
		uint64_t bytes = t->role == ROLE_READ || wpool < need ? need : wpool;
		t->nslices = (size_t)(bytes / j->block_size);
		arena_bytes += pool_span(t, j->block_size, align);
		for (int d = 0; d < ENGINE_DIRS; d++) {
			hist_init(&t->ramp[d]);
			hist_init(&t->meas[d]);
		}
		hist_init(&t->sync);
	}
	e->arena = arena_alloc(arena_bytes, &e->arena_len);
	if (!e->arena) {
		snprintf(err, errlen, "iodepth: no memory for %zu bytes of buffers", arena_bytes);
		return -1;
	}
	size_t off = 0;
	for (unsigned i = 0; i < e->n; i++) {
		struct ethread *t = &e->t[i];
		t->pool = e->arena + off;
		off += pool_span(t, j->block_size, align);
	}
	return 0;
}

static void engine_free(struct engine *e)
{
	if (e->arena)
		munmap(e->arena, e->arena_len);
	free(e->t);
}

int engine_run(const struct engine_job *j, engine_interval_fn fn, void *arg,
               struct engine_result *res, char *err, size_t errlen)
{
	struct engine e;
	memset(&e, 0, sizeof(e));
	memset(res, 0, sizeof(*res));
	for (int d = 0; d < ENGINE_DIRS; d++)
		hist_init(&res->lat[d]);
	hist_init(&res->sync);

	sigset_t set;
	engine_signals(&set);
	pthread_sigmask(SIG_BLOCK, &set, NULL);

	if (engine_setup(&e, j, err, errlen)) {
		engine_free(&e);
		return -1;
	}
	e.main = pthread_self();
	e.phase = j->ramp_ms ? PHASE_RAMP : PHASE_MEASURE;
	e.running = e.n;
	pthread_mutex_init(&e.mu, NULL);
	pthread_cond_init(&e.cv, NULL);
	unsigned started = 0;
	for (unsigned i = 0; i < e.n; i++) {
		int rc = pthread_create(&e.t[i].tid, NULL, ethread_main, &e.t[i]);
		if (rc) {
			snprintf(err, errlen, "threads: cannot start thread %u of %u: %s", i + 1,
			         e.n, strerror(rc));
			break;
		}
		started++;
	}
	pthread_mutex_lock(&e.mu);
	while (e.ready < started)
		pthread_cond_wait(&e.cv, &e.mu);
	e.gate = started == e.n ? 1 : -1;
	pthread_cond_broadcast(&e.cv);
	pthread_mutex_unlock(&e.mu);
	if (started < e.n) {
		for (unsigned i = 0; i < started; i++)
			pthread_join(e.t[i].tid, NULL);
		pthread_cond_destroy(&e.cv);
		pthread_mutex_destroy(&e.mu);
		engine_free(&e);
		return -1;
	}

	struct rusage ru0, ru1;
	uint64_t t_start = now_ns(), measure_start = t_start, last_emit = t_start;
	uint64_t ramp_end = t_start + j->ramp_ms * NS_PER_MS;
	uint64_t run_end =
	    j->ramp_ms || !j->runtime_ms ? UINT64_MAX : t_start + j->runtime_ms * NS_PER_MS;
	uint64_t next_tick = t_start + NS_PER_S;
	uint64_t *delta = malloc(sizeof(uint64_t) * HIST_BUCKETS * ENGINE_DIRS);
	getrusage(RUSAGE_SELF, &ru0);
	bool output_gone = false, in_ramp = j->ramp_ms > 0;
	double total_s = (double)(j->ramp_ms + j->runtime_ms) / 1e3;

	for (;;) {
		if (__atomic_load_n(&e.phase, __ATOMIC_ACQUIRE) == PHASE_STOP ||
		    __atomic_load_n(&e.running, __ATOMIC_ACQUIRE) == 0)
			break;
		bool ramp = in_ramp;
		uint64_t wake = next_tick;
		if (ramp && ramp_end < wake)
			wake = ramp_end;
		if (run_end < wake)
			wake = run_end;
		uint64_t now = now_ns();
		if (now < wake) {
			struct timespec ts = {(time_t)((wake - now) / NS_PER_S),
			                      (long)((wake - now) % NS_PER_S)};
			int sig = sigtimedwait(&set, NULL, &ts);
			if (sig == SIGINT || sig == SIGTERM) {
				res->signal = sig;
				__atomic_store_n(&e.phase, PHASE_STOP, __ATOMIC_RELEASE);
				break;
			}
			if (sig == SIGUSR1)
				continue;
			now = now_ns();
			if (now < wake)
				continue;
		}
		if (now >= run_end) {
			__atomic_store_n(&e.phase, PHASE_STOP, __ATOMIC_RELEASE);
			break;
		}
		bool ramp_over = ramp && now >= ramp_end;
		if (now >= next_tick || ramp_over) {
			struct engine_interval iv = {0};
			engine_collect(&e, ramp, &iv, delta);
			iv.t_s = (double)(now - t_start) / 1e9;
			iv.elapsed_s = (double)(now - last_emit) / 1e9;
			iv.ramp = ramp;
			iv.eta_s = -1;
			if (total_s > 0) {
				iv.progress = iv.t_s / total_s;
				iv.eta_s = total_s - iv.t_s;
			}
			if (j->io_ops && !ramp) {
				double p = (double)engine_measured_ops(&e) / (double)j->io_ops;
				if (p > iv.progress || total_s == 0) {
					iv.progress = p;
					iv.eta_s = p > 0 ? (double)(now - measure_start) / 1e9 *
					                       (1 - p) / p
					                 : -1;
				}
			}
			if (iv.progress > 1)
				iv.progress = 1;
			last_emit = now;
			if (fn(arg, &iv)) {
				output_gone = true;
				__atomic_store_n(&e.phase, PHASE_STOP, __ATOMIC_RELEASE);
				break;
			}
			while (next_tick <= now)
				next_tick += NS_PER_S;
		}
		if (ramp_over) {
			engine_reset_seen(&e);
			measure_start = now_ns();
			getrusage(RUSAGE_SELF, &ru0);
			/* the measured phase keeps its own one-second grid */
			next_tick = measure_start + NS_PER_S;
			if (j->runtime_ms)
				run_end = measure_start + j->runtime_ms * NS_PER_MS;
			in_ramp = false;
			__atomic_store_n(&e.phase, PHASE_MEASURE, __ATOMIC_RELEASE);
		}
	}

	uint64_t t_end = measure_start;
	for (unsigned i = 0; i < e.n; i++) {
		pthread_join(e.t[i].tid, NULL);
		if (e.t[i].end_ns > t_end)
			t_end = e.t[i].end_ns;
	}
	getrusage(RUSAGE_SELF, &ru1);
	int rc = 0;
	for (unsigned i = 0; i < e.n; i++) {
		if (e.t[i].err[0]) {
			snprintf(err, errlen, "%s", e.t[i].err);
			rc = -1;
			break;
		}
	}
	if (rc == 0 && !output_gone) {
		/* the last, partial interval: the intervals of the measured phase add up to
		 * exactly the result */
		struct engine_interval iv = {0};
		engine_collect(&e, in_ramp, &iv, delta);
		uint64_t now = now_ns();
		iv.t_s = (double)(now - t_start) / 1e9;
		iv.elapsed_s = (double)(now - last_emit) / 1e9;
		iv.ramp = in_ramp;
		iv.progress = 1;
		iv.eta_s = 0;
		if (iv.dir[0].ops || iv.dir[1].ops || iv.elapsed_s > 0.01)
			if (fn(arg, &iv))
				output_gone = true;
	}
	if (output_gone && rc == 0) {
		snprintf(err, errlen, "output: stdout is gone; stopped");
		rc = -1;
	}
	for (unsigned i = 0; i < e.n; i++) {
		for (int d = 0; d < ENGINE_DIRS; d++)
			hist_merge(&res->lat[d], &e.t[i].meas[d]);
		hist_merge(&res->sync, &e.t[i].sync);
	}
	res->elapsed_s = (double)(t_end - measure_start) / 1e9;
	if (in_ramp)
		res->elapsed_s = 0;
	res->cpu_user_s = cpu_s(&ru1.ru_utime) - cpu_s(&ru0.ru_utime);
	res->cpu_sys_s = cpu_s(&ru1.ru_stime) - cpu_s(&ru0.ru_stime);
	free(delta);
	pthread_cond_destroy(&e.cv);
	pthread_mutex_destroy(&e.mu);
	engine_free(&e);
	if (rc == 0 && res->signal)
		rc = 1;
	return rc;
}
