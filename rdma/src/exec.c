/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/exec.c -- in-order execution of a batch on mapped memory (see
 * exec.h). The region memory is shared with other processes and threads
 * that access it concurrently, so every access to it is atomic: whole
 * aligned words where possible, bytes at unaligned edges. That gives the
 * same guarantee as RDMA (8-byte words are never torn) and keeps the code
 * free of data races in the C11 sense (ThreadSanitizer checks it).
 *
 * Order between operations comes from the accesses themselves: stores are
 * releases and loads acquires (plain moves on x86-TSO, but the compiler
 * may not reorder across them), CAS and FAA are sequentially consistent.
 * Fences are avoided because GCC's ThreadSanitizer does not model them.
 */
#include <stdint.h>
#include <string.h>

#include <pm/persist.h>

#include "exec.h"

/* Copy @len bytes from shared memory @src to private memory @dst. */
static void
copy_from_shared(void *dst, const void *src, size_t len)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (len > 0 && ((uintptr_t)s & 7) != 0) {
		*d++ = __atomic_load_n(s++, __ATOMIC_ACQUIRE);
		len--;
	}
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		uint64_t w = __atomic_load_n((const uint64_t *)s, __ATOMIC_ACQUIRE);

		memcpy(d, &w, 8);
	}
	while (len-- > 0)
		*d++ = __atomic_load_n(s++, __ATOMIC_ACQUIRE);
}

/* Copy @len bytes from private memory @src to shared memory @dst. */
static void
copy_to_shared(void *dst, const void *src, size_t len)
{
	unsigned char *d = dst;
	const unsigned char *s = src;

	while (len > 0 && ((uintptr_t)d & 7) != 0) {
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
		len--;
	}
	for (; len >= 8; len -= 8, s += 8, d += 8) {
		uint64_t w;

		memcpy(&w, s, 8);
		__atomic_store_n((uint64_t *)d, w, __ATOMIC_RELEASE);
	}
	while (len-- > 0)
		__atomic_store_n(d++, *s++, __ATOMIC_RELEASE);
}

unsigned
rdma__exec_batch(const struct rdma_batch *b, const struct rdma__exec_region *regions)
{
	unsigned persists = 0;
	int prev = -1;

	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		unsigned char *addr = (unsigned char *)regions[op->region].base + op->offset;
		uint64_t old;

		/*
		 * A read after a write needs a full barrier: TSO (and
		 * release/acquire) let a load pass an earlier store still in
		 * the store buffer, which would execute the read "before" the
		 * write. A locked RMW on a private word is that barrier (and
		 * cheaper than mfence); CAS and FAA are locked themselves.
		 */
		if (prev == RDMA_OP_WRITE && op->type == RDMA_OP_READ) {
			uint64_t barrier = 0;

			__atomic_fetch_add(&barrier, 0, __ATOMIC_SEQ_CST);
		}
		switch (op->type) {
		case RDMA_OP_READ:
			copy_from_shared(op->local, addr, op->len);
			break;
		case RDMA_OP_WRITE:
			copy_to_shared(addr, op->local, op->len);
			break;
		case RDMA_OP_CAS:
			old = op->compare;
			__atomic_compare_exchange_n((uint64_t *)addr, &old,
				op->operand, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
			if (op->result != NULL)
				*op->result = old;
			break;
		case RDMA_OP_FAA:
			old = __atomic_fetch_add((uint64_t *)addr, op->operand,
				__ATOMIC_SEQ_CST);
			if (op->result != NULL)
				*op->result = old;
			break;
		case RDMA_OP_PERSIST:
			pm_persist(addr, op->len);
			persists++;
			break;
		default:
			/* rdma__batch_check rejected other types. */
			break;
		}
		prev = op->type;
	}
	return persists;
}
