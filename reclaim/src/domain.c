/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/domain.c -- domains, the thread registry (membership,
 * offline/online, eviction of dead threads), the public entry points that
 * dispatch to the scheme, statistics and the memory bounds.
 *
 * Registry. max_threads slots are allocated with the domain and never move,
 * so a scan may read any slot below the high-water mark hwm at any time. A
 * slot's sw word holds its state and a generation bumped at every claim:
 *
 *   FREE/EVICTED --claim CAS--> CLAIMED --set up--> ACTIVE
 *   ACTIVE --owner--> LEAVING --> FREE
 *   ACTIVE --evictor CAS--> EVICTING --> EVICTED
 *
 * Grace periods, presence checks and eviction consider ACTIVE slots only.
 * A registering thread therefore publishes ACTIVE first (seq_cst) and only
 * then joins the scheme (QSBR and QSense: announces the global epoch, with a
 * full fence, before its first read of a node). A grace period that still
 * saw the slot CLAIMED read it before that fence, so it read G before the
 * newcomer read any node either, and every node it lets be freed was
 * unlinked before the newcomer could reach it (the online argument of
 * qsbr.c). Joining first and publishing ACTIVE after would leave the ACTIVE
 * store free to wait in the store buffer while the newcomer already reads
 * nodes, unseen by grace periods. Hazard-pointer scans ignore sw: they read
 * every slot below hwm, which the claim raised before any publication.
 *
 * Eviction. A slot is evicted only when its owner's OS thread no longer
 * exists: its entry in /proc/self/task is gone, is a zombie, or belongs to a
 * newer thread (another start time, field 22 of its stat). The directory is
 * opened once, in reclaim_domain_new(), and looked up relative to that fd,
 * so that a later chroot or unmount of /proc cannot make every thread look
 * gone; if it could not be opened nothing is ever evicted, and a missing
 * entry is believed only while the caller's own entry is there
 * (reclaim_owner_dead()). A dead thread holds no references, so its hazard
 * pointers can be cleared and its epoch word ignored; its retired nodes may
 * still be referenced by live threads, so they go to the orphan piles and
 * get the normal treatment from whoever adopts them. The CAS on sw (with
 * the generation) makes one evictor win and fails if the slot changed owner
 * since the liveness check.
 *
 * Stale handles. A handle is its slot, so after an eviction and a new claim
 * the old handle names the new owner's slot. Were a live thread ever evicted
 * (only a wrong liveness verdict could do it), its unregister and the slow
 * paths behind the inline calls check that the slot is ACTIVE and owned by
 * the calling thread (owner, pthread_self() at register; only the thread
 * that registered may use a handle), and do nothing otherwise: unregister
 * returns -ESRCH. The inline fast paths cannot check that cheaply, which is
 * why reclaim.h forbids using an evicted handle for anything but unregister.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pm/error.h>

#include "reclaim_internal.h"
#include "reclaim_testing.h"

#define RECLAIM_MAX_THREADS 4096
#define RECLAIM_MIN_SCAN 64

static const char *const reclaim_names[RECLAIM_NSCHEMES] = {
	[RECLAIM_NONE] = "none",
	[RECLAIM_QSBR] = "qsbr",
	[RECLAIM_EBR] = "ebr",
	[RECLAIM_HP] = "hp",
	[RECLAIM_CADENCE] = "cadence",
	[RECLAIM_QSENSE] = "qsense",
	[RECLAIM_URCU_QSBR] = "urcu-qsbr",
};

static const struct reclaim__scheme *const reclaim_schemes[RECLAIM_NSCHEMES] = {
	[RECLAIM_NONE] = &reclaim__none_scheme,
	[RECLAIM_QSBR] = &reclaim__qsbr_scheme,
	[RECLAIM_EBR] = &reclaim__ebr_scheme,
	[RECLAIM_HP] = &reclaim__hp_scheme,
	[RECLAIM_CADENCE] = &reclaim__cadence_scheme,
	[RECLAIM_QSENSE] = &reclaim__qsense_scheme,
	[RECLAIM_URCU_QSBR] = &reclaim__urcu_scheme,
};

/* RECLAIM_NONE: retired nodes stay on their lists (or the orphan piles)
 * until reclaim_domain_delete(). */
const struct reclaim__scheme reclaim__none_scheme = {
	.hp_mode = RECLAIM__HP_OFF,
	.evictable = true,
};

/* reclaim__now -- CLOCK_MONOTONIC in nanoseconds */
uint64_t
reclaim__now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* reclaim_config_init -- the documented defaults */
void
reclaim_config_init(struct reclaim_config *cfg, enum reclaim_scheme scheme)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->scheme = scheme;
	cfg->max_threads = 128;
	cfg->hazards_per_thread = 8;
	cfg->quiescence_threshold = 64;
	cfg->scan_threshold = 0;
	cfg->fallback_threshold = 0;
	cfg->rooster_interval_us = 10000;
	cfg->epsilon_us = 1000;
	cfg->liveness_check_ms = 100;
}

