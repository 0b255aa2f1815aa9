/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/testing.h -- fault injection on a connection, for tests only.
 *
 * Compiled into //rdma:rdma_testing (the client library built with
 * -DRDMA_TESTING), never into //rdma: a production client has no way to
 * make its own connections lie. Tests and the testing variants of kv/ link
 * rdma_testing instead of rdma (one of the two per binary).
 */
#ifndef RDMA_SRC_TESTING_H
#define RDMA_SRC_TESTING_H

#include <stdint.h>

#include <rdma/rdma.h>

#ifndef RDMA_TESTING
#error "rdma/src/testing.h is for //rdma:rdma_testing and its users only"
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Faults a test can inject on a connection (its view of the node). */
enum rdma_fault {
	RDMA_FAULT_NONE,      /* normal operation */
	RDMA_FAULT_FAIL,      /* every post fails at once with RDMA_E_INJECTED */
	RDMA_FAULT_PARTITION, /* posts are accepted but never delivered: the
	                       * wait times out and nothing executes */
	RDMA_FAULT_DELAY,     /* each batch is delivered delay_us after its post */
	RDMA_FAULT_DROP_REPLY, /* each batch runs on the node at its post, but
	                        * its completion never arrives: the wait times
	                        * out, and the client cannot tell that it ran
	                        * (a reply lost with the connection) */
	RDMA_FAULT_SPLIT,     /* each batch runs in two parts: the operations
	                       * before its last PERSIST at the post, the rest
	                       * at the second poll after (the first answers
	                       * -EINPROGRESS). Another client that runs in
	                       * between sees the words that persist covers
	                       * before they are persisted, as it may over RDMA,
	                       * where a batch is not atomic: what the local
	                       * backend, which runs a batch whole at its
	                       * post, cannot show otherwise */
};

/**
 * rdma_conn_inject -- set the fault @c suffers from now on (@delay_us is used
 * by RDMA_FAULT_DELAY only). Affects later posts, not a batch in flight.
 * Return: 0; -EINVAL for an unknown fault; -ENOMEM (RDMA_FAULT_SPLIT's
 * two batches could not be allocated).
 * Thread-safety: the thread using @c (one at a time).
 * Ordering: none (changes only @c's own state).
 */
int rdma_conn_inject(struct rdma_conn *c, enum rdma_fault fault, uint32_t delay_us);

#ifdef __cplusplus
}
#endif

#endif /* RDMA_SRC_TESTING_H */
