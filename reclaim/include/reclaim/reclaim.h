/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/reclaim.h -- safe memory reclamation for lock-free code: QSense
 * (a QSBR fast path with a Cadence fallback) and the schemes it is measured
 * against, behind one interface.
 *
 * A lock-free structure unlinks a node while other threads may still be
 * reading it; the node may be freed only once no thread can hold a reference.
 * The structure tells this library three things, and the scheme chosen for
 * the domain decides when a retired node is freed:
 *
 *     reclaim_op_begin(t);                    before each operation
 *     p = load(&x->next);                     for each node it will access:
 *     reclaim_protect(t, slot, p);            publish a hazard pointer, then
 *     if (p != load(&x->next)) goto retry;    validate (only if the scheme
 *                                             reclaim_needs_validation())
 *     ... unlink n ...; reclaim_retire(t, n, free_fn, ctx);
 *     reclaim_op_end(t);                      after each operation
 *
 * Between reclaim_op_end() and the next reclaim_op_begin() the thread holds
 * no reference to any node of the domain (that is its quiescent state).
 *
 * Schemes (Zablotchi, "Distributed Computing with Modern Shared Memory",
 * EPFL thesis 2020, ch. 6, sect. 6.3-6.5):
 *   RECLAIM_NONE       leaky: nothing is freed before reclaim_domain_delete().
 *   RECLAIM_QSBR       quiescent-state-based reclamation, three epochs and
 *                      limbo lists (sect. 6.3.1); a quiescent state every Q
 *                      operations. Not robust: one stalled thread stops all
 *                      reclamation.
 *   RECLAIM_EBR        epoch-based reclamation: op_begin announces the global
 *                      epoch (one fence), op_end leaves it.
 *   RECLAIM_HP         Michael's hazard pointers: a fence after every
 *                      reclaim_protect(), a scan every R retires.
 *   RECLAIM_CADENCE    hazard pointers without the per-node fence
 *                      (Alg. 6.3): rooster threads, one pinned per CPU, wake
 *                      every T and force context switches, which drain the
 *                      workers' store buffers; a retired node is freed only
 *                      once every rooster has woken after it was retired (the
 *                      thesis's "older than T + epsilon", made independent of
 *                      oversleeping) and no hazard pointer names it.
 *   RECLAIM_QSENSE     QSBR while every thread is active, Cadence while one
 *                      is not (Alg. 6.5/6.6): a thread whose retired list
 *                      reaches C raises the shared fallback flag; presence
 *                      flags, reset by a rooster, bring the fast path back
 *                      once every thread has been seen again. Hazard
 *                      pointers and timestamps are kept in both modes.
 *   RECLAIM_URCU_QSBR  liburcu's QSBR flavour (urcu-qsbr), the external
 *                      baseline: quiescent state every Q operations,
 *                      retire by call_rcu. liburcu has one QSBR domain per
 *                      process, so every domain of this scheme shares it.
 *                      liburcu ends the process when it cannot allocate
 *                      (its urcu_die), so this scheme, unlike the others,
 *                      does not return -ENOMEM; it is a benchmark
 *                      baseline.
 *
 * Beyond the thesis (its stated limits, sect. 6.5.2):
 *   - Dynamic membership: threads register and unregister while others run.
 *     A thread that unregisters hands its retired nodes to the domain, and
 *     they are freed by the others' later scans or by reclaim_domain_delete().
 *   - Eviction: a registered thread whose OS thread no longer exists (it
 *     exited or was killed without unregistering) is evicted when a grace
 *     period or a presence check finds it lagging: its slot stops counting
 *     for epochs and presence, its hazard pointers are cleared, and its
 *     retired nodes are adopted by the evicting thread. A live thread is
 *     never evicted (it could still hold references); a stalled live thread
 *     is what the Cadence fallback is for. reclaim_thread_offline() lets a
 *     live thread that is about to block say so explicitly.
 *     Eviction needs /proc: the domain opens /proc/self/task in
 *     reclaim_domain_new() (a later chroot or unmount does not matter); without it nothing is
 *     evicted.
 *
 * Memory bounds (Prop. 6.6.3 and 6.6.5), with N registered threads, K hazard
 * slots per thread, R retires between scans, Q operations per quiescent
 * state, m the most nodes one operation retires, and Y the most nodes one
 * thread retires while the roosters complete one round (about T + epsilon):
 * Cadence keeps at most N(K + Y + R) retired nodes; QSense, with a legal
 * C > max(mQ, NK + Y, (K + Y + R)/2), keeps at most 2NC.
 * reclaim_bound_compute() computes both.
 *
 * Errors: functions that can fail return 0 (or a documented non-negative
 * value) on success and -errno on failure; the domain and registration
 * calls also leave a message in pm_errormsg() (pm/error.h). The library never prints, aborts
 * or exits; it only allocates in reclaim_domain_new(),
 * reclaim_thread_register() and when a thread's retired list grows.
 *
 * Platform: x86-64 only. Cadence and QSense rest on x86-64's total store
 * order and on context switches draining store buffers (sect. 6.5.1), which
 * C11 cannot express; reclaim_protect() and reclaim_retire() state what
 * they need of the caller's own atomics.
 */
