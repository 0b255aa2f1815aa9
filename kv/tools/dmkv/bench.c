/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/bench.c -- the bulk load and the YCSB driver of dmkv
 * (`dmkv load`, `dmkv bench`, and the demo's run).
 *
 * Threads. Each client thread owns one kv client (one operation in
 * flight: the synchronous calls) or one kv_async handle of --inflight
 * clients kept full by the closed loop of pump.h, and a YCSB generator
 * (ycsb.h) seeded from (seed, thread). The main thread starts them,
 * crashes and restores nodes on schedule, and prints a progress line once
 * a second.
 *
 * Phases. With --fail-node, an operation belongs to the phase in which it
 * started: before the crash, while the node is down, after its restore.
 * Latency (CLOCK_MONOTONIC, submit to completion; an RMW's read and write
 * together) goes into a histogram (hist.h) per phase and operation type,
 * and one per timeline interval; each thread's kv_stats deltas go to the
 * phase it is in when it reads them, giving round trips per operation.
 *
 * Checking. Every value the driver writes names itself: record id, a run
 * nonce, the writer and the writer's sequence number, and 8-byte words
 * derived from those, so a torn, misplaced or foreign value is caught. A
 * write that returns 0 is acknowledged: its end time goes into its
 * writer's table and its start time raises the record's floor (the
 * latest start of an acknowledged write, kept with an atomic max). A read
 * is then wrong if it returns nothing for a record whose floor was set
 * when the read began, or a value whose write ended before that floor: an
 * acknowledged write began after that write had ended and completed
 * before the read began, so linearizability forbids the older value. The
 * final check reads every record back (after a restore, through the
 * repaired cluster) against the final floors: a lost acknowledged write
 * shows as a missing record or an older value. These conditions are
 * necessary for linearizability, not sufficient (tests/lincheck checks
 * whole histories in the tests); they cost O(1) per operation, so the
 * driver checks every operation of every run.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pm/cost.h>
#include <pm/error.h>

#include "kv/tools/dmkv/dmkv.h"
#include "kv/tools/dmkv/pump.h"

#define PHASES 3
#define NOPS 4
#define MAX_THREADS 64
#define MAX_CODES 8
/* Value header: id, tag, check word. */
#define VAL_MIN 24u
/* Writer table pages of end times (2^16 writes each). */
#define PAGE_BITS 16
#define MAX_PAGES 4096
/* A tag: nonce:16 | writer:12 | seq:36. */
#define TAG_WRITERS 4096u

static const char *const op_name[NOPS] = { "read", "update", "insert", "rmw" };
static const char *const phase_name[PHASES] = { "before", "during", "after" };

/* One writer's end times, by sequence number (0: not acknowledged). */
struct writer {
	_Atomic(_Atomic uint64_t *) page[MAX_PAGES];
	uint64_t seq; /* last used; the writer's own */
};

/* Errors by code. */
struct errs {
	int code[MAX_CODES];
	uint64_t n[MAX_CODES];
	uint64_t other;
};

struct run;

/* One operation slot of a thread (one per kv_async lane). */
struct lane {
	struct kv_op op;
	enum dmkv_ycsb_op kind;
	int stage;            /* RMW: 0 reading, 1 writing */
	uint64_t id, tag;
	uint64_t start_ns, floor;
	unsigned phase;
	bool measured;
	char *key, *val, *buf;
};

struct thr {
	struct run *r;
	unsigned idx, writer;
	pthread_t tid;
	bool joined;            /* tid was joined (it may not be again) */
	struct kv_client *c;
	struct kv_async *a;
	struct dmkv_ycsb_gen gen;
	struct lane *lanes;
	unsigned nlanes;
	struct dmkv_hist lat[PHASES][NOPS];
	uint64_t nfail[PHASES][NOPS];
	struct kv_stats st[PHASES], st_last;
	struct pm_cost cost[PHASES], cost_last; /* this thread's pm/cost.h */
	unsigned st_phase;
	bool measuring;         /* past the warm-up */
	struct dmkv_hist *tl;   /* timeline, one per interval */
	uint64_t *tl_fail;
	uint64_t *tl_log;       /* kv_stats.log_used at the first operation
	                         * that ended in the interval; 0: none */
	uint64_t *tl_freed;     /* 1 + kv_stats.ids_freed, the last of at
	                         * most about 8 reads in the interval (at the
	                         * end of an operation); 0: none */
	uint64_t freed_ns;      /* when it was last read */
	struct errs errs;
	uint64_t wrong, stale, lost, acked, capped;
	uint64_t unreadable;    /* verify: reads that failed */
	_Atomic uint64_t done;  /* operations completed (progress) */
	int setup_ret;
	/* the load */
	uint64_t load_from, load_step;
};

struct run {
	struct dmkv_cluster *cl;
	const struct dmkv_bench_opts *o;
	struct dmkv_ycsb_keyspace ks;
	uint64_t cap_ids;            /* floor[] size */
	_Atomic uint64_t *floor;     /* per record: 1 + latest acked start, 0 none */
	struct writer *writers;      /* loaders first, then client threads */
	unsigned nwriters;
	uint16_t nonce;
	struct thr *t;
	unsigned nt;
	uint64_t t0_ns;              /* start of the measured run */
	uint64_t tfail_ns, trestore_ns; /* absolute, or UINT64_MAX */
	unsigned nintervals;
	_Atomic uint64_t issued;     /* operations started (--operations) */
	_Atomic bool stop;
	_Atomic bool go;
	uint64_t end_ns;             /* when the run actually ended */
	uint64_t verify_wrong, verify_lost, verify_checked, verify_fail;
};

/* splitmix64 finaliser: the words of a value. */
static uint64_t
mix(uint64_t x)
{
	x += UINT64_C(0x9E3779B97F4A7C15);
	x = (x ^ (x >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	x = (x ^ (x >> 27)) * UINT64_C(0x94D049BB133111EB);
	return x ^ (x >> 31);
}

static uint64_t
tag_make(const struct run *r, unsigned writer, uint64_t seq)
{
	return (uint64_t)r->nonce << 48 | (uint64_t)writer << 36 | seq;
}

/* Fill @v (@len >= VAL_MIN bytes) with the value of record @id by @tag. */
static void
value_fill(char *v, size_t len, uint64_t id, uint64_t tag)
{
	uint64_t w[3] = { id, tag, mix(id ^ mix(tag)) };

	memcpy(v, w, sizeof(w));
	for (size_t i = VAL_MIN; i < len; i += 8) {
		uint64_t x = mix(w[2] + i);
		size_t n = len - i < 8 ? len - i : 8;

		memcpy(v + i, &x, n);
	}
}

/* Whether @v is a value this driver could have written for @id; its tag
 * into *@tag. */
static bool
value_check(const char *v, size_t len, size_t want, uint64_t id, uint64_t *tag)
{
	uint64_t w[3];

	if (len != want || len < VAL_MIN)
		return false;
	memcpy(w, v, sizeof(w));
	if (w[0] != id || w[2] != mix(id ^ mix(w[1])))
		return false;
	for (size_t i = VAL_MIN; i < len; i += 8) {
		uint64_t x = mix(w[2] + i);
		size_t n = len - i < 8 ? len - i : 8;

		if (memcmp(v + i, &x, n) != 0)
			return false;
	}
	*tag = w[1];
	return true;
}

/* The end time of the write @tag: 0 if unknown (another run, not yet
 * acknowledged, or failed): then it cannot be shown stale. */
static uint64_t
tag_end(const struct run *r, uint64_t tag)
{
	unsigned writer = (unsigned)(tag >> 36) & (TAG_WRITERS - 1);
	uint64_t seq = tag & ((UINT64_C(1) << 36) - 1);
	_Atomic uint64_t *page;

	if ((tag >> 48) != r->nonce || writer >= r->nwriters || (seq >> PAGE_BITS) >= MAX_PAGES)
		return 0;
	page = atomic_load_explicit(&r->writers[writer].page[seq >> PAGE_BITS],
		memory_order_acquire);
	if (page == NULL)
		return 0;
	return atomic_load_explicit(&page[seq & ((1u << PAGE_BITS) - 1)], memory_order_acquire);
}

/* A new tag of writer @wi; false if its table is full. */
static bool
tag_next(struct run *r, unsigned wi, uint64_t *tag)
{
	struct writer *w = &r->writers[wi];
	uint64_t seq = ++w->seq;
	unsigned pg = (unsigned)(seq >> PAGE_BITS);

	if (pg >= MAX_PAGES)
		return false;
	if (atomic_load_explicit(&w->page[pg], memory_order_relaxed) == NULL) {
		_Atomic uint64_t *p = calloc((size_t)1 << PAGE_BITS, sizeof(*p));

		if (p == NULL)
			return false;
		/* Release: the zeroed page before readers find it. */
		atomic_store_explicit(&w->page[pg], p, memory_order_release);
	}
	*tag = tag_make(r, wi, seq);
	return true;
}

/* Record that the write @tag of record @id, started at @start, was
 * acknowledged at @end. */
static void
write_acked(struct run *r, uint64_t id, uint64_t tag, uint64_t start, uint64_t end)
{
	unsigned writer = (unsigned)(tag >> 36) & (TAG_WRITERS - 1);
	uint64_t seq = tag & ((UINT64_C(1) << 36) - 1);
	_Atomic uint64_t *page = atomic_load_explicit(
		&r->writers[writer].page[seq >> PAGE_BITS], memory_order_relaxed);
	uint64_t cur;

	/* Release: the end time before the floor it justifies, so a reader
	 * that sees the floor of a later write can see this end too. */
	atomic_store_explicit(&page[seq & ((1u << PAGE_BITS) - 1)], end, memory_order_release);
	if (id >= r->cap_ids)
		return;
	cur = atomic_load_explicit(&r->floor[id], memory_order_relaxed);
	while (cur < start + 1 &&
		!atomic_compare_exchange_weak_explicit(&r->floor[id], &cur, start + 1,
			memory_order_release, memory_order_relaxed))
		;
}

static uint64_t
floor_of(const struct run *r, uint64_t id)
{
	return id < r->cap_ids ? atomic_load_explicit(&r->floor[id], memory_order_acquire) : 0;
}

/* Judge a read of record @id that began with @floor: 0 fine; 1 wrong
 * value; 2 stale or lost. */
static int
judge_read(const struct run *r, uint64_t id, uint64_t floor, int ret, const char *v,
	size_t len)
{
	uint64_t tag, end;

	if (ret == -ENOENT)
		return floor != 0 ? 2 : 0;
	if (ret != 0)
		return 0;
	if (!value_check(v, len, r->o->value_size, id, &tag))
		return 1;
	end = tag_end(r, tag);
	return end != 0 && floor != 0 && end < floor - 1 ? 2 : 0;
}

static void
errs_add(struct errs *e, int code)
{
	for (unsigned i = 0; i < MAX_CODES; i++) {
		if (e->n[i] != 0 && e->code[i] == code) {
			e->n[i]++;
			return;
		}
		if (e->n[i] == 0) {
			e->code[i] = code;
			e->n[i] = 1;
			return;
		}
	}
	e->other++;
}

static uint64_t
errs_total(const struct errs *e)
{
	uint64_t n = e->other;

	for (unsigned i = 0; i < MAX_CODES; i++)
		n += e->n[i];
	return n;
}

static void
errs_merge(struct errs *dst, const struct errs *src)
{
	for (unsigned i = 0; i < MAX_CODES && src->n[i] != 0; i++)
		for (uint64_t k = 0; k < src->n[i]; k++)
			errs_add(dst, src->code[i]);
	dst->other += src->other;
}

static void
stats_read(struct thr *t, struct kv_stats *s)
{
	if (t->a != NULL)
		kv_async_stats_read(t->a, s);
	else
		kv_stats_read(t->c, s);
}

/* Charge the counters since the last read to phase t->st_phase, then
 * switch to @phase. */
static void
stats_flip(struct thr *t, unsigned phase)
{
	struct kv_stats now;
	uint64_t *d, *a, *b;

	struct pm_cost cnow;

	stats_read(t, &now);
	pm_cost_read_thread(&cnow);
	d = (uint64_t *)&t->st[t->st_phase];
	a = (uint64_t *)&now;
	b = (uint64_t *)&t->st_last;
	for (size_t i = 0; i < sizeof(now) / sizeof(uint64_t); i++)
		d[i] += a[i] - b[i];
	for (unsigned i = 0; i < PM_COST_NCOUNTERS; i++)
		t->cost[t->st_phase].n[i] += cnow.n[i] - t->cost_last.n[i];
	t->st_last = now;
	t->cost_last = cnow;
	t->st_phase = phase;
}

static unsigned
phase_at(const struct run *r, uint64_t ns)
{
	if (ns < r->tfail_ns)
		return 0;
	return ns < r->trestore_ns ? 1 : 2;
}

/* Set up @l for its next request; false when the thread should stop. */
static bool
lane_next(struct thr *t, struct lane *l)
{
	struct run *r = t->r;
	const struct dmkv_bench_opts *o = r->o;
	struct dmkv_ycsb_req q;

	if (atomic_load_explicit(&r->stop, memory_order_relaxed))
		return false;
	if (o->operations != 0 &&
		atomic_fetch_add_explicit(&r->issued, 1, memory_order_relaxed) >= o->operations)
		return false;
	dmkv_ycsb_next(&t->gen, &q);
	if (q.id >= r->cap_ids) {
		t->capped++;
		return false;
	}
	l->kind = q.op;
	l->id = q.id;
	l->stage = 0;
	l->start_ns = dmkv_now_ns();
	l->floor = floor_of(r, q.id);
	l->measured = l->start_ns >= r->t0_ns;
	l->phase = phase_at(r, l->start_ns);
	if (l->measured && !t->measuring) {
		/* The warm-up's counters are not the run's. */
		stats_read(t, &t->st_last);
		pm_cost_read_thread(&t->cost_last);
		t->measuring = true;
	}
	if (l->phase != t->st_phase)
		stats_flip(t, l->phase);
	dmkv_ycsb_key(q.id, o->key_size, l->key);
	memset(&l->op, 0, sizeof(l->op));
	l->op.key = l->key;
	l->op.klen = o->key_size;
	l->op.user = l;
	if (q.op == DMKV_YCSB_READ || q.op == DMKV_YCSB_RMW) {
		l->op.kind = KV_OP_GET;
		l->op.buf = l->buf;
		l->op.cap = o->value_size + 1;
		return true;
	}
	if (!tag_next(r, t->writer, &l->tag)) {
		t->capped++;
		return false;
	}
	value_fill(l->val, o->value_size, q.id, l->tag);
	l->op.kind = q.op == DMKV_YCSB_INSERT ? KV_OP_INSERT : KV_OP_UPDATE;
	l->op.val = l->val;
	l->op.vlen = o->value_size;
	return true;
}

/* @l's op completed with l->op.ret; returns true if the lane has a second
 * stage to run (an RMW's write). */
static bool
lane_done(struct thr *t, struct lane *l, uint64_t now)
{
	struct run *r = t->r;
	int ret = l->op.ret;
	int verdict;

	if (l->op.kind == KV_OP_GET) {
		verdict = judge_read(r, l->id, l->floor, ret, l->buf, l->op.len);
		if (verdict == 1)
			t->wrong++;
		else if (verdict == 2)
			t->stale++;
		if (l->kind == DMKV_YCSB_RMW && ret == 0 && verdict == 0) {
			if (!tag_next(r, t->writer, &l->tag)) {
				t->capped++;
				return false;
			}
			value_fill(l->val, r->o->value_size, l->id, l->tag);
			l->op.kind = KV_OP_UPDATE;
			l->op.val = l->val;
			l->op.vlen = r->o->value_size;
			l->stage = 1;
			return true;
		}
	} else if (ret == 0) {
		write_acked(r, l->id, l->tag, l->start_ns, now);
		t->acked++;
	} else if ((ret == -ENOENT && l->floor != 0) || ret == KV_E_EXISTS) {
		/* An update of a record acknowledged present, or an insert of
		 * a fresh id that found it present. */
		t->wrong++;
	}
	if (l->measured) {
		unsigned iv = (unsigned)((l->start_ns - r->t0_ns) / (r->o->interval_ms * 1000000u));

		/* A read of a record that does not exist yet (D: an insert in
		 * flight elsewhere) is an answer, not a failure. */
		if (ret != 0 && !(ret == -ENOENT && l->floor == 0)) {
			t->nfail[l->phase][l->kind]++;
			errs_add(&t->errs, ret);
			if (iv < r->nintervals)
				t->tl_fail[iv]++;
		}
		dmkv_hist_add(&t->lat[l->phase][l->kind], now - l->start_ns);
		if (iv < r->nintervals) {
			dmkv_hist_add(&t->tl[iv], now - l->start_ns);
			/* Not at every operation: with many lanes a read sums
			 * every lane's counters. */
			if (t->tl_log[iv] == 0 || t->tl_freed[iv] == 0 ||
				now - t->freed_ns >= r->o->interval_ms * (1000000u / 8)) {
				struct kv_stats s;

				stats_read(t, &s);
				if (t->tl_log[iv] == 0)
					t->tl_log[iv] = s.log_used;
				t->tl_freed[iv] = 1 + s.ids_freed;
				t->freed_ns = now;
			}
		}
	}
	atomic_fetch_add_explicit(&t->done, 1, memory_order_relaxed);
	return false;
}

/* The pump's callbacks (pump.h): @ctx is the thread, op->user the lane. */
static bool
pump_next(void *ctx, struct kv_op *op)
{
	return lane_next(ctx, op->user);
}

static bool
pump_done(void *ctx, struct kv_op *op)
{
	return lane_done(ctx, op->user, dmkv_now_ns());
}

static void *
client_main(void *p)
{
	struct thr *t = p;
	struct run *r = t->r;

	while (!atomic_load_explicit(&r->go, memory_order_acquire))
		sched_yield();
	pm_cost_read_thread(&t->cost_last);
	if (t->a == NULL) {
		struct lane *l = &t->lanes[0];

		while (lane_next(t, l)) {
			do
				kv_op_run(t->c, &l->op);
			while (lane_done(t, l, dmkv_now_ns()));
		}
	} else {
		const struct dmkv_pump pump = { pump_next, pump_done, t };
		struct kv_op *ops[64];

		for (unsigned i = 0; i < t->nlanes; i++)
			ops[i] = &t->lanes[i].op;
		(void)dmkv_pump_run(t->a, ops, t->nlanes, &pump);
	}
	stats_flip(t, t->st_phase);
	return NULL;
}

/* Allocate the lanes' buffers and open the client(s). */
static int
thr_setup(struct thr *t, unsigned inflight)
{
	const struct dmkv_bench_opts *o = t->r->o;
	int ret;

	t->nlanes = inflight;
	t->lanes = calloc(inflight, sizeof(*t->lanes));
	if (t->lanes == NULL)
		return -ENOMEM;
	for (unsigned i = 0; i < inflight; i++) {
		struct lane *l = &t->lanes[i];

		l->op.user = l; /* pump_next's way to the lane */
		l->key = malloc(o->key_size);
		l->val = malloc(o->value_size);
		l->buf = malloc(o->value_size + 1);
		if (l->key == NULL || l->val == NULL || l->buf == NULL)
			return -ENOMEM;
	}
	if (inflight > 1)
		ret = kv_async_open(&t->a, &t->r->cl->cfg, inflight);
	else
		ret = kv_open(&t->c, &t->r->cl->cfg);
	if (ret == 0)
		stats_read(t, &t->st_last);
	return ret;
}

static void
thr_teardown(struct thr *t)
{
	if (t->a != NULL)
		kv_async_close(&t->a);
	kv_close(&t->c);
	for (unsigned i = 0; t->lanes != NULL && i < t->nlanes; i++) {
		free(t->lanes[i].key);
		free(t->lanes[i].val);
		free(t->lanes[i].buf);
	}
	free(t->lanes);
	free(t->tl);
	free(t->tl_fail);
	free(t->tl_log);
	free(t->tl_freed);
	t->lanes = NULL;
	t->tl = NULL;
	t->tl_fail = NULL;
	t->tl_log = NULL;
	t->tl_freed = NULL;
	t->nlanes = 0;
}

void
dmkv_bench_opts_init(struct dmkv_bench_opts *o)
{
	memset(o, 0, sizeof(*o));
	(void)dmkv_ycsb_workload('B', &o->workload);
	o->dist = o->workload.dist;
	o->theta = 0.99;
	o->records = 100000;
	o->duration_ms = 10000;
	o->warmup_ms = 1000;
	o->threads = 4;
	o->inflight = 1;
	o->key_size = DMKV_YCSB_KEY_MIN;
	o->value_size = 64;
	o->seed = 1;
	o->loaders = 4;
	o->interval_ms = 500;
	o->fail_node = o->restore_node = ~0u;
	o->verify = true;
}

/*
 * The load: --loaders threads insert records 0..records-1 (loader l takes
 * l, l + loaders, ...), each as an acknowledged write of its own writer.
 */
static void *
loader_main(void *p)
{
	struct thr *t = p;
	struct run *r = t->r;
	const struct dmkv_bench_opts *o = r->o;
	struct lane *l = &t->lanes[0];

	for (uint64_t id = t->load_from; id < o->records; id += t->load_step) {
		uint64_t start, tag;
		int ret;

		if (!tag_next(r, t->writer, &tag)) {
			t->setup_ret = -ENOMEM;
			break;
		}
		dmkv_ycsb_key(id, o->key_size, l->key);
		value_fill(l->val, o->value_size, id, tag);
		start = dmkv_now_ns();
		ret = kv_put(t->c, l->key, o->key_size, l->val, o->value_size);
		if (ret == 0) {
			write_acked(r, id, tag, start, dmkv_now_ns());
			t->acked++;
		} else {
			errs_add(&t->errs, ret);
			if (t->setup_ret == 0)
				t->setup_ret = ret;
			if (ret != KV_E_UNAVAILABLE && ret != -ETIMEDOUT)
				break;
		}
		atomic_fetch_add_explicit(&t->done, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Start @n threads of @fn over r->t[@first ..], show progress until they
 * are done (or, with @timed, drive the run's schedule). */
static uint64_t
threads_done(struct run *r, unsigned first, unsigned n)
{
	uint64_t d = 0;

	for (unsigned i = first; i < first + n; i++)
		d += atomic_load_explicit(&r->t[i].done, memory_order_relaxed);
	return d;
}

static int
load(struct run *r)
{
	const struct dmkv_bench_opts *o = r->o;
	unsigned L = o->loaders;
	struct dmkv_progress pr;
	int ret = 0;
	unsigned started = 0;

	for (unsigned i = 0; i < L; i++) {
		struct thr *t = &r->t[i];

		t->load_from = i;
		t->load_step = L;
		ret = thr_setup(t, 1);
		if (ret != 0) {
			dmkv_fail("load: opening a client", ret);
			break;
		}
	}
	dmkv_progress_init(&pr, "load", o->records);
	for (unsigned i = 0; ret == 0 && i < L; i++) {
		ret = -pthread_create(&r->t[i].tid, NULL, loader_main, &r->t[i]);
		if (ret == 0)
			started++;
	}
	while (threads_done(r, 0, started) < o->records) {
		bool alive = false;

		/* A thread joined here is not joined again: its descriptor may
		 * since serve another thread (the library's), which a second
		 * pthread_tryjoin_np would take for this one, still busy. */
		for (unsigned i = 0; i < started; i++) {
			if (!r->t[i].joined)
				r->t[i].joined = pthread_tryjoin_np(r->t[i].tid, NULL) == 0;
			alive |= !r->t[i].joined;
		}
		if (!alive)
			break;
		dmkv_progress_show(&pr, threads_done(r, 0, started), false);
		usleep(100000);
	}
	for (unsigned i = 0; i < started; i++) {
		if (!r->t[i].joined)
			pthread_join(r->t[i].tid, NULL);
		r->t[i].joined = false; /* for the next phase's threads */
	}
	dmkv_progress_show(&pr, threads_done(r, 0, started), true);
	for (unsigned i = 0; i < L; i++) {
		if (ret == 0 && r->t[i].setup_ret != 0)
			ret = dmkv_fail("load: an insert failed", r->t[i].setup_ret);
		thr_teardown(&r->t[i]);
	}
	return ret;
}

/* Read every record back with the run's clients (each thread a share). */
static void *
verify_main(void *p)
{
	struct thr *t = p;
	struct run *r = t->r;
	const struct dmkv_bench_opts *o = r->o;
	struct lane *l = &t->lanes[0];
	uint64_t n = atomic_load(&r->ks.next_id);

	if (n > r->cap_ids)
		n = r->cap_ids;
	for (uint64_t id = t->idx; id < n; id += r->nt) {
		uint64_t floor = floor_of(r, id);
		size_t len = 0;
		int ret, v;

		dmkv_ycsb_key(id, o->key_size, l->key);
		ret = kv_get(t->c, l->key, o->key_size, l->buf, o->value_size + 1, &len);
		v = judge_read(r, id, floor, ret, l->buf, len);
		if (ret != 0 && ret != -ENOENT)
			t->unreadable++;
		else if (v == 1)
			t->wrong++;
		else if (v == 2)
			t->lost++;
		atomic_fetch_add_explicit(&t->done, 1, memory_order_relaxed);
	}
	return NULL;
}

static int
verify(struct run *r)
{
	struct dmkv_progress pr;
	uint64_t n = atomic_load(&r->ks.next_id);
	unsigned started = 0;
	int ret = 0;

	if (n > r->cap_ids)
		n = r->cap_ids;
	for (unsigned i = 0; i < r->nt; i++) {
		struct thr *t = &r->t[i];

		t->wrong = t->lost = t->unreadable = 0;
		atomic_store(&t->done, 0);
		if (t->c == NULL && (ret = kv_open(&t->c, &r->cl->cfg)) != 0)
			return dmkv_fail("verify: opening a client", ret);
	}
	dmkv_progress_init(&pr, "verify", n);
	for (unsigned i = 0; ret == 0 && i < r->nt; i++)
		if ((ret = -pthread_create(&r->t[i].tid, NULL, verify_main, &r->t[i])) == 0)
			started++;
	while (threads_done(r, 0, started) < n) {
		dmkv_progress_show(&pr, threads_done(r, 0, started), false);
		usleep(100000);
	}
	for (unsigned i = 0; i < started; i++) {
		pthread_join(r->t[i].tid, NULL);
		r->verify_wrong += r->t[i].wrong;
		r->verify_lost += r->t[i].lost;
		r->verify_fail += r->t[i].unreadable;
	}
	dmkv_progress_show(&pr, threads_done(r, 0, started), true);
	r->verify_checked = n;
	return ret == 0 ? 0 : dmkv_fail("verify", ret);
}

/*
 * Reporting.
 */
struct summary {
	struct dmkv_hist lat[PHASES][NOPS], all[PHASES];
	uint64_t nfail[PHASES][NOPS];
	struct kv_stats st[PHASES];
	struct pm_cost cost[PHASES];
	struct errs errs;
	uint64_t wrong, stale, acked, capped;
	double span_s[PHASES];
};

static void
summarise(struct run *r, struct summary *s)
{
	uint64_t end = r->end_ns, bounds[PHASES + 1];

	memset(s, 0, sizeof(*s));
	for (unsigned p = 0; p < PHASES; p++) {
		dmkv_hist_init(&s->all[p]);
		for (unsigned k = 0; k < NOPS; k++)
			dmkv_hist_init(&s->lat[p][k]);
	}
	for (unsigned i = 0; i < r->nt; i++) {
		struct thr *t = &r->t[i];

		for (unsigned p = 0; p < PHASES; p++) {
			uint64_t *d = (uint64_t *)&s->st[p];
			const uint64_t *a = (const uint64_t *)&t->st[p];

			for (size_t j = 0; j < sizeof(struct kv_stats) / 8; j++)
				d[j] += a[j];
			for (unsigned j = 0; j < PM_COST_NCOUNTERS; j++)
				s->cost[p].n[j] += t->cost[p].n[j];
			for (unsigned k = 0; k < NOPS; k++) {
				dmkv_hist_merge(&s->lat[p][k], &t->lat[p][k]);
				dmkv_hist_merge(&s->all[p], &t->lat[p][k]);
				s->nfail[p][k] += t->nfail[p][k];
			}
		}
		errs_merge(&s->errs, &t->errs);
		s->wrong += t->wrong;
		s->stale += t->stale;
		s->acked += t->acked;
		s->capped += t->capped;
	}
	bounds[0] = r->t0_ns;
	bounds[1] = r->tfail_ns < end ? r->tfail_ns : end;
	bounds[2] = r->trestore_ns < end ? r->trestore_ns : end;
	bounds[3] = end;
	if (bounds[1] < bounds[0])
		bounds[1] = bounds[0];
	if (bounds[2] < bounds[1])
		bounds[2] = bounds[1];
	for (unsigned p = 0; p < PHASES; p++)
		s->span_s[p] = (double)(bounds[p + 1] - bounds[p]) / 1e9;
}

static bool
faults(const struct dmkv_bench_opts *o)
{
	return o->fail_node != ~0u;
}

static void
print_human(struct run *r, const struct summary *s)
{
	const struct dmkv_bench_opts *o = r->o;
	unsigned np = faults(o) ? PHASES : 1;

	printf("\nYCSB-%c  %" PRIu64 " records, %u-byte keys, %u-byte values, %u threads x %u "
	       "in flight, %s\n", o->workload.name, o->records, o->key_size, o->value_size,
		o->threads, o->inflight,
		o->dist == DMKV_YCSB_ZIPFIAN ? "zipfian" :
		o->dist == DMKV_YCSB_LATEST ? "latest" : "uniform");
	if (faults(o))
		printf("node %u crashed at %.1f s, restored at %.1f s\n", o->fail_node,
			(double)o->fail_at_ms / 1e3, (double)o->restore_at_ms / 1e3);
	printf("\n%-7s %-7s %10s %10s %8s %8s %8s %8s %9s %9s %7s\n", "phase", "op", "ops", "ops/s",
		"p50 us", "p90 us", "p99 us", "p99.9 us", "max us", "RT/op", "failed");
	for (unsigned p = 0; p < np; p++) {
		double rt = s->all[p].count == 0 ? 0 :
			(double)(s->st[p].rounds + s->st[p].index_rounds) / (double)s->all[p].count;

		for (unsigned k = 0; k < NOPS; k++) {
			const struct dmkv_hist *h = &s->lat[p][k];

			if (h->count == 0)
				continue;
			printf("%-7s %-7s %10" PRIu64 " %10.0f %8.2f %8.2f %8.2f %8.2f %9.1f %9s %7" PRIu64 "\n",
				np > 1 ? phase_name[p] : "run", op_name[k], h->count,
				s->span_s[p] > 0 ? (double)h->count / s->span_s[p] : 0,
				(double)dmkv_hist_quantile(h, 0.5) / 1e3,
				(double)dmkv_hist_quantile(h, 0.9) / 1e3,
				(double)dmkv_hist_quantile(h, 0.99) / 1e3,
				(double)dmkv_hist_quantile(h, 0.999) / 1e3,
				(double)h->max / 1e3, "", s->nfail[p][k]);
		}
		printf("%-7s %-7s %10" PRIu64 " %10.0f %8s %8s %8s %8s %9s %9.3f\n",
			np > 1 ? phase_name[p] : "run", "all", s->all[p].count,
			s->span_s[p] > 0 ? (double)s->all[p].count / s->span_s[p] : 0, "", "", "", "", "",
			rt);
	}
	printf("\nper operation (this process's counters, pm/cost.h):\n%-7s %8s %8s %8s %8s %8s\n",
		"phase", "CAS", "flushes", "fences", "remote", "remote");
	printf("%-7s %8s %8s %8s %8s %8s\n", "", "", "", "", "atomics", "persists");
	for (unsigned p = 0; p < np; p++) {
		double n = s->all[p].count ? (double)s->all[p].count : 1;
		const uint64_t *c = s->cost[p].n;

		printf("%-7s %8.3f %8.3f %8.3f %8.3f %8.3f\n", np > 1 ? phase_name[p] : "run",
			(double)c[PM_COST_CAS] / n, (double)c[PM_COST_FLUSH] / n,
			(double)c[PM_COST_FENCE] / n, (double)c[PM_COST_REMOTE_ATOMIC] / n,
			(double)c[PM_COST_REMOTE_PERSIST] / n);
	}
	printf("\nfailed operations: %" PRIu64, errs_total(&s->errs));
	for (unsigned i = 0; i < MAX_CODES && s->errs.n[i] != 0; i++)
		printf("%s%s %" PRIu64, i == 0 ? " (" : ", ", pm_strerror(s->errs.code[i]),
			s->errs.n[i]);
	printf("%s\n", s->errs.n[0] != 0 ? ")" : "");
	printf("acknowledged writes: %" PRIu64 " in the run", s->acked);
	if (o->load)
		printf(" (+ %" PRIu64 " loaded)", o->records);
	printf("\nwrong values: %" PRIu64 ", stale reads: %" PRIu64 "\n", s->wrong, s->stale);
	if (o->verify)
		printf("final check: %" PRIu64 " records read back: %" PRIu64 " lost, %" PRIu64
		       " wrong, %" PRIu64 " unreadable\n", r->verify_checked, r->verify_lost,
			r->verify_wrong, r->verify_fail);
	if (s->capped != 0)
		printf("note: %" PRIu64 " thread(s) stopped early (key or writer table full)\n",
			s->capped);
	for (unsigned i = 0; i < MAX_CODES && s->errs.n[i] != 0; i++)
		if (s->errs.code[i] == -ENOSPC)
			printf("note: the clients' logs filled up: every update takes a buffer of its "
			       "writer's log,\nwhich is not recycled yet (kv/DESIGN.md); create "
			       "the store with a larger\n[create] log_bytes (at most 256M).\n");
}

static void
json_hist(FILE *f, const struct dmkv_hist *h)
{
	static const double qs[] = { 0.5, 0.9, 0.99, 0.999 };
	static const char *const qn[] = { "p50", "p90", "p99", "p99_9" };

	fprintf(f, "{\"count\":%" PRIu64 ",\"mean_ns\":%.1f,\"min_ns\":%" PRIu64, h->count,
		dmkv_hist_mean(h), h->min);
	for (unsigned i = 0; i < 4; i++)
		fprintf(f, ",\"%s_ns\":%" PRIu64, qn[i], dmkv_hist_quantile(h, qs[i]));
	fprintf(f, ",\"max_ns\":%" PRIu64 ",\"cdf\":[", h->max);
	/* The CDF at quantiles 1 - 10^(-k/8), for the plots. */
	for (unsigned i = 0; i <= 40; i++) {
		double q = i == 0 ? 0 : 1 - pow(10.0, -(double)i / 8);

		fprintf(f, "%s[%.6f,%" PRIu64 "]", i ? "," : "", q, dmkv_hist_quantile(h, q));
	}
	fprintf(f, "]}");
}

static void
json_stats(FILE *f, const struct kv_stats *st)
{
	fprintf(f, "{\"ops\":%" PRIu64 ",\"rounds\":%" PRIu64 ",\"index_rounds\":%" PRIu64
		",\"slow_writes\":%" PRIu64 ",\"lock_calls\":%" PRIu64 ",\"write_backs\":%" PRIu64
		",\"read_iters\":%" PRIu64 ",\"oop_reads\":%" PRIu64 ",\"fallbacks\":%" PRIu64
		",\"cache_misses\":%" PRIu64 ",\"unavailable\":%" PRIu64
		",\"write_back_restarts\":%" PRIu64 ",\"stale_fetches\":%" PRIu64
		",\"reclaims\":%" PRIu64 ",\"recycled\":%" PRIu64 ",\"lease_renewals\":%" PRIu64
		",\"ids_freed\":%" PRIu64 ",\"reregistrations\":%" PRIu64 ",\"fenced_posts\":%" PRIu64
		"}",
		st->ops, st->rounds, st->index_rounds, st->slow_writes, st->lock_calls,
		st->write_backs, st->read_iters, st->oop_reads, st->fallbacks, st->cache_misses,
		st->unavailable, st->write_back_restarts, st->stale_fetches, st->reclaims,
		st->recycled, st->lease_renewals, st->ids_freed, st->reregistrations,
		st->fenced_posts);
}

/* The clients' log use at interval @iv: each thread's latest sample. */
static uint64_t
interval_log(const struct run *r, unsigned iv)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < r->nt; i++) {
		unsigned k = iv + 1;

		while (k > 0 && r->t[i].tl_log[k - 1] == 0)
			k--;
		sum += k > 0 ? r->t[i].tl_log[k - 1] : 0;
	}
	return sum;
}

/* The ids of dead clients the run's clients had freed by the end of
 * interval @iv (kv_stats.ids_freed): each thread's latest sample. */
static uint64_t
interval_freed(const struct run *r, unsigned iv)
{
	uint64_t sum = 0;

	for (unsigned i = 0; i < r->nt; i++) {
		unsigned k = iv + 1;

		while (k > 0 && r->t[i].tl_freed[k - 1] == 0)
			k--;
		sum += k > 0 ? r->t[i].tl_freed[k - 1] - 1 : 0;
	}
	return sum;
}

/* The timeline interval @iv summed over threads into @h; failures. */
static uint64_t
interval_sum(const struct run *r, unsigned iv, struct dmkv_hist *h)
{
	uint64_t failed = 0;

	dmkv_hist_init(h);
	for (unsigned i = 0; i < r->nt; i++) {
		dmkv_hist_merge(h, &r->t[i].tl[iv]);
		failed += r->t[i].tl_fail[iv];
	}
	return failed;
}

/* Intervals that hold measured time. */
static unsigned
intervals_used(const struct run *r)
{
	uint64_t n = (r->end_ns - r->t0_ns + r->o->interval_ms * 1000000u - 1) /
		(r->o->interval_ms * 1000000u);

	return n < r->nintervals ? (unsigned)n : r->nintervals;
}

static void
write_json(FILE *f, struct run *r, const struct summary *s, bool ok)
{
	const struct dmkv_bench_opts *o = r->o;
	const struct kv_config *cfg = &r->cl->cfg;
	unsigned np = faults(o) ? PHASES : 1, niv = intervals_used(r);
	struct dmkv_hist *h = malloc(sizeof(*h));

	fprintf(f, "{\"tool\":\"dmkv bench\",\"config\":{\"workload\":\"%c\",\"distribution\":\"%s\","
		   "\"theta\":%.3f,\"records\":%" PRIu64 ",\"key_size\":%u,\"value_size\":%u,"
		   "\"threads\":%u,\"inflight\":%u,\"duration_ms\":%" PRIu64 ",\"operations\":%" PRIu64
		   ",\"warmup_ms\":%" PRIu64 ",\"seed\":%" PRIu64 ",\"interval_ms\":%" PRIu64
		   ",\"nodes\":[",
		o->workload.name,
		o->dist == DMKV_YCSB_ZIPFIAN ? "zipfian" : o->dist == DMKV_YCSB_LATEST ? "latest" : "uniform",
		o->theta, o->records, o->key_size, o->value_size, o->threads, o->inflight,
		o->duration_ms, o->operations, o->warmup_ms, o->seed, o->interval_ms);
	for (unsigned i = 0; i < cfg->nnodes; i++)
		fprintf(f, "%s\"%s\"", i ? "," : "", cfg->nodes[i]);
	fprintf(f, "]");
	if (faults(o))
		fprintf(f, ",\"fail_node\":%u,\"fail_at_ms\":%" PRIu64, o->fail_node, o->fail_at_ms);
	if (o->restore_node != ~0u)
		fprintf(f, ",\"restore_node\":%u,\"restore_at_ms\":%" PRIu64, o->restore_node,
			o->restore_at_ms);
	if (o->label != NULL)
		fprintf(f, ",\"label\":\"%s\"", o->label);
	fprintf(f, "},\"phases\":[");
	for (unsigned p = 0; p < np; p++) {
		fprintf(f, "%s{\"name\":\"%s\",\"span_s\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,"
			   "\"rt_per_op\":%.4f,\"stats\":", p ? "," : "", np > 1 ? phase_name[p] : "run",
			s->span_s[p], s->all[p].count,
			s->span_s[p] > 0 ? (double)s->all[p].count / s->span_s[p] : 0,
			s->all[p].count == 0 ? 0 : (double)(s->st[p].rounds + s->st[p].index_rounds) /
				(double)s->all[p].count);
		json_stats(f, &s->st[p]);
		fprintf(f, ",\"cost\":{\"cas\":%" PRIu64 ",\"flushes\":%" PRIu64 ",\"fences\":%" PRIu64
			   ",\"round_trips\":%" PRIu64 ",\"remote_reads\":%" PRIu64 ",\"remote_writes\":%" PRIu64
			   ",\"remote_atomics\":%" PRIu64 ",\"remote_persists\":%" PRIu64 "}",
			s->cost[p].n[PM_COST_CAS], s->cost[p].n[PM_COST_FLUSH], s->cost[p].n[PM_COST_FENCE],
			s->cost[p].n[PM_COST_ROUND_TRIP], s->cost[p].n[PM_COST_REMOTE_READ],
			s->cost[p].n[PM_COST_REMOTE_WRITE], s->cost[p].n[PM_COST_REMOTE_ATOMIC],
			s->cost[p].n[PM_COST_REMOTE_PERSIST]);
		fprintf(f, ",\"by_op\":{");
		for (unsigned k = 0, first = 1; k < NOPS; k++) {
			if (s->lat[p][k].count == 0)
				continue;
			fprintf(f, "%s\"%s\":{\"failed\":%" PRIu64 ",\"latency\":", first ? "" : ",",
				op_name[k], s->nfail[p][k]);
			json_hist(f, &s->lat[p][k]);
			fprintf(f, "}");
			first = 0;
		}
		fprintf(f, "}}");
	}
	fprintf(f, "],\"timeline\":[");
	for (unsigned iv = 0; h != NULL && iv < niv; iv++) {
		uint64_t failed = interval_sum(r, iv, h);
		double t = (double)(iv + 1) * (double)o->interval_ms / 1e3;

		fprintf(f, "%s{\"t_s\":%.3f,\"ops\":%" PRIu64 ",\"ops_per_s\":%.1f,\"failed\":%" PRIu64
			   ",\"p50_ns\":%" PRIu64 ",\"p99_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			   ",\"log_bytes\":%" PRIu64 ",\"ids_freed\":%" PRIu64 "}",
			iv ? "," : "", t, h->count, (double)h->count * 1e3 / (double)o->interval_ms,
			failed, dmkv_hist_quantile(h, 0.5), dmkv_hist_quantile(h, 0.99), h->max,
			interval_log(r, iv), interval_freed(r, iv));
	}
	fprintf(f, "],\"errors\":{");
	for (unsigned i = 0; i < MAX_CODES && s->errs.n[i] != 0; i++)
		fprintf(f, "%s\"%s\":%" PRIu64, i ? "," : "", pm_strerror(s->errs.code[i]),
			s->errs.n[i]);
	fprintf(f, "},\"failed\":%" PRIu64 ",\"acked_writes\":%" PRIu64 ",\"loaded\":%" PRIu64
		   ",\"wrong_values\":%" PRIu64 ",\"stale_reads\":%" PRIu64 ",\"capped\":%" PRIu64,
		errs_total(&s->errs), s->acked, o->load ? o->records : 0, s->wrong, s->stale,
		s->capped);
	if (o->verify)
		fprintf(f, ",\"verify\":{\"checked\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"wrong\":%" PRIu64
			   ",\"unreadable\":%" PRIu64 "}", r->verify_checked, r->verify_lost,
			r->verify_wrong, r->verify_fail);
	fprintf(f, ",\"ok\":%s}\n", ok ? "true" : "false");
	free(h);
}

static int
write_csv(const char *path, struct run *r)
{
	unsigned niv = intervals_used(r);
	struct dmkv_hist *h = malloc(sizeof(*h));
	FILE *f = fopen(path, "w");

	if (f == NULL || h == NULL) {
		free(h);
		if (f != NULL)
			fclose(f);
		dmkv_err("cannot write %s", path);
		return DMKV_EXIT_IO;
	}
	fprintf(f, "t_s,phase,ops,ops_per_s,failed,p50_us,p99_us,max_us,log_mib,ids_freed\n");
	for (unsigned iv = 0; iv < niv; iv++) {
		uint64_t failed = interval_sum(r, iv, h);
		uint64_t start = r->t0_ns + (uint64_t)iv * r->o->interval_ms * 1000000u;

		fprintf(f, "%.3f,%s,%" PRIu64 ",%.1f,%" PRIu64 ",%.2f,%.2f,%.2f,%.3f,%" PRIu64 "\n",
			(double)(iv + 1) * (double)r->o->interval_ms / 1e3,
			faults(r->o) ? phase_name[phase_at(r, start)] : "run", h->count,
			(double)h->count * 1e3 / (double)r->o->interval_ms, failed,
			(double)dmkv_hist_quantile(h, 0.5) / 1e3,
			(double)dmkv_hist_quantile(h, 0.99) / 1e3, (double)h->max / 1e3,
			(double)interval_log(r, iv) / (1 << 20), interval_freed(r, iv));
	}
	free(h);
	return fclose(f) == 0 ? 0 : DMKV_EXIT_IO;
}

/* Check @o; print what is wrong. */
static int
opts_check(const struct dmkv_cluster *cl, const struct dmkv_bench_opts *o)
{
	if (o->value_size < VAL_MIN || o->value_size > KV_VALUE_MAX) {
		dmkv_err("--value-size must be %u..%u (the driver's values name themselves)",
			VAL_MIN, KV_VALUE_MAX);
		return DMKV_EXIT_USAGE;
	}
	if (o->key_size < DMKV_YCSB_KEY_MIN || o->key_size > KV_KEY_MAX) {
		dmkv_err("--key-size must be %u..%u", DMKV_YCSB_KEY_MIN, KV_KEY_MAX);
		return DMKV_EXIT_USAGE;
	}
	if (o->threads < 1 || o->threads > MAX_THREADS || o->inflight < 1 || o->inflight > 64 ||
		o->loaders < 1 || o->loaders > MAX_THREADS) {
		dmkv_err("--threads and --loaders must be 1..%u, --inflight 1..64", MAX_THREADS);
		return DMKV_EXIT_USAGE;
	}
	if (o->records == 0 || (o->duration_ms == 0 && o->operations == 0) || o->interval_ms == 0) {
		dmkv_err("--records, --interval and one of --duration, --operations must be > 0");
		return DMKV_EXIT_USAGE;
	}
	if ((o->fail_node != ~0u && o->fail_node >= cl->cfg.nnodes) ||
		(o->restore_node != ~0u && o->restore_node >= cl->cfg.nnodes)) {
		dmkv_err("--fail-node/--restore-node: the cluster has nodes 0..%u",
			cl->cfg.nnodes - 1);
		return DMKV_EXIT_USAGE;
	}
	if (o->restore_node != ~0u && (o->fail_node != o->restore_node ||
		o->restore_at_ms <= o->fail_at_ms)) {
		dmkv_err("--restore-node must name the failed node, at a later time");
		return DMKV_EXIT_USAGE;
	}
	return 0;
}

/* Run the measured phase: start the clients, drive the fault schedule and
 * the progress line, stop them. */
static int
run_clients(struct run *r)
{
	const struct dmkv_bench_opts *o = r->o;
	const uint64_t ms = 1000000u;
	uint64_t stop_at, last_print = 0, last_done = 0, last_ns;
	bool failed = false, restored = false, tty = isatty(2) && !dmkv_quiet;
	unsigned started = 0;
	int ret = 0;

	for (unsigned i = 0; i < r->nt && ret == 0; i++) {
		struct thr *t = &r->t[i];

		t->r = r;
		t->idx = i;
		t->writer = o->load ? o->loaders + i : i;
		dmkv_ycsb_gen_init(&t->gen, &o->workload, o->dist, &r->ks, o->seed, i);
		t->tl = malloc(r->nintervals * sizeof(*t->tl));
		t->tl_fail = calloc(r->nintervals, sizeof(*t->tl_fail));
		t->tl_log = calloc(r->nintervals, sizeof(*t->tl_log));
		t->tl_freed = calloc(r->nintervals, sizeof(*t->tl_freed));
		if (t->tl == NULL || t->tl_fail == NULL || t->tl_log == NULL || t->tl_freed == NULL) {
			ret = -ENOMEM;
			break;
		}
		for (unsigned iv = 0; iv < r->nintervals; iv++)
			dmkv_hist_init(&t->tl[iv]);
		for (unsigned p = 0; p < PHASES; p++)
			for (unsigned k = 0; k < NOPS; k++)
				dmkv_hist_init(&t->lat[p][k]);
		ret = thr_setup(t, o->inflight);
		if (ret != 0)
			return dmkv_fail("bench: opening a client", ret);
	}
	if (ret != 0)
		return dmkv_fail("bench", ret);
	for (unsigned i = 0; i < r->nt && ret == 0; i++)
		if ((ret = -pthread_create(&r->t[i].tid, NULL, client_main, &r->t[i])) == 0)
			started++;
	r->t0_ns = dmkv_now_ns() + o->warmup_ms * ms;
	r->tfail_ns = faults(o) ? r->t0_ns + o->fail_at_ms * ms : UINT64_MAX;
	r->trestore_ns = o->restore_node != ~0u ? r->t0_ns + o->restore_at_ms * ms : UINT64_MAX;
	stop_at = o->duration_ms != 0 ? r->t0_ns + o->duration_ms * ms : UINT64_MAX;
	atomic_store_explicit(&r->go, true, memory_order_release);
	last_ns = dmkv_now_ns();
	for (;;) {
		uint64_t now = dmkv_now_ns(), done = threads_done(r, 0, started);
		bool alive = false;

		/* A thread joined here is not joined again: its descriptor may
		 * since serve another thread (the library's), which a second
		 * pthread_tryjoin_np would take for this one, still busy. */
		for (unsigned i = 0; i < started; i++) {
			if (!r->t[i].joined)
				r->t[i].joined = pthread_tryjoin_np(r->t[i].tid, NULL) == 0;
			alive |= !r->t[i].joined;
		}
		if (!alive || now >= stop_at || ret != 0)
			break;
		if (!failed && now >= r->tfail_ns) {
			int e = dmkv_node_crash(r->cl, o->fail_node);

			failed = true;
			if (e != 0)
				dmkv_fail("crashing the node", e);
			else if (!dmkv_quiet)
				fprintf(stderr, "%sdmkv: t=%.1f s: node %u crashed\n", tty ? "\n" : "",
					(double)(now - r->t0_ns) / 1e9, o->fail_node);
		}
		if (failed && !restored && now >= r->trestore_ns) {
			int e = dmkv_node_restore(r->cl, o->restore_node);

			restored = true;
			if (e != 0)
				dmkv_fail("restoring the node", e);
			else if (!dmkv_quiet)
				fprintf(stderr, "%sdmkv: t=%.1f s: node %u restored\n", tty ? "\n" : "",
					(double)(dmkv_now_ns() - r->t0_ns) / 1e9, o->restore_node);
		}
		if (tty && now - last_print >= 500 * ms) {
			double dt = (double)(now - last_ns) / 1e9;

			fprintf(stderr, "\r%s %6.1f s  %10" PRIu64 " ops  %9.0f ops/s%s   ",
				now < r->t0_ns ? "warm-up" : "run    ",
				(double)(int64_t)(now - r->t0_ns) / 1e9,
				done, dt > 0 ? (double)(done - last_done) / dt : 0,
				failed && !restored ? "  (node down)" : "");
			last_print = last_ns = now;
			last_done = done;
		}
		usleep(20000);
	}
	r->end_ns = dmkv_now_ns();
	if (r->end_ns > stop_at)
		r->end_ns = stop_at;
	atomic_store(&r->stop, true);
	for (unsigned i = 0; i < started; i++) {
		if (!r->t[i].joined)
			pthread_join(r->t[i].tid, NULL);
		r->t[i].joined = false; /* for the next phase's threads */
	}
	if (tty)
		fputc('\n', stderr);
	/* A node crashed and due back after the run is restored before the
	 * final check, which then also covers its repair. */
	if (failed && !restored && o->restore_node != ~0u) {
		int e = dmkv_node_restore(r->cl, o->restore_node);

		if (e != 0)
			dmkv_fail("restoring the node", e);
	}
	return ret == 0 ? 0 : dmkv_fail("bench: starting the threads", ret);
}

int
dmkv_bench_run(struct dmkv_cluster *cl, const struct dmkv_bench_opts *o)
{
	struct summary *s = NULL;
	struct run *r;
	uint64_t extra;
	bool ok;
	int ret;

	if ((ret = opts_check(cl, o)) != 0)
		return ret;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return dmkv_fail("bench", -ENOMEM);
	r->cl = cl;
	r->o = o;
	if ((ret = dmkv_ycsb_keyspace_init(&r->ks, o->records, o->theta)) != 0) {
		free(r);
		dmkv_err("--theta must be in (0, 1)");
		return DMKV_EXIT_USAGE;
	}
	/* Inserts of the run (D) take fresh ids; keep room for 4x the records
	 * and at least 1M of them. */
	extra = o->workload.insert > 0 ? (o->records * 4 > (1u << 20) ? o->records * 4 : 1u << 20) : 0;
	r->cap_ids = o->records + extra;
	r->floor = calloc(r->cap_ids, sizeof(*r->floor));
	r->nwriters = (o->load ? o->loaders : 0) + o->threads;
	r->writers = calloc(r->nwriters, sizeof(*r->writers));
	r->nt = o->load && o->loaders > o->threads ? o->loaders : o->threads;
	r->t = calloc(r->nt, sizeof(*r->t));
	r->nonce = (uint16_t)(mix((uint64_t)getpid() ^ dmkv_now_ns()) | 1);
	r->nintervals = (unsigned)((o->duration_ms != 0 ? o->duration_ms : 600000) / o->interval_ms + 2);
	r->tfail_ns = r->trestore_ns = UINT64_MAX;
	s = malloc(sizeof(*s));
	if (r->floor == NULL || r->writers == NULL || r->t == NULL || s == NULL) {
		ret = dmkv_fail("bench", -ENOMEM);
		goto out;
	}
	for (unsigned i = 0; i < r->nt; i++) {
		r->t[i].r = r;
		r->t[i].idx = i;
		r->t[i].writer = i;
	}
	if (o->load) {
		uint64_t t0 = dmkv_now_ns();

		ret = load(r);
		if (ret != 0 || !o->run) {
			double secs = (double)(dmkv_now_ns() - t0) / 1e9;

			if (ret == 0 && dmkv_json)
				printf("{\"loaded\":%" PRIu64 ",\"seconds\":%.3f}\n", o->records, secs);
			else if (ret == 0)
				printf("loaded %" PRIu64 " records in %.1f s (%.0f/s)\n", o->records, secs,
					secs > 0 ? (double)o->records / secs : 0);
			goto out;
		}
		memset(r->t, 0, r->nt * sizeof(*r->t));
		r->nt = o->threads;
	}
	ret = run_clients(r);
	for (unsigned i = 0; i < r->nt; i++)
		if (r->t[i].a != NULL)
			kv_async_close(&r->t[i].a);
	if (ret == 0 && o->verify)
		ret = verify(r);
	summarise(r, s);
	ok = ret == 0 && s->wrong + s->stale + r->verify_lost + r->verify_wrong + r->verify_fail == 0;
	if (dmkv_json)
		write_json(stdout, r, s, ok);
	else
		print_human(r, s);
	if (o->json_path != NULL) {
		FILE *f = fopen(o->json_path, "w");

		if (f == NULL) {
			dmkv_err("cannot write %s", o->json_path);
			ret = ret ? ret : DMKV_EXIT_IO;
		} else {
			write_json(f, r, s, ok);
			if (fclose(f) != 0 && ret == 0)
				ret = DMKV_EXIT_IO;
		}
	}
	if (o->csv_path != NULL && write_csv(o->csv_path, r) != 0 && ret == 0)
		ret = DMKV_EXIT_IO;
	if (ret == 0 && !ok)
		ret = DMKV_EXIT_CHECK;
out:
	for (unsigned i = 0; r->t != NULL && i < r->nt; i++)
		thr_teardown(&r->t[i]);
	for (unsigned w = 0; r->writers != NULL && w < r->nwriters; w++)
		for (unsigned p = 0; p < MAX_PAGES; p++)
			free((void *)atomic_load(&r->writers[w].page[p]));
	free(r->writers);
	free(r->floor);
	free(r->t);
	free(r);
	free(s);
	return ret;
}
