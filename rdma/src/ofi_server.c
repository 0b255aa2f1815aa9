/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/ofi_server.c -- the memory node's libfabric servers, one per
 * provider (tcp;ofi_rxm and shm).
 *
 * A server is one reliable-datagram endpoint that every client of that
 * provider talks to. It registers each region for remote read and write
 * (clients' RMA and atomic operations land there without the node's code
 * running), and it answers shipped batches: a BATCH_REQ received into one of
 * a pool of receive buffers is executed in order by rdma__serve_batch and the
 * BATCH_REP goes back to the sender, whom FI_SOURCE names.
 *
 * Progress. Neither provider moves data on its own (data_progress is
 * FI_PROGRESS_MANUAL for tcp;ofi_rxm, and shm executes remote operations
 * only when the target polls), so a progress thread reads the completion
 * queue for as long as the server runs. A client's RMA or atomic access
 * produces no completion at the target, so "recent activity" is a
 * completion, a remote access counted by an FI_RMA_EVENT counter (shm has
 * one; tcp;ofi_rxm has not), a wake-up from the wait object (below), or an
 * admission. After activity the thread polls again. Then it depends on the
 * poll mode (rdma/node.h, enum rdma_node_poll):
 *
 * Adaptive, where the provider gives the queue a wait fd (tcp;ofi_rxm;
 * ofi_common.c, ofi_cq_open): as soon as a poll finds nothing to do, the
 * thread sleeps in rdma__ofi_wait. The fd turns readable when
 * bytes arrive on any of the provider's sockets, so a sleeping target
 * still serves a client's RMA and atomics (the wake-up reads the queue,
 * and that progresses them) and new connections; an eventfd wakes it for
 * stop, admissions and parked endpoints; and it sleeps at most
 * OFI_WAIT_MS, so whatever wakes neither is still seen.
 *
 * It does not spin first. How long to spin before sleeping was measured,
 * not taken from the spin-then-block rule (spin about as long as a
 * wake-up costs), which assumes the spinning core is free. Three
 * dmkv-node daemons and one client thread on 2 cores, YCSB-C: 0 us of
 * spin 16.3k ops/s (read p50 59 us), 5 us 14.9k, 10 us 13.4k, 20 us 11.3k
 * (p50 85 us): where cores are shared, a server's spin is time its peers'
 * requests wait for a core. With a core each (rdma_bench: client and node
 * on 2 cores), a sleep and wake-up costs a few microseconds per operation,
 * within the noise of a loopback run (an 8-byte RMA read took 20-22 us
 * against a sleeping node, 18-23 us against a busy one; a raw libfabric
 * ping-pong, where every request finds the server asleep, 30-40 us
 * against 15 us), and 20 us of spin did not measurably win them back. A
 * node with cores to spare is what RDMA_NODE_POLL_BUSY is for.
 *
 * Busy (and adaptive on a provider without a wait fd: shm): the thread
 * yields after every poll that found nothing (a core is still polled, but
 * any runnable thread gets it first, a peer node's progress thread
 * included); only after RDMA_OFI_SERVER_NAP_AFTER_MS without activity does
 * it nap between polls, so that an idle daemon stops burning a core. It
 * does not spin before yielding: three nodes' threads sharing one core
 * (kv_bench over tcp, nodes on one CPU and the client on the other,
 * YCSB-A, one client) served a get at p50 in 37 us when each yielded at
 * once, 81 us after 50 empty polls of spin, 55 us adaptive; with a core
 * each, yielding cost nothing measurable (rdma_bench, RMA read and CAS
 * over tcp, within run-to-run noise of the spinning version). Caveat: on tcp, a workload
 * of only RMA and atomics (no shipped batch, no new client) for longer than
 * that is not seen as activity and pays a nap (~0.1 ms) per operation.
 *
 * Receive slots. Slot i owns a request buffer and a reply buffer. Its
 * receive is reposted only after its reply has been sent (or given up), so
 * a reply buffer is never overwritten while the provider still reads it.
 * All slots busy means later requests wait in the provider (it buffers
 * unexpected messages) until a slot frees; each client has at most one
 * batch in flight, so that needs more clients than slots sending at once.
 *
 * Only the progress thread touches the slots and the completion queue.
 * admit() runs on the node's control thread and only inserts into the
 * address vector, which the FI_THREAD_SAFE domain serialises, and wakes
 * the thread (rdma__ofi_wake writes an eventfd).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "ofi_common.h"
