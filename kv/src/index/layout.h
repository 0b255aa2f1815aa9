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
 * bucket's address is a function of its place in the tree: no allocator, no
 * directory to keep consistent, and no address is ever reused (every word
 * of the index has gen KV_IX_GEN; word.h keeps the gen field for the
 * compaction that would reuse addresses, not built). A bucket not yet
 * created is zero memory, which never reads as a valid word.
 *
 * Bucket (128 bytes, 16 words):
 *   w0   h0: the header, KV_IXB_H0_MARK | depth | index (kv_ixb_h0()),
 *        installed last when the bucket is created, so a valid h0 on a node
 *        means the node holds the bucket's initial words
 *   w1   h1: the forward word, a consensus word (word.h) whose stage 0 is
 *        NONE and stage 1 FWD: the bucket split and its children are
 *        installed on f+1 members
 *   w2.. the KV_IXB_SLOTS slot words
 */
#ifndef KV_INDEX_LAYOUT_H
#define KV_INDEX_LAYOUT_H

#include <stdint.h>

#include <pm/area.h>

#include "kv/src/index/word.h"

#define KV_IX_SUPER_MAGIC UINT64_C(0x31584449564b4d44) /* "DMKVIDX1" */
#define KV_IX_SUPER_VERSION 1
#define KV_IX_SUPER_SIZE 4096u

/* The gen of every index word (see above). */
#define KV_IX_GEN 1u

#define KV_IXB_SIZE 128u
#define KV_IXB_WORDS (KV_IXB_SIZE / 8)
#define KV_IXB_H0 0u
#define KV_IXB_H1 1u
#define KV_IXB_SLOT0 2u
#define KV_IXB_SLOTS (KV_IXB_WORDS - KV_IXB_SLOT0)
#define KV_IXB_H0_MARK (UINT64_C(0xB) << 60)
/* Deepest bucket: the heap index must fit h0's 48 bits. */
#define KV_IXB_MAX_DEPTH 46u

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

/* kv_ixb_h0 -- the header word of bucket @idx */
static inline uint64_t
kv_ixb_h0(uint64_t idx)
{
	return KV_IXB_H0_MARK | (uint64_t)kv_ixb_depth(idx) << 48 | idx;
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

/* The initial words of a created bucket. */
#define KV_IX_EMPTY_WORD kv_ixw_make(KV_IXW_C, KV_IX_GEN, kv_ixw_body(0, false, 0, 0))
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