/* reclaim_scheme_name -- short name of a scheme */
const char *
reclaim_scheme_name(enum reclaim_scheme scheme)
{
	if ((unsigned)scheme >= RECLAIM_NSCHEMES)
		return "?";
	return reclaim_names[scheme];
}

/* reclaim_scheme_parse -- scheme of a short name */
int
reclaim_scheme_parse(const char *name, enum reclaim_scheme *out)
{
	for (unsigned i = 0; name && i < RECLAIM_NSCHEMES; i++) {
		if (strcmp(name, reclaim_names[i]) == 0) {
			*out = (enum reclaim_scheme)i;
			return 0;
		}
	}
	return -EINVAL;
}

/* reclaim_r_for -- R for @h threads (the documented default when 0) */
static uint64_t
reclaim_r_for(const struct reclaim_config *cfg, uint64_t h)
{
	uint64_t r = 2 * (uint64_t)cfg->hazards_per_thread * h;

	if (cfg->scan_threshold)
		return cfg->scan_threshold;
	return r > RECLAIM_MIN_SCAN ? r : RECLAIM_MIN_SCAN;
}

/* reclaim_c_for -- C for @h threads (the documented default when 0) */
static uint64_t
reclaim_c_for(const struct reclaim_config *cfg, uint64_t h)
{
	if (cfg->fallback_threshold)
		return cfg->fallback_threshold;
	return 4 * reclaim_r_for(cfg, h) + (uint64_t)cfg->hazards_per_thread * h;
}

/* reclaim_config_check -- 0 if @cfg is usable, else -EINVAL */
static int
reclaim_config_check(const struct reclaim_config *cfg)
{
	if (cfg == NULL || (unsigned)cfg->scheme >= RECLAIM_NSCHEMES)
		return -EINVAL;
	if (cfg->max_threads == 0 || cfg->max_threads > RECLAIM_MAX_THREADS)
		return -EINVAL;
	if (cfg->hazards_per_thread == 0 ||
			cfg->hazards_per_thread > RECLAIM_MAX_HAZARDS)
		return -EINVAL;
	if (cfg->quiescence_threshold == 0 || cfg->rooster_interval_us == 0)
		return -EINVAL;
	/* R and C are unsigned at run time, derived for the high-water mark,
	 * which never exceeds max_threads; both only grow with it. Refuse
	 * what would wrap rather than run with a tiny C (and a bound that
	 * does not describe the domain). */
	if (reclaim_r_for(cfg, cfg->max_threads) > UINT_MAX ||
			reclaim_c_for(cfg, cfg->max_threads) > UINT_MAX)
		return -EINVAL;
	return 0;
}

/* reclaim__scan_threshold -- R for the current high-water mark */
unsigned
reclaim__scan_threshold(const struct reclaim_domain *d)
{
	/* Within 32 bits: reclaim_config_check(). */
	return (unsigned)reclaim_r_for(&d->cfg,
		atomic_load_explicit(&d->hwm, memory_order_relaxed));
}

/* reclaim__fallback_threshold -- C for the current high-water mark */
unsigned
reclaim__fallback_threshold(const struct reclaim_domain *d)
{
	/* Within 32 bits: reclaim_config_check(). */
	return (unsigned)reclaim_c_for(&d->cfg,
		atomic_load_explicit(&d->hwm, memory_order_relaxed));
}

static uint64_t
reclaim_max3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a > b ? a : b;

	return m > c ? m : c;
}

/* reclaim_bound_compute -- Prop. 6.6.3 and 6.6.5 for @cfg */
int
reclaim_bound_compute(const struct reclaim_config *cfg, unsigned nthreads,
	unsigned per_op, uint64_t young, struct reclaim_bound *out)
{
	if (reclaim_config_check(cfg) != 0 || out == NULL)
		return -EINVAL;
	uint64_t n = nthreads;
	uint64_t k = cfg->hazards_per_thread;
	uint64_t r = reclaim_r_for(cfg, n);
	uint64_t c = reclaim_c_for(cfg, n);

	/* Prop. 6.6.3 and 6.6.5; "legal C" as defined before Prop. 6.6.5. */
	out->cadence = n * (k + young + r);
	out->qsense = 2 * n * c;
	out->c_min = reclaim_max3((uint64_t)per_op * cfg->quiescence_threshold,
		n * k + young, (k + young + r) / 2) + 1;
	out->c_legal = c >= out->c_min;
	return 0;
}

