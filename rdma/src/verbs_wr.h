/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/verbs_wr.h -- the pure half of the verbs backend: turning a
 * validated batch into one chain of work requests, and turning work
 * completions back into results and error codes. No device is touched
 * here, so all of it is unit-tested without an RDMA NIC
 * (tests/verbs_wr_test.cc). Not installed.
 *
 * One operation becomes exactly one work request, in batch order, on one
 * RC queue pair, posted with one ibv_post_send (one doorbell):
 *
 *   READ     IBV_WR_RDMA_READ into the bounce buffer; copied to op->local
 *            at completion.
 *   WRITE    IBV_WR_RDMA_WRITE from the bounce buffer (the caller stages
 *            op->local there first, so the user buffer is read at post
 *            time as rdma.h promises); IBV_SEND_INLINE when len <=
 *            max_inline.
 *   CAS/FAA  IBV_WR_ATOMIC_CMP_AND_SWP / _FETCH_AND_ADD; the HCA writes the
 *            old value into an 8-aligned 8-byte slot of the bounce buffer.
 *   PERSIST  an RDMA READ of the last 8-aligned word of the range into a
 *            scratch slot: librpma's "appliance persistency method". The
 *            responder generates the read response only after it has
 *            placed the earlier writes of the same queue pair in memory
 *            (IB orders a read behind earlier writes, and the PCIe read it
 *            issues flushes the posted writes ahead of it). Where the
 *            target memory is in the persistence domain once placed
 *            (ADR/eADR platform, region on a DAX mapping, DDIO off for the
 *            NIC's port) that makes them durable. It covers the writes of
 *            this queue pair -- this connection's earlier batches too --
 *            not those of other connections, which persist their own. A
 *            node whose pool is an ordinary page-cache file gets ordering,
 *            not durability: the node logs this when the verbs server
 *            starts.
 *
 * Fences. IB executes the requests of one RC queue pair in order at the
 * responder, except that an RDMA READ or atomic may still be outstanding
 * (its response not yet back) when a later WRITE or atomic is executed:
 * the responder may run a WRITE that follows a READ before the READ has
 * fetched its data, and nothing stops an atomic that follows a persist
 * read from taking effect before that read's response (our durability
 * certificate) is generated. IBV_SEND_FENCE makes the requester hold a
 * work request until every earlier READ and atomic of the queue pair has
 * completed. The rule here (rdma__verbs_wr_needs_fence):
 *   - a WRITE, CAS or FAA is fenced if any READ, PERSIST, CAS or FAA comes
 *     before it in the batch;
 *   - a READ or PERSIST is fenced if any CAS or FAA comes before it: the
 *     read must observe, or make durable, the atomic's result, and we do
 *     not rely on a read issued while an atomic is outstanding being
 *     executed after the atomic's write-back (HCAs may execute atomics in
 *     a separate unit); the fence costs one wait for the atomic response.
 * A READ or PERSIST after plain READs / PERSISTs is not fenced: the
 * responder serves reads in order, and a read has no effect a later read
 * could see too early, so a batch of reads stays one round trip instead of
 * one per read. "write, persist, CAS, persist" is therefore
 *     W,  R(flush),  CAS|FENCE,  R(flush)|FENCE
 * which is the ordering rdma.h promises: the CAS waits for the first flush
 * response, the second flush for the CAS response. Each fence costs the
 * wait for the response it stands behind, so this batch takes about three
 * network round trips of latency while costing one doorbell and one
 * completion (the "one round trip" that rdma_stats counts); without the
 * fences IB would let the CAS be seen before the buffer is durable.
 *
 * Completions. The queue pair is created with sq_sig_all = 0 and only the
 * last work request is IBV_SEND_SIGNALED, so a successful batch yields one
 * completion. An error completion, however, is generated for whichever
 * request failed (signalled or not), and every later one is flushed with
 * IBV_WC_WR_FLUSH_ERR; so the first completion of a batch that is not a
 * success of the last request is its failure. wr_id carries the batch
 * sequence number and the operation index (rdma__verbs_wr_id), so
 * completions of an abandoned batch are recognised and ignored.
 *
 * Atomic result byte order. The IB specification has the responder treat
 * the target as a 64-bit integer in its own byte order and the requester
 * receive the original value in host order; rdma-core passes the 8 bytes
 * through untouched, and rxe and most HCAs follow the spec. Some Mellanox
 * HCAs can only return the value big-endian on little-endian hosts; the
 * mlx5 kernel driver then advertises atomic_cap IBV_ATOMIC_NONE instead of
 * IBV_ATOMIC_HCA. So results are delivered as they are (host order), and
 * the verbs client refuses a device whose atomic_cap is IBV_ATOMIC_NONE
 * (RDMA_E_NO_DEVICE) rather than return byte-swapped old values.
 */
