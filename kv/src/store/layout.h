/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/layout.h -- where the store keeps values in a memory node's
 * store region, and the words that replicate them (private to kv/).
 *
 * Every node of the group holds the same layout at the same offsets, so one
 * offset (and one 64-bit metadata word) means the same thing on all of them:
 *
 *   0            superblock (struct kv_st_super, 4 KiB reserved; its last
 *                64 bytes count repairs: KV_ST_COUNT_OFF)
 *   id_off       client-id claim words, one per client id: 0 (free), or
 *                the owner's tag << 32 | its lease beat (kv_st_claim())
 *   omark_off    per-client object marks: the number of the claim of the
 *                current chunk << 32 | units used
 *   lmark_off    per-client log marks: bytes of the client's log reserved
 *   hz_off       per-client hazard words, KV_ST_HZ each: the buffers the
 *                client is writing back into (kv_st_hz(); below)
 *   chunk_off    object-chunk claim words, one per chunk: the claim's number
 *                (rising per client id, from 1) << 8 | (owner id + 1)
 *   ins_off      per-client insert records, KV_ST_INS_RECORDS each: the
 *                locations of the objects its last insert and the inserts
 *                it has not settled yet created, each written with its
 *                object (hints for the id's next life: objects.c,
 *                kv_index_abandon)
 *   obj_off      object chunks, chunk_bytes each
 *   log_off      one log of log_bytes per client id: out-of-place buffers
 *
 * Object (one per key incarnation, same offset on every node; its location
 * for the index is (offset / 64) << 4 | ip_class):
 *
 *   0            meta[C]: one In-n-Out metadata word per client id (writer)
 *   8C           del: the first delete word (below)
 *   8C + 8       struct kv_st_ohdr: magic, key length, in-place capacity,
 *                checksum of header and key
 *   8C + 40      the key, padded to 8 bytes
 *   ip_off       the in-place copy: struct kv_st_vhdr + value (ip_cap bytes)
 *   tsl_off      tsl[C]: one timestamp-lock word per writer
 *
 * so a get reads meta, key and in-place copy with one READ of
 * [0, tsl_off) (SWARM, seed 000 sect. 4.4: "both can be read in a single
 * operation"), and the other replicas' meta arrays with a READ of 8C bytes.
 *
 * A dead object zeroed for reuse (objects.c) is zeros but for a free
 * header at 8C + 8: a struct kv_st_ohdr with magic KV_ST_FREE_MAGIC, klen
 * 0, ip_cap its size in KV_ST_UNITs, loc (offset / 64) << 4 and the
 * checksum of those fields. Readers take it as no header, as they take
 * zeros; it tells a later life of the client id the extent of an object
 * nobody maps, which zeros would not.
 *
 * First delete word (one per object and node; not in the paper): 0, then
 * kv_st_del() of the first tombstone that reached this node, set once by
 * CAS(0 -> del) in the batch that writes a tombstone into a slot -- the
 * delete's own, or a reader's write-back of one -- before that slot CAS. A
 * delete learns from the CAS's old value whether it was first here, and a
 * retry after a lost reply learns the same, since the word never changes
 * again: the order of overlapping deletes survives lost replies, which the
 * slots alone do not record (kv/DESIGN.md, "Delete").
 *
 * Metadata word (In-n-Out, seed 000 sect. 4.3 and Fig. 3; the paper gives
 * no widths): ts (42 bits, clock ticks since the store's epoch) << 22 |
 * ptr (21 bits, the writer's out-of-place buffer, 128-byte units from the
 * start of its log) << 1 | VERIFIED (bit 0; Safe-Guess's flag, GUESSED <
 * VERIFIED). With the default 10 us tick the timestamps last 2^42 ticks,
 * about 1.4 years from kv_create (kv/DESIGN.md, "Open limits"). The
 * writer is the slot's index, so words of one slot compare as
 * integers, and words of different slots by kv_st_order() = (ts, writer,
 * flag), the tuple order of Safe-Guess (sect. 3.2). 0 is the empty
 * register; a word with the maximal ts is a delete's tombstone (SWARM-KV
 * sect. 5.3.2), which nothing outranks. Its ptr field is a number the
 * deleting client draws per delete (kv_st_tomb()), so a delete tells its
 * own tombstone -- met again after a lost reply, or copied back into its
 * slot by a reader -- from one an earlier delete left (kv__sw_delete).
 *
 * Hazard word (not in the paper; kv/DESIGN.md, "Recycling"): 0, or
 * kv_st_hz(w, ptr) while the client copies a value into writer w's buffer
 * ptr on nodes that lack it (a write-back: an unconditional WRITE into a
 * buffer its owner may reuse). The owner reuses a retired buffer only once
 * f+1 nodes show no hazard naming it, and the reader publishes its hazard
 * on f+1 nodes, then checks that the word it copies is still the largest,
 * before it writes.
 *
 * Timestamp-lock word (sect. 3.3, one per writer per node): ts << 1 | mode
 * (1 = WRITE, 0 = READ); 0 is bottom. A writer's lock only ever sees its own
 * timestamps.
 *
 * Every word a client counts towards a majority was persisted in the batch
 * that read or changed it (kv/DESIGN.md, "Store: durability").
 */
#ifndef KV_STORE_LAYOUT_H
#define KV_STORE_LAYOUT_H

#include <stdint.h>

#include <pm/area.h>

#define KV_ST_SUPER_MAGIC UINT64_C(0x314f5453564b4d44) /* "DMKVSTO1" */
#define KV_ST_SUPER_VERSION 6 /* 2: the first delete word; 3: hazard words;
                               * 4: leases (claim words with beats);
                               * 5: insert records; 6: timeout_ms,
                               * KV_ST_INS_RECORDS insert records */
#define KV_ST_SUPER_SIZE 4096u
/* Insert records per client id (ins_off). */
#define KV_ST_INS_RECORDS 4u
/* Counters of repairs, in the superblock's last line (outside its
 * checksum): each an 8-byte word that clients add to on every node they
 * reach (kv_node_status_read reports them). */
#define KV_ST_COUNT_OFF (KV_ST_SUPER_SIZE - 64u)
#define KV_ST_COUNT_IDS_FREED 0u /* ids of clients taken for dead, freed */
#define KV_ST_COUNT_HAZARDS 1u   /* hazard words of those cleared */
#define KV_ST_COUNT_OBJECTS 2u   /* objects of deleted keys zeroed for reuse */

#define KV_ST_UNIT 64u
#define KV_ST_TS_BITS 42
#define KV_ST_PTR_BITS 21
/* Out-of-place buffers are aligned to this (ptr's unit). */
#define KV_ST_BUF_UNIT 128u
#define KV_ST_TS_MAX ((UINT64_C(1) << KV_ST_TS_BITS) - 1)
#define KV_ST_PTR_MAX ((UINT64_C(1) << KV_ST_PTR_BITS) - 1)
#define KV_ST_VERIFIED UINT64_C(1)
/* Most bytes of a client's log: what ptr can address. */
#define KV_ST_LOG_MAX ((KV_ST_PTR_MAX + 1) * KV_ST_BUF_UNIT)

#define KV_ST_TSL_WRITE UINT64_C(1)

/* kv_st_claim -- the claim word of the client life @tag (non-zero, random
 * per life) at lease beat @beat. A claim starts at beat 0; each renewal
 * of the lease CASes the word to the next beat on f+1 nodes, and other
 * clients zero a word they saw unchanged for longer than the suspicion
 * time (kv/DESIGN.md, "Client liveness"). */
static inline uint64_t kv_st_claim(uint32_t tag, uint32_t beat)
{
	return (uint64_t)tag << 32 | beat;
}

static inline uint32_t kv_st_claim_tag(uint64_t word)
{
	return (uint32_t)(word >> 32);
}

/* Hazard words per client: write-backs whose batches may still land. */
#define KV_ST_HZ 4u

/* kv_st_hz -- the hazard word naming writer @w's buffer @ptr (never 0).
 * It fills the low 32 bits; a publisher puts a sequence number of its own
 * in the high half, and owners compare the low half only. */
static inline uint64_t kv_st_hz(unsigned w, uint64_t ptr)
{
	return ptr << 8 | (uint64_t)(w + 1);
}

#define KV_ST_OBJ_MAGIC UINT64_C(0x4a424f564b4d4401)
/* The free header's magic (a struct kv_st_ohdr; "Object" above). */
#define KV_ST_FREE_MAGIC UINT64_C(0x45455246564b4d44) /* "DMKVFREE" */
/* In-place classes: 0 = none, c = 32 << c bytes (64 B .. 64 KiB). */
#define KV_ST_IP_CLASSES 12u

static inline uint64_t kv_st_meta(uint64_t ts, uint64_t ptr, int verified)
{
	return ts << 22 | ptr << 1 | (verified ? KV_ST_VERIFIED : 0);
}
static inline uint64_t kv_st_ts(uint64_t meta) { return meta >> 22; }
static inline uint64_t kv_st_ptr(uint64_t meta) { return (meta >> 1) & KV_ST_PTR_MAX; }
/* kv_st_tomb -- the tombstone numbered @nonce (its low KV_ST_PTR_BITS). */
static inline uint64_t kv_st_tomb(uint64_t nonce)
{
	return kv_st_meta(KV_ST_TS_MAX, nonce & KV_ST_PTR_MAX, 1);
}
static inline int kv_st_is_tomb(uint64_t meta) { return kv_st_ts(meta) == KV_ST_TS_MAX; }
/* kv_st_del -- the first delete word naming tombstone @tomb in writer @w's
 * slot: its number << 8 | w + 1 (never 0). */
static inline uint64_t kv_st_del(uint64_t tomb, unsigned w)
{
	return kv_st_ptr(tomb) << 8 | (uint64_t)(w + 1);
}

/* kv_st_order -- the Safe-Guess order of @meta in writer @w's slot:
 * (ts, writer, flag). 0 for the empty word. */
static inline uint64_t kv_st_order(uint64_t meta, unsigned w)
{
	if (meta == 0)
		return 0;
	return kv_st_ts(meta) << 8 | (uint64_t)w << 1 | (meta & KV_ST_VERIFIED);
}

/* The header of every value copy: the out-of-place buffer and the in-place
 * copy. hash is XXH3-128 over the other fields and the value, so a copy is
 * accepted only for the write (meta without flag, writer, object) it names:
 * a torn or stale in-place copy, or a buffer of another write, fails. */
struct kv_st_vhdr {
	uint64_t meta;     /* the write's word, VERIFIED bit clear */
	uint64_t loc;      /* the object */
	uint32_t writer;
	uint32_t vlen;
	uint64_t hash[2];
};

/* An object's header, written once when the object is created. */
struct kv_st_ohdr {
	uint64_t magic;    /* KV_ST_OBJ_MAGIC */
	uint32_t klen;
	uint32_t ip_cap;
	uint64_t loc;      /* its own location */
	uint64_t sum;      /* XXH3-64 of the fields above and the key */
};

/* The superblock each node holds at offset 0 of the store region. */
struct kv_st_super {
	struct pm_area_hdr area;
	uint8_t uuid[16];        /* the index group's id */
	uint32_t n;              /* members */
	uint32_t member;         /* this node's position */
	uint32_t max_clients;    /* C: writers, meta and lock words per object */
	uint32_t tick_ns;        /* clock tick of timestamps */
	uint64_t epoch_ns;       /* CLOCK_REALTIME of tick 0 */
	uint64_t id_off;
	uint64_t omark_off;
	uint64_t lmark_off;
	uint64_t hz_off;
	uint64_t chunk_off;
	uint64_t nchunks;
	uint64_t ins_off;
	uint64_t chunk_bytes;
	uint64_t obj_off;
	uint64_t log_off;
	uint64_t log_bytes;      /* per client */
	uint32_t repl;           /* enum kv_replication */
	uint32_t lease_ms;       /* client lease: kv_config.lease_ms */
	uint32_t timeout_ms;     /* the clients' longest operation timeout:
	                          * kv_config.timeout_ms at kv_create, at most
	                          * lease_ms (the bound on a batch in flight
	                          * that the suspicion time rests on) */
};

/* The geometry of one object, from its location, key length and C. */
struct kv_st_geo {
	uint64_t loc;
	uint64_t off;      /* in the store region */
	uint32_t klen;
	uint32_t ip_cap;
	uint32_t del_off;  /* 8C: the first delete word */
	uint32_t ohdr_off; /* 8C + 8 */
	uint32_t ip_off;
	uint32_t tsl_off;
	uint32_t size;     /* a multiple of KV_ST_UNIT */
};

/* Largest in-place copy: bigger values live out of place only, so an
 * insert's batch (key, in-place copy, buffer) fits RDMA_BATCH_MAX_BYTES. */
#define KV_ST_IP_MAX (16u << 10)

static inline uint32_t kv_st_ip_cap(unsigned cls) { return cls == 0 ? 0 : 32u << cls; }

/* kv_st_ohdr_off -- where an object's header starts among @C writers. */
static inline uint32_t kv_st_ohdr_off(unsigned C) { return 8u * C + 8u; }

/* kv_st_geo_make -- the geometry of an object at @loc for a key of @klen
 * bytes among @C writers. */
static inline struct kv_st_geo kv_st_geo_make(uint64_t loc, uint32_t klen, unsigned C)
{
	struct kv_st_geo g;

	g.loc = loc;
	g.off = (loc >> 4) * KV_ST_UNIT;
	g.klen = klen;
	g.ip_cap = kv_st_ip_cap((unsigned)(loc & 15));
	g.del_off = 8u * C;
	g.ohdr_off = kv_st_ohdr_off(C);
	g.ip_off = g.ohdr_off + (uint32_t)sizeof(struct kv_st_ohdr) + ((klen + 7u) & ~7u);
	g.tsl_off = g.ip_cap == 0 ? g.ip_off
		: g.ip_off + (uint32_t)sizeof(struct kv_st_vhdr) + g.ip_cap;
	g.size = (g.tsl_off + 8u * C + KV_ST_UNIT - 1) & ~(KV_ST_UNIT - 1);
	return g;
}

#endif /* KV_STORE_LAYOUT_H */
