/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mcas/src/mcas.c -- the part of MCAS every algorithm shares: instances and
 * their persistent area, thread slots, building descriptors, and the
 * descriptor reclamation pipeline of thesis sect. 5.6 (see mcas/mcas.h) on
 * reclaim/'s epoch flavour.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <pm/area.h>
#include <pm/cost.h>
#include <pm/error.h>
#include <pm/persist.h>
#include <pm/pool.h>

#include "mcas_internal.h"

#define MCAS_PMEM_MAGIC 0x4145524153434d44ull /* "DMCSAREA" */
#define MCAS_MAX_THREADS 1024

/* The first cache line of a persistent area; the records follow. */
struct mcas_pmem_header {
	struct pm_area_hdr area; /* magic, version, sizes, checksum (pm/area.h) */
	uint32_t algorithm;
	uint32_t max_threads;
	uint32_t descs_per_thread;
	uint32_t reserved[5];
};
_Static_assert(sizeof(struct mcas_pmem_header) == 64, "header is one cache line");

static const struct pm_area_type mcas_area_type = {
	"MCAS", MCAS_PMEM_MAGIC, MCAS_PMEM_VERSION, sizeof(struct mcas_pmem_header)
};
_Static_assert(sizeof(struct mcas_rec) % 64 == 0, "records are whole cache lines");
_Static_assert(offsetof(struct mcas_rec, w) == MCAS_DESC_HEAD, "head size");

/* The default epoch flavour, shared by every instance created without one
 * (mcas_config.epochs NULL), so that a thread using several instances, and
 * the ds structures on them, holds one epoch word and announces once per
 * guard instead of once per instance. Made by the first such instance and
 * released with the last: mcas_default_lock protects both fields and is
 * taken only by mcas_default_get() and mcas_default_put(), nesting nothing.
 * Its capacity is the most threads one instance may have, so any single
 * instance fits; the threads of all default instances together share it. */
static pthread_mutex_t mcas_default_lock = PTHREAD_MUTEX_INITIALIZER;
static struct reclaim_epochs *mcas_default_epochs;
static unsigned mcas_default_refs;

/* mcas_default_get -- a reference to the default flavour, made if there is
 * none; NULL when out of memory */
static struct reclaim_epochs *
mcas_default_get(void)
{
	struct reclaim_epochs *e;

	pthread_mutex_lock(&mcas_default_lock);
	if (mcas_default_epochs == NULL)
		(void)reclaim_epochs_new(&mcas_default_epochs, MCAS_MAX_THREADS);
	e = mcas_default_epochs;
	if (e != NULL)
		mcas_default_refs++;
	pthread_mutex_unlock(&mcas_default_lock);
	return e;
}

/* mcas_default_put -- drop a reference taken by mcas_default_get(); the
 * last one releases the flavour. It has no thread registered then: every
 * registration went through an instance holding a reference, and each
 * instance was closed after its threads unregistered. */
static void
mcas_default_put(void)
{
	pthread_mutex_lock(&mcas_default_lock);
	if (--mcas_default_refs == 0)
		(void)reclaim_epochs_delete(&mcas_default_epochs);
	pthread_mutex_unlock(&mcas_default_lock);
}

/* mcas_config_init -- documented defaults */
void
mcas_config_init(struct mcas_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->algorithm = MCAS_ALG_AOPT;
	cfg->max_threads = 64;
	cfg->descs_per_thread = 512;
	cfg->reclaim_batch = 0; /* descs_per_thread / 8 */
	cfg->read_detach_one_in = 64;
}

static const struct mcas_algo_ops *
mcas_ops_of(enum mcas_algorithm alg)
{
	switch (alg) {
	case MCAS_ALG_AOPT: return &mcas__aopt_ops;
	case MCAS_ALG_HARRIS: return &mcas__harris_ops;
	case MCAS_ALG_PMWCAS: return &mcas__pmwcas_ops;
	}
	return NULL;
}

const char *
mcas_algorithm_name(enum mcas_algorithm alg)
{
	const struct mcas_algo_ops *ops = mcas_ops_of(alg);

	return ops ? ops->name : NULL;
}