#ifndef RDMA_SRC_VERBS_WR_H
#define RDMA_SRC_VERBS_WR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include <rdma/rdma.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where region i is, as the node's WELCOME told it. */
struct rdma__verbs_remote {
	uint64_t addr;   /* virtual address of the region on the node */
	uint64_t length; /* bytes */
	uint32_t rkey;
};

/* The registered local bounce buffer. */
struct rdma__verbs_bounce {
	void *base;      /* its address in this process */
	uint32_t size;   /* bytes */
	uint32_t lkey;
};

/*
 * Bytes a bounce buffer needs for any valid batch: every READ/WRITE is
 * rounded up to 8 bytes (at most 7 extra) and every CAS/FAA/PERSIST takes
 * one 8-byte slot, so RDMA_BATCH_MAX_BYTES + 8 per operation is enough.
 */
#define RDMA__VERBS_BOUNCE_SIZE (RDMA_BATCH_MAX_BYTES + 8u * RDMA_BATCH_MAX_OPS)

/* Bits of wr_id that hold the operation index (RDMA_BATCH_MAX_OPS <= 256). */
#define RDMA__VERBS_WR_INDEX_BITS 8

/* A batch as work requests, plus where each operation's bytes are. */
struct rdma__verbs_wrs {
	unsigned n;                                /* work requests (= ops) */
	uint64_t seq;                              /* batch sequence number */
	struct ibv_send_wr wr[RDMA_BATCH_MAX_OPS]; /* chained through .next */
	struct ibv_sge sge[RDMA_BATCH_MAX_OPS];    /* one per work request */
	/* Offset in the bounce buffer of op i's data (READ, WRITE), old
	 * value (CAS, FAA) or scratch word (PERSIST). */
	uint32_t off[RDMA_BATCH_MAX_OPS];
	uint32_t used;                             /* bounce bytes laid out */
};

/**
 * rdma__verbs_wr_id -- the wr_id of operation @index of batch @seq (only
 * the low 56 bits of @seq are kept).
 */
uint64_t rdma__verbs_wr_id(uint64_t seq, unsigned index);

/**
 * rdma__verbs_wr_needs_fence -- whether operation @index of @b is posted
 * with IBV_SEND_FENCE (the rule in the comment at the top of this file).
 */
bool rdma__verbs_wr_needs_fence(const struct rdma_batch *b, unsigned index);

/**
 * rdma__verbs_wr_build -- lay out @b in @bounce and build its work-request
 * chain in *@out (the head is out->wr[0]; the chain points into *@out, so
 * *@out must stay put until ibv_post_send has returned).
 * @remote: the @nregions regions of the node (index = region id).
 * @max_inline: largest WRITE sent inline (the queue pair's granted
 * max_inline_data; 0 disables inlining).
 * @seq: batch sequence number for the wr_ids.
 *
 * @b should have passed rdma__batch_check() against the same regions; the
 * builder still refuses what would make a wrong work request.
 * Return: 0; -EINVAL for an empty or oversized batch, an unknown operation,
 * a region id >= @nregions, a range outside its region, a CAS/FAA that is
 * not 8 bytes at an 8-aligned remote address, or a layout that does not fit
 * @bounce->size. Nothing is written to the bounce buffer.
 */
int rdma__verbs_wr_build(const struct rdma_batch *b,
	const struct rdma__verbs_remote *remote, unsigned nregions,
	const struct rdma__verbs_bounce *bounce, uint32_t max_inline,
	uint64_t seq, struct rdma__verbs_wrs *out);

/**
 * rdma__verbs_wr_stage -- copy every WRITE's source (op->local) into its
 * place in the bounce buffer at @bounce_base. Call after a successful
 * rdma__verbs_wr_build() and before posting.
 */
void rdma__verbs_wr_stage(const struct rdma_batch *b,
	const struct rdma__verbs_wrs *wrs, void *bounce_base);