/* reclaim_domain_new -- allocate the registry, start the roosters */
int
reclaim_domain_new(struct reclaim_domain **out, const struct reclaim_config *cfg)
{
	pm_error_clear();
	int ret = reclaim_config_check(cfg);

	if (ret != 0)
		return pm_error_set(ret, "reclaim_domain_new: invalid configuration");
	struct reclaim_domain *d = aligned_alloc(RECLAIM__CACHELINE,
		sizeof(*d));
	if (d == NULL)
		return pm_error_set(-ENOMEM, "reclaim_domain_new: out of memory");
	memset(d, 0, sizeof(*d));
	/* Opened now, while /proc is surely there (domain.c top). */
	d->task_dir = open("/proc/self/task", O_PATH | O_DIRECTORY | O_CLOEXEC);
	d->cfg = *cfg;
	d->scheme = reclaim_schemes[cfg->scheme];
	d->eps_ns = (uint64_t)cfg->epsilon_us * 1000;
	d->liveness_ns = (uint64_t)cfg->liveness_check_ms * 1000000;
	/* Whole cache lines per thread, so that one thread's hazard stores
	 * never invalidate a line another thread is publishing into. */
	d->hp_stride = (cfg->hazards_per_thread + 7) & ~7u;
	atomic_init(&d->mode, RECLAIM_MODE_FAST);
	/* Epoch 2 upwards, so that "tag <= global - 2" needs no underflow
	 * check. */
	atomic_init(&d->epoch, 2);

	size_t nslots = cfg->max_threads;
	d->slots = aligned_alloc(RECLAIM__CACHELINE, nslots * sizeof(*d->slots));
	if (d->slots == NULL) {
		ret = -ENOMEM;
		goto err_free;
	}
	memset(d->slots, 0, nslots * sizeof(*d->slots));
	for (unsigned i = 0; i < nslots; i++) {
		d->slots[i].d = d;
		d->slots[i].idx = i;
	}
	if (d->scheme->hp_mode != RECLAIM__HP_OFF) {
		size_t sz = nslots * d->hp_stride * sizeof(void *);

		d->hazards = aligned_alloc(RECLAIM__CACHELINE, sz);
		if (d->hazards == NULL) {
			ret = -ENOMEM;
			goto err_free;
		}
		memset(d->hazards, 0, sz);
	}
	ret = pthread_mutex_init(&d->orphan_lock, NULL);
	if (ret != 0) {
		ret = -ret;
		goto err_free;
	}
	if (d->scheme->uses_roosters) {
		ret = reclaim__roosters_start(d);
		if (ret != 0)
			goto err_mutex;
	}
	*out = d;
	return 0;

err_mutex:
	pthread_mutex_destroy(&d->orphan_lock);
err_free:
	if (d->task_dir >= 0)
		close(d->task_dir);
	free(d->hazards);
	free(d->slots);
	free(d);
	return pm_error_set(ret, "reclaim_domain_new: %s", ret == -ENOMEM ? "out of memory" :
		"cannot start the rooster threads");
}

/* reclaim_task_open -- open "TID/stat" under @d's task directory; an fd
 * or -errno */