#ifndef RECLAIM_RECLAIM_H
#define RECLAIM_RECLAIM_H

#if !defined(__x86_64__)
#error "reclaim/ assumes x86-64 TSO (see reclaim/src/reclaim_internal.h, Memory model)"
#endif

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum reclaim_scheme {
	RECLAIM_NONE,
	RECLAIM_QSBR,
	RECLAIM_EBR,
	RECLAIM_HP,
	RECLAIM_CADENCE,
	RECLAIM_QSENSE,
	RECLAIM_URCU_QSBR,
	RECLAIM_NSCHEMES
};

/* Hard upper limit on hazard slots per thread (K). */
#define RECLAIM_MAX_HAZARDS 128

/* What a retired node is handed to once it is safe: free(node) by default,
 * or a pool's or slab's own release function. Called exactly once per
 * retired node, on whichever registered thread frees it (RECLAIM_URCU_QSBR:
 * liburcu's call_rcu thread), or in reclaim_domain_delete(); it must not
 * call back into the domain. */
typedef void (*reclaim_free_fn)(void *node, void *ctx);

/*
 * Domain parameters. Fill with reclaim_config_init() and change what you
 * need; a zero field means "the default" where noted.
 */
struct reclaim_config {
	enum reclaim_scheme scheme;
	/* Registry slots: the most threads registered at once (default 128,
	 * at most 4096). */
	unsigned max_threads;
	/* K: hazard slots per thread (default 8, at most RECLAIM_MAX_HAZARDS).
	 * The sets of ds/ say what they need (DS_HMLIST_HAZARDS,
	 * DS_NMBST_HAZARDS, DS_SKIPLIST_HAZARDS(levels)). */
	unsigned hazards_per_thread;
	/* Q: operations between quiescent states (QSBR, QSense, urcu;
	 * default 64). */
	unsigned quiescence_threshold;
	/* R: retires between hazard scans (HP, Cadence, QSense fallback) and
	 * between EBR epoch attempts (default 0 = max(64, 2 * K * H), as in
	 * the thesis's code's R = 100 + 2 * K * nthreads, where H is the most
	 * threads registered at once so far: the registry's high-water mark,
	 * so that a domain sized for 128 threads but used by 4 scans as
	 * often as one sized for 4). */
	unsigned scan_threshold;
	/* C: retired-list length that switches QSense to the fallback
	 * (default 0 = 4 * R + K * H, H as for R). See reclaim_bound_compute() for
	 * when C is legal. A configuration whose default C could exceed
	 * UINT_MAX (4 * R + K * max_threads) is rejected: give C too. */
	unsigned fallback_threshold;
	/* T: rooster sleep interval in microseconds (Cadence, QSense;
	 * default 10000). */
	unsigned rooster_interval_us;
	/* epsilon: clock tolerance in microseconds added to a node's age
	 * before the rooster check (default 1000). */
	unsigned epsilon_us;
	/* How long a grace period or presence check waits on a lagging
	 * thread before checking whether its OS thread still exists, in
	 * milliseconds (default 100). */
	unsigned liveness_check_ms;
};

/**
 * reclaim_config_init -- fill @cfg with the defaults for @scheme.
 * Thread-safety: any thread; writes only @cfg.
 * Ordering: none (touches no shared memory).
 */
void reclaim_config_init(struct reclaim_config *cfg, enum reclaim_scheme scheme);

/**
 * reclaim_scheme_name -- the scheme's short name ("none", "qsbr", "ebr",
 * "hp", "cadence", "qsense", "urcu-qsbr"), or "?" for an unknown value.
 * Return: a static string. Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
const char *reclaim_scheme_name(enum reclaim_scheme scheme);

/**
 * reclaim_scheme_parse -- the inverse of reclaim_scheme_name().
 * Return: 0 and *@out set, or -EINVAL for an unknown name.
 * Thread-safety: any thread.
 * Ordering: none (touches no shared memory).
 */
int reclaim_scheme_parse(const char *name, enum reclaim_scheme *out);

struct reclaim_bound {
	/* Prop. 6.6.3: most retired nodes Cadence keeps, N(K + Y + R). */
	uint64_t cadence;
	/* Prop. 6.6.5: most retired nodes QSense keeps, 2NC, valid only
	 * when c_legal. */
	uint64_t qsense;
	/* The smallest legal C: max(mQ, NK + Y, (K + Y + R)/2) + 1. */
	uint64_t c_min;
	bool c_legal;
};

/**
 * reclaim_bound_compute -- the memory bounds of @cfg (defaults resolved) for
 * @nthreads threads, operations that retire at most @per_op nodes (m), and
 * at most @young nodes retired by one thread during one rooster round (Y).
 * R and C are resolved as a domain with @cfg resolves them once @nthreads
 * threads have registered.
 * Return: 0, or -EINVAL if @cfg is invalid (exactly when
 * reclaim_domain_new() would reject it).
 * Thread-safety: any thread; pure.
 * Ordering: none (touches no shared memory).
 */