/**
 * rdma__verbs_wr_deliver -- after the batch completed successfully, copy
 * every READ's data from the bounce buffer at @bounce_base into op->local
 * and every CAS/FAA old value into *op->result (if not NULL), as the HCA
 * delivered it (host byte order, see the top of this file).
 */
void rdma__verbs_wr_deliver(const struct rdma_batch *b,
	const struct rdma__verbs_wrs *wrs, const void *bounce_base);

/**
 * rdma__verbs_wc_status -- our code for a work-completion status:
 *   IBV_WC_SUCCESS                                   -> 0
 *   IBV_WC_REM_ACCESS_ERR (the node refused the rkey
 *     or range: region re-registered or shrunk)      -> RDMA_E_BOUNDS
 *   IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR,
 *   IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_REM_ABORT_ERR,
 *   IBV_WC_WR_FLUSH_ERR, IBV_WC_FATAL_ERR (peer gone,
 *     path lost, queue pair already in error)        -> RDMA_E_CONN
 *   anything else (a request the local or remote HCA
 *     rejected as malformed or unsupported: a bug
 *     here or a device limit, which reconnecting
 *     does not fix)                                  -> -EIO
 * Every non-zero result leaves the queue pair in the error state, so the
 * connection is broken either way.
 */
int rdma__verbs_wc_status(enum ibv_wc_status status);

/**
 * rdma__verbs_wc_classify -- what completion @wc means for the batch in
 * flight, built as @wrs.
 * Return: 1 if it is the successful completion of the last (signalled)
 * work request: the batch is done; 0 if it says nothing about this batch
 * (a stale completion of an abandoned batch, or a success of an earlier
 * request); otherwise the batch's failure as rdma__verbs_wc_status() maps
 * it (RDMA_E_PROTO for a success that names no request of the batch).
 */
int rdma__verbs_wc_classify(const struct ibv_wc *wc,
	const struct rdma__verbs_wrs *wrs);

/*
 * How a verbs client reaches the node's queue pairs, as the verbs server
 * puts it into WELCOME.addr (RDMA__VERBS_ADDR_LEN bytes, little-endian):
 *     u16 rdma_cm port | u16 version (1) | u32 0 | u64 ticket
 * The client connects with rdma_cm to the control host at that port and
 * presents the ticket as the connection's private data:
 *     u32 RDMA__VERBS_PRIV_MAGIC | u16 version (1) | u16 0 | u64 ticket
 * A ticket is random, issued by one admitted HELLO (token checked) and
 * good for one connection, so the rdma_cm port admits only clients the
 * control port admitted. (It keeps strangers from getting a queue pair;
 * it is not a defence against a peer that can read the network.)
 */
#define RDMA__VERBS_ADDR_LEN 16
#define RDMA__VERBS_PRIV_LEN 16
#define RDMA__VERBS_PRIV_MAGIC 0x56444d52u /* "RMDV" */
#define RDMA__VERBS_ADDR_VERSION 1

/**
 * rdma__verbs_addr_encode -- WELCOME.addr for rdma_cm port @port and @ticket.
 */
void rdma__verbs_addr_encode(uint8_t out[RDMA__VERBS_ADDR_LEN], uint16_t port,
	uint64_t ticket);

/**
 * rdma__verbs_addr_decode -- parse WELCOME.addr (@len bytes).
 * Return: 0; RDMA_E_PROTO unless it is exactly RDMA__VERBS_ADDR_LEN bytes
 * of version 1 with a non-zero port and zero reserved bytes.
 */
int rdma__verbs_addr_decode(const uint8_t *addr, size_t len, uint16_t *port,
	uint64_t *ticket);

/**
 * rdma__verbs_priv_encode -- the connection private data carrying @ticket.
 */
void rdma__verbs_priv_encode(uint8_t out[RDMA__VERBS_PRIV_LEN],
	uint64_t ticket);

/**
 * rdma__verbs_priv_decode -- parse connection private data (@len bytes; a
 * transport may pad it, so longer is accepted and the rest ignored).
 * Return: 0; RDMA_E_PROTO (NULL, short, wrong magic or version).
 */
int rdma__verbs_priv_decode(const void *priv, size_t len, uint64_t *ticket);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_SRC_VERBS_WR_H */