#include "server.h"

/* Receive slots per server. */
#ifndef RDMA_OFI_SERVER_SLOTS
#define RDMA_OFI_SERVER_SLOTS 16
#endif
_Static_assert(RDMA_OFI_SERVER_SLOTS >= 1 && RDMA_OFI_SERVER_SLOTS <= 1024,
	"RDMA_OFI_SERVER_SLOTS out of range");

/* Idle time after which the progress thread naps between polls. */
#ifndef RDMA_OFI_SERVER_NAP_AFTER_MS
#define RDMA_OFI_SERVER_NAP_AFTER_MS 30000
#endif
_Static_assert(RDMA_OFI_SERVER_NAP_AFTER_MS >= 1,
	"RDMA_OFI_SERVER_NAP_AFTER_MS must be positive");

/* Adaptive: the longest sleep. Nothing known needs it (stop, admissions
 * and parked endpoints wake the thread, it never sleeps with sends to
 * retry, and the only provider with an RMA event counter, shm, never
 * sleeps); it bounds what a wake-up missed for another reason would cost. */
#define OFI_WAIT_MS 100

/* Busy: the nap between polls of an idle thread. */
#define OFI_IDLE_NAP_NS 50000l

/* A reply the provider keeps refusing (the client is gone and its queue is
 * full) is dropped after this long, so a dead client cannot pin a slot. */
#define OFI_SEND_GIVE_UP_NS 1000000000ull

enum ofi_slot_state {
	OFI_SLOT_RECV_POSTED, /* waiting for a request */
	OFI_SLOT_NEED_RECV,   /* receive to be (re)posted */
	OFI_SLOT_NEED_SEND,   /* reply ready, send to be posted */
	OFI_SLOT_SENDING,     /* reply handed to the provider */
};

struct ofi_slot;

/* A completion context: which slot, and whether its send or its receive. */
struct ofi_ctx {
	struct ofi_slot *slot;
	bool send;
};

struct ofi_slot {
	struct ofi_ctx recv_ctx;
	struct ofi_ctx send_ctx;
	enum ofi_slot_state state;
	uint8_t *req;          /* RDMA_WIRE_MSG_MAX bytes */
	uint8_t *rep;          /* RDMA_WIRE_MSG_MAX bytes */
	size_t rep_len;
	fi_addr_t dest;        /* who sent the request */
	uint64_t first_try_ns; /* when the send was first attempted */
};

struct ofi_server {
	enum rdma__ofi_prov prov;
	const char *name;
	const struct rdma__server_env *env;
	struct rdma__ofi ofi;
	unsigned nmr;
	struct fid_mr *mr[RDMA_NODE_MAX_REGIONS];
	uint64_t key[RDMA_NODE_MAX_REGIONS];
	uint8_t *bufs;
	unsigned pending;      /* slots in NEED_RECV or NEED_SEND */
	struct ofi_slot slots[RDMA_OFI_SERVER_SLOTS];
	bool thread_started;
	pthread_t thread;
	atomic_bool stop;
	atomic_bool poke;      /* a client was admitted: activity */
	struct rdma__ofi_local *local; /* our entry among this process's
	                                * servers (ofi_common.h) */
	struct rdma__ofi_parked *held; /* taken from local, not yet
	                                * released (ofi_poll_once) */
};

/*
 * ofi_slot_post_recv -- (re)post slot @sl's receive; on a full queue it
 * stays NEED_RECV and the loop tries again.
 */
static void
ofi_slot_post_recv(struct ofi_server *s, struct ofi_slot *sl)
{
	int ret = rdma__ofi_recv(&s->ofi, sl->req, RDMA_WIRE_MSG_MAX, NULL,
		&sl->recv_ctx);

	if (ret == 0) {
		sl->state = OFI_SLOT_RECV_POSTED;
		return;
	}
	if (sl->state != OFI_SLOT_NEED_RECV) {
		sl->state = OFI_SLOT_NEED_RECV;
		s->pending++;
	}
	if (ret != -EAGAIN)
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"%s: posting a receive failed: %s", s->name,
			pm_strerror(ret));
}

/*
 * ofi_slot_recycle -- the slot's exchange is over: receive again.
 */
