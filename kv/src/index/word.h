/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/word.h -- the 8-byte consensus words of the replicated index:
 * slot words and forward words (private to kv/).
 *
 * Every index slot is a sequence of single-decree consensus instances
 * ("stages") replicated on the 2f+1 memory nodes of its placement group;
 * each node holds one word per slot, changed only by one-sided CAS
 * (kv/DESIGN.md, "Index"; the FCP design, "Fast CAS-Paxos slots"). Layout,
 * bit 63 the most significant:
 *
 *   63:62 tag    C (00) committed: the decided value of the stage
 *                F (01) accepted in the fast round (ballot 0)
 *                P (10) classic round: promise and acceptance in a record
 *                11 is invalid
 *   61:54 gen    bucket incarnation at this address, 1..255; 0 is invalid,
 *                so zero-filled memory (a lost or new pool) never matches
 *   53:52 stage  consensus instance 0..3
 *   C and F:
 *   51    frz    frozen (the bucket is being split or compacted)
 *   50:35 fp     16-bit fingerprint of the key (bits 63:48 of its hash)
 *   34:0  loc    value location: placement group (8) | block (27)
 *   P:
 *   51:38 round  promised ballot round, >= 1
 *   37:28 cid    promising client id
 *   27:0  rec    index of the client's 32-byte record on this node
 *
 * The value a C or F word carries is its "body": stage, frz, fp and loc
 * (bits 53:0), which is also how records store accepted values. A stage-s
 * word implies the decided value of stage s-1 (kv_ixw_implied()):
 *
 *   stage  frz=0              frz=1                implied stage s-1 value
 *   0      EMPTY (fp, loc)    invalid              -
 *   1      LIVE(fp, loc)      FROZEN-EMPTY         EMPTY
 *   2      DEAD(fp, loc)      FROZEN-LIVE(fp,loc)  LIVE(fp, loc)
 *   3      invalid            FROZEN-DEAD(fp,loc)  DEAD(fp, loc)
 *
 * An EMPTY made by a compaction keeps the fingerprint and location of the
 * entry removed there before (kv/src/index/split.c), 0 otherwise: it still
 * reads as EMPTY, and tells an insert whose outcome the compaction hid
 * that its entry was chosen and removed. A word of stage 1 implies EMPTY
 * without them.
 *
 * Words of one gen only ever move up in the order
 *   C(s-1) < F(s) < P(s, ballot increasing) < C(s) < F(s+1) < ...
 * (kv_ixw_cmp()); that monotonicity is what lets a late CAS of a slow
 * client land only where an on-time one would have, and what lets a node
 * restarted from its pool rejoin as a slow acceptor.
 */
#ifndef KV_INDEX_WORD_H
#define KV_INDEX_WORD_H

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>

#define KV_IXW_TAG_SHIFT 62
#define KV_IXW_GEN_SHIFT 54
#define KV_IXW_STAGE_SHIFT 52
#define KV_IXW_FRZ_SHIFT 51
#define KV_IXW_FP_SHIFT 35
#define KV_IXW_ROUND_SHIFT 38
#define KV_IXW_CID_SHIFT 28

#define KV_IXW_GEN_BITS 8
#define KV_IXW_STAGE_BITS 2
#define KV_IXW_FP_BITS 16
#define KV_IXW_LOC_BITS 35
#define KV_IXW_ROUND_BITS 14
#define KV_IXW_CID_BITS 10
#define KV_IXW_REC_BITS 28

#define KV_IXW_MASK(bits) ((UINT64_C(1) << (bits)) - 1)

