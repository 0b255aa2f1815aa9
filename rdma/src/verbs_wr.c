/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/verbs_wr.c -- work-request chains and completion mapping for the
 * verbs backend (see verbs_wr.h for the ordering and persistence argument).
 * Pure code: no device calls, no allocation.
 */
#include <errno.h>
#include <string.h>

#include "verbs_wr.h"

#define WR_INDEX_MASK ((1ull << RDMA__VERBS_WR_INDEX_BITS) - 1)
#define WR_SEQ_MASK (~0ull >> RDMA__VERBS_WR_INDEX_BITS)

_Static_assert(RDMA_BATCH_MAX_OPS <= (1 << RDMA__VERBS_WR_INDEX_BITS),
	"the operation index must fit in the low bits of wr_id");
_Static_assert(RDMA__VERBS_BOUNCE_SIZE <= UINT32_MAX,
	"bounce offsets are 32-bit");

/*
 * rdma__verbs_wr_id -- batch sequence number in the high bits, operation
 * index in the low ones.
 */
uint64_t
rdma__verbs_wr_id(uint64_t seq, unsigned index)
{
	return ((seq & WR_SEQ_MASK) << RDMA__VERBS_WR_INDEX_BITS) |
		((uint64_t)index & WR_INDEX_MASK);
}

/*
 * is_read_type -- whether an operation is a request whose response the
 * requester waits for (RDMA READ or atomic), i.e. one that a later request
 * may overtake unless fenced.
 */
static bool
is_read_type(uint8_t type)
{
	return type == RDMA_OP_READ || type == RDMA_OP_PERSIST ||
		type == RDMA_OP_CAS || type == RDMA_OP_FAA;
}

/*
 * is_atomic -- CAS or FAA.
 */
static bool
is_atomic(uint8_t type)
{
	return type == RDMA_OP_CAS || type == RDMA_OP_FAA;
}

/*
 * rdma__verbs_wr_needs_fence -- the fence rule of verbs_wr.h: writes and
 * atomics wait for every earlier read or atomic; reads wait for earlier
 * atomics only.
 */
bool
rdma__verbs_wr_needs_fence(const struct rdma_batch *b, unsigned index)
{
	bool reads_wait = b->ops[index].type == RDMA_OP_READ ||
		b->ops[index].type == RDMA_OP_PERSIST;

	for (unsigned j = 0; j < index; j++) {
		uint8_t t = b->ops[j].type;

		if (reads_wait ? is_atomic(t) : is_read_type(t))
			return true;
	}
	return false;
}

/*
 * remote_range -- the remote address of [offset, offset + len) of region
 * @r, or -EINVAL if the range is empty, leaves the region or overflows.
 */
static int
remote_range(const struct rdma__verbs_remote *r, uint64_t offset,
	uint64_t len, uint64_t *addr)
{
	if (len == 0 || offset > r->length || len > r->length - offset)
		return -EINVAL;
	if (r->addr > UINT64_MAX - r->length)
		return -EINVAL;
	*addr = r->addr + offset;
	return 0;
}

/*
 * build_one -- fill work request @i of @out for @op (its bounce offset is
 * already laid out in out->off[i]).
 */
static int
build_one(const struct rdma_op *op, unsigned i,
	const struct rdma__verbs_remote *r,
	const struct rdma__verbs_bounce *bounce, uint32_t max_inline,
	struct rdma__verbs_wrs *out)
{
	struct ibv_send_wr *wr = &out->wr[i];
	struct ibv_sge *sge = &out->sge[i];
	uint64_t raddr;
	uint64_t end;
	uint64_t word;