static void
ofi_slot_recycle(struct ofi_server *s, struct ofi_slot *sl)
{
	if (sl->state == OFI_SLOT_NEED_RECV || sl->state == OFI_SLOT_NEED_SEND)
		s->pending--;
	sl->state = OFI_SLOT_SENDING; /* neither pending nor posted */
	ofi_slot_post_recv(s, sl);
}

/*
 * ofi_slot_send -- hand slot @sl's reply to the provider.
 */
static void
ofi_slot_send(struct ofi_server *s, struct ofi_slot *sl)
{
	int ret = rdma__ofi_send(&s->ofi, sl->rep, sl->rep_len, NULL, sl->dest,
		&sl->send_ctx);

	if (ret == 0) {
		if (sl->state == OFI_SLOT_NEED_SEND)
			s->pending--;
		sl->state = OFI_SLOT_SENDING;
		return;
	}
	if (ret == -EAGAIN &&
			rdma__now_ns() - sl->first_try_ns < OFI_SEND_GIVE_UP_NS) {
		if (sl->state != OFI_SLOT_NEED_SEND) {
			sl->state = OFI_SLOT_NEED_SEND;
			s->pending++;
		}
		return;
	}
	/* a lost reply costs that client a timeout, never the node */
	rdma__log(s->env, RDMA_NODE_LOG_WARN, "%s: reply not sent: %s",
		s->name, pm_strerror(ret));
	ofi_slot_recycle(s, sl);
}

/*
 * ofi_handle_request -- a request arrived in slot @sl: execute it and send
 * the reply to its sender.
 */
static void
ofi_handle_request(struct ofi_server *s, struct ofi_slot *sl,
	const struct rdma__ofi_comp *comp)
{
	int ret;

	if (comp->src == FI_ADDR_NOTAVAIL || comp->src == FI_ADDR_UNSPEC) {
		/* not from an admitted client: nobody to answer */
		__atomic_fetch_add(&s->env->counters->bad_messages, 1,
			__ATOMIC_RELAXED);
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"%s: message from an unknown sender dropped", s->name);
		ofi_slot_post_recv(s, sl);
		return;
	}
	ret = rdma__serve_batch(s->env, sl->req, comp->len, sl->rep,
		RDMA_WIRE_MSG_MAX);
	if (ret < 0) {
		/* unreadable header: counted by rdma__serve_batch, no reply */
		rdma__log(s->env, RDMA_NODE_LOG_DEBUG,
			"%s: unreadable message dropped", s->name);
		ofi_slot_post_recv(s, sl);
		return;
	}
	sl->rep_len = (size_t)ret;
	sl->dest = comp->src;
	sl->first_try_ns = rdma__now_ns();
	ofi_slot_send(s, sl);
}

/*
 * ofi_handle_comp -- one completion of the server's queue.
 */
static void
ofi_handle_comp(struct ofi_server *s, const struct rdma__ofi_comp *comp)
{
	struct ofi_ctx *ctx = comp->context;
	struct ofi_slot *sl;

	if (ctx == NULL) {
		/* remote RMA events carry no context of ours */
		return;
	}
	sl = ctx->slot;
	if (ctx->send) {
		if (comp->status != 0)
			rdma__log(s->env, RDMA_NODE_LOG_WARN,
				"%s: reply send failed: %s", s->name,
				pm_strerror(comp->status));
		ofi_slot_recycle(s, sl);
		return;
	}
	if (comp->status != 0) {
		/* a truncated or otherwise broken message */
		if (comp->status != -ECANCELED) {
			__atomic_fetch_add(&s->env->counters->bad_messages, 1,
				__ATOMIC_RELAXED);
			rdma__log(s->env, RDMA_NODE_LOG_WARN,
				"%s: receive failed: %s", s->name,
				pm_strerror(comp->status));
		}
		ofi_slot_post_recv(s, sl);
		return;
	}
	ofi_handle_request(s, sl, comp);
}

/*
 * ofi_retry_pending -- repost receives and sends the provider refused.
 */
static void
ofi_retry_pending(struct ofi_server *s)
{
	for (unsigned i = 0; i < RDMA_OFI_SERVER_SLOTS && s->pending != 0; i++) {
		struct ofi_slot *sl = &s->slots[i];

		if (sl->state == OFI_SLOT_NEED_RECV) {
			s->pending--;
			sl->state = OFI_SLOT_SENDING;
			ofi_slot_post_recv(s, sl);
		} else if (sl->state == OFI_SLOT_NEED_SEND) {
			ofi_slot_send(s, sl);
		}
	}
}