static int
reclaim_task_open(const struct reclaim_domain *d, int tid)
{
	char path[32];

	snprintf(path, sizeof(path), "%d/stat", tid);
	int fd = openat(d->task_dir, path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * reclaim_task_stat -- state (stat field 3) and start time (field 22) of
 * thread @tid of this process.
 */
static int
reclaim_task_stat(const struct reclaim_domain *d, int tid, char *state,
	uint64_t *start)
{
	char buf[1024];
	int fd = reclaim_task_open(d, tid);

	if (fd < 0)
		return fd;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	int err = n < 0 ? -errno : 0;
	close(fd);
	if (err != 0)
		return err;
	buf[n] = '\0';
	/* The command name (field 2) may hold spaces and parentheses; the
	 * fields after the last ')' are plain numbers and letters. */
	char *p = strrchr(buf, ')');
	if (p == NULL || p[1] != ' ')
		return -EINVAL;
	p += 2;
	*state = *p;
	for (int field = 3; field < 22; field++) {
		p = strchr(p, ' ');
		if (p == NULL)
			return -EINVAL;
		p++;
	}
	*start = strtoull(p, NULL, 10);
	return 0;
}

/*
 * reclaim_owner_dead -- true only if the OS thread that registered @s is
 * certainly gone. Any doubt answers false: evicting a live thread would free
 * nodes it still reads. A missing entry is taken for a death only if the
 * caller's own entry can be found the same way, which tells "the thread is
 * gone" from "this directory does not list our threads" (an fd inherited
 * across fork(), a test's empty directory).
 */
static bool
reclaim_owner_dead(const struct reclaim__slot *s)
{
	const struct reclaim_domain *d = s->d;
	uint64_t start = atomic_load_explicit(&s->start, memory_order_relaxed);
	uint64_t now_start;
	char state;

	if (start == 0 || d->task_dir < 0)
		return false;
	int ret = reclaim_task_stat(d, atomic_load_explicit(&s->tid,
		memory_order_relaxed), &state, &now_start);
	if (ret == -ENOENT || ret == -ESRCH) {
		int self = reclaim_task_open(d, gettid());

		if (self < 0)
			return false;
		close(self);
		return true;
	}
	if (ret != 0)
		return false;
	return state == 'Z' || state == 'X' || now_start != start;
}

/*
 * reclaim_evict -- evict slot @s, last read as @sw, whose owner is dead.
 * @sw is ACTIVE, or (delete) CLAIMED or LEAVING: the owner died registering
 * or unregistering. Returns true if @s no longer counts for that owner
 * (evicted here, or changed since @sw was read).
 */
static bool
reclaim_evict(struct reclaim__slot *s, uint64_t sw)
{
	struct reclaim_domain *d = s->d;
	uint64_t gen = RECLAIM__SW_GEN(sw);
	unsigned state = RECLAIM__SW_STATE(sw);

	/* Acquire: pairs with the dead owner's release of ACTIVE, so its
	 * set-up (hazard array, list) is visible here. */
	if (!atomic_compare_exchange_strong_explicit(&s->sw, &sw,
			RECLAIM__SW(gen, RECLAIM__EVICTING),
			memory_order_acq_rel, memory_order_acquire))
		return RECLAIM__SW_GEN(sw) != gen ||
			RECLAIM__SW_STATE(sw) != state;
	reclaim__clear_hazards(s);
	/* Release: the grace period that skips this slot from now on also
	 * sees the cleared hazards. */
	atomic_store_explicit(&s->epoch, 0, memory_order_release);
	atomic_store_explicit(&s->present, 0, memory_order_relaxed);
	reclaim__hand_over(s);
	/* nregistered counts a thread from just before its ACTIVE store to
	 * just before its FREE store: one that died CLAIMED was never
	 * counted (nor was it a registered thread to count as evicted). */
	if (state != RECLAIM__CLAIMED) {
		atomic_fetch_add_explicit(&d->evicted, 1, memory_order_relaxed);
		atomic_fetch_sub_explicit(&d->nregistered, 1, memory_order_relaxed);
	}
	/* Release: the next owner that claims the slot (acquire CAS) sees
	 * it emptied. */
	atomic_store_explicit(&s->sw, RECLAIM__SW(gen, RECLAIM__EVICTED),
		memory_order_release);
	return true;
}

/* reclaim__lagging -- time a slot that holds others up; evict it if dead */
bool
reclaim__lagging(struct reclaim__slot *me, unsigned i)
{
	struct reclaim_domain *d = me->d;
	struct reclaim__slot *s = &d->slots[i];
	uint64_t sw = atomic_load_explicit(&s->sw, memory_order_acquire);

	if (RECLAIM__SW_STATE(sw) != RECLAIM__ACTIVE)
		return true;
	if (s == me)
		return false;
	uint64_t now = reclaim__now();
	if (me->lag_idx != i || me->lag_gen != RECLAIM__SW_GEN(sw)) {
		me->lag_idx = i;
		me->lag_gen = RECLAIM__SW_GEN(sw);
		me->lag_since = now;
		return false;
	}
	if (now - me->lag_since < d->liveness_ns)
		return false;
	/* Check again only after another liveness period: a stalled live
	 * thread costs one /proc read per period and per waiting thread. */
	me->lag_since = now;
	atomic_fetch_add_explicit(&d->liveness_checks, 1, memory_order_relaxed);
	if (!reclaim_owner_dead(s))
		return false;
	return reclaim_evict(s, sw);
}

/* reclaim_domain_delete -- evict the dead, stop roosters, free what is left */
int
reclaim_domain_delete(struct reclaim_domain **dp)
{
	pm_error_clear();
	if (dp == NULL || *dp == NULL)
		return 0;
	struct reclaim_domain *d = *dp;
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);

	/* Registered threads whose OS thread is gone would otherwise block
	 * delete forever; they hold no references, so evict them now. */
	for (unsigned i = 0; i < hwm; i++) {
		struct reclaim__slot *s = &d->slots[i];
		uint64_t sw = atomic_load_explicit(&s->sw, memory_order_acquire);

		if (RECLAIM__SW_STATE(sw) == RECLAIM__FREE ||
				RECLAIM__SW_STATE(sw) == RECLAIM__EVICTED)
			continue;
		if (!d->scheme->evictable || !reclaim_owner_dead(s) ||
				!reclaim_evict(s, sw))
			return pm_error_set(-EBUSY, "reclaim_domain_delete: a live thread is "
				"still registered");
	}
	if (d->scheme->uses_roosters)
		reclaim__roosters_stop(d);
	if (d->cfg.scheme == RECLAIM_URCU_QSBR)
		reclaim__urcu_barrier();

	for (unsigned i = 0; i < hwm; i++) {
		reclaim__pile_free(atomic_load_explicit(&d->slots[i].ret,
			memory_order_relaxed));
		free(d->slots[i].scratch);
	}
	while (d->orphans != NULL) {
		struct reclaim__pile *p = d->orphans;

		d->orphans = p->next;
		reclaim__pile_free(p);
	}
	pthread_mutex_destroy(&d->orphan_lock);
	if (d->task_dir >= 0)
		close(d->task_dir);
	free(d->hazards);
	free(d->slots);
	free(d);
	*dp = NULL;
	return 0;
}

/* reclaim_domain_config -- the configuration, R and C resolved */
void
reclaim_domain_config(const struct reclaim_domain *d, struct reclaim_config *out)
{
	*out = d->cfg;
	out->scan_threshold = reclaim__scan_threshold(d);
	out->fallback_threshold = reclaim__fallback_threshold(d);
}

/* reclaim_self_registered -- true if the calling thread holds a slot of @d.
 * A slot with the caller's tid but another start time belonged to a dead
 * thread whose tid the kernel reused: it is evicted on the way. */
static bool
reclaim_self_registered(struct reclaim_domain *d, int tid, uint64_t start)
{
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);

	for (unsigned i = 0; i < hwm; i++) {
		struct reclaim__slot *s = &d->slots[i];
		uint64_t sw = atomic_load_explicit(&s->sw, memory_order_acquire);

		if (RECLAIM__SW_STATE(sw) != RECLAIM__ACTIVE ||
				atomic_load_explicit(&s->tid, memory_order_relaxed) != tid)
			continue;
		uint64_t s_start = atomic_load_explicit(&s->start,
			memory_order_relaxed);
		if (s_start == start || s_start == 0 || start == 0)
			return true;
		if (d->scheme->evictable)
			reclaim_evict(s, sw);
	}
	return false;
}