/* The fields of each form tile bits 53:0 exactly. */
static_assert(KV_IXW_FP_SHIFT == KV_IXW_LOC_BITS, "loc below fp");
static_assert(KV_IXW_FRZ_SHIFT == KV_IXW_FP_SHIFT + KV_IXW_FP_BITS, "fp below frz");
static_assert(KV_IXW_STAGE_SHIFT == KV_IXW_FRZ_SHIFT + 1, "frz below stage");
static_assert(KV_IXW_CID_SHIFT == KV_IXW_REC_BITS, "rec below cid");
static_assert(KV_IXW_ROUND_SHIFT == KV_IXW_CID_SHIFT + KV_IXW_CID_BITS, "cid below round");
static_assert(KV_IXW_STAGE_SHIFT == KV_IXW_ROUND_SHIFT + KV_IXW_ROUND_BITS, "round below stage");
static_assert(KV_IXW_GEN_SHIFT == KV_IXW_STAGE_SHIFT + KV_IXW_STAGE_BITS, "stage below gen");
static_assert(KV_IXW_TAG_SHIFT == KV_IXW_GEN_SHIFT + KV_IXW_GEN_BITS, "gen below tag");

/* Word forms (the tag). */
enum kv_ixw_tag {
	KV_IXW_C = 0, /* committed */
	KV_IXW_F = 1, /* fast-accepted */
	KV_IXW_P = 2, /* classic round, record form */
	KV_IXW_BAD = 3,
};

/* Highest stage. */
#define KV_IXW_MAX_STAGE 3
/* Highest classic round a P word holds. */
#define KV_IXW_MAX_ROUND ((uint32_t)KV_IXW_MASK(KV_IXW_ROUND_BITS))

/* The value part of C and F words and of records: bits 53:0. */
#define KV_IXW_BODY_MASK KV_IXW_MASK(KV_IXW_GEN_SHIFT)

static inline enum kv_ixw_tag
kv_ixw_tag(uint64_t w)
{
	return (enum kv_ixw_tag)(w >> KV_IXW_TAG_SHIFT);
}

static inline unsigned
kv_ixw_gen(uint64_t w)
{
	return (unsigned)((w >> KV_IXW_GEN_SHIFT) & KV_IXW_MASK(KV_IXW_GEN_BITS));
}

static inline unsigned
kv_ixw_stage(uint64_t w)
{
	return (unsigned)((w >> KV_IXW_STAGE_SHIFT) & KV_IXW_MASK(KV_IXW_STAGE_BITS));
}

static inline bool
kv_ixw_frz(uint64_t w)
{
	return (w >> KV_IXW_FRZ_SHIFT) & 1;
}

static inline unsigned
kv_ixw_fp(uint64_t w)
{
	return (unsigned)((w >> KV_IXW_FP_SHIFT) & KV_IXW_MASK(KV_IXW_FP_BITS));
}

static inline uint64_t
kv_ixw_loc(uint64_t w)
{
	return w & KV_IXW_MASK(KV_IXW_LOC_BITS);
}

static inline uint32_t
kv_ixw_round(uint64_t w)
{
	return (uint32_t)((w >> KV_IXW_ROUND_SHIFT) & KV_IXW_MASK(KV_IXW_ROUND_BITS));
}

static inline unsigned
kv_ixw_cid(uint64_t w)
{
	return (unsigned)((w >> KV_IXW_CID_SHIFT) & KV_IXW_MASK(KV_IXW_CID_BITS));
}

static inline uint32_t
kv_ixw_rec(uint64_t w)
{
	return (uint32_t)(w & KV_IXW_MASK(KV_IXW_REC_BITS));
}

/* kv_ixw_body -- a value body (bits 53:0) for @stage, @frz, @fp, @loc; the
 * caller keeps each argument within its field (kv_ixw_body_valid()). */
static inline uint64_t
kv_ixw_body(unsigned stage, bool frz, unsigned fp, uint64_t loc)
{
	return (uint64_t)stage << KV_IXW_STAGE_SHIFT | (uint64_t)frz << KV_IXW_FRZ_SHIFT |
		(uint64_t)fp << KV_IXW_FP_SHIFT | loc;
}

/* kv_ixw_body_valid -- whether @body (bits above 53 ignored) is one of the
 * values of the table at the top of this file */
static inline bool
kv_ixw_body_valid(uint64_t body)
{
	unsigned stage = kv_ixw_stage(body);
	bool frz = kv_ixw_frz(body);

	if (stage == 0)
		return !frz;
	if (stage == 3)
		return frz;
	return true;
}

