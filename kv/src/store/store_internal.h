/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/store_internal.h -- what the store's source files share
 * (private to kv/): the client handle, its cache of key locations, and the
 * replicated-register steps of swarm.c that store.c composes into the
 * operations of kv/kv.h.
 */
#ifndef KV_STORE_INTERNAL_H
#define KV_STORE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <kv/index.h>
#include <kv/kv.h>

#include "kv/src/index/group.h"
#include "kv/src/store/layout.h"
#include "kv/src/store/recycle.h"
#ifdef KV_ST_TESTING
#include "kv/src/store/testing.h"
#endif

/* Scratch per member: a buffer, an in-place copy, a key and meta words. */
#define KV_ST_SCRATCH (KV_VALUE_MAX + KV_ST_IP_MAX + KV_KEY_MAX + (8u << 10))
/* Logs and object chunks are reserved on the nodes this much at a time. */
#define KV_ST_LOG_STEP (256u << 10)
#define KV_ST_OBJ_STEP 64u /* units */

/* One cached key: where its object is, and what this client last knew of
 * its own metadata slot on each node (the expected value of its next CAS;
 * SWARM-KV caches "the In-n-Out metadata" the same way, sect. 7.1). */
struct kv_st_cent {
	uint64_t hash;     /* 0: empty */
	uint64_t loc;
	uint64_t until;    /* used until then (CLOCK_MONOTONIC ns): the
	                    * index lookup or insert that found it plus L
	                    * (objects.c: what the grace before a reuse
	                    * assumes) */
	uint32_t klen;
	uint64_t top_ts;   /* the largest timestamp this client saw there */
	uint64_t mine[KV_MAX_NODES];
};

/* A value fetched for a tuple (kv__sw_read's result). */
struct kv_st_val {
	uint64_t meta;     /* the tuple returned, with its writer */
	unsigned writer;
	void *buf;
	size_t cap;
	size_t vlen;       /* full length, may exceed cap */
};

/* An object being created beside the index insert that maps it
 * (kv__sw_create_start). */
struct kv_st_create {
	bool active;               /* its round not yet finished */
	struct kv_ix_round round;
	struct kv_st_geo geo;
	struct kv_st_cent *e;
	const void *key, *val;     /* the caller's, until finished */
	uint64_t word, boff;
	struct kv_st_ohdr oh;
	struct kv_st_vhdr h;
	uint64_t ins;              /* the insert record: geo.loc */
	unsigned ins_slot;         /* ... and which of the id's it is */
	unsigned held;             /* members holding the word */
};

/* An object of a deleted key, and a list of them (objects.c). */
struct kv_st_obj {
	uint64_t off;      /* in the store region */
	uint64_t units;
	uint64_t at;       /* learnt dead then (CLOCK_MONOTONIC ns) */
};

struct kv_st_objs {
	struct kv_st_obj *v;
	size_t head, n, cap; /* v[head, n) */
};

/* A tombstoned object a sweep found, to check in the index. */
struct kv_st_ocand {
	uint64_t loc;
	uint32_t klen;
	unsigned char key[KV_KEY_MAX];
};

/* Candidates per sweep window, at most. */
#define KV_OBJ_CANDS 8u
/* Inserts of unknown outcome a client keeps to settle (objects.c). */
#define KV_OBJ_UNSURE 16u