/* reclaim_claim -- a FREE or EVICTED slot, now CLAIMED and recorded as
 * the calling thread's (@tid, @start), or NULL */
static struct reclaim__slot *
reclaim_claim(struct reclaim_domain *d, int tid, uint64_t start)
{
	for (unsigned i = 0; i < d->cfg.max_threads; i++) {
		struct reclaim__slot *s = &d->slots[i];
		uint64_t sw = atomic_load_explicit(&s->sw, memory_order_relaxed);
		unsigned st = RECLAIM__SW_STATE(sw);

		if (st != RECLAIM__FREE && st != RECLAIM__EVICTED)
			continue;
		/* Acquire: pairs with the release that freed or evicted the
		 * slot, so its lists and buffers are ours. */
		if (!atomic_compare_exchange_strong_explicit(&s->sw, &sw,
				RECLAIM__SW(RECLAIM__SW_GEN(sw) + 1, RECLAIM__CLAIMED),
				memory_order_acquire, memory_order_relaxed))
			continue;
		/* First thing after the claim, so that delete judges a
		 * thread that dies registering by its own identity. */
		atomic_store_explicit(&s->tid, tid, memory_order_relaxed);
		atomic_store_explicit(&s->start, start, memory_order_relaxed);
		atomic_store_explicit(&s->owner, (uintptr_t)pthread_self(),
			memory_order_relaxed);
		unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_relaxed);
		/* seq_cst: a scan that starts after any of this thread's
		 * later fenced publications (the epoch word at the join, an
		 * HP hazard pointer) sees the slot below hwm. Cadence and
		 * QSense publish hazard pointers without a fence; there the
		 * CAS, a locked instruction, is in memory before any later
		 * store of this thread (x86-64, hazard.c). */
		while (hwm < i + 1 && !atomic_compare_exchange_weak_explicit(
				&d->hwm, &hwm, i + 1, memory_order_seq_cst,
				memory_order_relaxed))
			;
		return s;
	}
	return NULL;
}

/*
 * reclaim_mine -- true if @s is ACTIVE and registered by the calling
 * thread, i.e. the caller's handle still names its own registration (see
 * "Stale handles" above). Relaxed: the owner field of a slot the caller
 * registered was written by the caller itself; any other value, however
 * old, differs from pthread_self() of a live caller.
 */
static bool
reclaim_mine(const struct reclaim__slot *s)
{
	return RECLAIM__SW_STATE(atomic_load_explicit(&s->sw,
			memory_order_relaxed)) == RECLAIM__ACTIVE &&
		atomic_load_explicit(&s->owner, memory_order_relaxed) ==
			(uintptr_t)pthread_self();
}

