/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/index_internal.h -- what the index's source files share
 * (private to kv/): the client handle, the view of one bucket as read from
 * the group, and the per-word protocol steps (slot.c), splits (split.c) and
 * the bucket walk (index.c).
 */
#ifndef KV_INDEX_INTERNAL_H
#define KV_INDEX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <kv/index.h>

#include "kv/src/index/analyse.h"
#include "kv/src/index/group.h"
#include "kv/src/index/layout.h"
#include "kv/src/index/paxos.h"

/* A frozen bucket with this many slots that map nothing (removed entries,
 * or EMPTY slots of a bucket frozen before it filled) is compacted in place
 * rather than split (split.c): each compaction then makes room for at
 * least this many inserts. */
#define KV_IX_COMPACT_ROOM 4u

/* Records are reserved from the nodes' marks this many at a time. */
#define KV_IX_REC_CHUNK 256u

/* One cached key: its hash and where its entry was last seen. */
struct kv_ix_hint {
	uint64_t hash; /* 0: empty */
	uint64_t loc;
};

/* A depth-first walk of the bucket tree that can stop and resume
 * (repair.c): kv_index_scrub runs one to the end, operations a few steps
 * of one after a member came back (ix_catch_up in index.c). Depth first
 * with one pending sibling per level: at most 65 entries (bucket numbers
 * are 64-bit). */
#define KV_IX_SCRUB_STACK 128
/* A thorough scrub's pause before it asks a slow member again. */
#define KV_IX_SCRUB_RETRY_NS (1000u * 1000u)
struct kv_ix_scrub {
	uint64_t stack[KV_IX_SCRUB_STACK]; /* buckets still to visit */
	unsigned top;
	unsigned missed; /* members that did not answer somewhere */
	unsigned lacked; /* members that answered without a live bucket
	                  * somewhere (repaired then, or not: a bucket with a
	                  * word no one could resolve is installed later) */
	bool thorough;   /* wait for every connected member at each bucket */
};

struct kv_index {
	struct kv_ix_group g;
	kv_index_key_fn key_at;
	kv_index_publish_fn publish;
	void *key_ctx;
	unsigned cid;
	unsigned timeout_ms;
	uint64_t deadline;       /* the current operation's, CLOCK_MONOTONIC ns */
	uint64_t offer;          /* the body an insert proposes (0: none) ... */
	bool offered;            /* ... and whether a node may have accepted it
	                          * (kv__ix_fast, kv__ix_resolve) */
	uint64_t rec_next;       /* next record sequence number */
	uint64_t rec_mark;       /* reserved up to (exclusive) */
	uint64_t rng;            /* backoff jitter */
	uint8_t depth[1u << 12]; /* depth + 1 of the bucket last found for
	                          * these low 12 hash bits; 0 = none */
	unsigned last_depth;     /* depth of the bucket last found */
	struct kv_ix_hint *hints;
	unsigned nhints;         /* a power of two, or 0 */
	struct kv_index_stats st;
	unsigned revivals_seen;  /* g.revivals when the catch-up last began */
	struct kv_ix_scrub catch_up;
#ifdef KV_IX_TESTING
	bool test_no_commit;     /* kv__ix_test_no_commit() */
	bool test_no_compaction; /* kv__ix_test_no_compaction() */
	unsigned test_stop_fast; /* kv__ix_test_stop_in_fast(): members, or 0 */
	void (*test_before_resolve)(void *arg); /* kv__ix_test_before_resolve() */
	void *test_before_resolve_arg;
#endif
};

/* What one round read of a bucket gave: the words of each member whose
 * header was valid (kv__ix_view_read), and the records of their P words. */
struct kv_ix_view {
	uint64_t idx;
	uint32_t epoch;   /* the incarnation read (kv__ix_view_classify) */
	unsigned gen;     /* the gen of its words, kv_ix_epoch_gen(epoch) */
	unsigned got;     /* members whose h0 is live at @epoch */
	unsigned pending; /* members whose h0 is the bucket's pending header */
	unsigned lack;    /* members that answered without it: no header, or
	                   * one live at an earlier epoch (kv__ix_repair) */
	unsigned behind;  /* those of @lack live at an earlier epoch */
	unsigned answered;/* members that answered at all */
	bool persisted;   /* each member's read was persisted (analyse.h) */
	uint64_t w[KV_IX_MAX_N][KV_IXB_WORDS];
	bool rec_known[KV_IX_MAX_N][KV_IXB_WORDS];
	struct kv_ix_reply rep[KV_IX_MAX_N][KV_IXB_WORDS]; /* P words with records */
};

