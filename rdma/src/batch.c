/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/batch.c -- building ordered batches and checking them against a
 * node's region table.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core.h"

void
rdma_batch_init(struct rdma_batch *b)
{
	b->n = 0;
	b->bytes = 0;
}

/* Append one operation after the checks every type shares. */
static int
batch_add(struct rdma_batch *b, const struct rdma_op *op)
{
	if (b->n == RDMA_BATCH_MAX_OPS)
		return -E2BIG;
	/* A persist moves no payload, so it does not count against the
	 * byte limit (which bounds buffers and wire messages). */
	if (op->type != RDMA_OP_PERSIST &&
	    op->len > RDMA_BATCH_MAX_BYTES - b->bytes)
		return -E2BIG;
	b->ops[b->n++] = *op;
	if (op->type != RDMA_OP_PERSIST)
		b->bytes += op->len;
	return 0;
}

int
rdma_batch_read(struct rdma_batch *b, uint32_t region, uint64_t offset,
	void *dst, uint32_t len)
{
	struct rdma_op op = {
		.type = RDMA_OP_READ, .region = region, .offset = offset,
		.len = len, .local = dst,
	};

	if (len == 0 || dst == NULL)
		return -EINVAL;
	return batch_add(b, &op);
}

int
rdma_batch_write(struct rdma_batch *b, uint32_t region, uint64_t offset,
	const void *src, uint32_t len)
{
	struct rdma_op op = {
		.type = RDMA_OP_WRITE, .region = region, .offset = offset,
		.len = len, .local = (void *)src,
	};

	if (len == 0 || src == NULL)
		return -EINVAL;
	return batch_add(b, &op);
}

int
rdma_batch_cas(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint64_t expected, uint64_t desired, uint64_t *old)
{
	struct rdma_op op = {
		.type = RDMA_OP_CAS, .region = region, .offset = offset,
		.len = 8, .compare = expected, .operand = desired,
		.result = old,
	};

	if (offset % 8 != 0)
		return -EINVAL;
	return batch_add(b, &op);
}

int
rdma_batch_faa(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint64_t add, uint64_t *old)
{
	struct rdma_op op = {
		.type = RDMA_OP_FAA, .region = region, .offset = offset,
		.len = 8, .operand = add, .result = old,
	};

	if (offset % 8 != 0)
		return -EINVAL;
	return batch_add(b, &op);
}

int
rdma_batch_persist(struct rdma_batch *b, uint32_t region, uint64_t offset,
	uint32_t len)
{
	struct rdma_op op = {
		.type = RDMA_OP_PERSIST, .region = region, .offset = offset,
		.len = len,
	};

	if (len == 0)
		return -EINVAL;
	return batch_add(b, &op);
}

int
rdma__batch_check(const struct rdma_batch *b,
	const struct rdma_region_info *regions, unsigned nregions)
{
	uint64_t bytes = 0;

	if (b->n == 0 || b->n > RDMA_BATCH_MAX_OPS)
		return -EINVAL;
	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];

		if (op->type >= RDMA_OP_NTYPES || op->len == 0)
			return -EINVAL;
		if ((op->type == RDMA_OP_CAS || op->type == RDMA_OP_FAA) &&
		    (op->len != 8 || op->offset % 8 != 0))
			return -EINVAL;
		if (op->type != RDMA_OP_PERSIST)
			bytes += op->len;
		if (op->region >= nregions)
			return RDMA_E_NO_REGION;
		/* Written so that offset + len cannot overflow. */
		if (op->offset > regions[op->region].length ||
		    op->len > regions[op->region].length - op->offset)
			return RDMA_E_BOUNDS;
	}
	return bytes > RDMA_BATCH_MAX_BYTES ? -EINVAL : 0;
}