/* reclaim_thread_register -- claim a slot for the calling thread */
int
reclaim_thread_register(struct reclaim_domain *d, struct reclaim_thread **out)
{
	const struct reclaim__scheme *sch = d->scheme;
	int tid = gettid();
	uint64_t start = 0;
	char state;

	pm_error_clear();
	/* Unknown start time (no /proc): the slot is never evicted. */
	if (reclaim_task_stat(d, tid, &state, &start) != 0)
		start = 0;
	if (reclaim_self_registered(d, tid, start))
		return pm_error_set(-EEXIST, "reclaim_thread_register: thread %d is already "
			"registered in this domain", tid);
	struct reclaim__slot *s = reclaim_claim(d, tid, start);
	if (s == NULL)
		return pm_error_set(-ENOSPC, "reclaim_thread_register: all %u slots in use",
			d->cfg.max_threads);
	uint64_t gen = RECLAIM__SW_GEN(atomic_load_explicit(&s->sw,
		memory_order_relaxed));

	/* The hazard snapshot of a scan; kept with the slot for its next
	 * owners, freed by delete. */
	if (sch->hp_mode != RECLAIM__HP_OFF && s->scratch == NULL) {
		s->scratch = malloc((size_t)d->cfg.max_threads *
			d->cfg.hazards_per_thread * sizeof(void *));
		if (s->scratch == NULL) {
			atomic_store_explicit(&s->sw,
				RECLAIM__SW(gen, RECLAIM__FREE),
				memory_order_release);
			return pm_error_set(-ENOMEM, "reclaim_thread_register: out of memory");
		}
	}
	/* pub.reclaim__fences is left alone: like the other counters it
	 * adds up all owners of the slot. */
	s->pub.reclaim__hp = sch->hp_mode != RECLAIM__HP_OFF ?
		&d->hazards[(size_t)s->idx * d->hp_stride] : NULL;
	s->pub.reclaim__hp_mode = sch->hp_mode;
	s->pub.reclaim__ops_left = d->cfg.quiescence_threshold;
	s->pub.reclaim__on_begin = sch->on_begin;
	s->pub.reclaim__on_end = sch->on_end;
	atomic_store_explicit(&s->present, 1, memory_order_relaxed);
	s->retires = 0;
	s->prev_mode = RECLAIM_MODE_FAST;
	s->offline = false;
	reclaim__lag_clear(s);
	atomic_fetch_add_explicit(&d->nregistered, 1, memory_order_relaxed);
	/* ACTIVE before joining (top of this file). The epoch word is still
	 * inactive (0, or left inactive by the last owner), so until the
	 * join the slot holds up nothing. Release: a scanner that sees
	 * ACTIVE sees tid, start and the set-up; seq_cst: ordered before
	 * the join's announcement and fence in every thread's view. */
	atomic_store_explicit(&s->sw, RECLAIM__SW(gen, RECLAIM__ACTIVE),
		memory_order_seq_cst);
	if (sch->join)
		sch->join(s);
	*out = &s->pub;
	return 0;
}

/* reclaim_thread_unregister -- hand the retired list over and free the slot */
int
reclaim_thread_unregister(struct reclaim_thread **tp)
{
	pm_error_clear();
	if (tp == NULL || *tp == NULL)
		return 0;
	struct reclaim__slot *s = reclaim__slot_of(*tp);
	struct reclaim_domain *d = s->d;
	uint64_t sw = atomic_load_explicit(&s->sw, memory_order_acquire);
	bool own = atomic_load_explicit(&s->owner, memory_order_relaxed) ==
		(uintptr_t)pthread_self();

	for (;;) {
		uint64_t gen = RECLAIM__SW_GEN(sw);

		switch (RECLAIM__SW_STATE(sw)) {
		case RECLAIM__ACTIVE:
			/* Another thread's registration: ours was evicted
			 * and the slot claimed again. */
			if (!own)
				goto stale;
			/* Release: this thread's reads of nodes happen
			 * before the frees of a grace period that reads
			 * LEAVING (acquire) and skips the slot. */
			if (atomic_compare_exchange_weak_explicit(&s->sw, &sw,
					RECLAIM__SW(gen, RECLAIM__LEAVING),
					memory_order_acq_rel, memory_order_acquire))
				goto leave;
			continue;
		case RECLAIM__EVICTING:
			/* An evictor judged this thread dead; it finishes
			 * within a few stores. */
			sched_yield();
			sw = atomic_load_explicit(&s->sw, memory_order_acquire);
			continue;
		case RECLAIM__EVICTED:
			/* Release: like the FREE store below. Whichever
			 * registration was evicted, it is not the caller's
			 * current one. */
			if (atomic_compare_exchange_weak_explicit(&s->sw, &sw,
					RECLAIM__SW(gen, RECLAIM__FREE),
					memory_order_release, memory_order_acquire))
				goto stale;
			continue;
		default:
			/* FREE, CLAIMED, LEAVING: the slot is between owners
			 * or being claimed or left by another thread, after
			 * the caller's registration was evicted (or it
			 * unregistered already). */
			goto stale;
		}
	}
leave:
	if (d->scheme->leave)
		d->scheme->leave(s);
	reclaim__clear_hazards(s);
	atomic_store_explicit(&s->present, 0, memory_order_relaxed);
	reclaim__hand_over(s);
	atomic_fetch_sub_explicit(&d->nregistered, 1, memory_order_relaxed);
	/* Release: the next owner (acquire CAS in reclaim_claim()) sees the
	 * slot emptied. */
	atomic_store_explicit(&s->sw, RECLAIM__SW(RECLAIM__SW_GEN(sw), RECLAIM__FREE),
		memory_order_release);
	*tp = NULL;
	return 0;
stale:
	return pm_error_set(-ESRCH, "reclaim_thread_unregister: the handle no longer names "
		"this thread's registration (evicted, or unregistered already)");
}