/* Make @v the view of bucket @idx of an @n-member group with no member
 * answered. Only the members' rows are cleared (a record reply is read only
 * where rec_known says so): zeroing the whole view, 4.6 KiB, was a tenth
 * of a lookup's instructions on the local backend. */
static inline void
kv__ix_view_reset(struct kv_ix_view *v, uint64_t idx, unsigned n)
{
	v->idx = idx;
	v->epoch = 0;
	v->gen = 0;
	v->got = v->pending = v->lack = v->behind = v->answered = 0;
	v->persisted = false;
	memset(v->w, 0, n * sizeof(v->w[0]));
	memset(v->rec_known, 0, n * sizeof(v->rec_known[0]));
}

/* A child's h0 between its install and its parent's forward decision. */
static inline uint64_t
kv_ixb_h0_pending(uint64_t idx)
{
	return kv_ixb_h0(idx, 0) | KV_IXB_H0_PENDING;
}

/* Bodies of slot values. */
static inline bool
kv_ix_body_empty(uint64_t b)
{
	return kv_ixw_stage(b) == 0;
}

static inline bool
kv_ix_body_live(uint64_t b)
{
	return kv_ixw_stage(b) == 1 && !kv_ixw_frz(b);
}

/* LIVE or FROZEN-LIVE: the entry maps a key */
static inline bool
kv_ix_body_maps(uint64_t b)
{
	return (kv_ixw_stage(b) == 1 && !kv_ixw_frz(b)) || (kv_ixw_stage(b) == 2 && kv_ixw_frz(b));
}

/* The frozen body that stage s+1 proposes over the decided body @b. */
static inline uint64_t
kv_ix_body_frozen(uint64_t b)
{
	return kv_ixw_body(kv_ixw_stage(b) + 1, true, kv_ixw_fp(b), kv_ixw_loc(b));
}

/* The outcome of one word's analysis, as callers use it. */
struct kv_ix_slot {
	struct kv_ix_analysis a;
	uint64_t cur;      /* DECIDED, NOT_CHOSEN: the current value body */
	bool in_progress;  /* a stage above cur's may be in progress */
	bool committed;    /* every member counted holds the decided C word:
	                    * kv__ix_commit_decided has nothing to write */
};

/* slot.c */
/* kv__ix_view_classify -- set @v's epoch, gen, got, pending and behind
 * from the headers of its @answered members of an @n-member group: the
 * incarnation is the epoch f+1 of them hold live, else (a compaction
 * installing the next one) the newest any holds live. Returns the number
 * of headers that name no incarnation of the bucket (bad words). */
unsigned kv__ix_view_classify(struct kv_ix_view *v, unsigned n, unsigned f);
int kv__ix_view_read(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v);
/* kv__ix_view_read_quorum -- as kv__ix_view_read from f+1 members only
 * (all of them if that fails): for readers that write nothing */
int kv__ix_view_read_quorum(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v);
/* kv__ix_view_read_all -- as kv__ix_view_read, waiting for every member
 * it asked rather than f+1 and a grace: for the scrub, which must see
 * each member's copy */
int kv__ix_view_read_all(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v);
int kv__ix_view_records(struct kv_index *ix, struct kv_ix_view *v);
int kv__ix_slot(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	struct kv_ix_slot *out);
bool kv__ix_word_carries_fp(const struct kv_ix_view *v, unsigned word, unsigned fp);
bool kv__ix_prev(const struct kv_ix_view *v, unsigned word, unsigned stage, uint64_t *prev);
uint64_t kv__ix_observed(const struct kv_ix_view *v, unsigned word, unsigned stage,
	uint64_t prev);
/* kv__ix_commit_decided -- post (background) the commit of @sl's decided
 * stage to the members of @v whose @word still shows that stage undecided
 * (a committer that stopped or skipped a busy member): a reader then needs
 * one C word, and no P word outlives the records it names */
void kv__ix_commit_decided(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	const struct kv_ix_slot *sl);
int kv__ix_fast(struct kv_index *ix, const struct kv_ix_view *v, unsigned word,
	uint64_t body, bool *won);
int kv__ix_resolve(struct kv_index *ix, struct kv_ix_view *v, unsigned word,
	unsigned stage, uint64_t dflt, uint64_t *decided);
/* kv__ix_freeze_classic -- propose the freeze of every slot word w of @v
 * with @from[w] != 0, a committed word of stage s that every member of
 * @v->got shows, by classic rounds (promise at stage s+1, accept
 * frozen(value)) carried together: a freeze when a fast round cannot run
 * (a member down) costs two round trips per IX_FREEZE_CHUNK slots, not two
 * and a re-read per slot. Each slot's consensus is its own, its verbs in
 * kv__ix_resolve's order; a slot short of f+1 promises or acceptances is
 * left to the caller's next scan. Decided slots are committed in the
 * background. Return: 0; an error (the deadline, records). */