int reclaim_bound_compute(const struct reclaim_config *cfg, unsigned nthreads,
	unsigned per_op, uint64_t young, struct reclaim_bound *out);

struct reclaim_domain;

/**
 * reclaim_domain_new -- a reclamation domain with @cfg (copied).
 * @out: receives the domain; release it with reclaim_domain_delete().
 * Cadence and QSense start one rooster thread per online CPU of the system
 * (/sys/devices/system/cpu/online, whatever the calling thread's affinity),
 * each pinned to its CPU, with every signal blocked; they run until
 * reclaim_domain_delete(). A CPU that refuses the pinning as unavailable (EINVAL: offline
 * by now, or outside the process's cpuset) gets none, as no thread of the
 * process can run there. CPUs that come online, or join the cpuset, after
 * this call have no rooster: a worker that runs there may make Cadence free
 * too early, so such a change needs a new domain.
 * Return: 0 and *@out, or -EINVAL (bad parameter, or derived thresholds
 * beyond 32 bits), -ENOMEM, -ENOENT (or another -errno) if
 * /sys/devices/system/cpu/online cannot be read (Cadence, QSense), or the
 * error of creating or pinning a rooster (-EAGAIN, -EPERM...).
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that
 * orders (pthread_create(), a mutex, a release store).
 */
int reclaim_domain_new(struct reclaim_domain **out, const struct reclaim_config *cfg);

/**
 * reclaim_domain_delete -- stop the roosters, free every retired node not
 * yet freed (with its free function) and the domain *@dp, and set *@dp to
 * NULL. A registered thread
 * whose OS thread no longer exists is evicted first (except under
 * RECLAIM_URCU_QSBR, whose threads must unregister). RECLAIM_URCU_QSBR waits
 * for liburcu's pending callbacks (urcu_qsbr_barrier(), which needs a grace
 * period of every thread registered with liburcu).
 * Return: 0 (also for @dp or *@dp NULL), or -EBUSY while a live thread is
 * still registered: nothing is freed and *@dp is left as it is.
 * Thread-safety: no thread may use the domain concurrently.
 * Ordering: acquire loads of the high-water mark and of every slot's
 * state, the other side of the release stores with which unregistration
 * (FREE) and eviction (EVICTED) give a slot up after handing its retired
 * nodes over (so the orphan piles are read without their lock); evicting a
 * dead thread here is an acq_rel CAS. The caller must be ordered after the
 * last operations (joined threads).
 */
int reclaim_domain_delete(struct reclaim_domain **dp);

/**
 * reclaim_domain_config -- the domain's parameters, defaults resolved (R and
 * C left at 0 are resolved for the registry's current high-water mark).
 * Thread-safety: any thread.
 * Ordering: relaxed (the registry's high-water mark).
 */
void reclaim_domain_config(const struct reclaim_domain *d, struct reclaim_config *out);

/*
 * A registered thread's handle. The fields are exposed only for the inline
 * fast paths below; their meaning is internal and may change.
 */
struct reclaim_thread {
	void **reclaim__hp;           /* this thread's K hazard slots (accessed
	                               * with __atomic builtins, so that C++
	                               * includes this header too) */
	unsigned reclaim__hp_mode;    /* RECLAIM__HP_* */
	unsigned reclaim__ops_left;   /* operations until the next quiescent state */
	unsigned reclaim__on_begin;   /* nonzero: op_begin has work (EBR) */
	unsigned reclaim__on_end;     /* nonzero: op_end has work besides counting */
	uint64_t reclaim__fences;     /* HP: fenced publications (owner-written,
	                               * relaxed, read by reclaim_domain_stats) */
};

enum {
	RECLAIM__HP_OFF,       /* the scheme keeps no hazard pointers */
	RECLAIM__HP_PUBLISH,   /* publish without a fence (Cadence, QSense) */
	RECLAIM__HP_FENCED,    /* publish, then a full fence (HP) */
};

/**
 * reclaim_thread_register -- join @d. The caller's OS thread is recorded for
 * eviction. A thread may be registered in several domains at once but only
 * once in each. The handle may be used by the calling thread only.
 * Return: 0 and *@out (owned by the caller until unregister), -ENOSPC when
 * max_threads are registered, -EEXIST if already registered in @d, -ENOMEM.
 * Thread-safety: any thread, concurrently with everything else on @d.
 * Ordering: the slot is claimed with an acquire CAS on its state (the
 * other side of the release that freed or evicted it), the high-water mark
 * raised, if needed, with a seq_cst CAS (hazard scans read every slot below
 * it), then ACTIVE stored seq_cst. QSBR and QSense then announce the global
 * epoch: a release store and a seq_cst fence before the thread's first node
 * load, the Dekker pair with a grace period's seq_cst loads of the slot's
 * state and epoch word, so a grace period that does not see the thread
 * frees nothing it can reach. EBR announces at each reclaim_op_begin();
 * urcu-qsbr calls urcu_qsbr_register_thread(). The presence flag is set
 * relaxed. On failure no slot stays claimed (-ENOMEM gives it back with a
 * release store).
 */