struct kv_client {
	struct kv_ix_group g;      /* value connections (index region anchors membership) */
	struct kv_index *ix;
	struct kv_st_super sb;
	uint32_t region;           /* store region */
	unsigned cid, C;
	/* lease (lease.c): the id's claim word is kv_st_claim(id_tag, beat) */
	uint32_t id_tag;           /* this life's tag; 0: no id held */
	uint32_t beat;             /* the beat of the last renewal attempted */
	uint64_t id_word[KV_MAX_NODES]; /* the id's claim word on each member,
	                            * as last seen */
	uint64_t lease_ns;         /* L (kv_st_super.lease_ms) */
	uint64_t inflight_ns;      /* T: the longest a batch of any client is
	                            * in flight (kv_st_super.timeout_ms) */
	uint64_t lease_end;        /* nothing is posted from then on (the
	                            * groups' fence; 0 while claiming) */
	struct kv_st_seen {        /* another client's claim word on a member: */
		uint64_t word;     /* as last read */
		uint64_t since;    /* first read so (CLOCK_MONOTONIC ns) */
	} seen[KV_MAX_CLIENTS][KV_MAX_NODES];
	uint64_t watch_due;        /* when a word in seen[] may have stood
	                            * still for D: an operation from then on
	                            * renews early, to look (lease.c) */
	unsigned timeout_ms;
	uint64_t deadline;         /* current operation's, CLOCK_MONOTONIC ns */
	/* allocation */
	uint64_t chunk;            /* current object chunk + 1, 0 = none */
	uint64_t chunk_seq;        /* its claim's number (0 = none) */
	uint64_t seq_next;         /* the number of this id's next chunk claim */
	uint64_t obj_used, obj_mark; /* units of the chunk used, reserved */
	uint64_t log_used, log_mark; /* bytes of the client's log used, reserved */
	bool recycle;              /* kv_config.recycle */
	struct kv_recycle rc;      /* what its buffers hold (recycle.h) */
	uint64_t hz[KV_ST_HZ];     /* its hazard words (swarm.c), 0 = free */
	struct kv_ix_posted hz_from[KV_ST_HZ]; /* batches posted before and */
	struct kv_ix_posted hz_to[KV_ST_HZ];   /* by the end of the write-back
	                            * that used the slot */
	uint64_t hz_seq;
	uint64_t hz_free_at[KV_ST_HZ]; /* an earlier life's slot: taken until */
	uint64_t recover_at;       /* kv__st_log_recover() due (0: done) */
	uint64_t log_mark_open;    /* the log mark kv_open found: below it, the
	                            * earlier lives' buffers */
	/* clock */
	int64_t skew_ticks;        /* configured skew plus re-synchronisations */
	uint64_t last_ts;
	uint64_t tomb_nonce;     /* numbers this client's tombstones (kv_st_tomb) */
	/* cache */
	struct kv_st_cent *cache;
	unsigned ncache;           /* a power of two >= 4 (4-way sets), or 0 */
	unsigned cache_victim;     /* round-robin way to replace */
	unsigned char *val;        /* a value-sized scratch (write-backs) */
	struct kv_st_create cr;
	/* objects of deleted keys in this id's chunks (objects.c) */
	uint64_t **o_chunks;       /* per chunk: NULL if not this id's, else
	                            * a bit per 64-byte unit: queued dead, or
	                            * zeroed and not taken yet */
	uint64_t *o_spare;         /* the bitmap of the next chunk won */
	uint64_t o_nchunks;        /* this id's chunks */
	struct kv_st_objs o_dead;  /* learnt dead, in the order learnt */
	struct kv_st_objs o_sealed; /* zeroed on every node, until the batches
	                            * posted by then (o_posted) settle */
	struct kv_ix_posted o_posted;
	uint64_t o_carved;         /* fresh allocations (the sweep's pace) */
	uint64_t o_sweep_chunk, o_sweep_at; /* the sweep's cursor */
	uint64_t o_window;         /* bytes a sweep window reads */
	struct kv_st_ocand o_cand[KV_OBJ_CANDS];
	unsigned o_cand_n;
	uint64_t o_unsure[KV_OBJ_UNSURE]; /* locations of inserts that stopped
	                            * undecided (this life's, and those an
	                            * earlier life's insert records name) */
	uint8_t o_unsure_rec[KV_OBJ_UNSURE]; /* the insert record naming each
	                            * (KV_ST_INS_RECORDS: none) */
	unsigned o_unsure_n;
	unsigned o_rec;            /* the record of the last creation */
	void *zeros;               /* zeros the size of the largest object */
	struct kv_st_ohdr o_free;  /* the free header obj_zero() writes */
	struct kv_stats st;
#ifdef KV_ST_TESTING
	bool test_cache_forever;   /* kv__st_test_cache_forever() */
	bool test_no_verify;       /* kv__st_test_no_verify() */
	void (*test_wb_hook)(void *); /* kv__st_test_write_back_hook() */
	void *test_wb_arg;
	bool test_wb_unsafe;
	bool test_skip_renewal;    /* kv__st_test_skip_renewal() */
	uint64_t test_crash_left;  /* kv__st_test_crash_after() */
	int test_crash_at;         /* kv__st_test_crash_at() */
	bool test_hold_unsure;     /* kv__st_test_hold_unsure() */
	bool test_no_grace;        /* kv__st_test_no_grace() */
#endif
};

