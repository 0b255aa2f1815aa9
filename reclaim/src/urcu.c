/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/urcu.c -- RECLAIM_URCU_QSBR: liburcu's QSBR flavour as the
 * external baseline. Registration, quiescent states (every Q operations)
 * and offline/online map onto urcu_qsbr_*; grace periods and callbacks are
 * liburcu's.
 *
 * Retired nodes collect on the thread's retired list like in every other
 * scheme; every quiescent state queues the whole list to urcu_qsbr_call_rcu()
 * as one batch (one small allocation per batch, not per node), and liburcu's
 * call_rcu thread hands each node to its free function after a grace period
 * that started after the hand-over, hence after every node's retirement.
 * Those free functions therefore run on liburcu's thread, which liburcu
 * registers and manages itself.
 *
 * liburcu has one QSBR domain per process and its registration does not
 * nest, so a thread registered in several domains of this scheme registers
 * with liburcu once (reclaim_urcu_nesting); going offline in one of them
 * takes it offline in all. A thread must unregister before it exits: liburcu
 * cannot evict it, so these slots are never evicted.
 *
 * ThreadSanitizer does not see liburcu's grace periods (the library is not
 * instrumented), so under TSan the quiescent states, offline, leave and
 * queueing release one sync object that the callbacks acquire, and the
 * callbacks release it for delete's barrier: the happens-before edges that
 * liburcu provides.
 */
#include <stdlib.h>

#include <urcu/urcu-qsbr.h>

#include "reclaim_internal.h"

#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
static char reclaim_tsan_sync;
#define reclaim_tsan_release() __tsan_release(&reclaim_tsan_sync)
#define reclaim_tsan_acquire() __tsan_acquire(&reclaim_tsan_sync)
#else
#define reclaim_tsan_release() ((void)0)
#define reclaim_tsan_acquire() ((void)0)
#endif

/* Domains of this scheme the calling thread is registered in. */
static __thread unsigned reclaim_urcu_nesting;

/* A retired list queued to call_rcu. */
struct reclaim_urcu_batch {
	struct rcu_head head;
	struct reclaim__slot *s;
	struct reclaim__pile *pile;
};

/* reclaim_urcu_free -- call_rcu callback: a grace period has passed */
static void
reclaim_urcu_free(struct rcu_head *head)
{
	struct reclaim_urcu_batch *b = caa_container_of(head,
		struct reclaim_urcu_batch, head);
	reclaim_tsan_acquire();
	struct reclaim_domain *d = b->s->d;
	uint64_t n = reclaim__pile_free(b->pile);

	atomic_fetch_add_explicit(&d->freed_async, n, memory_order_relaxed);
	atomic_fetch_sub_explicit(&b->s->inflight, n, memory_order_relaxed);
	free(b);
	reclaim_tsan_release();
}

/* reclaim_urcu_flush -- queue s's retired list; keeps it on allocation
 * failure (the next quiescent state tries again) */
static bool
reclaim_urcu_flush(struct reclaim__slot *s)
{
	struct reclaim__pile *p = atomic_load_explicit(&s->ret, memory_order_relaxed);

	if (p == NULL)
		return true;
	size_t n = atomic_load_explicit(&p->len, memory_order_relaxed);
	if (n == 0)
		return true;
	struct reclaim_urcu_batch *b = malloc(sizeof(*b));
	if (b == NULL)
		return false;
	b->s = s;
	b->pile = p;
	atomic_store_explicit(&s->ret, NULL, memory_order_relaxed);
	atomic_fetch_add_explicit(&s->inflight, n, memory_order_relaxed);
	reclaim_tsan_release();
	/* call_rcu() reads liburcu's RCU-protected per-CPU queues, so the
	 * caller must be online; a drain or an unregister may come from an
	 * offline thread. Going online takes no wait, and the thread holds
	 * no references in between. */
	bool offline = !urcu_qsbr_read_ongoing();
	if (offline)
		urcu_qsbr_thread_online();
	urcu_qsbr_call_rcu(&b->head, reclaim_urcu_free);
	if (offline)
		urcu_qsbr_thread_offline();
	return true;
}

/* reclaim_urcu_quiesce -- queue the retired list; a liburcu quiescent state */
static void
reclaim_urcu_quiesce(struct reclaim__slot *s)
{
	reclaim__stat_add(&s->st.quiescent_states, 1);
	reclaim_urcu_flush(s);
	reclaim_tsan_release();
	/* Offline (a drain): a quiescent state would bring it online. */
	if (!s->offline)
		urcu_qsbr_quiescent_state();
}

/* reclaim_urcu_join -- register with liburcu once per thread */
static void
reclaim_urcu_join(struct reclaim__slot *s)
{
	(void)s;
	if (reclaim_urcu_nesting++ == 0)
		urcu_qsbr_register_thread();
}

/* reclaim_urcu_leave -- queue the retired list, unregister from liburcu once */
static void
reclaim_urcu_leave(struct reclaim__slot *s)
{
	if (!reclaim_urcu_flush(s)) {
		/* No memory for a batch: wait for a grace period here (the
		 * thread is between operations; liburcu takes it offline
		 * while it waits) and free the list directly. */
		reclaim_tsan_release();
		urcu_qsbr_synchronize_rcu();
		reclaim_tsan_acquire();
		struct reclaim__pile *p = atomic_load_explicit(&s->ret,
			memory_order_relaxed);
		atomic_store_explicit(&s->ret, NULL, memory_order_relaxed);
		reclaim__stat_add(&s->st.freed, reclaim__pile_free(p));
	}
	reclaim_tsan_release();
	if (--reclaim_urcu_nesting == 0)
		urcu_qsbr_unregister_thread();
}

/* reclaim_urcu_offline -- liburcu offline */
static void
reclaim_urcu_offline(struct reclaim__slot *s)
{
	(void)s;
	reclaim_tsan_release();
	urcu_qsbr_thread_offline();
}

/* reclaim_urcu_online -- liburcu online */
static void
reclaim_urcu_online(struct reclaim__slot *s)
{
	(void)s;
	urcu_qsbr_thread_online();
}

/* reclaim_urcu_drain -- a quiescent state; count what liburcu still holds */
static size_t
reclaim_urcu_drain(struct reclaim__slot *s)
{
	reclaim_urcu_quiesce(s);
	return reclaim__ret_len(s) +
		atomic_load_explicit(&s->inflight, memory_order_relaxed);
}

/* reclaim__urcu_barrier -- wait for every queued callback */
void
reclaim__urcu_barrier(void)
{
	/* liburcu refuses rcu_barrier() from an online reader, which the
	 * caller is if it is registered in another domain of this scheme. */
	bool online = urcu_qsbr_read_ongoing();

	if (online)
		urcu_qsbr_thread_offline();
	urcu_qsbr_barrier();
	reclaim_tsan_acquire();
	if (online)
		urcu_qsbr_thread_online();
}

const struct reclaim__scheme reclaim__urcu_scheme = {
	.hp_mode = RECLAIM__HP_OFF,
	.join = reclaim_urcu_join,
	.leave = reclaim_urcu_leave,
	.offline = reclaim_urcu_offline,
	.online = reclaim_urcu_online,
	.op_end = reclaim_urcu_quiesce,
	.drain = reclaim_urcu_drain,
};