	sge->addr = (uintptr_t)bounce->base + out->off[i];
	sge->lkey = bounce->lkey;
	wr->sg_list = sge;
	wr->num_sge = 1;
	switch (op->type) {
	case RDMA_OP_READ:
	case RDMA_OP_WRITE:
		if (remote_range(r, op->offset, op->len, &raddr) != 0)
			return -EINVAL;
		sge->length = op->len;
		wr->opcode = op->type == RDMA_OP_READ ? IBV_WR_RDMA_READ :
			IBV_WR_RDMA_WRITE;
		/* Inline data is copied by ibv_post_send itself, so the HCA
		 * does not have to fetch the payload with a second DMA. */
		if (op->type == RDMA_OP_WRITE && op->len <= max_inline)
			wr->send_flags |= IBV_SEND_INLINE;
		wr->wr.rdma.remote_addr = raddr;
		wr->wr.rdma.rkey = r->rkey;
		return 0;
	case RDMA_OP_CAS:
	case RDMA_OP_FAA:
		/* IB atomics are exactly 8 bytes at an 8-aligned address;
		 * anything else fails at the responder with
		 * IBV_WC_REM_INV_REQ_ERR, so refuse it here. */
		if (op->len != 8 || remote_range(r, op->offset, 8, &raddr) != 0 ||
		    raddr % 8 != 0)
			return -EINVAL;
		sge->length = 8;
		if (op->type == RDMA_OP_CAS) {
			wr->opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			wr->wr.atomic.compare_add = op->compare;
			wr->wr.atomic.swap = op->operand;
		} else {
			wr->opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr->wr.atomic.compare_add = op->operand;
		}
		wr->wr.atomic.remote_addr = raddr;
		wr->wr.atomic.rkey = r->rkey;
		return 0;
	case RDMA_OP_PERSIST:
		if (remote_range(r, op->offset, op->len, &raddr) != 0)
			return -EINVAL;
		/* The flush read covers every earlier write of the queue pair
		 * whatever its address; reading the range's own last word
		 * keeps it inside what the client may touch. The word is
		 * clipped at the region's end (lengths are 4 KiB multiples on
		 * real nodes, so it never is). */
		end = op->offset + op->len;
		word = (end - 1) & ~(uint64_t)7;
		sge->length = r->length - word < 8 ? (uint32_t)(r->length - word) : 8;
		wr->opcode = IBV_WR_RDMA_READ;
		wr->wr.rdma.remote_addr = r->addr + word;
		wr->wr.rdma.rkey = r->rkey;
		return 0;
	default:
		return -EINVAL;
	}
}

/*
 * rdma__verbs_wr_build -- lay out the bounce buffer, then one work request
 * per operation, chained in batch order.
 */
int
rdma__verbs_wr_build(const struct rdma_batch *b,
	const struct rdma__verbs_remote *remote, unsigned nregions,
	const struct rdma__verbs_bounce *bounce, uint32_t max_inline,
	uint64_t seq, struct rdma__verbs_wrs *out)
{
	uint64_t used = 0;
	int ret;

	if (b->n == 0 || b->n > RDMA_BATCH_MAX_OPS ||
	    (uintptr_t)bounce->base % 8 != 0)
		return -EINVAL;
	/* Every slot starts 8-aligned, as atomic results must be. */
	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		uint64_t need = 8;

		if (op->type == RDMA_OP_READ || op->type == RDMA_OP_WRITE)
			need = ((uint64_t)op->len + 7) & ~(uint64_t)7;
		if (need > bounce->size - used)
			return -EINVAL;
		out->off[i] = (uint32_t)used;
		used += need;
	}
	out->n = b->n;
	out->seq = seq & WR_SEQ_MASK;
	out->used = (uint32_t)used;
	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		struct ibv_send_wr *wr = &out->wr[i];

		if (op->region >= nregions)
			return -EINVAL;
		memset(wr, 0, sizeof(*wr));
		wr->wr_id = rdma__verbs_wr_id(seq, i);
		wr->next = i + 1 < b->n ? &out->wr[i + 1] : NULL;
		ret = build_one(op, i, &remote[op->region], bounce, max_inline, out);
		if (ret != 0)
			return ret;
		if (rdma__verbs_wr_needs_fence(b, i))
			wr->send_flags |= IBV_SEND_FENCE;
		/* One completion per batch: errors complete anyway. */
		if (i + 1 == b->n)
			wr->send_flags |= IBV_SEND_SIGNALED;
	}
	return 0;
}

/*
 * rdma__verbs_wr_stage -- WRITE sources into the bounce buffer.
 */
void
rdma__verbs_wr_stage(const struct rdma_batch *b,
	const struct rdma__verbs_wrs *wrs, void *bounce_base)
{
	for (unsigned i = 0; i < wrs->n; i++) {
		const struct rdma_op *op = &b->ops[i];

		if (op->type == RDMA_OP_WRITE)
			memcpy((char *)bounce_base + wrs->off[i], op->local, op->len);
	}
}

/*
 * rdma__verbs_wr_deliver -- READ data and old values out of the bounce
 * buffer. memcpy, not a uint64_t load, for the result: the slot is aligned,
 * but the byte order is the HCA's to choose and we pass it through.
 */