/*
 * ofi_replying -- whether a reply of ours is still with the provider, or
 * waiting to be handed to it.
 */
static bool
ofi_replying(const struct ofi_server *s)
{
	for (unsigned i = 0; i < RDMA_OFI_SERVER_SLOTS; i++)
		if (s->slots[i].state == OFI_SLOT_SENDING ||
				s->slots[i].state == OFI_SLOT_NEED_SEND)
			return true;
	return false;
}

/*
 * ofi_poll_once -- read the queue once, retry what the provider refused and
 * release parked endpoints. @events: the RMA event count last seen.
 * Return: whether there was activity.
 *
 * Parked endpoints (ofi_common.h) are taken at the start of a poll and
 * released at its end, and only when no reply of ours is outstanding.
 * With shm, a reply is a command in the client's endpoint memory that the
 * client answers by a response in ours; our progress then returns the
 * command's buffer into the client's memory (taking a lock there). A
 * client sees its reply, and may park, before we processed that response:
 * releasing it at once made the next progress crash on the freed lock
 * (ofi_test AbandonedBatchThenClose/shm, SIGSEGV in fi_cntr_read). A
 * parked client sends nothing more, so once every reply sent before it
 * was taken has completed, nothing of ours refers to its memory.
 */
static bool
ofi_poll_once(struct ofi_server *s, uint64_t *events)
{
	struct rdma__ofi_comp comps[16];
	int n;
	bool active;
	uint64_t now_events;

	s->held = rdma__ofi_local_take(s->local, s->held);
	n = rdma__ofi_poll(&s->ofi, comps, 16);
	active = n > 0;

	if (n < 0) {
		rdma__log(s->env, RDMA_NODE_LOG_ERROR,
			"%s: completion queue failed: %s", s->name,
			pm_strerror(n));
		n = 0;
	}
	for (int i = 0; i < n; i++)
		ofi_handle_comp(s, &comps[i]);
	if (s->pending != 0) {
		ofi_retry_pending(s);
		active = true;
	}
	now_events = rdma__ofi_rma_events(&s->ofi);
	if (now_events != *events) {
		*events = now_events;
		active = true;
	}
	if (s->held != NULL && !ofi_replying(s)) {
		rdma__ofi_parked_release(s->held);
		s->held = NULL;
	}
	/* relaxed: a hint that ends idling (a busy thread's nap), it
	 * orders nothing */
	if (atomic_load_explicit(&s->poke, memory_order_relaxed)) {
		atomic_store_explicit(&s->poke, false, memory_order_relaxed);
		active = true;
	}
	return active;
}

/*
 * ofi_stopping -- whether ofi_server_stop asked the thread to end.
 */
static bool
ofi_stopping(struct ofi_server *s)
{
	/* acquire: pairs with the release store in ofi_server_stop */
	return atomic_load_explicit(&s->stop, memory_order_acquire);
}

/*
 * ofi_progress_adaptive -- poll while there is activity, sleep on the wait
 * object as soon as there is none. Return: true when stopped; false if
 * waiting failed (logged), for the caller to poll busily instead.
 */
static bool
ofi_progress_adaptive(struct ofi_server *s)
{
	uint64_t events = rdma__ofi_rma_events(&s->ofi);

	while (!ofi_stopping(s)) {
		int ret;

		if (ofi_poll_once(s, &events))
			continue;
		/* what wakes us is progressed by the next poll */
		ret = rdma__ofi_wait(&s->ofi, OFI_WAIT_MS);
		if (ret < 0) {
			rdma__log(s->env, RDMA_NODE_LOG_ERROR,
				"%s: waiting for the completion queue failed: %s; polling without sleeping from now on",
				s->name, pm_strerror(ret));
			return false;
		}
	}
	return true;
}

/*
 * ofi_progress_busy -- poll without sleeping: yield after every empty
 * poll, nap between polls after RDMA_OFI_SERVER_NAP_AFTER_MS without
 * activity.
 */