/* kv__st_test_point -- the client passes fault point @at: with
 * kv__st_test_crash_at(@at), it posts nothing more (testing.h). */
#ifdef KV_ST_TESTING
static inline void
kv__st_test_point(struct kv_client *c, enum kv_st_test_point at)
{
	if (c->test_crash_at == (int)at)
		c->test_crash_left = 0;
}
#else
#define kv__st_test_point(c, at) ((void)(c))
#endif

/* The outcome of a register write (kv__sw_write). */
enum kv_sw_result {
	KV_SW_DONE,     /* the value is written */
	KV_SW_DELETED,  /* the register holds a tombstone: the key is gone */
};

/* kv__st_cfg_check -- check what every client needs in @cfg; @create adds
 * the creation fields. Return: 0; KV_E_CONFIG (message set). */
int kv__st_cfg_check(const struct kv_config *cfg, bool create);

/* kv__st_index_cfg -- the index configuration of the store's @cfg, for
 * client @ctx (NULL: none, as kv_create and kv_rebuild) with id @cid. */
void kv__st_index_cfg(struct kv_index_config *icfg, const struct kv_config *cfg,
	struct kv_client *ctx, unsigned cid);

/* kv__st_region_len -- the length of region @id on member @m's node, 0 if
 * it has none. */
uint64_t kv__st_region_len(const struct kv_ix_member *m, uint32_t id);

/* kv__st_super_check -- whether @s is a store superblock of the group of
 * @n members named @uuid that fits a region of @len bytes. Return: 0; an
 * error code (message set). */
int kv__st_super_check(const struct kv_st_super *s, uint64_t len, unsigned n,
	const uint8_t uuid[16]);

/* kv__st_admit -- the value connections' admission test (kv_ix_admit_fn;
 * @ctx: the struct kv_client): member @i holds this cluster's store
 * superblock at its position. */
bool kv__st_admit(void *ctx, struct kv_ix_group *g, unsigned i);

/* kv__st_open -- kv_open() with the yield hook of kv_ix_group_opts for the
 * client's groups (its own and its index's). */
int kv__st_open(struct kv_client **out, const struct kv_config *cfg, void (*yield)(void *),
	void *yield_arg);

/* kv__st_lease_claim -- take a free client id: CAS 0 -> kv_st_claim(tag,
 * 0) on every usable member until one id is held on f+1 (a loser undoes
 * its CASes), and start its lease. Return: 0; KV_E_UNAVAILABLE (no
 * majority, or every id taken); -errno of getrandom. */
int kv__st_lease_claim(struct kv_client *c);

/* kv__st_lease_keep -- at an operation's start (c->deadline set): unless
 * the lease covers the operation, renew it (a new beat on f+1 members, +1
 * round trip every L - timeout) and, in the same round, watch the other
 * clients' claim words; free the ids of those silent for
 * kv__st_suspect_ns() and clear their hazard words (+2-4 round trips, only
 * then). Return: 0; -EOWNERDEAD if f+1 members show the id is no longer
 * this life's (it was taken for dead: the client must take a new one);
 * KV_E_UNAVAILABLE (the lease stays as it was). */