/* mcas_config_check -- validate @cfg (NULL: defaults) into @out */
static int
mcas_config_check(const struct mcas_config *cfg, bool persistent, struct mcas_config *out)
{
	const struct mcas_algo_ops *ops;

	if (cfg == NULL)
		mcas_config_init(out);
	else
		*out = *cfg;
	ops = mcas_ops_of(out->algorithm);
	if (ops == NULL || out->max_threads == 0 || out->max_threads > MCAS_MAX_THREADS ||
			out->descs_per_thread < 8 || out->descs_per_thread > (1u << 20))
		return pm_error_set(-EINVAL, "mcas: bad algorithm, max_threads or "
			"descs_per_thread");
	if (persistent ? !ops->persistent_ok : !ops->volatile_ok)
		return pm_error_set(-EINVAL, "mcas: algorithm %s is not available %s",
			ops->name, persistent ? "persistent" : "volatile");
	if (out->reclaim_batch == 0)
		out->reclaim_batch = out->descs_per_thread / 8;
	if (out->reclaim_batch > out->descs_per_thread / 4) /* the pipeline holds about 3 batches */
		return pm_error_set(-EINVAL, "mcas: reclaim_batch %u above descs_per_thread / 4",
			out->reclaim_batch);
	return 0;
}

size_t
mcas_pmem_area_size(const struct mcas_config *cfg)
{
	struct mcas_config c;

	if (mcas_config_check(cfg, true, &c) != 0)
		return 0;
	return sizeof(struct mcas_pmem_header) +
		(size_t)c.max_threads * c.descs_per_thread * sizeof(struct mcas_rec);
}

/* mcas_alloc -- the volatile parts of an instance; @descs NULL allocates
 * the records in DRAM (volatile instance) */
static int
mcas_alloc(struct mcas **out, const struct mcas_config *c, struct mcas_rec *descs)
{
	struct mcas *m = calloc(1, sizeof(*m));
	size_t nrec = (size_t)c->max_threads * c->descs_per_thread;

	if (m == NULL)
		return -ENOMEM;
	m->alg = c->algorithm;
	m->ops = mcas_ops_of(c->algorithm);
	m->max_threads = c->max_threads;
	m->descs_per_thread = c->descs_per_thread;
	m->reclaim_batch = c->reclaim_batch;
	m->read_detach_one_in = c->read_detach_one_in;
	m->slot_used = calloc(c->max_threads, sizeof(*m->slot_used));
	m->threads = calloc(c->max_threads, sizeof(*m->threads));
	m->epochs = c->epochs;
	if (m->epochs == NULL) {
		m->epochs = mcas_default_get();
		m->default_epochs = m->epochs != NULL;
	}
	if (descs == NULL) {
		/* Anonymous memory: zeroed, page-aligned and only touched for the
		 * slots threads actually use. */
		m->descs = mmap(NULL, nrec * sizeof(struct mcas_rec), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m->descs == MAP_FAILED)
			m->descs = NULL;
	} else {
		m->descs = descs;
		m->persistent = true;
	}
	if (m->slot_used == NULL || m->threads == NULL || m->descs == NULL ||
			m->epochs == NULL) {
		if (m->default_epochs)
			mcas_default_put();
		free(m->slot_used);
		free(m->threads);
		if (descs == NULL && m->descs != NULL)
			munmap(m->descs, nrec * sizeof(struct mcas_rec));
		free(m);
		return -ENOMEM;
	}
	*out = m;
	return 0;
}

int
mcas_new(struct mcas **out, const struct mcas_config *cfg)
{
	struct mcas_config c;
	int ret;

	pm_error_clear();
	ret = mcas_config_check(cfg, false, &c);
	if (ret != 0)
		return ret;
	ret = mcas_alloc(out, &c, NULL);
	return ret == 0 ? 0 : pm_error_set(ret, "mcas_new: out of memory");
}

/* mcas_attach -- bind instance @m to its pool area */
static void
mcas_attach(struct mcas *m, struct pm_pool *pool, struct mcas_pmem_header *hdr)
{
	m->pool = pool;
	m->hdr = hdr;
	m->base = (uintptr_t)pm_pool_base(pool);
	m->size = pm_pool_size(pool);
}

