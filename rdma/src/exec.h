/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/exec.h -- in-order execution of a validated batch against memory
 * mapped in this process. One executor serves the local backend (the
 * client executes on the shared mapping) and the node (it executes shipped
 * batches on its pool), so both give the same ordering guarantee.
 */
#ifndef RDMA_SRC_EXEC_H
#define RDMA_SRC_EXEC_H

#include <stdint.h>

#include <rdma/rdma.h>

/* Where region i lives in this process. */
struct rdma__exec_region {
	void *base;
	uint64_t length;
};

/**
 * rdma__exec_batch -- execute @b's operations in order on @regions.
 *
 * @b must have passed rdma__batch_check(). READ copies into op->local, WRITE
 * copies from op->local, CAS/FAA are sequentially consistent 8-byte atomics
 * storing the old value in *op->result if not NULL, PERSIST is pm_persist()
 * of the range. Copies move aligned 8-byte words with atomic (release
 * store, acquire load) accesses, so concurrent readers see whole words,
 * never torn ones, and every operation is ordered after the previous one:
 * no later effect is visible before an earlier one.
 * Returns the number of persist operations executed.
 * Thread-safety: any thread; concurrent batches interleave per word.
 */
unsigned rdma__exec_batch(const struct rdma_batch *b,
	const struct rdma__exec_region *regions);

#endif /* RDMA_SRC_EXEC_H */