int kv__st_lease_keep(struct kv_client *c);

/* kv__st_lease_release -- give the id back: CAS its word -> 0 on every
 * usable member. Return: 0; KV_E_UNAVAILABLE if f+1 members still hold
 * it (the others free it after the suspicion time). */
int kv__st_lease_release(struct kv_client *c);

/* kv__st_suspect_ns -- how long a claim word must stand still on a node
 * before others zero it there: (L + T) + (L + T)/16 (lease.c). */
uint64_t kv__st_suspect_ns(const struct kv_client *c);

/* kv__st_retry -- between two rounds of one step: KV_E_UNAVAILABLE once
 * the operation's deadline passed, else 0, after a short pause if the
 * round reached nobody (@idle), so the reconnect thread can run. */
int kv__st_retry(struct kv_client *c, bool idle);

/* kv__st_log_alloc -- a buffer of @bytes (a multiple of KV_ST_BUF_UNIT)
 * of this client's log for its write of timestamp @ts to the object @loc:
 * a freed one (recycle.h), else one never used: the ptr field for a
 * metadata word into *@ptr and the region offset into *@off.
 * Return: 0; -ENOSPC when the log is full and nothing retired can be
 * freed; -EOVERFLOW when timestamps are used up; KV_E_UNAVAILABLE. */
int kv__st_log_alloc(struct kv_client *c, uint64_t loc, uint64_t ts, uint32_t bytes,
	uint64_t *ptr, uint64_t *off);

/* kv__st_reclaim -- free the retired buffers whose batches have settled
 * and that no hazard word on f+1 members names (one round trip); with
 * @wait, wait for them to settle until the operation's deadline.
 * Return: 0; KV_E_UNAVAILABLE; -ENOMEM. */
int kv__st_reclaim(struct kv_client *c, bool wait);

/* kv__st_log_recover -- take back what an earlier life of this client id
 * left below its log mark: every intact copy of one of its writes found on
 * the members stays live (until superseded, as any), the rest is retired.
 * Best effort: skipped (all of it stays in use) unless every member
 * answers and memory suffices. Return: nothing (void). */
void kv__st_log_recover(struct kv_client *c);

/* kv__st_log_pressed -- whether this client's log is more than half
 * handed out and less than an eighth of it is free: the sweep of live
 * buffers (recycle.h, kv__rc_sweep) runs then. */
bool kv__st_log_pressed(const struct kv_client *c);

/* kv__st_unmapped -- the object @loc is never mapped (an insert that
 * lost): its buffers are retired. */
void kv__st_unmapped(struct kv_client *c, uint64_t loc);

/* kv__st_superseded -- the word @top of writer @w is on f+1 members of
 * @loc, each holding it or more, persisted: this client's buffers of
 * writes below it there are retired (and reclaimed now and then). */
void kv__st_superseded(struct kv_client *c, uint64_t loc, uint64_t top, unsigned w);

/* kv__st_log_off -- the region offset of writer @w's buffer @ptr. */
uint64_t kv__st_log_off(const struct kv_client *c, unsigned w, uint64_t ptr);

/* kv__st_ts_guess -- Safe-Guess's guessTs() (S5): this client's clock in
 * ticks, above every timestamp it used before and above @above (S11's
 * fresh timestamp: above the larger one it met). */
uint64_t kv__st_ts_guess(struct kv_client *c, uint64_t above);

/* kv__st_ts_resync -- the clock was behind @seen_ts: move it past (SWARM
 * sect. 6: re-synchronise on a stale guess). */
void kv__st_ts_resync(struct kv_client *c, uint64_t seen_ts);

/* kv__sw_vhdr -- fill @h for the write @meta by @writer of @val to @loc. */
void kv__sw_vhdr(struct kv_st_vhdr *h, uint64_t meta, unsigned writer, uint64_t loc,
	const void *val, uint32_t vlen);