static void
ofi_progress_busy(struct ofi_server *s)
{
	uint64_t events = rdma__ofi_rma_events(&s->ofi);
	uint64_t idle_since = 0;

	while (!ofi_stopping(s)) {
		uint64_t now;

		if (ofi_poll_once(s, &events)) {
			idle_since = 0;
			continue;
		}
		now = rdma__now_ns();
		if (idle_since == 0)
			idle_since = now;
		if (now - idle_since < (uint64_t)RDMA_OFI_SERVER_NAP_AFTER_MS * 1000000u) {
			sched_yield();
		} else {
			struct timespec ts = { 0, OFI_IDLE_NAP_NS };

			nanosleep(&ts, NULL);
		}
	}
}

/*
 * ofi_sleeps -- whether the progress thread sleeps when idle (adaptive mode
 * on a queue with a wait object).
 */
static bool
ofi_sleeps(const struct ofi_server *s)
{
	return s->env->poll == RDMA_NODE_POLL_ADAPTIVE && s->ofi.waits;
}

/*
 * ofi_progress -- the progress thread: read completions until stopped.
 */
static void *
ofi_progress(void *arg)
{
	struct ofi_server *s = arg;

	if (ofi_sleeps(s) && ofi_progress_adaptive(s))
		return NULL;
	ofi_progress_busy(s);
	return NULL;
}

/*
 * ofi_server_stop -- stop the progress thread and release everything.
 */
static void
ofi_server_stop(void *state)
{
	struct ofi_server *s = state;

	if (s == NULL)
		return;
	if (s->thread_started) {
		/* release: pairs with the acquire load in ofi_stopping */
		atomic_store_explicit(&s->stop, true, memory_order_release);
		rdma__ofi_wake(&s->ofi);
		pthread_join(s->thread, NULL);
	}
	/* the thread is stopped: what clients of this process parked with
	 * us can go, before our endpoint (their peer) does */
	rdma__ofi_parked_release(s->held);
	s->held = NULL;
	rdma__ofi_local_del(s->local);
	/* the endpoint first, so no remote operation reaches a region whose
	 * registration is going away */
	if (s->ofi.ep != NULL) {
		fi_close(&s->ofi.ep->fid);
		s->ofi.ep = NULL;
	}
	for (unsigned i = 0; i < s->nmr; i++)
		fi_close(&s->mr[i]->fid);
	rdma__ofi_close(&s->ofi);
	free(s->bufs);
	free(s);
}

/*
 * ofi_server_start -- open the endpoint, register the regions, post the
 * receive pool and start the progress thread.
 */
static int
ofi_server_start(enum rdma__ofi_prov prov, const char *name, void **state,
	const struct rdma__server_env *env)
{
	struct ofi_server *s;
	char order[256];
	int ret;

	*state = NULL;
	if (env->nregions > RDMA_NODE_MAX_REGIONS)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (s == NULL)
		return -ENOMEM;
	s->prov = prov;
	s->name = name;
	s->env = env;
	atomic_init(&s->stop, false);
	atomic_init(&s->poke, false);

	ret = rdma__ofi_open(&s->ofi, prov,
		rdma__ofi_prov_ip(prov) ? env->host : NULL,
		RDMA__OFI_SOURCE | RDMA__OFI_RMA_EVENTS |
		(env->poll == RDMA_NODE_POLL_ADAPTIVE ? RDMA__OFI_WAIT_FD : 0));
	if (ret != 0) {
		rdma__log(env, RDMA_NODE_LOG_WARN, "%s: cannot open: %s", name,
			pm_strerror(ret));
		free(s);
		return ret;
	}

	for (unsigned i = 0; i < env->nregions; i++) {
		ret = rdma__ofi_mr_reg(&s->ofi, env->regions[i].base,
			env->regions[i].length,
			FI_REMOTE_READ | FI_REMOTE_WRITE, &s->mr[i], &s->key[i]);
		if (ret != 0) {
			rdma__log(env, RDMA_NODE_LOG_ERROR,
				"%s: registering region %u failed: %s", name, i,
				pm_strerror(ret));
			goto fail;
		}
		s->nmr = i + 1;
	}

	s->bufs = aligned_alloc(4096, (size_t)RDMA_OFI_SERVER_SLOTS * 2 *
		((RDMA_WIRE_MSG_MAX + 4095) & ~(size_t)4095));
	if (s->bufs == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; i < RDMA_OFI_SERVER_SLOTS; i++) {
		struct ofi_slot *sl = &s->slots[i];
		size_t stride = (RDMA_WIRE_MSG_MAX + 4095) & ~(size_t)4095;

		sl->recv_ctx.slot = sl;
		sl->recv_ctx.send = false;
		sl->send_ctx.slot = sl;
		sl->send_ctx.send = true;
		sl->req = s->bufs + (2 * (size_t)i) * stride;
		sl->rep = s->bufs + (2 * (size_t)i + 1) * stride;
		sl->state = OFI_SLOT_SENDING;
		ofi_slot_post_recv(s, sl);
	}

	ret = rdma__ofi_local_add(&s->ofi, &s->local);
	if (ret != 0)
		goto fail;
	ret = pthread_create(&s->thread, NULL, ofi_progress, s);
	if (ret != 0) {
		ret = -ret;
		goto fail;
	}
	s->thread_started = true;
	rdma__log(env, RDMA_NODE_LOG_INFO,
		"%s: serving %u regions, %s addresses reported, atomics %s, order %s, progress %s",
		name, env->nregions,
		s->ofi.reported_virt ? "virtual" : "offset",
		s->ofi.atomics ? "by the provider" : "shipped",
		rdma__ofi_order_str(s->ofi.order, order, sizeof(order)),
		ofi_sleeps(s) ? "adaptive (sleeps when idle)" :
		env->poll == RDMA_NODE_POLL_BUSY ? "busy" :
		"busy (the provider has no wait object)");
	*state = s;
	return 0;

fail:
	ofi_server_stop(s);
	return ret;
}