int
mcas_pmem_create(struct mcas **out, struct pm_pool *pool, uint64_t area_off,
	const struct mcas_config *cfg)
{
	struct mcas_config c;
	struct mcas_pmem_header *hdr;
	void *area;
	size_t len;
	int ret;

	pm_error_clear();
	ret = mcas_config_check(cfg, true, &c);
	if (ret != 0)
		return ret;
	if (pool == NULL)
		return pm_error_set(-EINVAL, "mcas_pmem_create: no pool");
	len = mcas_pmem_area_size(&c);
	ret = pm_pool_area(pool, area_off, len, 64, "mcas", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	/* Invalidate first, then records, then the header: a crash anywhere
	 * before the end leaves a header that does not check. */
	pm_area_invalidate(&hdr->area);
	memset(hdr + 1, 0, len - sizeof(*hdr));
	pm_persist(hdr + 1, len - sizeof(*hdr));
	hdr->algorithm = (uint32_t)c.algorithm;
	hdr->max_threads = c.max_threads;
	hdr->descs_per_thread = c.descs_per_thread;
	memset(hdr->reserved, 0, sizeof(hdr->reserved));
	pm_area_seal(&hdr->area, &mcas_area_type, len);
	ret = mcas_alloc(out, &c, (struct mcas_rec *)(hdr + 1));
	if (ret != 0)
		return pm_error_set(ret, "mcas_pmem_create: out of memory");
	mcas_attach(*out, pool, hdr);
	return 0;
}

int
mcas_pmem_open(struct mcas **out, struct pm_pool *pool, uint64_t area_off,
	const struct mcas_config *cfg)
{
	struct mcas_pmem_header *hdr;
	struct mcas_config c;
	struct mcas *m;
	void *area;
	size_t nrec;
	int ret;

	pm_error_clear();
	if (pool == NULL)
		return pm_error_set(-EINVAL, "mcas_pmem_open: no pool");
	ret = pm_pool_area(pool, area_off, sizeof(*hdr), 64, "mcas", &area);
	if (ret != 0)
		return ret;
	hdr = area;
	ret = pm_area_check(&hdr->area, &mcas_area_type, "mcas_pmem_open");
	if (ret != 0)
		return ret;
	if (cfg != NULL && (uint32_t)cfg->algorithm != hdr->algorithm)
		return pm_error_set(PM_E_LAYOUT, "mcas_pmem_open: the area holds another algorithm");
	if (cfg != NULL)
		c = *cfg;
	else
		mcas_config_init(&c);
	c.algorithm = (enum mcas_algorithm)hdr->algorithm;
	c.max_threads = hdr->max_threads;
	c.descs_per_thread = hdr->descs_per_thread;
	if (mcas_config_check(&c, true, &c) != 0 ||
			hdr->area.area_size != mcas_pmem_area_size(&c) ||
			pm_pool_area(pool, area_off, hdr->area.area_size, 64, "mcas", &area) != 0)
		return pm_error_set(PM_E_CORRUPT, "mcas_pmem_open: the header describes an area "
			"that does not fit the pool");
	ret = mcas_alloc(&m, &c, (struct mcas_rec *)(hdr + 1));
	if (ret != 0)
		return pm_error_set(ret, "mcas_pmem_open: out of memory");
	mcas_attach(m, pool, hdr);
	/* Recovery (thesis sect. 5.5): single-threaded, idempotent. */
	nrec = (size_t)c.max_threads * c.descs_per_thread;
	for (size_t i = 0; i < nrec; i++)
		m->ops->recover(m, &m->descs[i]);
	pm_fence();
	*out = m;
	return 0;
}

int
mcas_close(struct mcas **mp)
{
	struct mcas *m = mp ? *mp : NULL;

	pm_error_clear();
	if (m == NULL)
		return 0;
	if (atomic_load(&m->nregistered) != 0)
		return pm_error_set(-EBUSY, "mcas_close: %d threads are still registered",
			atomic_load(&m->nregistered));
	if (m->default_epochs)
		mcas_default_put();
	if (!m->persistent)
		munmap(m->descs, (size_t)m->max_threads * m->descs_per_thread *
			sizeof(struct mcas_rec));
	free(m->slot_used);
	free(m->threads);
	free(m);
	*mp = NULL;
	return 0;
}

enum mcas_algorithm
mcas_algorithm_of(const struct mcas *m)
{
	return m->alg;
}

bool
mcas_is_persistent(const struct mcas *m)
{
	return m->persistent;
}

bool
mcas_covers(const struct mcas *m, const void *addr, size_t len)
{
	return !m->persistent ||
		pm_off_in_range(pm_off_from_addr(m->base, addr), len, m->size);
}

uint64_t
mcas_value_mask(const struct mcas *m)
{
	return m->ops->value_mask;
}

bool
mcas__cas(_Atomic uint64_t *word, uint64_t expected, uint64_t desired)
{
	return pm_cas((uint64_t *)word, &expected, desired);
}

/* ---- threads ---- */

static int
mcas_limbo_init(struct mcas_limbo *l, size_t cap)
{
	l->e = malloc(cap * sizeof(*l->e));
	l->n = 0;
	l->cap = cap;
	l->users = 0;
	return l->e ? 0 : -ENOMEM;
}

/* mcas_limbo_reserve -- make room in @l for one more user object while
 * keeping room for all @descs records of the thread (struct mcas_limbo);
 * the only place the pipeline allocates, outside any operation */
static int
mcas_limbo_reserve(struct mcas_limbo *l, size_t descs)
{
	size_t need = l->users + 1 + descs;

	if (need > l->cap) {
		size_t ncap = l->cap * 2 > need ? l->cap * 2 : need;
		struct mcas_limbo_entry *ne = realloc(l->e, ncap * sizeof(*ne));

		if (ne == NULL)
			return -ENOMEM;
		l->e = ne;
		l->cap = ncap;
	}
	return 0;
}

/* mcas_limbo_append -- append an entry for which mcas_limbo_reserve (or, for
 * records, the capacity invariant of struct mcas_limbo) made room */
static void
mcas_limbo_append(struct mcas_limbo *l, void *obj, mcas_free_fn fn, void *ctx)
{
	assert(l->n < l->cap);
	l->e[l->n++] = (struct mcas_limbo_entry){ obj, fn, ctx };
	l->users += fn != NULL;
}

/* mcas_thread_free -- release @t's memory and its epoch registration (on
 * the registering thread: reclaim_epochs_thread_unregister() checks) */
static void
mcas_thread_free(struct mcas_thread *t)
{
	free(t->free);
	free(t->r0.e);
	free(t->r1.e);
	free(t->r2.e);
	reclaim_epochs_grace_fini(&t->grace);
	reclaim_epochs_thread_unregister(&t->et);
	free(t);
}

/* mcas_stats_lock -- take stats_lock (struct mcas says what it protects);
 * the acquire pairs with the release in mcas_stats_unlock */
static void
mcas_stats_lock(struct mcas *m)
{
	int unlocked = 0;

	while (!atomic_compare_exchange_weak_explicit(&m->stats_lock, &unlocked, 1,
			memory_order_acquire, memory_order_relaxed)) {
		unlocked = 0;
		sched_yield();
	}
}

/* mcas_stats_unlock -- release stats_lock; pairs with mcas_stats_lock */
static void
mcas_stats_unlock(struct mcas *m)
{
	atomic_store_explicit(&m->stats_lock, 0, memory_order_release);
}

/* mcas_stats_add_thread -- add @t's counters to @sum; any thread may call it
 * while @t is registered (the counters are atomic) */
static void
mcas_stats_add_thread(struct mcas_stats *sum, const struct mcas_thread *t)
{
	uint64_t *b = (uint64_t *)sum;

	for (size_t i = 0; i < sizeof(t->stats) / sizeof(t->stats[0]); i++)
		b[i] += atomic_load_explicit(&t->stats[i], memory_order_relaxed);
}

int
mcas_thread_register(struct mcas *m, struct mcas_thread **out)
{
	struct mcas_thread *t;
	unsigned d = m->descs_per_thread, slot, hwm;
	int expected, ret;

	pm_error_clear();
	/* The cost counters register a thread on its first counted CAS or
	 * flush, allocating: here, not inside an operation (mcas.h). */
	t = pm_cost_thread_prepare() == 0 ? calloc(1, sizeof(*t)) : NULL;
	if (t == NULL)
		return pm_error_set(-ENOMEM, "mcas_thread_register: out of memory");
	t->free = malloc(d * sizeof(*t->free));
	if (t->free == NULL || reclaim_epochs_grace_init(&t->grace, m->epochs) ||
			mcas_limbo_init(&t->r0, d) || mcas_limbo_init(&t->r1, d) ||
			mcas_limbo_init(&t->r2, d)) {
		mcas_thread_free(t);
		return pm_error_set(-ENOMEM, "mcas_thread_register: out of memory");
	}
	for (slot = 0; slot < m->max_threads; slot++) {
		expected = 0;
		if (atomic_compare_exchange_strong(&m->slot_used[slot], &expected, 1))
			break;
	}
	if (slot == m->max_threads) {
		mcas_thread_free(t);
		return pm_error_set(-EAGAIN, "mcas_thread_register: all %u thread slots in use",
			m->max_threads);
	}
	/* The epoch word last: nothing after it can fail, so a failure never
	 * has a registration to give back (which a thread inside a section
	 * of the same flavour could not). */
	ret = reclaim_epochs_thread_register(m->epochs, &t->et);
	if (ret != 0) {
		atomic_store(&m->slot_used[slot], 0);
		mcas_thread_free(t);
		return pm_error_set(ret, ret == -EAGAIN ? "mcas_thread_register: every "
			"slot of the epoch flavour is in use" :
			"mcas_thread_register: out of memory");
	}
	hwm = atomic_load(&m->slots_hwm);
	while (hwm < slot + 1 && !atomic_compare_exchange_weak(&m->slots_hwm, &hwm, slot + 1))
		;
	t->m = m;
	t->slot = slot;
	t->descs = &m->descs[(size_t)slot * d];
	/* The slot's records are all free: the previous owner drained its
	 * pipeline before unregistering, and recovery detached everything. */
	for (unsigned i = 0; i < d; i++)
		t->free[i] = d - 1 - i;
	t->nfree = d;
	t->next_scan = m->reclaim_batch;
	t->rng = 0x9e3779b97f4a7c15ull * (slot + 1);
	mcas_stats_lock(m);
	m->threads[slot] = t;
	mcas_stats_unlock(m);
	atomic_fetch_add(&m->nregistered, 1);
	*out = t;
	return 0;
}

static void mcas_reclaim(struct mcas_thread *t);

int
mcas_thread_unregister(struct mcas_thread **tp)
{
	struct mcas_thread *t = tp ? *tp : NULL;
	struct mcas *m;

	if (t == NULL)
		return 0;
	if (reclaim_epochs_inside(t->et) || t->building.rec != NULL)
		return -EBUSY;
	m = t->m;
	/* Drain the pipeline, so the slot's records are free for the next
	 * owner and no reference to them is left in any target word. */
	while (t->r0.n + t->r1.n + t->r2.n > 0) {
		mcas_reclaim(t);
		if (t->r0.n + t->r1.n + t->r2.n > 0)
			sched_yield();
	}
	/* Folding the counts in and clearing the entry in one critical
	 * section is what keeps mcas_stats_total from counting @t twice or
	 * reading it after the free below. */
	mcas_stats_lock(m);
	mcas_stats_add_thread(&m->retired_stats, t);
	m->threads[t->slot] = NULL;
	mcas_stats_unlock(m);
	atomic_store(&m->slot_used[t->slot], 0);
	atomic_fetch_sub(&m->nregistered, 1);
	mcas_thread_free(t);
	*tp = NULL;
	return 0;
}

/* ---- guards ---- */

void
mcas_guard_enter(struct mcas_thread *t)
{
	mcas__epoch_enter(t);
}

void
mcas_guard_exit(struct mcas_thread *t)
{
	mcas__epoch_exit(t);
}

/* ---- reclamation (thesis sect. 5.6) ---- */

static void
mcas_desc_free(struct mcas_thread *t, struct mcas_rec *d)
{
	t->free[t->nfree++] = (uint32_t)(d - t->descs);
}

/*
 * mcas_reclaim -- advance the pipeline if a grace period elapsed since the
 * last snapshot: r2 (detached before it) becomes free; r1 (retired before
 * it) is detached into r2 (records) or freed (user objects); r0 becomes r1;
 * and a new snapshot starts the next grace period. Detaching
 * waits a grace period after finalization so no helper can re-acquire a word
 * for a finalized operation (Lemma 5.4.8); freeing waits another so no
 * reader still holds a reference loaded before the detach.
 */
static void
mcas_reclaim(struct mcas_thread *t)
{
	struct mcas *m = t->m;
	bool detached = false;

	mcas__stat_add(t, scans, 1);
	if (!reclaim_epochs_grace_elapsed(&t->grace, t->et))
		return;
	if (reclaim_epochs_grace_started(&t->grace))
		mcas__stat_add(t, grace_periods, 1);
	for (size_t i = 0; i < t->r2.n; i++)
		mcas_desc_free(t, t->r2.e[i].obj);
	t->r2.n = 0;
	for (size_t i = 0; i < t->r1.n; i++) {
		struct mcas_limbo_entry *e = &t->r1.e[i];

		if (e->fn != NULL) {
			e->fn(e->obj, e->ctx);
		} else {
			m->ops->detach(t, e->obj);
			t->r2.e[t->r2.n++] = *e; /* r2 holds at most a batch of records */
			detached = true;
		}
	}
	/* The detaching stores are durable before the records can be reused
	 * (sect. 5.6.1); off the critical path, one fence per batch. */
	if (detached && m->persistent)
		pm_fence();
	/* r1 and r0 swap arrays: r1 is empty now. */
	{
		struct mcas_limbo tmp = t->r1;

		t->r1 = t->r0;
		t->r0 = tmp;
		t->r0.n = 0;
		t->r0.users = 0;
	}
	reclaim_epochs_grace_start(&t->grace, t->et);
}

int
mcas_retire(struct mcas_thread *t, void *obj, mcas_free_fn free_fn, void *ctx)
{
	int ret;

	if (free_fn == NULL)
		return -EINVAL;
	ret = mcas_limbo_reserve(&t->r0, t->m->descs_per_thread);
	if (ret == 0)
		mcas_limbo_append(&t->r0, obj, free_fn, ctx);
	return ret;
}

/* ---- descriptors ---- */

int
mcas_desc_begin(struct mcas_thread *t, struct mcas_desc **out)
{
	struct mcas_rec *d;

	if (t->building.rec != NULL)
		return -EBUSY;
	if (t->r0.n >= t->next_scan || t->nfree == 0) {
		mcas_reclaim(t);
		/* If this scan found no grace period, scan again after a quarter
		 * batch more retirements rather than on every operation. */
		t->next_scan = t->r0.n + (t->r0.n == 0 ? t->m->reclaim_batch
			: t->m->reclaim_batch / 4 + 1);
		if (t->nfree == 0) {
			mcas__stat_add(t, desc_waits, 1);
			return -EAGAIN;
		}
	}
	d = &t->descs[t->free[--t->nfree]];
	atomic_store_explicit(&d->status, MCAS_ST_ACTIVE, memory_order_relaxed);
	d->n = 0;
	d->slot = t->slot;
	t->building.t = t;
	t->building.rec = d;
	*out = &t->building;
	return 0;
}

int
mcas_desc_add(struct mcas_desc *desc, uint64_t *addr, uint64_t expected, uint64_t desired)
{
	struct mcas *m = desc->t->m;
	struct mcas_rec *d = desc->rec;
	uint64_t off = pm_off_from_addr(m->base, addr);

	if (addr == NULL || (uintptr_t)addr % 8 != 0 ||
			((expected | desired) & m->ops->value_mask) != 0)
		return -EINVAL;
	if (m->persistent && !pm_off_in_range(off, sizeof(*addr), m->size))
		return -ERANGE;
	for (uint32_t i = 0; i < d->n; i++)
		if (d->w[i].addr == off)
			return -EEXIST;
	if (d->n == MCAS_MAX_WORDS)
		return -E2BIG;
	d->w[d->n].addr = off;
	d->w[d->n].old = expected;
	d->w[d->n].new_ = desired;
	d->n++;
	return 0;
}

void
mcas_desc_abandon(struct mcas_desc *desc)
{
	struct mcas_thread *t = desc->t;

	mcas_desc_free(t, desc->rec);
	t->building.rec = NULL;
}

/* mcas_sort -- order the targets by address (insertion sort; n <= 16):
 * acquiring in one global order is what makes AOPT lock-free (Lemma 5.4.10) */
static void
mcas_sort(struct mcas_rec *d)
{
	for (uint32_t i = 1; i < d->n; i++) {
		struct mcas_word w = d->w[i];
		uint32_t j = i;

		for (; j > 0 && d->w[j - 1].addr > w.addr; j--)
			d->w[j] = d->w[j - 1];
		d->w[j] = w;
	}
}

int
mcas_desc_execute(struct mcas_desc *desc)
{
	struct mcas_thread *t = desc->t;
	struct mcas *m = t->m;
	struct mcas_rec *d = desc->rec;
	uint64_t self = pm_off_from_addr(m->base, d);
	bool ok;

	t->building.rec = NULL;
	if (d->n == 0) {
		mcas_desc_free(t, d);
		return -EINVAL;
	}
	mcas_sort(d);
	for (uint32_t i = 0; i < d->n; i++)
		d->w[i].parent = self;
	/* Persistent: the record must be durable before any target refers to
	 * it, or recovery could not roll the target back. The first install
	 * CAS is LOCK-prefixed and so waits for these flushes (x86; thesis
	 * sect. 5.2.2 "descriptor contents are made persistent before
	 * invocation of MCAS"), which is why this costs no fence of its own. */
	if (m->persistent)
		pm_flush(d, MCAS_DESC_HEAD + d->n * sizeof(struct mcas_word));
	/* Eager epoch (alg. 5.3 line 21): the owner must be visible to
	 * efficient-read detaching, which must not race with the owner's own
	 * acquisitions. */
	mcas__epoch_enter(t);
	ok = m->ops->execute(t, d);
	mcas__epoch_exit(t);
	/* The owner retires its record once the operation returned, whoever
	 * finalized it: records go back to the owner's own pool. There is
	 * room without allocating (struct mcas_limbo). */
	mcas_limbo_append(&t->r0, d, NULL, NULL);
	mcas__stat_add(t, mcas, 1);
	mcas__stat_add(t, succeeded, ok);
	return ok ? 1 : 0;
}

uint64_t
mcas_read(struct mcas_thread *t, const uint64_t *addr)
{
	uint64_t v = t->m->ops->read(t, addr);

	/* The read announced itself only if it met a descriptor outside an
	 * epoch; the flag keeps the common path to one load of @t. */
	if (t->read_entered) {
		t->read_entered = false;
		mcas__epoch_exit(t);
	}
	return v;
}

void
mcas_thread_stats(const struct mcas_thread *t, struct mcas_stats *out)
{
	memset(out, 0, sizeof(*out));
	mcas_stats_add_thread(out, t);
}

void
mcas_stats_total(const struct mcas *m, struct mcas_stats *out)
{
	/* The lock is the only thing written; the instance is otherwise
	 * only read, whatever the const-less cast suggests. */
	struct mcas *mm = (struct mcas *)m;
	const uint64_t *r = (const uint64_t *)&m->retired_stats;
	uint64_t *b = (uint64_t *)out;

	memset(out, 0, sizeof(*out));
	mcas_stats_lock(mm);
	for (size_t i = 0; i < sizeof(*out) / sizeof(uint64_t); i++)
		b[i] += r[i];
	for (unsigned i = 0; i < atomic_load(&mm->slots_hwm); i++)
		if (m->threads[i] != NULL)
			mcas_stats_add_thread(out, m->threads[i]);
	mcas_stats_unlock(mm);
}