int reclaim_thread_register(struct reclaim_domain *d, struct reclaim_thread **out);

/**
 * reclaim_thread_unregister -- leave the domain. The thread must be between
 * operations. Its retired nodes go to the domain (freed later by others, or
 * by reclaim_domain_delete()); its hazard slots are cleared; the handle
 * *@tp is released and *@tp set to NULL.
 * Eviction happens only to threads judged dead, so a live thread should
 * never see it. Were it evicted anyway, its handle may name a slot that
 * another thread has registered in since: it must then not be used for
 * anything but this call, which leaves that slot alone and returns -ESRCH.
 * (The library's out-of-line calls check and do nothing; reclaim_retire()
 * returns -ESRCH and leaves the node the caller's. reclaim_op_begin(),
 * reclaim_op_end() and reclaim_protect() are inline and cannot afford to.)
 * Return: 0 (also for @tp or *@tp NULL), or -ESRCH if *@tp no longer names
 * the caller's registration (it was evicted, or already unregistered):
 * nothing is changed then, *@tp included.
 * Thread-safety: only the thread that registered *@tp.
 * Ordering: the slot's state goes to LEAVING with an acq_rel CAS
 * and to FREE with a release store: this thread's reads of nodes
 * happen before frees by a grace period that sees either (its seq_cst
 * load of the state). QSBR and QSense also store the epoch word inactive
 * (release); hazard slots are cleared with release stores, the other side
 * of a scan's seq_cst loads; the retired nodes go to the orphan piles under
 * the domain's mutex, which orders them before their adopter's sweep.
 * urcu-qsbr: liburcu's call_rcu (or synchronize_rcu) and unregistration.
 * On -ESRCH only a slot found EVICTED is written (a release CAS to FREE).
 */
int reclaim_thread_unregister(struct reclaim_thread **tp);

/**
 * reclaim_thread_offline -- declare an extended quiescent state (the thread
 * is about to block and holds no references); grace periods and presence
 * checks stop waiting for it, and its hazard pointers are cleared.
 * reclaim_thread_online() ends it. reclaim_drain() may be called while
 * offline. Under RECLAIM_URCU_QSBR this is liburcu's per-thread state, so
 * it holds for every domain of that scheme the thread is registered in.
 * Thread-safety: only @t's thread, between operations.
 * Ordering: hazard slots are cleared with release stores (a scan's
 * seq_cst loads are the other side); QSBR and QSense store the epoch word
 * inactive with a release store, so the thread's earlier reads happen
 * before frees of a grace period that sees it offline (seq_cst load).
 * No fence. EBR: nothing more (its word is already inactive between
 * operations). urcu-qsbr: urcu_qsbr_thread_offline().
 */
void reclaim_thread_offline(struct reclaim_thread *t);

/**
 * reclaim_thread_online -- end an extended quiescent state.
 * Thread-safety: only @t's thread.
 * Ordering: QSBR and QSense announce the global epoch as at
 * registration: a release store, then a seq_cst fence before the thread's
 * next node load (the other side: a grace period's seq_cst loads).
 * urcu-qsbr: urcu_qsbr_thread_online(). EBR, HP, Cadence and none: nothing
 * (EBR fences at each reclaim_op_begin()).
 */
void reclaim_thread_online(struct reclaim_thread *t);

/* Slow path of reclaim_op_begin(); not for direct use.
 * Thread-safety, ordering: as reclaim_op_begin().
 */
void reclaim__op_begin_slow(struct reclaim_thread *t);
/* Slow path of reclaim_op_end(); not for direct use.
 * Thread-safety, ordering: as reclaim_op_end().
 */
void reclaim__op_end_slow(struct reclaim_thread *t);

/**
 * reclaim_op_begin -- the thread starts an operation on the domain's nodes.
 * Ordering: for EBR, a release store of the epoch word and a seq_cst
 * fence (under TSan a seq_cst store) between announcing the epoch and the
 * operation's first load, the Dekker pair with a grace period's seq_cst
 * loads of the word (epoch.c); otherwise nothing.
 * Thread-safety: only @t's thread.
 */
static inline void
reclaim_op_begin(struct reclaim_thread *t)
{
	if (t->reclaim__on_begin)
		reclaim__op_begin_slow(t);
}

/**
 * reclaim_op_end -- the thread finished an operation and holds no reference
 * to any node. Every Q-th call declares a quiescent state (QSBR, QSense,
 * urcu), which may free nodes retired by this thread; EBR leaves its epoch.
 * Thread-safety: only @t's thread.
 * Ordering: EBR, every call: the epoch word's ACTIVE bit is cleared with a
 * release store, so the operation's reads of nodes happen before any free
 * by a grace period that sees it (seq_cst load); every Q-th call also an
 * advance attempt, as reclaim_drain(). At a quiescent state (QSBR;
 * QSense on its fast path or once every thread is present): an acquire load
 * of the global epoch (the other side of the advancing seq_cst CAS), then
 * either a release store of the thread's epoch word, with the same pairing,
 * or, if the word is current, an advance attempt (seq_cst loads of every
 * slot's state and word, seq_cst CAS). QSense's presence and fallback flags
 * are relaxed (they never license a free); in fallback mode with a thread
 * not present nothing else is stored. urcu-qsbr:
 * urcu_qsbr_quiescent_state(). HP, Cadence and none: nothing.
 */