/* kv_ixw_make -- a C or F word of @gen carrying @body */
static inline uint64_t
kv_ixw_make(enum kv_ixw_tag tag, unsigned gen, uint64_t body)
{
	return (uint64_t)tag << KV_IXW_TAG_SHIFT | (uint64_t)gen << KV_IXW_GEN_SHIFT |
		(body & KV_IXW_BODY_MASK);
}

/* kv_ixw_make_p -- a P word of @gen at @stage: ballot (@round, @cid), record
 * @rec */
static inline uint64_t
kv_ixw_make_p(unsigned gen, unsigned stage, uint32_t round, unsigned cid, uint32_t rec)
{
	return (uint64_t)KV_IXW_P << KV_IXW_TAG_SHIFT | (uint64_t)gen << KV_IXW_GEN_SHIFT |
		(uint64_t)stage << KV_IXW_STAGE_SHIFT | (uint64_t)round << KV_IXW_ROUND_SHIFT |
		(uint64_t)cid << KV_IXW_CID_SHIFT | rec;
}

/* kv_ixw_valid -- whether @w is a well-formed word of generation @gen:
 * what a reader checks before it trusts a word read from a node (a damaged
 * or foreign word counts as no answer from that node) */
static inline bool
kv_ixw_valid(uint64_t w, unsigned gen)
{
	enum kv_ixw_tag tag = kv_ixw_tag(w);

	if (gen == 0 || kv_ixw_gen(w) != gen || tag == KV_IXW_BAD)
		return false;
	if (tag == KV_IXW_P)
		return kv_ixw_stage(w) >= 1 && kv_ixw_round(w) >= 1;
	if (tag == KV_IXW_F && kv_ixw_stage(w) == 0)
		return false; /* stage 0 is only ever the initial C(0, EMPTY) */
	return kv_ixw_body_valid(w);
}

/* kv_ixw_ballot -- a P word's ballot as one comparable number: round, then
 * client id */
static inline uint32_t
kv_ixw_ballot(uint64_t w)
{
	return (uint32_t)((w >> KV_IXW_CID_SHIFT) &
		KV_IXW_MASK(KV_IXW_ROUND_BITS + KV_IXW_CID_BITS));
}

/* kv_ixw_position -- a valid word's place in the order, ballots aside:
 * within a stage F below P below C, and C(s) below F(s+1) */
static inline unsigned
kv_ixw_position(uint64_t w)
{
	unsigned form = kv_ixw_tag(w) == KV_IXW_F ? 0 : kv_ixw_tag(w) == KV_IXW_P ? 1 : 2;

	return kv_ixw_stage(w) << 2 | form;
}

/* kv_ixw_cmp -- the order of two valid words of one gen: negative, 0 or
 * positive as @a is below, equal to or above @b. Two words at the same
 * position of the order (two F or two C words of one stage with different
 * values, which agreement forbids for C) compare equal. */
static inline int
kv_ixw_cmp(uint64_t a, uint64_t b)
{
	uint64_t ka = kv_ixw_position(a), kb = kv_ixw_position(b);

	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (kv_ixw_tag(a) == KV_IXW_P && kv_ixw_ballot(a) != kv_ixw_ballot(b))
		return kv_ixw_ballot(a) < kv_ixw_ballot(b) ? -1 : 1;
	return 0;
}

/* kv_ixw_implied -- the decided value body of stage s-1 that a valid word of
 * stage s >= 1 implies; for a P word the value is in its record, so this
 * returns false for P words of stage 2 and 3 (stage 1 implies EMPTY). */
static inline bool
kv_ixw_implied(uint64_t w, uint64_t *body)
{
	unsigned stage = kv_ixw_stage(w);

	if (stage == 1) {
		*body = kv_ixw_body(0, false, 0, 0); /* EMPTY */
		return true;
	}
	if (kv_ixw_tag(w) == KV_IXW_P)
		return false;
	/* Stage 2 implies LIVE and stage 3 DEAD, both unfrozen, with the
	 * word's own fingerprint and location. */
	*body = kv_ixw_body(stage - 1, false, kv_ixw_fp(w), kv_ixw_loc(w));
	return true;
}

#endif /* KV_INDEX_WORD_H */