/* reclaim_thread_offline -- clear hazards, leave the grace periods */
void
reclaim_thread_offline(struct reclaim_thread *t)
{
	struct reclaim__slot *s = reclaim__slot_of(t);

	if (!reclaim_mine(s))
		return;
	reclaim__clear_hazards(s);
	s->offline = true;
	if (s->d->scheme->offline)
		s->d->scheme->offline(s);
}

/* reclaim_thread_online -- rejoin the grace periods */
void
reclaim_thread_online(struct reclaim_thread *t)
{
	struct reclaim__slot *s = reclaim__slot_of(t);

	if (!reclaim_mine(s))
		return;
	s->offline = false;
	if (s->d->scheme->online)
		s->d->scheme->online(s);
}

/* reclaim__op_begin_slow -- the scheme's op_begin (EBR) */
void
reclaim__op_begin_slow(struct reclaim_thread *t)
{
	struct reclaim__slot *s = reclaim__slot_of(t);

	if (reclaim_mine(s))
		s->d->scheme->op_begin(s);
}

/* reclaim__op_end_slow -- every Q-th op_end, or every one with on_end */
void
reclaim__op_end_slow(struct reclaim_thread *t)
{
	struct reclaim__slot *s = reclaim__slot_of(t);
	const struct reclaim__scheme *sch = s->d->scheme;

	/* With on_end the hook counts operations itself (the inline test
	 * short-circuits before the decrement). Reset even for a stale
	 * handle: its fast path brought the count to 0, and left there it
	 * would wrap on the slot owner's next call and silence that
	 * thread's quiescent states for 2^32 operations. */
	if (!sch->on_end)
		t->reclaim__ops_left = s->d->cfg.quiescence_threshold;
	if (sch->op_end && reclaim_mine(s))
		sch->op_end(s);
}

/* reclaim_pending -- retired - freed over the whole domain. The freed
 * counters are read first, so the result never underflows and errs high. */
static uint64_t
reclaim_pending(const struct reclaim_domain *d, uint64_t *retired_out,
	uint64_t *freed_out)
{
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);
	uint64_t freed = atomic_load_explicit(&d->freed_async, memory_order_relaxed);
	uint64_t retired = 0;

	for (unsigned i = 0; i < hwm; i++)
		freed += atomic_load_explicit(&d->slots[i].st.freed,
			memory_order_relaxed);
	for (unsigned i = 0; i < hwm; i++)
		retired += atomic_load_explicit(&d->slots[i].st.retired,
			memory_order_relaxed);
	if (retired_out)
		*retired_out = retired;
	if (freed_out)
		*freed_out = freed;
	return retired > freed ? retired - freed : 0;
}

/* reclaim_sample_pending -- raise pending_max to the current pending */
static void
reclaim_sample_pending(struct reclaim_domain *d)
{
	uint64_t pending = reclaim_pending(d, NULL, NULL);
	uint64_t max = atomic_load_explicit(&d->pending_max, memory_order_relaxed);

	while (pending > max && !atomic_compare_exchange_weak_explicit(
			&d->pending_max, &max, pending, memory_order_relaxed,
			memory_order_relaxed))
		;
}