void
rdma__verbs_wr_deliver(const struct rdma_batch *b,
	const struct rdma__verbs_wrs *wrs, const void *bounce_base)
{
	for (unsigned i = 0; i < wrs->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		const char *src = (const char *)bounce_base + wrs->off[i];

		if (op->type == RDMA_OP_READ)
			memcpy(op->local, src, op->len);
		else if (is_atomic(op->type) && op->result != NULL)
			memcpy(op->result, src, sizeof(*op->result));
	}
}

/*
 * rdma__verbs_wc_status -- see verbs_wr.h for the table and why.
 */
int
rdma__verbs_wc_status(enum ibv_wc_status status)
{
	switch (status) {
	case IBV_WC_SUCCESS:
		return 0;
	case IBV_WC_REM_ACCESS_ERR:
		return RDMA_E_BOUNDS;
	case IBV_WC_RETRY_EXC_ERR:
	case IBV_WC_RNR_RETRY_EXC_ERR:
	case IBV_WC_RESP_TIMEOUT_ERR:
	case IBV_WC_REM_ABORT_ERR:
	case IBV_WC_WR_FLUSH_ERR:
	case IBV_WC_FATAL_ERR:
		return RDMA_E_CONN;
	default:
		return -EIO;
	}
}

/*
 * rdma__verbs_wc_classify -- match a completion against the batch in
 * flight by the sequence number in its wr_id.
 */
int
rdma__verbs_wc_classify(const struct ibv_wc *wc,
	const struct rdma__verbs_wrs *wrs)
{
	uint64_t seq = wc->wr_id >> RDMA__VERBS_WR_INDEX_BITS;
	unsigned index = (unsigned)(wc->wr_id & WR_INDEX_MASK);

	if (seq != wrs->seq)
		return 0;
	if (wc->status != IBV_WC_SUCCESS)
		return rdma__verbs_wc_status(wc->status);
	if (index >= wrs->n)
		return RDMA_E_PROTO;
	return index + 1 == wrs->n ? 1 : 0;
}

/*
 * put_le / get_le -- little-endian integers of @n bytes, byte by byte so
 * the format does not depend on the host (wire.h does the same).
 */
static void
put_le(uint8_t *p, uint64_t v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t
get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * rdma__verbs_addr_encode -- port, version, reserved, ticket.
 */
void
rdma__verbs_addr_encode(uint8_t out[RDMA__VERBS_ADDR_LEN], uint16_t port,
	uint64_t ticket)
{
	put_le(out, port, 2);
	put_le(out + 2, RDMA__VERBS_ADDR_VERSION, 2);
	put_le(out + 4, 0, 4);
	put_le(out + 8, ticket, 8);
}

/*
 * rdma__verbs_addr_decode -- strict: WELCOME comes from a node we have not
 * authenticated, and a future format must not be misread as this one.
 */
int
rdma__verbs_addr_decode(const uint8_t *addr, size_t len, uint16_t *port,
	uint64_t *ticket)
{
	if (addr == NULL || len != RDMA__VERBS_ADDR_LEN ||
	    get_le(addr + 2, 2) != RDMA__VERBS_ADDR_VERSION ||
	    get_le(addr + 4, 4) != 0 || get_le(addr, 2) == 0)
		return RDMA_E_PROTO;
	*port = (uint16_t)get_le(addr, 2);
	*ticket = get_le(addr + 8, 8);
	return 0;
}

/*
 * rdma__verbs_priv_encode -- magic, version, reserved, ticket.
 */
void
rdma__verbs_priv_encode(uint8_t out[RDMA__VERBS_PRIV_LEN], uint64_t ticket)
{
	put_le(out, RDMA__VERBS_PRIV_MAGIC, 4);
	put_le(out + 4, RDMA__VERBS_ADDR_VERSION, 2);
	put_le(out + 6, 0, 2);
	put_le(out + 8, ticket, 8);
}

/*
 * rdma__verbs_priv_decode -- IB CM pads private data to a fixed size, so
 * only the first RDMA__VERBS_PRIV_LEN bytes are ours.
 */
int
rdma__verbs_priv_decode(const void *priv, size_t len, uint64_t *ticket)
{
	const uint8_t *p = priv;

	if (p == NULL || len < RDMA__VERBS_PRIV_LEN ||
	    get_le(p, 4) != RDMA__VERBS_PRIV_MAGIC ||
	    get_le(p + 4, 2) != RDMA__VERBS_ADDR_VERSION)
		return RDMA_E_PROTO;
	*ticket = get_le(p + 8, 8);
	return 0;
}