int kv__ix_freeze_classic(struct kv_index *ix, const struct kv_ix_view *v,
	const uint64_t from[KV_IXB_WORDS]);
int kv__ix_deadline_check(struct kv_index *ix);
/* kv__ix_rec_reserve -- reserve records from the nodes' marks (written to
 * f+1 before use) so that @need more can be taken: a restarted client never
 * reuses a record it may have published. */
int kv__ix_rec_reserve(struct kv_index *ix, unsigned need);

/* split.c */
/* kv__ix_split -- make room in bucket @idx, read at incarnation @epoch:
 * freeze it, then compact it in place or split it (whichever its frozen
 * content calls for), or help whoever does. Return: 0 once it is done
 * (re-read); -ENOSPC (nothing frozen) if it is full, holds no removed
 * entry and has no room for children; an error. */
int kv__ix_split(struct kv_index *ix, uint64_t idx, uint32_t epoch);
int kv__ix_forward_help(struct kv_index *ix, uint64_t idx, struct kv_ix_view *v);
/* kv__ix_converted -- whether a member of @v live at its incarnation holds
 * @word of the next one (*@out): a compaction whose helper stopped between
 * installing the words and the header. Nothing runs on an incarnation
 * before f+1 members hold its header, so such a word is the compaction's
 * own, decided. */
bool kv__ix_converted(const struct kv_ix_view *v, unsigned word, uint64_t *out);
/* kv__ix_converting -- whether a compaction of @v's incarnation was left
 * halfway installed (kv__ix_converted for some word): kv__ix_split
 * finishes it */
bool kv__ix_converting(const struct kv_ix_view *v);
/* kv__ix_flip -- make both children of @idx live where they are installed
 * but pending (only once @idx's forward is chosen) */
int kv__ix_flip(struct kv_index *ix, uint64_t idx);

/* repair.c */
/* kv__ix_repair -- install the decided words of bucket @v->idx's
 * incarnation @v->epoch on the members of @lack (whole: they lack it) and
 * on every answering member whose words are lower than the decided ones
 * or left from an earlier incarnation */
int kv__ix_repair(struct kv_index *ix, struct kv_ix_view *v, unsigned lack);
/* kv__ix_decided_single -- the highest value one member of @v (live at its
 * incarnation) shows decided for @word, as a C word in *@out: its C word,
 * or the stage below its F or P word. For an incarnation fewer than f+1
 * members hold, where no quorum can analyse a word. Return: 0; 1 if none
 * shows one. */
int kv__ix_decided_single(const struct kv_ix_view *v, unsigned word, uint64_t *out);
/* kv__ix_install -- on each member of @mask (live at @v's incarnation, or
 * in @whole: never one read at a later one), CAS every word of bucket
 * @v->idx that differs from @inst and may be replaced (lower, left by an
 * earlier incarnation, or anything on a @whole member) to @inst, persist;
 * on @whole members then read the words back and CAS h0 to @inst's once
 * every word is in place. @known: the words to install (h0 only with all
 * of them).
 * Return: 0 if no member had a word to change; 1 after the round (the
 * members that answered in *@done if not NULL); an error. */
int kv__ix_install(struct kv_index *ix, const struct kv_ix_view *v, const uint64_t *inst,
	const bool *known, unsigned mask, unsigned whole, unsigned *done);

/* kv__ix_scrub_start -- a walk from bucket @root; @thorough waits for every
 * connected member at each bucket (kv_index_scrub), else f+1 and a grace
 * suffice (the catch-up after operations, which must not hold them up). */
void kv__ix_scrub_start(struct kv_ix_scrub *s, uint64_t root, bool thorough);

/* kv__ix_scrub_run -- visit up to @steps buckets of walk @s, repairing
 * each (sets ix->deadline per bucket). On an error the bucket stays next.
 * Return: 0 (s->top == 0 once the walk is over); an error. */
int kv__ix_scrub_run(struct kv_index *ix, struct kv_ix_scrub *s, unsigned steps);

/* index.c */
/* kv__ix_open_rebuilder -- open a handle that also uses node @node, whose
 * pool was lost (no superblock), as a member to repair */
int kv__ix_open_rebuilder(struct kv_index **out, const struct kv_index_config *cfg,
	unsigned node);
uint64_t kv__ix_hash(const void *key, size_t len);
int kv__ix_key_hash(struct kv_index *ix, uint64_t loc, uint64_t *hash);

#endif /* KV_INDEX_INTERNAL_H */