/* kv__sw_vhdr_ok -- whether @h followed by its value at @val is an intact
 * copy of the write @meta by @writer to @loc. */
bool kv__sw_vhdr_ok(const struct kv_st_vhdr *h, const void *val, uint64_t meta,
	unsigned writer, uint64_t loc);

/* kv__sw_create_start -- start writing a new object at @geo for @key with
 * first value @val (nobody can know it before the index maps it, so the
 * value is written VERIFIED at once) and return: the batches are in flight
 * to every member; @e, @key and @val must stay valid until
 * kv__sw_create_finish(). Return: 0; -ENOSPC; -E2BIG (RAW). */
int kv__sw_create_start(struct kv_client *c, const struct kv_st_geo *geo,
	struct kv_st_cent *e, const void *key, const void *val, uint32_t vlen);

/* kv__sw_create_finish -- wait until the object started is on f+1 members
 * (nothing if none is in flight). Any use of the group before finishing
 * (key_at() from the index) calls it first. Return: 0; KV_E_UNAVAILABLE. */
int kv__sw_create_finish(struct kv_client *c);

/* kv__sw_write -- Safe-Guess WRITE (S4-S11) of @val to the object @geo.
 * Return: 0 with *@res; KV_E_UNAVAILABLE; -ENOSPC. */
int kv__sw_write(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	const void *val, uint32_t vlen, enum kv_sw_result *res);

/* kv__sw_read -- Safe-Guess READ (R11-R21) of the object @geo into @v.
 * Return: 0 (v->meta 0: empty; a tombstone, kv_st_is_tomb(): deleted);
 * KV_E_UNAVAILABLE. */
int kv__sw_read(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	struct kv_st_val *v);

/* Whose tombstone came first on f+1 members (the first delete words). */
struct kv_sw_gone {
	bool won;   /* this delete's: no delete of this incarnation had
	             * completed or been reported when it began */
	bool gone;  /* another delete's: it removed the incarnation, and
	             * this delete comes after it (-ENOENT) */
};                  /* neither: the deletes split the members answered */

/* kv__sw_delete -- write the tombstone @tomb (kv_st_tomb(), one number per
 * kv_delete() call); *@gone as above.
 * Return: 0; KV_E_UNAVAILABLE. */
int kv__sw_delete(struct kv_client *c, const struct kv_st_geo *geo, struct kv_st_cent *e,
	uint64_t tomb, struct kv_sw_gone *gone);

/* kv__sw_key_read -- the key stored in the object at @loc (the index's
 * key_at): read its header from f+1 nodes and take an intact one.
 * Return: 0; -ENOENT if none holds an object there; KV_E_UNAVAILABLE. */
int kv__sw_key_read(struct kv_client *c, uint64_t loc, void *buf, size_t cap, size_t *len);

/* kv__st_obj_init -- allocate what the reuse of objects needs.
 * Return: 0; -ENOMEM. */
int kv__st_obj_init(struct kv_client *c);

/* kv__st_obj_forget -- drop what this client knows of its id's chunks and
 * dead objects (its id was given up: the next holder finds them). */
void kv__st_obj_forget(struct kv_client *c);

/* kv__st_obj_fini -- release all of it (objects not yet reused stay on
 * the nodes, tombstoned: the id's next life finds them). */
void kv__st_obj_fini(struct kv_client *c);

/* kv__st_obj_chunk_spare -- allocate the bitmap the next chunk of this
 * id takes (before it is claimed). Return: 0; -ENOMEM. */
int kv__st_obj_chunk_spare(struct kv_client *c);

/* kv__st_obj_chunk_mine -- chunk @idx belongs to this client's id (won
 * now, or found at registration): it takes the spare bitmap. */
void kv__st_obj_chunk_mine(struct kv_client *c, uint64_t idx);

/* Dead objects an operation may learn: kv__st_obj_reserve() makes room. */
#define KV_OBJ_RESERVE 4u

