/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/group.h -- the connections of one index client to the 2f+1
 * memory nodes of its group, and parallel rounds of one-sided batches over
 * them (private to kv/).
 *
 * A round posts one ordered batch to each chosen member at once and waits
 * until every one of them answered, or until @need of them answered and a
 * short grace passed (a slow or partitioned node must not hold up an
 * operation that a quorum can finish), or until the operation's deadline.
 *
 * Each member owns the batch and the buffers of its round (struct
 * kv_ix_member), so a batch a round stopped waiting for can still complete
 * later without writing into memory the caller has reused: the member stays
 * busy, is skipped by later rounds, and is drained at the start of each
 * round. A member whose connection failed, or which stayed busy past the
 * connection timeout, is handed to the group's reconnect thread, which
 * reopens the connection, checks the node's superblock (kv/src/index/layout.h)
 * and hands it back; so a memory node restarted from its pool rejoins at
 * once, and one whose pool was lost stays out (its superblock does not name
 * the group) until it is rebuilt.
 *
 * Thread-safety: a group is used by one thread (the client's), plus its own
 * reconnect thread; members pass between the two only through their
 * atomic state (acquire/release), so a connection is never used by two
 * threads at once.
 */
#ifndef KV_INDEX_GROUP_H
#define KV_INDEX_GROUP_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <rdma/rdma.h>

#include "kv/src/index/layout.h"

struct kv_index;
#ifdef KV_IX_TESTING
#include "rdma/src/testing.h"
#endif

/* Most members of a group (2f+1 with f <= 3). */
#define KV_IX_MAX_N 7
/* Bytes of scratch an index member needs: a bucket's slot records, or a
 * batch of buckets during a rebuild. The store's groups ask for more (a
 * value, its key and metadata; kv/src/store/). */
#define KV_IX_SCRATCH (16u << 10)

enum kv_ix_member_state {
	KV_IX_M_IDLE,   /* connected, member, nothing in flight (client thread) */
	KV_IX_M_BUSY,   /* a batch in flight (client thread) */
	KV_IX_M_DOWN,   /* not usable: the reconnect thread owns it */
	KV_IX_M_CLOSED, /* group closing */
};

struct kv_ix_group;

/*
 * kv_ix_admit_fn -- a further test of a member whose index superblock names
 * the group, run by the reconnect thread with the member's connection
 * before it is used (the store checks its own superblock there: a node
 * whose index was rebuilt but whose values were not must not count).
 * Return: true to admit the member.
 */
typedef bool (*kv_ix_admit_fn)(void *ctx, struct kv_ix_group *g, unsigned i);

struct kv_ix_member {
	int state;                  /* enum kv_ix_member_state, atomic */
	struct rdma_conn *conn;
	char *uri;
	uint64_t posted_ns;         /* when the batch in flight was posted */
	bool in_round;              /* the batch belongs to the current round */
	bool background;            /* the batch in flight is a background commit */
	int rc;                     /* result of the current round's batch */
	uint64_t posts;             /* batches posted to this member (client thread) */
	uint64_t resolved;          /* of those, how many completed, failed or were
	                             * abandoned (client thread) */
	uint64_t abandoned, abandoned_last; /* the first and last batch
	                             * abandoned that may still land until
	                             * settle_ns (CLOCK_MONOTONIC):
	                             * kv__ix_settled (client thread) */
	uint64_t settle_ns;
#ifdef KV_IX_TESTING
	/* The fault a test asked for, request number << 48 |
	 * KV_IX_FAULT_ONCE | fault << 32 | delay_us (atomic: any thread),
	 * and the one applied to conn (its owner's). */
	uint64_t fault_req, fault_applied;
#endif
	struct rdma_batch batch;
	uint64_t old[RDMA_BATCH_MAX_OPS]; /* CAS results */
	unsigned char *buf;         /* scratch, kv_ix_group.scratch bytes, 64-aligned */
};

struct kv_ix_group {
	unsigned n;                 /* members, 2f+1 */
	size_t scratch;             /* bytes of each member's buf */
	unsigned f;
	uint32_t region;            /* the index region on every node */
	struct kv_ix_super super;   /* the group's geometry (from f+1 nodes) */
	unsigned timeout_ms;        /* a whole operation's limit */
	uint64_t grace_min_ns;      /* least wait for stragglers after a quorum */
	struct rdma_conn_config conn_cfg;
	char token[RDMA_TOKEN_MAX + 1];
	unsigned blank;             /* members used without a superblock (rebuild) */
	unsigned revivals;          /* reconnections of members that were
	                             * connected before (atomic; the index
	                             * catches them up: index.c) */
	unsigned refused;           /* members whose last attempt failed (atomic):
	                             * kv__ix_group_open stops waiting for them */
	char refusal[256];          /* why the last refused member was refused
	                             * (lock): kv__ix_group_open's error says it */
	kv_ix_admit_fn admit;       /* kv_ix_group_opts */
	void *admit_ctx;
	void (*yield)(void *arg);   /* kv_ix_group_opts */
	void *yield_arg;
	uint8_t uuid[16];           /* the group's id, from the superblocks */
	bool uuid_known;
	/* The client's lease (kv/src/store/lease.c): no batch is posted once
	 * CLOCK_MONOTONIC reaches *fence (0: no lease yet), unless
	 * fence_open (the lease's own renewal CASes); see kv__ix_fence(). */
	const uint64_t *fence;
	bool fence_open;
	uint64_t fenced_posts;      /* batches not posted because of it */
	/* Fault point (kv__ix_crash_after): when set, each post takes one
	 * from *crash_left; at 0 nothing more is posted. */
	uint64_t *crash_left;
	pthread_t thread;           /* reconnects DOWN members */
	pthread_mutex_t lock;       /* protects stop, wake, refusal */
	pthread_cond_t cond;
	bool stop, wake;
	struct kv_ix_member m[KV_IX_MAX_N];
};

/* How kv__ix_group_open() opens a group. */
struct kv_ix_group_opts {
	bool require_super;    /* false for kv_index_create, which formats the
	                        * nodes: every connected node is usable and no
	                        * superblock is read */
	unsigned blank;        /* members usable without a superblock (the node
	                        * a rebuild restores); they do not name the group */
	size_t scratch;        /* bytes of each member's buf, >= KV_IX_SCRATCH */
	kv_ix_admit_fn admit;  /* NULL: the index superblock is enough */
	void *admit_ctx;
	/* Called instead of spinning whenever the client thread waits for
	 * the nodes, so one thread can run several clients as coroutines
	 * (kv/kv.h's asynchronous API); NULL: spin. */
	void (*yield)(void *arg);
	void *yield_arg;
};

/**
 * kv__ix_group_open -- connect to @n node URIs (n odd, 1..KV_IX_MAX_N) and
 * learn the group from their superblocks in @region; wait (at most
 * @timeout_ms) until f+1 members are usable, and then at most the
 * connection timeout more for the others.
 * @g: caller-owned storage, initialised here; kv__ix_group_close() releases.
 * @opts: as above; copied.
 * Return: 0; -EINVAL for a bad argument; KV_E_UNAVAILABLE if fewer than
 * f+1 members could be reached in time; KV_E_GROUP if the reachable nodes
 * name different groups; errors of pthread_create.
 * Thread-safety: one caller; starts the group's reconnect thread.
 */
int kv__ix_group_open(struct kv_ix_group *g, const char *const *uris, unsigned n,
	uint32_t region, const struct rdma_conn_config *cfg, unsigned timeout_ms,
	const struct kv_ix_group_opts *opts);

/**
 * kv__ix_group_close -- stop the reconnect thread and close every
 * connection (a batch in flight is abandoned). Return: nothing (void).
 * Thread-safety: the group's client thread.
 */
void kv__ix_group_close(struct kv_ix_group *g);

/**
 * kv__ix_group_unformat -- undo a create that did not finish: zero, and
 * persist, the superblock magic at offset 0 of @region on the members of
 * @mask, which then read as never formatted (a create may run again).
 * Best effort: a member that does not answer keeps its superblock. This
 * thread's pm_errormsg() (the create's failure) is kept.
 * Thread-safety: the group's client thread, no batch in flight.
 */
void kv__ix_group_unformat(struct kv_ix_group *g, uint32_t region, unsigned mask);

struct kv_index_config;
/**
 * kv__ix_unformat -- kv__ix_group_unformat() of the index region on the
 * members of @mask, through a group of its own (a create's handles are
 * closed by then: holding them open while another group connects slowed
 * ofi+tcp connects under TSan past their timeout). Best effort; keeps this
 * thread's pm_errormsg().
 * Thread-safety: any thread.
 */
void kv__ix_unformat(const struct kv_index_config *cfg, unsigned mask);

/**
 * kv__ix_group_up -- the members connected now (idle, or with a batch in
 * flight), as opposed to those the reconnect thread holds.
 * Return: that mask. Thread-safety: client thread.
 */
unsigned kv__ix_group_up(const struct kv_ix_group *g);

/**
 * kv__ix_round_begin -- start a round: drain members whose old batches
 * completed, hand over members stuck past the timeout, and return the mask
 * of members usable now, whose batches the caller may fill (each has been
 * rdma_batch_init()ed and its scratch is free).
 * Return: the mask (bit i = member i). Thread-safety: client thread.
 */
unsigned kv__ix_round_begin(struct kv_ix_group *g);

/**
 * kv__ix_round_run -- post the batch of every member in @mask and wait:
 * until all answered, or @need answered and the grace passed, or
 * @deadline_ns (CLOCK_MONOTONIC). Members that failed are handed to the
 * reconnect thread; members still in flight stay busy.
 * Return: the mask of members whose batch completed without error (their
 * results and buffers are valid until the next kv__ix_round_begin()).
 * Thread-safety: client thread.
 */
unsigned kv__ix_round_run(struct kv_ix_group *g, unsigned mask, unsigned need,
	uint64_t deadline_ns);

/* A round started and not yet waited for (kv__ix_round_start). */
struct kv_ix_round {
	uint64_t start;     /* CLOCK_MONOTONIC ns */
	unsigned pending;   /* members with the round's batch in flight */
	unsigned ok;        /* members whose batch completed without error */
};

/**
 * kv__ix_round_start -- kv__ix_round_run()'s first half: post the batch of
 * every member in @mask and return at once, the round in *@r. The caller
 * must finish it with kv__ix_round_wait() before it begins another round
 * on @g; meanwhile it may do other work (a round on another group).
 * Return: nothing (void). Thread-safety: client thread.
 */
void kv__ix_round_start(struct kv_ix_group *g, unsigned mask, struct kv_ix_round *r);

/**
 * kv__ix_round_done -- the members of @r whose batches have completed so
 * far, without waiting. Return: that mask. Thread-safety: client thread.
 */
unsigned kv__ix_round_done(struct kv_ix_group *g, struct kv_ix_round *r);

/**
 * kv__ix_round_wait -- kv__ix_round_run()'s second half, for the round @r.
 * Return: as kv__ix_round_run(). Thread-safety: client thread.
 */
unsigned kv__ix_round_wait(struct kv_ix_group *g, struct kv_ix_round *r, unsigned need,
	uint64_t deadline_ns);

/**
 * kv__ix_round_post -- post the batch of every member in @mask and do not
 * wait (background commits): the members stay busy until a later round
 * drains them. Return: nothing (void). Thread-safety: client thread.
 */
void kv__ix_round_post(struct kv_ix_group *g, unsigned mask);

/* The batches a group had posted at some instant (kv__ix_posted). */
struct kv_ix_posted {
	uint64_t n[KV_IX_MAX_N];
};

/**
 * kv__ix_posted -- note in *@p how many batches @g has posted to each
 * member so far. Return: nothing (void). Thread-safety: client thread.
 */
void kv__ix_posted(const struct kv_ix_group *g, struct kv_ix_posted *p);

/**
 * kv__ix_settled -- whether no batch posted after those noted in @since
 * (NULL: from the first) and among those noted in @upto can still change
 * a node: each completed, or failed or was abandoned (its member
 * handed to the reconnect thread) at least one operation timeout ago. A
 * batch the client stopped waiting for is only ever that long in the
 * network or in a node's queue, or lost: the assumption the index's
 * rebuild makes too (kv/DESIGN.md, "Recycling"). On the local backend a
 * batch runs inside rdma_post() (rdma.h), so an abandoned one has run or
 * never will: settled at once. Memory that such a batch writes (a value
 * buffer) may be reused once it holds. Does not wait.
 * Return: true if settled. Thread-safety: client thread.
 */
bool kv__ix_settled(const struct kv_ix_group *g, const struct kv_ix_posted *since,
	const struct kv_ix_posted *upto);

/**
 * kv__ix_word_load -- read the 8-byte word at @off of @region from every
 * usable member until f+1 answered, and store the largest into *@max (a
 * reservation mark: raised on f+1 by kv__ix_word_store(), so f+1 replies
 * include the highest one ever acknowledged).
 * Return: 0; KV_E_UNAVAILABLE at @deadline_ns. Thread-safety: client thread.
 */
int kv__ix_word_load(struct kv_ix_group *g, uint32_t region, uint64_t off,
	uint64_t deadline_ns, uint64_t *max);

/**
 * kv__ix_word_store -- write @value to the word at @off of @region on every
 * usable member, persisted in the same batch, until f+1 acknowledged it.
 * For marks of what a client reserved: it raises its mark before using
 * what lies below, so the maximum kv__ix_word_load() takes is never below
 * what it used; it may lower its mark to exactly what it used when it
 * stops (a node that missed that keeps a higher mark, which only wastes).
 * Return: 0; KV_E_UNAVAILABLE at @deadline_ns. Thread-safety: client thread.
 */
int kv__ix_word_store(struct kv_ix_group *g, uint32_t region, uint64_t off,
	uint64_t value, uint64_t deadline_ns);

/**
 * kv__ix_claim -- claim the word at @off of @region for @owner (non-zero):
 * CAS 0 -> @owner, persisted, on every usable member, and *@won = whether
 * f+1 members now hold @owner. Two claimants never both win (majorities
 * intersect and a word leaves 0 once). A claimant that did not win undoes
 * its CASes (kv__ix_unclaim) so the word can be claimed again.
 * Return: 0 (see *@won); KV_E_UNAVAILABLE at @deadline_ns.
 * Thread-safety: client thread.
 */
int kv__ix_claim(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t owner,
	uint64_t deadline_ns, bool *won);

/**
 * kv__ix_unclaim -- CAS @owner -> 0, persisted, on every usable member
 * (best effort: a member that does not answer keeps the claim, which then
 * never reaches f+1 for anyone else until it is cleared there).
 * Return: 0; KV_E_UNAVAILABLE if fewer than f+1 members answered by
 * @deadline_ns. Thread-safety: client thread.
 */
int kv__ix_unclaim(struct kv_ix_group *g, uint32_t region, uint64_t off, uint64_t owner,
	uint64_t deadline_ns);

/**
 * kv__ix_fence -- refuse to post any batch of @g once CLOCK_MONOTONIC
 * reaches *@until (read at each post; 0 means no limit yet), and the same
 * for the group of the index handle @ix when it is not NULL. A client
 * whose lease expired may have been declared dead and its id given to
 * another client: from then on nothing it posts may reach a node (kv/
 * DESIGN.md, "Client liveness"). A refused batch is not sent; its member
 * is left as it was, so the round waiting for it ends without it.
 * @until: owned by the caller, who keeps it alive as long as the groups.
 * Return: nothing (void). Thread-safety: the client thread.
 */
void kv__ix_fence(struct kv_ix_group *g, struct kv_index *ix, const uint64_t *until);

/**
 * kv__ix_crash_after -- fault point for tests of client crashes: from now
 * on every batch @g, or the group of index handle @ix (may be NULL),
 * posts takes one from *@left, and once it is 0 none is posted, silently:
 * the nodes are left as a client killed right after that many batches
 * leaves them (a round's batches to different members count one each, so
 * a crash may fall between two members of a round). @left: owned by the
 * caller, alive as long as the groups; NULL turns the fault point off.
 * Return: nothing (void). Thread-safety: the client thread.
 */
void kv__ix_crash_after(struct kv_ix_group *g, struct kv_index *ix, uint64_t *left);

/* kv__ix_fenced_posts -- the batches the fence kept the group of index
 * handle @ix (may be NULL: 0) from posting. Thread-safety: its thread. */
uint64_t kv__ix_fenced_posts(const struct kv_index *ix);

#ifdef KV_IX_TESTING
/* A fault for one round: the member's connection suffers it in the next
 * round that begins, and is healed in the round after. */
#define KV_IX_FAULT_ONCE (1ull << 40)

/* kv__ix_member_fault -- apply the fault a test asked for to @m's
 * connection, if it changed (the thread that owns @m now). */
void kv__ix_member_fault(struct kv_ix_member *m);

/* kv__ix_fault_request -- ask for @fault (with @delay_us, and
 * KV_IX_FAULT_ONCE in @flags for one round only) on member @i of @g from
 * its next round on. Return: 0; -EINVAL for a bad member. Thread-safety:
 * any thread. */
int kv__ix_fault_request(struct kv_ix_group *g, unsigned i, enum rdma_fault fault,
	uint32_t delay_us, uint64_t flags);
#endif

/**
 * kv__ix_pause -- one step of a wait for the nodes: the group's yield, or a
 * CPU pause. Return: nothing (void). Thread-safety: client thread.
 */
void kv__ix_pause(struct kv_ix_group *g);

/**
 * kv__ix_sleep -- wait @ns nanoseconds: yielding all the while if the group
 * has a yield, else sleeping. Return: nothing (void). Thread-safety: client
 * thread.
 */
void kv__ix_sleep(struct kv_ix_group *g, uint64_t ns);

/* kv__ix_now_ns -- CLOCK_MONOTONIC in nanoseconds */
uint64_t kv__ix_now_ns(void);

#endif /* KV_INDEX_GROUP_H */
