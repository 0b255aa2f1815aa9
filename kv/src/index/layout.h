/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/layout.h -- where the index lives in a memory node's region
 * (private to kv/). Every member of a group has the same layout at the same
 * offsets (symmetric allocation), so one offset names a word on all of them.
 *
 *   0          superblock (struct kv_ix_super, 4 KiB reserved)
 *   mark_off   per-client record marks: 8 bytes per client id
 *   rec_off    records: recs_per_client 32-byte records per client id
 *   bucket_off buckets: 128 bytes each, heap-numbered (below)
 *
 * Buckets are numbered as a binary heap: the root is bucket 1 at depth 0;
 * bucket i at depth d covers the keys whose hash bits 0..d-1 spell the path
 * from the root to it (bit k picks the child at depth k+1), and splits into
 * buckets 2i and 2i + 1 (hash bit d 0 and 1; kv_ixb_for()). So a
 * bucket's address is a function of its place in the tree: no allocator and
 * no directory to keep consistent. A bucket not yet created is zero memory,
 * which never reads as a valid word. A leaf whose removed entries fill it
 * is compacted in place (split.c): its next *incarnation* (epoch) takes the
 * same address, and its words carry the gen of that epoch
 * (kv_ix_epoch_gen()), so a word of an earlier incarnation is never counted
 * in a later one and a late CAS expecting it fails.
 *
 * Bucket (128 bytes, 16 words):
 *   w0   h0: the header, KV_IXB_H0_MARK | pending | epoch | index
 *        (kv_ixb_h0()), installed last when an incarnation is installed on a
 *        node, so a live h0 of epoch e means the node holds that
 *        incarnation's words (or later ones)
 *   w1   h1: the forward word, a consensus word (word.h) whose stage 0 is
 *        NONE and stage 1 FWD: the bucket split and its children are
 *        installed on f+1 members
 *   w2.. the KV_IXB_SLOTS slot words
 */
#ifndef KV_INDEX_LAYOUT_H
#define KV_INDEX_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include <pm/area.h>

#include "kv/src/index/word.h"

#define KV_IX_SUPER_MAGIC UINT64_C(0x31584449564b4d44) /* "DMKVIDX1" */
#define KV_IX_SUPER_VERSION 2 /* 2: h0 carries the epoch */
#define KV_IX_SUPER_SIZE 4096u

#define KV_IXB_SIZE 128u
#define KV_IXB_WORDS (KV_IXB_SIZE / 8)
#define KV_IXB_H0 0u
#define KV_IXB_H1 1u
#define KV_IXB_SLOT0 2u
#define KV_IXB_SLOTS (KV_IXB_WORDS - KV_IXB_SLOT0)
#define KV_IXB_H0_MARK (UINT64_C(0xB) << 60)
#define KV_IXB_H0_PENDING (UINT64_C(1) << 59)
#define KV_IXB_H0_EPOCH_SHIFT 36
#define KV_IXB_H0_EPOCH_BITS 23
#define KV_IXB_H0_EPOCH_MASK ((UINT64_C(1) << KV_IXB_H0_EPOCH_BITS) - 1)
/* Deepest bucket: the heap index must fit h0's 36 bits. */
#define KV_IXB_MAX_DEPTH 35u

#define KV_IX_REC_SIZE 32u

/* The superblock each node holds at offset 0 of the index region. */
struct kv_ix_super {
	struct pm_area_hdr area; /* magic, version, sizes, checksum */
	uint8_t uuid[16];        /* the group's id, the same on every member */
	uint32_t n;              /* members of the group */
	uint32_t member;         /* this node's position, 0..n-1 */
	uint32_t max_clients;    /* client ids 0..max_clients-1 */
	uint32_t recs_per_client;
	uint64_t mark_off;
	uint64_t rec_off;
	uint64_t bucket_off;
	uint64_t nbuckets;       /* buckets 1..nbuckets-1 fit; a power of two */
};

/* kv_ixb_depth -- the depth of heap bucket @idx >= 1 */
static inline unsigned
kv_ixb_depth(uint64_t idx)
{
	return 63u - (unsigned)__builtin_clzll(idx);
}

/* kv_ixb_h0 -- the live header word of incarnation @epoch of bucket @idx */
static inline uint64_t
kv_ixb_h0(uint64_t idx, uint32_t epoch)
{
	return KV_IXB_H0_MARK | (uint64_t)(epoch & KV_IXB_H0_EPOCH_MASK) << KV_IXB_H0_EPOCH_SHIFT |
		idx;
}