static inline void
reclaim_op_end(struct reclaim_thread *t)
{
	if (t->reclaim__on_end || --t->reclaim__ops_left == 0)
		reclaim__op_end_slow(t);
}

/**
 * reclaim_protect -- publish @p in hazard slot @slot (< K) of @t; NULL clears
 * it. Under HP the store is followed by a full fence; under Cadence and
 * QSense it is a plain release store (made visible by the roosters); the
 * other schemes keep no hazard pointers and this does nothing.
 * The caller must then check that @p is still reachable (see
 * reclaim_needs_validation()) before dereferencing it, and must have held a
 * protected or otherwise safe reference to whatever it loaded @p from.
 * Ordering: release store (the other side: a scan's seq_cst, hence
 * acquire, load of the slot); under HP then a seq_cst fence (under TSan a
 * seq_cst exchange instead), which pairs with the seq_cst fence that starts
 * an HP scan (hazard.c) and makes Michael's store-load pattern hold in C11
 * whatever the order of the caller's validation load. Under Cadence and
 * QSense there is no fence and the validation may be reordered before the
 * store; that is the point of the roosters, and it is sound on x86-64 only
 * (see Platform above).
 * Thread-safety: only @t's thread, inside an operation.
 */
static inline void
reclaim_protect(struct reclaim_thread *t, unsigned slot, const void *p)
{
	if (t->reclaim__hp_mode == RECLAIM__HP_OFF)
		return;
	if (t->reclaim__hp_mode == RECLAIM__HP_FENCED) {
#if defined(__SANITIZE_THREAD__)
		/* GCC's ThreadSanitizer rejects fences (-Wtsan); a seq_cst
		 * exchange is the same full barrier on x86-64 (xchg). */
		(void)__atomic_exchange_n(&t->reclaim__hp[slot], (void *)p,
			__ATOMIC_SEQ_CST);
#else
		/* Release: the reader's accesses under the previous value
		 * happen before a free by a scan that sees this one. The
		 * fence pairs with the one at the start of a scan (hazard.c);
		 * on x86-64 it is one locked instruction. */
		__atomic_store_n(&t->reclaim__hp[slot], (void *)p, __ATOMIC_RELEASE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
		/* Owner-only counter: a plain load and store, no lock prefix. */
		__atomic_store_n(&t->reclaim__fences,
			__atomic_load_n(&t->reclaim__fences, __ATOMIC_RELAXED) + 1,
			__ATOMIC_RELAXED);
	} else
		__atomic_store_n(&t->reclaim__hp[slot], (void *)p, __ATOMIC_RELEASE);
}

/**
 * reclaim_needs_validation -- true if the scheme relies on hazard pointers,
 * so that a structure must re-check reachability after reclaim_protect().
 * Under the epoch schemes the check is unnecessary and may be skipped.
 * Thread-safety: only @t's thread.
 * Return: true under HP, Cadence and QSense.
 * Ordering: none.
 */
static inline bool
reclaim_needs_validation(const struct reclaim_thread *t)
{
	return t->reclaim__hp_mode != RECLAIM__HP_OFF;
}

/**
 * reclaim_retire -- @node was unlinked by this thread and is unreachable to
 * operations that start from now on; hand it to @fn(@node, @ctx) (NULL @fn:
 * free(@node)) once no thread can hold a reference. May free nodes retired
 * earlier, on this thread, before returning.
 * Return: 0; -ENOMEM if the retired list cannot grow: @node is not retired
 * and the caller still owns it (it must not free it before a grace period:
 * keep it and retire it again later, or leak it), as for mcas_retire();
 * -ESRCH if @t no longer names the caller's registration (it was evicted):
 * @node is not retired either.
 * Ordering: the caller's unlink of @node must be ordered before this call by
 * a seq_cst read-modify-write or a seq_cst fence: the epoch schemes read the
 * global epoch here (a seq_cst load) and must not read one older than at the
 * unlink (reclaim/src/domain.c); Cadence and QSense take the timestamp after
 * it. On x86-64 every locked instruction, so every CAS of any memory order,
 * is such a barrier; where another thread's CAS unlinked @node, x86-64's
 * in-order loads make a load of the caller's that saw the unlink enough
 * (C11 alone would need a seq_cst fence after that load). The entry is
 * appended with a release store of the list's length (the other side: an
 * evictor's acquire). Then HP and Cadence scan every R-th call, EBR tries
 * to advance the epoch every R-th call, QSense scans in fallback mode (every
 * R-th call, and when its list reaches C), each ordered as reclaim_drain()
 * says; QSBR and urcu-qsbr only append. On failure nothing is stored.
 * Thread-safety: only @t's thread (inside or outside an operation). Each
 * node is retired once.
 */
int reclaim_retire(struct reclaim_thread *t, void *node, reclaim_free_fn fn, void *ctx);

/**
 * reclaim_drain -- try now, regardless of thresholds, to free what this
 * thread retired (a quiescent state and a scan where the scheme has them).
 * Never waits for other threads.
 * Return: how many of this thread's retired nodes are still waiting.
 * Thread-safety: only @t's thread, between operations.
 * Ordering: QSBR and urcu-qsbr: a quiescent state, as reclaim_op_end().
 * EBR: an advance attempt only (seq_cst loads of every slot's state and
 * epoch word, seq_cst CAS of the global epoch; the thread's word is not
 * touched). HP: a scan that starts with a seq_cst fence, then seq_cst loads
 * of the high-water mark and every hazard slot. Cadence: a scan with no
 * fence: acquire loads of the roosters' wake times (the other side of
 * their release stores), then the same seq_cst loads. QSense: a quiescent
 * state in either mode, then the Cadence scan. A scan with nothing retired
 * does nothing. None: a relaxed load of the list length.
 */
size_t reclaim_drain(struct reclaim_thread *t);

enum reclaim_mode {
	RECLAIM_MODE_FAST,      /* QSense on QSBR (and every non-QSense scheme) */
	RECLAIM_MODE_FALLBACK,  /* QSense on Cadence */
};

/**
 * reclaim_domain_mode -- QSense's current path (the shared fallback flag).
 * Thread-safety: any thread; a relaxed snapshot.
 * Return: RECLAIM_MODE_FAST or RECLAIM_MODE_FALLBACK.
 * Ordering: relaxed.
 */
enum reclaim_mode reclaim_domain_mode(const struct reclaim_domain *d);

struct reclaim_stats {
	uint64_t retired;          /* nodes handed to reclaim_retire() */
	uint64_t freed;            /* nodes handed to their free function */
	uint64_t pending;          /* retired - freed, at the snapshot */
	uint64_t pending_max;      /* highest pending, sampled by each thread at
	                            * every R-th of its retires (before that
	                            * retire's scan, the peak of HP/Cadence) */
	uint64_t quiescent_states; /* quiescent states declared */
	uint64_t epochs;           /* global epoch advances (QSBR, EBR, QSense) */
	uint64_t scans;            /* hazard-pointer scans */
	uint64_t fences;           /* full fences issued by protect / op_begin */
	uint64_t to_fallback;      /* QSense switches fast -> fallback */
	uint64_t to_fast;          /* QSense switches fallback -> fast */
	uint64_t rooster_wakeups;  /* rooster wake-ups, all CPUs */
	uint64_t roosters;         /* rooster threads (Cadence, QSense: one per
	                            * CPU, see reclaim_domain_new()) */
	uint64_t registered;       /* threads registered now */
	uint64_t evicted;          /* threads evicted so far */
	uint64_t liveness_checks;  /* threads that held a grace period or a
	                            * presence check up for liveness_check_ms,
	                            * then looked up in /proc (evicted if dead,
	                            * left alone if alive): the event tests of
	                            * "a live thread is not evicted" wait for */
	enum reclaim_mode mode;
};

/**
 * reclaim_domain_stats -- a snapshot of the domain's counters (sums over
 * every thread that ever registered, including unregistered and evicted
 * ones). Counters are deterministic functions of the operations performed,
 * except where the schedule decides (epochs, scans, switches, wake-ups,
 * liveness checks).
 * Thread-safety: any thread; the fields are read one by one (relaxed), so
 * a snapshot taken while threads run is approximate.
 * Ordering: relaxed loads, field by field (the high-water mark with
 * acquire).
 */
void reclaim_domain_stats(const struct reclaim_domain *d, struct reclaim_stats *out);

/*
 * The epoch flavour: grace periods without retire lists.
 *
 * The schemes above each keep a retire list and decide when a node is
 * freed. Some callers need only the grace periods and keep their own lists,
 * because what they do after a grace period is not a free: mcas/ detaches
 * a finalized descriptor from its target words after one grace period and
 * reuses the record after a second one (thesis sect. 5.6). The epoch
 * flavour serves them (liburcu's flavours are the model: one registry of
 * readers that any number of users share):
 *
 *     reclaim_epochs_enter(t);  ... read shared nodes ...;  reclaim_epochs_exit(t);
 *
 *     reclaim_epochs_grace_start(&g, t);          remember who is inside
 *     ... later, without waiting ...
 *     if (reclaim_epochs_grace_elapsed(&g, t))    all of them have left since
 *
 * Each registered thread has an epoch word, odd while the thread is inside
 * a section (sections nest; only the outermost stores). A grace period is
 * non-blocking, as in thesis sect. 5.6: a snapshot of every word, and later
 * a comparison instead of a wait; a thread whose word was odd at the
 * snapshot and is unchanged has not left its section.
 *
 * One registration per thread and flavour: every user of a flavour on one
 * OS thread shares the thread's epoch word, so a thread that uses several
 * mcas instances (or structures on them) created on one flavour holds one
 * slot and announces once per section, whichever instance it reads, and a
 * section on any of them protects what other threads retire through any of
 * them. (Not what the thread itself retires: see the next paragraph. Two
 * handles of one thread on one flavour are one reader.)
 * reclaim_epochs_thread_register() on a thread that is registered already
 * returns the same handle and counts the registration.
 *
 * A grace period ignores the caller's own word: what a thread reclaims
 * after a grace period is what it retired itself, and it is the caller's
 * business not to reclaim what it still reads (mcas/ reclaims only between
 * its own operations).
 *
 * Errors as for the domains (0 or -errno, a message in pm_errormsg() for
 * the calls that can fail); nothing is allocated outside
 * reclaim_epochs_new(), reclaim_epochs_thread_register() and
 * reclaim_epochs_grace_init().
 */
struct reclaim_epochs;

/* A thread's registration in a flavour. The fields are exposed only for the
 * inline sections below; their meaning is internal and may change. */
struct reclaim_epochs_thread {
	uint64_t *reclaim__word;   /* this thread's epoch word (accessed with
	                            * __atomic builtins, for C++ includers) */
	unsigned reclaim__nest;    /* section nesting depth */
	unsigned reclaim__slot;    /* index of the word in the flavour */
	unsigned reclaim__refs;    /* registrations of this OS thread */
	struct reclaim_epochs *reclaim__e;
	struct reclaim_epochs_thread *reclaim__next; /* the OS thread's other flavours */
};

/* A grace period in progress, owned by one thread (see
 * reclaim_epochs_grace_start()). Fields internal. */
struct reclaim_epochs_grace {
	uint64_t *reclaim__snap;   /* epoch words seen at the start */
	unsigned reclaim__cap;     /* room in reclaim__snap */
	unsigned reclaim__n;       /* words covered */
	bool reclaim__started;
};

/**
 * reclaim_epochs_new -- an epoch flavour for at most @max_threads threads
 * registered at once (1 to 65536).
 * @out: receives the flavour; release it with reclaim_epochs_delete().
 * Return: 0 and *@out, -EINVAL for a bad @max_threads, -ENOMEM.
 * Thread-safety: any thread.
 * Ordering: none; hand @out to other threads through something that orders
 * (pthread_create(), a mutex, a release store).
 */
int reclaim_epochs_new(struct reclaim_epochs **out, unsigned max_threads);

/**
 * reclaim_epochs_delete -- release *@ep (NULL accepted) and set it to NULL.
 * Return: 0; -EBUSY while a thread is registered: nothing is released.
 * Thread-safety: one caller, ordered after every thread's last
 * reclaim_epochs_thread_unregister() (joined, for example).
 * Ordering: a seq_cst load of the registration count; the caller's
 * happens-before edge to the unregistrations is what makes releasing safe.
 */
int reclaim_epochs_delete(struct reclaim_epochs **ep);

/**
 * reclaim_epochs_thread_register -- the calling thread's handle on @e: a new epoch
 * word, or, if the thread holds one already, the same handle again (counted;
 * each call is matched by one reclaim_epochs_thread_unregister()).
 * @out: receives the handle; only the calling thread may use it.
 * Return: 0; -EAGAIN if @e's max_threads threads are registered; -ENOMEM.
 * Thread-safety: any thread, concurrently with everything else on @e.
 * Ordering: the word's slot is claimed with a seq_cst CAS and the
 * high-water mark raised with seq_cst CASes, so every grace period started
 * after this returns covers the thread (the other side: the seq_cst loads
 * of reclaim_epochs_grace_start()). A new word is even (outside); a
 * repeated registration changes nothing.
 */
int reclaim_epochs_thread_register(struct reclaim_epochs *e, struct reclaim_epochs_thread **out);

/**
 * reclaim_epochs_thread_unregister -- drop one registration of *@tp and set *@tp
 * to NULL; the last one gives the epoch word back and frees the handle.
 * Return: 0 (also for @tp or *@tp NULL); -EBUSY if this is the last
 * registration and the thread is inside a section; -EPERM if *@tp is not
 * the calling thread's (nothing changes).
 * Thread-safety: only the thread that registered.
 * Ordering: the slot is given back with a seq_cst store; the word is even
 * (the last section's release store is the other side of any grace
 * period's loads).
 */
int reclaim_epochs_thread_unregister(struct reclaim_epochs_thread **tp);

/**
 * reclaim_epochs_enter -- begin a section on @t: until the matching
 * reclaim_epochs_exit(), no grace period started by another thread after
 * this returns elapses. Sections nest; only the outermost stores.
 * Thread-safety: only @t's thread.
 * Ordering: the outermost store of the odd word is seq_cst: a Dekker pair
 * with the seq_cst loads of reclaim_epochs_grace_start() and
 * reclaim_epochs_grace_elapsed(). On x86-64, to which reclaim/ is limited,
 * that store is a full barrier, so no later load of the section is
 * satisfied before a grace period can see it inside; C11 alone promises
 * this only for the section's seq_cst loads (mcas/'s are).
 */
static inline void
reclaim_epochs_enter(struct reclaim_epochs_thread *t)
{
	if (t->reclaim__nest++ == 0)
		__atomic_store_n(t->reclaim__word,
			__atomic_load_n(t->reclaim__word, __ATOMIC_RELAXED) + 1,
			__ATOMIC_SEQ_CST);
}

/**
 * reclaim_epochs_exit -- end the innermost section of @t.
 * Thread-safety: only @t's thread.
 * Ordering: the outermost exit's store of the even word is a release: the
 * section's reads happen before whatever a thread does after it saw the
 * new word (its seq_cst loads in reclaim_epochs_grace_elapsed()).
 */
static inline void
reclaim_epochs_exit(struct reclaim_epochs_thread *t)
{
	if (--t->reclaim__nest == 0)
		__atomic_store_n(t->reclaim__word,
			__atomic_load_n(t->reclaim__word, __ATOMIC_RELAXED) + 1,
			__ATOMIC_RELEASE);
}

/**
 * reclaim_epochs_inside -- whether @t is inside a section.
 * Return: true between an outermost reclaim_epochs_enter() and its exit.
 * Thread-safety: only @t's thread.
 * Ordering: none (reads the owner's own counter).
 */
static inline bool
reclaim_epochs_inside(const struct reclaim_epochs_thread *t)
{
	return t->reclaim__nest != 0;
}

/**
 * reclaim_epochs_grace_init -- prepare @g for grace periods of @e (not
 * started).
 * Return: 0; -ENOMEM.
 * Thread-safety: any thread; @g belongs to the caller.
 * Ordering: none (touches no shared memory).
 */
int reclaim_epochs_grace_init(struct reclaim_epochs_grace *g, const struct reclaim_epochs *e);

/**
 * reclaim_epochs_grace_fini -- release what reclaim_epochs_grace_init()
 * allocated (an all-zero @g is accepted).
 * Thread-safety: @g's owner.
 * Ordering: none (touches no shared memory).
 */
void reclaim_epochs_grace_fini(struct reclaim_epochs_grace *g);

/**
 * reclaim_epochs_grace_start -- start a grace period: remember the epoch
 * word of every thread registered now (@t's own word is ignored). @g must
 * have been initialised for @t's flavour.
 * Thread-safety: only @t's thread, which owns @g.
 * Ordering: seq_cst loads of the high-water mark and of every word, the
 * other side of reclaim_epochs_enter()'s seq_cst store and of
 * registration's seq_cst CASes. What the caller did before (unlinked,
 * finalized, retired) must be ordered before these loads by a seq_cst
 * read-modify-write or fence, or by the loads themselves being seq_cst
 * after a seq_cst store of the caller's.
 */
void reclaim_epochs_grace_start(struct reclaim_epochs_grace *g,
	const struct reclaim_epochs_thread *t);

/**
 * reclaim_epochs_grace_started -- whether @g has been started.
 * Return: true once reclaim_epochs_grace_start() ran on @g.
 * Thread-safety: @g's owner.
 * Ordering: none (touches no shared memory).
 */
static inline bool
reclaim_epochs_grace_started(const struct reclaim_epochs_grace *g)
{
	return g->reclaim__started;
}

/**
 * reclaim_epochs_grace_elapsed -- whether the grace period @g elapsed:
 * every thread that was inside a section when it started has left that
 * section since. Never waits.
 * Return: true if it elapsed (also if @g was never started); false if
 * some thread may still be inside.
 * Thread-safety: only @t's thread, which owns @g.
 * Ordering: seq_cst loads of the words that were odd; a load that sees a
 * new value synchronizes with that thread's release store in
 * reclaim_epochs_exit(), so its section's reads happen before what the
 * caller does next.
 */
bool reclaim_epochs_grace_elapsed(const struct reclaim_epochs_grace *g,
	const struct reclaim_epochs_thread *t);

/**
 * reclaim_epochs_others_outside -- whether no thread but @t's is inside a
 * section now (one pass, no waiting; false means "someone might be").
 * Return: true if every other word was even when loaded.
 * Thread-safety: only @t's thread.
 * Ordering: seq_cst loads of the high-water mark and of every word (the
 * other side of reclaim_epochs_enter()'s seq_cst store): a thread entering
 * after the load of its word sees everything the caller did before a
 * seq_cst operation of its own.
 */
bool reclaim_epochs_others_outside(const struct reclaim_epochs_thread *t);

/**
 * reclaim_epochs_registered -- threads registered in @e now (each OS thread
 * once, however many registrations it counts).
 * Return: the count, a snapshot.
 * Thread-safety: any thread.
 * Ordering: a relaxed load.
 */
unsigned reclaim_epochs_registered(const struct reclaim_epochs *e);

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_RECLAIM_H */