/* kv__st_obj_reserve -- room for KV_OBJ_RESERVE more dead objects, before
 * an operation takes effect (kv__st_obj_dead never allocates).
 * Return: 0; -ENOMEM. */
int kv__st_obj_reserve(struct kv_client *c);

/* kv__st_obj_chunks_load -- at registration, after the object mark
 * (c->chunk_seq, c->obj_used) is loaded: find the chunks of this client's
 * id, which of them is the mark's (c->chunk), the number of its next claim
 * (c->seq_next), and take a chunk an earlier life won and never marked as
 * the current one (kv/DESIGN.md, "Allocation without a coordinator").
 * Every node that answers within the operation's deadline is read; a chunk
 * missed is not swept by this life. Return: 0; -ENOMEM; KV_E_UNAVAILABLE
 * (fewer than f+1 answered). */
int kv__st_obj_chunks_load(struct kv_client *c);

/* kv__st_obj_dead -- the object of @klen-byte key at @loc is over for
 * good: its tombstone is on f+1 nodes and the index no longer maps it, or
 * its insert lost (never mapped). Queued for reuse if it lies in a chunk
 * of this client's id and is not queued yet. Never fails (out of memory:
 * it stays unused; a later sweep may find it). */
void kv__st_obj_dead(struct kv_client *c, uint64_t loc, uint32_t klen);

/* kv__st_obj_unsure -- the insert that created the object at @loc stopped
 * with its outcome unknown (KV_E_UNAVAILABLE and the like): settle it later
 * (kv__st_obj_settle). @rec: the insert record that names it (kept until
 * it is settled), KV_ST_INS_RECORDS if none. Forgotten if KV_OBJ_UNSURE
 * are waiting already (kv_stats.objects_unsure_dropped). */
void kv__st_obj_unsure(struct kv_client *c, uint64_t loc, unsigned rec);

/* kv__st_obj_record -- the insert record the next creation writes: the
 * last creation's, unless an insert not settled yet still needs it. */
unsigned kv__st_obj_record(struct kv_client *c);

/* kv__st_obj_unsure_load -- at registration: the insert record(s) an
 * earlier life of this id left on f+1 members join the unsure list.
 * Return: 0; KV_E_UNAVAILABLE; transport errors. */
int kv__st_obj_unsure_load(struct kv_client *c);

/* kv__st_obj_settle -- settle one unsure insert, if any: mapped, or dead
 * for good (kv_index_abandon) and queued for reuse; kept on any error.
 * Return: nothing (an error leaves it for a later call). */
void kv__st_obj_settle(struct kv_client *c);

/* kv__st_obj_take -- an object of exactly @units 64-byte units for an
 * insert into *@off: a dead one whose grace is over, zeroed now on every
 * node (one round trip; none if a node is away). Return: 1 with *@off; 0
 * if none; -ENOMEM (nothing changed). */
int kv__st_obj_take(struct kv_client *c, uint64_t units, uint64_t *off);

/* kv__st_obj_sweep -- every KV_OBJ_SWEEP_EVERY calls (one per fresh
 * allocation), read the next window of this id's chunks from f+1 nodes
 * and queue the objects tombstoned on f+1 that the index no longer maps
 * (unmapping those it still does): the deletes of other clients, and the
 * dead objects an earlier life of the id left. Return: nothing (a node
 * away: later). */
void kv__st_obj_sweep(struct kv_client *c);

/* kv__st_unmapped_check -- whether the index no longer maps @key to @loc,
 * after unmapping it if it did. Return: 0 if so; errors. */
int kv__st_unmapped_check(struct kv_client *c, const void *key, size_t klen, uint64_t loc);

/* kv__st_ohdr_check -- whether @p (@rest bytes readable) holds the intact
 * header and key of an object at @off of the store region, into *@oh. */
bool kv__st_ohdr_check(const unsigned char *p, uint64_t rest, uint64_t off,
	struct kv_st_ohdr *oh);

#endif /* KV_STORE_INTERNAL_H */