/* kv_ixb_h0_parse -- whether @h0 is a header of bucket @idx (live or
 * pending); *@epoch, *@pending: what it says */
static inline bool
kv_ixb_h0_parse(uint64_t h0, uint64_t idx, uint32_t *epoch, bool *pending)
{
	uint64_t rest = h0 & ~KV_IXB_H0_PENDING &
		~(KV_IXB_H0_EPOCH_MASK << KV_IXB_H0_EPOCH_SHIFT);

	if (rest != kv_ixb_h0(idx, 0))
		return false;
	*epoch = (uint32_t)(h0 >> KV_IXB_H0_EPOCH_SHIFT & KV_IXB_H0_EPOCH_MASK);
	*pending = (h0 & KV_IXB_H0_PENDING) != 0;
	return true;
}

/* kv_ix_epoch_gen -- the gen (1..255) the words of incarnation @epoch
 * carry. Epochs wrap the 8-bit field, so a word of the incarnation 255
 * epochs back has the same gen: a CAS expecting it would have to land
 * that many compactions of one bucket late (kv/DESIGN.md "Compaction"). */
static inline unsigned
kv_ix_epoch_gen(uint32_t epoch)
{
	return epoch % 255u + 1u;
}

/* kv_ix_epoch_newer -- whether epoch @a is later than @b (modulo the
 * field: both are taken to be less than 2^22 incarnations apart) */
static inline bool
kv_ix_epoch_newer(uint32_t a, uint32_t b)
{
	uint32_t d = (a - b) & (uint32_t)KV_IXB_H0_EPOCH_MASK;

	return d != 0 && d < (1u << (KV_IXB_H0_EPOCH_BITS - 1));
}

/* kv_ixb_for -- the bucket at @depth on the path of hash @h: from the root,
 * hash bit k picks the child at depth k + 1 (2i for 0, 2i + 1 for 1) */
static inline uint64_t
kv_ixb_for(uint64_t h, unsigned depth)
{
	uint64_t idx = 1;

	for (unsigned k = 0; k < depth; k++)
		idx = 2 * idx + (h >> k & 1);
	return idx;
}

/* kv_ixb_off -- the node offset of word @w of bucket @idx */
static inline uint64_t
kv_ixb_off(const struct kv_ix_super *s, uint64_t idx, unsigned w)
{
	return s->bucket_off + idx * KV_IXB_SIZE + (uint64_t)w * 8;
}

/* kv_ix_rec_off -- the node offset of record @rec */
static inline uint64_t
kv_ix_rec_off(const struct kv_ix_super *s, uint32_t rec)
{
	return s->rec_off + (uint64_t)rec * KV_IX_REC_SIZE;
}

/* The initial words of a created bucket (epoch 0). */
#define KV_IX_EMPTY_WORD kv_ixw_make(KV_IXW_C, kv_ix_epoch_gen(0), kv_ixw_body(0, false, 0, 0))
/* h1's value at stage 1: FWD (the only value ever proposed for it). */
#define KV_IX_FWD_BODY kv_ixw_body(1, false, 0, 0)

/**
 * kv__ix_super_check -- validate a superblock read from a node whose region
 * is @region_len bytes, at position @member of an @n-member group.
 * Return: 0; PM_E_CORRUPT for an unformatted or damaged superblock (a node
 * being rebuilt reads so); PM_E_LAYOUT, PM_E_VERSION as pm_area_check();
 * KV_E_GROUP for geometry that does not fit the region, or another group
 * size or position. Thread-safety: pure (sets pm_errormsg).
 */
int kv__ix_super_check(const struct kv_ix_super *s, uint64_t region_len, unsigned n,
	unsigned member);

/**
 * kv__ix_super_make -- the superblock of a new group for a region of
 * @region_len bytes: geometry, @uuid, checksum.
 * Return: 0; -ENOSPC if the region cannot hold the records and a root.
 * Thread-safety: pure.
 */
int kv__ix_super_make(struct kv_ix_super *s, uint64_t region_len, const uint8_t uuid[16],
	unsigned n, unsigned member, unsigned max_clients, unsigned recs_per_client);

#endif /* KV_INDEX_LAYOUT_H */