/* reclaim_retire -- stamp, tag and append a node; let the scheme react */
int
reclaim_retire(struct reclaim_thread *t, void *node, reclaim_free_fn fn, void *ctx)
{
	struct reclaim__slot *s = reclaim__slot_of(t);
	struct reclaim_domain *d = s->d;
	const struct reclaim__scheme *sch = d->scheme;
	struct reclaim__entry e = { .node = node, .fn = fn, .ctx = ctx };

	/* A stale handle (top of this file): whom the node is safe from
	 * cannot be known; it stays the caller's. */
	if (!reclaim_mine(s))
		return -ESRCH;
	/* Both are read after the caller's unlink: a reader that still
	 * holds the node started before this point (epoch) or published
	 * its hazard pointer before it (clock).
	 *
	 * The tag must not be stale, i.e. older than G at the unlink: the
	 * node would be freed one epoch early. It is not. A reader q that
	 * holds the node read G (e_q) before its announcement and fence,
	 * and read the link before the unlink; the tag only needs to be
	 * >= e_q (epoch.c). The caller's unlink is a locked RMW on x86-64
	 * (a CAS), a full barrier, so this load executes after the unlink
	 * is visible to all and reads the latest G in the single global
	 * order of stores (TSO), which is >= e_q as G only grows. In C11
	 * terms the caller's unlink must be a seq_cst RMW, or be followed
	 * by a seq_cst fence (reclaim.h, reclaim_retire()). The clock:
	 * vDSO clock_gettime() orders its TSC read after earlier
	 * instructions, so the stamp is taken after the unlink too. */
	if (sch->uses_clock)
		e.stamp = reclaim__now();
	if (sch->uses_epoch)
		e.tag = atomic_load_explicit(&d->epoch, memory_order_seq_cst);

	/* Out of memory: the node stays the caller's (reclaim.h). This may
	 * run inside an operation, where no quiescent state may be declared
	 * to make room. */
	if (!reclaim__pile_append(s, &e))
		return -ENOMEM;
	uint64_t retired = atomic_load_explicit(&s->st.retired,
		memory_order_relaxed) + 1;
	atomic_store_explicit(&s->st.retired, retired, memory_order_relaxed);
	/* pending_max is sampled every R-th retire of each thread, before
	 * that retire's scan: the peak of the scan-driven schemes. */
	if (retired % reclaim__scan_threshold(d) == 0)
		reclaim_sample_pending(d);
	if (sch->retired)
		sch->retired(s);
	return 0;
}

/* reclaim_drain -- the scheme's drain, or the list length */
size_t
reclaim_drain(struct reclaim_thread *t)
{
	struct reclaim__slot *s = reclaim__slot_of(t);

	if (!reclaim_mine(s))
		return 0;
	if (s->d->scheme->drain)
		return s->d->scheme->drain(s);
	return reclaim__ret_len(s);
}

/* reclaim_domain_mode -- QSense's fallback flag */
enum reclaim_mode
reclaim_domain_mode(const struct reclaim_domain *d)
{
	return (enum reclaim_mode)atomic_load_explicit(&d->mode,
		memory_order_relaxed);
}

/* reclaim_domain_stats -- sum the per-slot counters */
void
reclaim_domain_stats(const struct reclaim_domain *d, struct reclaim_stats *out)
{
	unsigned hwm = atomic_load_explicit(&d->hwm, memory_order_acquire);

	memset(out, 0, sizeof(*out));
	out->pending = reclaim_pending(d, &out->retired, &out->freed);
	for (unsigned i = 0; i < hwm; i++) {
		const struct reclaim__slot *s = &d->slots[i];

		out->quiescent_states += atomic_load_explicit(
			&s->st.quiescent_states, memory_order_relaxed);
		out->epochs += atomic_load_explicit(&s->st.epochs,
			memory_order_relaxed);
		out->scans += atomic_load_explicit(&s->st.scans,
			memory_order_relaxed);
		out->fences += atomic_load_explicit(&s->st.fences,
			memory_order_relaxed);
		out->fences += __atomic_load_n(&s->pub.reclaim__fences,
			__ATOMIC_RELAXED);
		out->to_fallback += atomic_load_explicit(&s->st.to_fallback,
			memory_order_relaxed);
		out->to_fast += atomic_load_explicit(&s->st.to_fast,
			memory_order_relaxed);
	}
	for (unsigned i = 0; i < d->nroosters; i++)
		out->rooster_wakeups += atomic_load_explicit(
			&d->roosters[i].wakeups, memory_order_relaxed);
	out->roosters = d->nroosters;
	out->pending_max = atomic_load_explicit(&d->pending_max,
		memory_order_relaxed);
	out->registered = atomic_load_explicit(&d->nregistered,
		memory_order_relaxed);
	out->evicted = atomic_load_explicit(&d->evicted, memory_order_relaxed);
	out->liveness_checks = atomic_load_explicit(&d->liveness_checks,
		memory_order_relaxed);
	out->mode = reclaim_domain_mode(d);
}

#ifdef RECLAIM_TESTING

/* reclaim__test_task_dir -- look threads up under @path (tests only) */
int
reclaim__test_task_dir(struct reclaim_domain *d, const char *path)
{
	int fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (d->task_dir >= 0)
		close(d->task_dir);
	d->task_dir = fd;
	return 0;
}

/* reclaim__test_claim -- a slot left CLAIMED by the caller (tests only) */
int
reclaim__test_claim(struct reclaim_domain *d)
{
	int tid = gettid();
	uint64_t start = 0;
	char state;

	if (reclaim_task_stat(d, tid, &state, &start) != 0)
		start = 0;
	return reclaim_claim(d, tid, start) != NULL ? 0 : -ENOSPC;
}

#endif /* RECLAIM_TESTING */
