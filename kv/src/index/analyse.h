/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/analyse.h -- the decision rule every reader of an index slot
 * applies to the words it read from the slot's placement group (private to
 * kv/; FCP design, "analyse(R, j)").
 *
 * A reader reads one slot (or forward word) from the members of its group,
 * in one round trip, and must say what the slot's value was at some moment
 * of that read without writing anything: decided (and which value), not
 * chosen at the time of the read (so the previous stage's value was
 * current), or undetermined (a stage may or may not have been chosen; the
 * caller resolves it with a classic round). The rule is sound because every
 * acceptance a client counts is persistent before it is counted and words
 * only move up (kv/src/index/word.h), so a stage chosen before the read was
 * accepted by a quorum that intersects the replies.
 */
#ifndef KV_INDEX_ANALYSE_H
#define KV_INDEX_ANALYSE_H

#include <stdbool.h>
#include <stdint.h>

/* Acceptance recorded in a P word's record (record word w1). */
#define KV_IX_ACC_NONE 0u  /* promised only */
#define KV_IX_ACC_FAST 1u  /* accepted in the fast round (ballot 0) */
/* otherwise: accepted at classic ballot (acc - 2) */

/* One member's reply for one slot. */
struct kv_ix_reply {
	uint64_t word;      /* the slot word as read */
	bool rec_known;     /* P words: the record was read */
	uint32_t acc;       /* P words with rec_known: KV_IX_ACC_* or ballot + 2 */
	uint64_t acc_body;  /* ... and the accepted value body (word.h) */
};

enum kv_ix_verdict {
	/* The stage's value is decided: out->body. */
	KV_IX_DECIDED,
	/* Nothing was chosen at out->stage when the read ran: the current
	 * value is the decided value of the stage before, out->body. */
	KV_IX_NOT_CHOSEN,
	/* A value may have been chosen: resolve the stage. */
	KV_IX_UNDETERMINED,
	/* A P word's record must be read first (and analyse run again). */
	KV_IX_NEED_RECORDS,
	/* Fewer than f+1 valid member words: no conclusion possible. */
	KV_IX_TOO_FEW,
};

struct kv_ix_analysis {
	enum kv_ix_verdict verdict;
	unsigned stage;      /* s*, the highest stage among the replies */
	uint64_t body;       /* DECIDED, NOT_CHOSEN: the value body */
	unsigned members;    /* replies counted (valid words of @gen) */
};

/**
 * kv__ix_analyse -- apply the decision rule to @nr replies from a group of
 * @n = 2f+1 members (n odd, 1..15) for a slot of generation @gen.
 * @persisted: the read batch persisted the slot after reading it (needed to
 *             conclude "decided" from fast-round words, which a node may
 *             not have made durable yet).
 *
 * Replies whose word is not a valid word of @gen (word.h kv_ixw_valid:
 * damaged, zero-filled, another incarnation) do not count, as if the node
 * had not answered.
 * Return: 0 and *@out filled; -EINVAL for a bad @n or @nr > @n.
 * Thread-safety: pure; any thread.
 */
int kv__ix_analyse(const struct kv_ix_reply *r, unsigned nr, unsigned n, unsigned gen,
	bool persisted, struct kv_ix_analysis *out);

/**
 * kv__ix_reply_prev -- the decided value of stage @s - 1 that reply @r
 * implies, if it does: a C or F word of stage s (word.h kv_ixw_implied), a
 * P word of stage s whose record was read (an acceptance implies it the same
 * way; a record without one carries it, paxos.h), or a C word of stage s - 1.
 * Return: true and *@body set; false. Thread-safety: pure.
 */
bool kv__ix_reply_prev(const struct kv_ix_reply *r, unsigned s, uint64_t *body);

/* kv__ix_fast_quorum -- q_f = n - floor(f/2) for n = 2f+1 (3 of 3, 4 of 5) */
static inline unsigned
kv__ix_fast_quorum(unsigned n)
{
	return n - (n / 2) / 2;
}

#endif /* KV_INDEX_ANALYSE_H */