/*
 * ofi_server_admit -- let the client of @hello in: its address goes into
 * the address vector, the WELCOME gets keys, region addresses and ours.
 */
static int
ofi_server_admit(void *state, const struct rdma_wire_hello *hello,
	struct rdma_wire_welcome *welcome)
{
	struct ofi_server *s = state;
	fi_addr_t fa;
	int ret;

	ret = rdma__ofi_insert(&s->ofi, hello->addr, hello->addr_len, &fa);
	if (ret != 0) {
		rdma__log(s->env, RDMA_NODE_LOG_WARN,
			"%s: client address refused: %s", s->name,
			pm_strerror(ret));
		return ret;
	}
	if (s->ofi.name_len > sizeof(welcome->addr))
		return -EOVERFLOW;
	for (unsigned i = 0; i < s->env->nregions; i++) {
		welcome->regions[i].key = s->key[i];
		/* the base, always: the client finds out whether the
		 * target wants virtual addresses or offsets, since the
		 * provider's report is not reliable (ofi.c, ofi_conn_open) */
		welcome->regions[i].addr =
			(uint64_t)(uintptr_t)s->env->regions[i].base;
	}
	memcpy(welcome->addr, s->ofi.name, s->ofi.name_len);
	welcome->addr_len = (uint16_t)s->ofi.name_len;
	/* relaxed: a hint for the progress loop (ofi_poll_once); the
	 * client connects next, so wake a sleeping thread for it */
	atomic_store_explicit(&s->poke, true, memory_order_relaxed);
	rdma__ofi_wake(&s->ofi);
	return 0;
}

/*
 * ofi_tcp_start / ofi_shm_start / ofi_verbs_start -- start on one provider.
 */
static int
ofi_tcp_start(void **state, const struct rdma__server_env *env)
{
	return ofi_server_start(RDMA__OFI_TCP, "ofi+tcp", state, env);
}

static int
ofi_shm_start(void **state, const struct rdma__server_env *env)
{
	return ofi_server_start(RDMA__OFI_SHM, "ofi+shm", state, env);
}

static int
ofi_verbs_start(void **state, const struct rdma__server_env *env)
{
	return ofi_server_start(RDMA__OFI_VERBS, "ofi+verbs", state, env);
}

const struct rdma__server rdma__server_ofi_tcp = {
	"ofi+tcp", RDMA_NODE_SERVE_TCP, RDMA_WIRE_BACKEND_OFI_TCP,
	ofi_tcp_start, ofi_server_admit, ofi_server_stop,
};
const struct rdma__server rdma__server_ofi_shm = {
	"ofi+shm", RDMA_NODE_SERVE_SHM, RDMA_WIRE_BACKEND_OFI_SHM,
	ofi_shm_start, ofi_server_admit, ofi_server_stop,
};
const struct rdma__server rdma__server_ofi_verbs = {
	"ofi+verbs", RDMA_NODE_SERVE_OFI_VERBS, RDMA_WIRE_BACKEND_OFI_VERBS,
	ofi_verbs_start, ofi_server_admit, ofi_server_stop,
};
