/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/ofi_common.h -- the libfabric plumbing that the ofi client backend
 * (ofi.c) and the ofi server of the memory node (ofi_server.c) share: one
 * reliable-datagram endpoint with its fabric, domain, address vector and
 * completion queue, opened on provider "tcp;ofi_rxm", "shm" or
 * "verbs;ofi_rxm" with the message ordering the provider grants. Not
 * installed.
 *
 * Ordering. We ask for every ordering bit (RMA and atomic, read and write,
 * send); a provider that refuses that is asked again without the
 * write-after-read family, and then for exactly what it reports by default.
 * What the endpoint was opened with is in rdma__ofi.order and is the only
 * ordering the client relies on (rdma__ofi_order_covers). Measured with
 * libfabric 1.17: shm grants everything; tcp;ofi_rxm with FI_ATOMIC grants
 * RMA_RAR, RMA_RAW, RMA_WAW, ATOMIC_RAR, ATOMIC_RAW, ATOMIC_WAW, RAS, WAS,
 * SAS -- no write-after-read, and no ordering between an RMA operation and
 * an atomic one. verbs;ofi_rxm has not been measured (no device here); it
 * goes through the same negotiation, so whatever it grants is what is used.
 *
 * Thread-safety: the domain is opened FI_THREAD_SAFE, so a server may insert
 * addresses from its control thread while its progress thread reads the
 * completion queue. Opening and closing are not concurrent with any use.
 */
#ifndef RDMA_SRC_OFI_COMMON_H
#define RDMA_SRC_OFI_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>

#include <rdma/rdma.h>

#include "wire.h"

enum rdma__ofi_prov {
	RDMA__OFI_TCP,   /* "tcp;ofi_rxm": reliable datagrams over TCP sockets */
	RDMA__OFI_SHM,   /* "shm": shared-memory queues (and CMA) on one host */
	RDMA__OFI_VERBS, /* "verbs;ofi_rxm": reliable datagrams over RDMA RC
	                  * queue pairs (needs an RDMA device) */
};

/*
 * rdma__ofi_prov_ip -- whether @prov's endpoints are named by IP socket
 * addresses (tcp, and verbs through IPoIB/RoCE addressing), so that they
 * bind to a host and are reached at the node's control address; shm names
 * its endpoints itself.
 */
static inline bool
rdma__ofi_prov_ip(enum rdma__ofi_prov prov)
{
	return prov != RDMA__OFI_SHM;
}

/*
 * rdma__ofi_wire_backend -- the backend a HELLO over @prov names.
 */
static inline enum rdma_wire_backend
rdma__ofi_wire_backend(enum rdma__ofi_prov prov)
{
	switch (prov) {
	case RDMA__OFI_SHM:
		return RDMA_WIRE_BACKEND_OFI_SHM;
	case RDMA__OFI_VERBS:
		return RDMA_WIRE_BACKEND_OFI_VERBS;
	default:
		return RDMA_WIRE_BACKEND_OFI_TCP;
	}
}

/* Everything one endpoint needs; zero it before rdma__ofi_open. */
struct rdma__ofi {
	enum rdma__ofi_prov prov;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct fid_cq *cq;
	struct fid_ep *ep;
	uint64_t order;     /* msg_order granted on both transmit and receive */
	bool reported_virt; /* mr_mode has FI_MR_VIRT_ADDR: remote addresses
	                     * are virtual, else offsets from the base */
	/* What a client found the target really takes, for RMA and for
	 * atomics (ofi.c, ofi_conn_open): the report is not reliable. */
	bool rma_virt;
	bool atomic_virt;
	bool atomic_read;   /* 8-byte FI_ATOMIC_READ is valid */
	bool prov_key;      /* the provider chooses MR keys (FI_MR_PROV_KEY) */
	bool atomics;       /* 8-byte FI_CSWAP and FI_SUM are valid */
	bool source;        /* completions carry the sender (FI_SOURCE) */
	struct fid_cntr *rma_cntr; /* counts remote RMA and atomic accesses
	                            * (FI_RMA_EVENT), or NULL */
	bool waits;         /* RDMA__OFI_WAIT_FD was granted: the two below
	                     * are open (a zeroed struct has none) */
	int wait_fd;        /* the completion queue's wait object, readable
	                     * when the endpoint has something to progress */
	int wake_fd;        /* an eventfd rdma__ofi_wake writes */
	size_t name_len;
	uint8_t name[RDMA_WIRE_ADDR_MAX]; /* fi_getname of the endpoint */
};

/* One completion as rdma__ofi_poll reports it. */
struct rdma__ofi_comp {
	void *context;   /* the context the operation was posted with */
	uint64_t flags;  /* FI_SEND, FI_RECV, FI_RMA, FI_ATOMIC, ... */
	size_t len;      /* bytes received (receives) */
	fi_addr_t src;   /* sender of a receive, FI_ADDR_NOTAVAIL if unknown */
	int status;      /* 0, or the negative code of an error completion */
};

/* rdma__ofi_open flags */
#define RDMA__OFI_SOURCE 1u     /* receive completions name their sender
                                 * (FI_SOURCE; required) */
#define RDMA__OFI_RMA_EVENTS 2u /* count remote accesses where the provider
                                 * can (FI_RMA_EVENT; optional) */
#define RDMA__OFI_WAIT_FD 4u    /* give the completion queue a file
                                 * descriptor to sleep on where the provider
                                 * can (FI_WAIT_FD; optional) */

/**
 * rdma__ofi_open -- open an endpoint on @prov into *@o.
 * @host: tcp and verbs: the local address to bind (the port is
 *        ephemeral); NULL lets the provider choose. Ignored for shm.
 * @flags: RDMA__OFI_*. Servers ask for the first two: they answer whoever
 *        sent a request, and a remote access is a sign of life for their
 *        progress loop (it produces no completion); and for a wait object
 *        when they may sleep (rdma__ofi_wait). Without RDMA__OFI_WAIT_FD the
 *        queue has none, so a completion costs no signalling syscall.
 * Return: 0; RDMA_E_NO_DEVICE if the provider is not available here (or
 * lacks RMA, atomics, messages or a required flag); -errno for other
 * failures. On failure *@o holds nothing (rdma__ofi_close is still safe).
 */
int rdma__ofi_open(struct rdma__ofi *o, enum rdma__ofi_prov prov,
	const char *host, unsigned flags);

/**
 * rdma__ofi_rma_events -- how many remote RMA and atomic accesses @o's
 * endpoint has served (0 forever if it has no counter). Cheap: no syscall.
 */
uint64_t rdma__ofi_rma_events(const struct rdma__ofi *o);

/**
 * rdma__ofi_close -- close whatever *@o holds, endpoint first, and zero it.
 * Operations in flight are abandoned. Safe on a zeroed or failed *@o.
 */
void rdma__ofi_close(struct rdma__ofi *o);

/**
 * rdma__ofi_addr_check -- whether @addr (@len bytes, from the wire) is a
 * plausible address for @o's provider: a NUL-terminated string for shm, a
 * sockaddr_in or sockaddr_in6 of the right length and family for tcp. The
 * providers parse these bytes without bounds, so nothing unchecked reaches
 * them (verbs;ofi_rxm names its endpoints by sockaddr too). Return: 0;
 * RDMA_E_PROTO.
 */
int rdma__ofi_addr_check(const struct rdma__ofi *o, const void *addr, size_t len);

/**
 * rdma__ofi_insert -- check and insert the peer address @addr into the
 * address vector. Return: 0 and *@out; RDMA_E_PROTO for a bad address;
 * -errno.
 */
int rdma__ofi_insert(struct rdma__ofi *o, const void *addr, size_t len,
	fi_addr_t *out);

/**
 * rdma__ofi_mr_reg -- register [@buf, @buf + @len) with @access (FI_* access
 * bits) under a key no other registration of this process has used (the
 * provider's own when FI_MR_PROV_KEY). Return: 0, *@mr and *@key; -errno.
 */
int rdma__ofi_mr_reg(struct rdma__ofi *o, void *buf, size_t len,
	uint64_t access, struct fid_mr **mr, uint64_t *key);

/**
 * rdma__ofi_recv / rdma__ofi_send -- post a receive into, or a send from,
 * @buf. @desc from fi_mr_desc (or NULL). Completion comes back through
 * rdma__ofi_poll with @ctx. Return: 0; -EAGAIN if the queue is full (poll,
 * then retry); other negative codes.
 */
int rdma__ofi_recv(struct rdma__ofi *o, void *buf, size_t len, void *desc,
	void *ctx);
int rdma__ofi_send(struct rdma__ofi *o, const void *buf, size_t len,
	void *desc, fi_addr_t dest, void *ctx);

/**
 * rdma__ofi_poll -- progress the endpoint and read up to @max completions
 * into @out without blocking. An error completion is returned as one entry
 * whose status is its negative code (from fi_cq_readerr).
 * Return: the number of entries (0 if none); a negative code if the queue
 * itself failed.
 */
int rdma__ofi_poll(struct rdma__ofi *o, struct rdma__ofi_comp *out, unsigned max);

/**
 * rdma__ofi_wait -- sleep until @o's provider has something to progress
 * (a completion, or bytes on one of its sockets: for tcp;ofi_rxm that
 * includes a client's RMA and atomic requests and connection requests),
 * rdma__ofi_wake is called, or @timeout_ms passes. Needs o->waits.
 * The caller reads the queue (rdma__ofi_poll) after every return: that is
 * what progresses what woke it.
 * Return: 1 woken (or something was already waiting: fi_trywait refused);
 * 0 timed out; a negative code if the wait object failed.
 */
int rdma__ofi_wait(struct rdma__ofi *o, int timeout_ms);

/**
 * rdma__ofi_wake -- make a sleeping or the next rdma__ofi_wait return 1.
 * A wake is never lost: it stays pending until a wait consumes it, so a
 * thread that sets a flag and then wakes is seen by a waiter that checked
 * the flag just before sleeping. A no-op unless o->waits. Thread-safety:
 * any thread, while @o is open.
 */
void rdma__ofi_wake(const struct rdma__ofi *o);

/*
 * Servers of this process. A client whose node runs in its own process
 * must treat it specially, because libfabric does (ofi.c): shm lets the
 * endpoints of one process share their memory, so a node may still touch a
 * client endpoint's memory just after the client saw its last completion,
 * and closing that endpoint then makes the node crash. Such a client parks
 * its endpoint with the node instead, and the node's progress thread
 * releases it when nothing of the node's can still be touching it.
 */
struct rdma__ofi_local;

/* Releases what a client parked (called by the node, once). */
typedef void (*rdma__ofi_release_fn)(void *arg);

/**
 * rdma__ofi_local_add -- record that server endpoint @o runs in this
 * process; @o must stay open until rdma__ofi_local_del. Return: 0 and
 * *@out; -ENOMEM.
 */
int rdma__ofi_local_add(const struct rdma__ofi *o, struct rdma__ofi_local **out);

/**
 * rdma__ofi_local_del -- forget the server (its progress thread stopped)
 * and release whatever was parked with it. NULL is a no-op.
 */
void rdma__ofi_local_del(struct rdma__ofi_local *l);

/* What clients parked, taken by the server (a list). */
struct rdma__ofi_parked;

/**
 * rdma__ofi_local_take -- from the server's progress thread: take what was
 * parked with @l so far, in front of the list @held (NULL: empty). The
 * server releases it (rdma__ofi_parked_release) once nothing of its own
 * can still touch those endpoints (ofi_server.c, ofi_poll_once). Cheap
 * when nothing is parked. Return: the new list.
 */
struct rdma__ofi_parked *rdma__ofi_local_take(struct rdma__ofi_local *l,
	struct rdma__ofi_parked *held);

/**
 * rdma__ofi_parked_release -- release every item of list @p (its release
 * functions run in order; the list is freed). NULL is a no-op.
 */
void rdma__ofi_parked_release(struct rdma__ofi_parked *p);

/**
 * rdma__ofi_local_has -- whether @addr (@len bytes) is the address of a
 * server endpoint of this process.
 */
bool rdma__ofi_local_has(const void *addr, size_t len);

/**
 * rdma__ofi_local_park -- hand @arg to the server of this process at @addr,
 * which calls @fn(@arg) at its next safe point (woken for it if it sleeps
 * in rdma__ofi_wait). Return: true; false if
 * there is no such server (any more): then nothing of it can touch the
 * client, and the caller releases @arg itself.
 */
bool rdma__ofi_local_park(const void *addr, size_t len,
	rdma__ofi_release_fn fn, void *arg);

/**
 * rdma__ofi_err -- a libfabric return value (-FI_E*) as a -errno.
 */
int rdma__ofi_err(ssize_t ret);

/**
 * rdma__ofi_order_covers -- whether ordering @granted keeps an operation of
 * type @later after an earlier one of type @earlier (enum rdma_op_type:
 * READ, WRITE, CAS or FAA; a CAS or FAA is both a read and a write). RMA
 * pairs are covered by the generic or the FI_ORDER_RMA_* bits, atomic pairs
 * by the generic or the FI_ORDER_ATOMIC_* bits, mixed pairs only by the
 * generic bits. PERSIST is never covered (the flush is not a fabric
 * operation).
 */
bool rdma__ofi_order_covers(uint64_t granted, unsigned earlier, unsigned later);

/**
 * rdma__ofi_order_str -- the FI_ORDER_* names in @order, comma-separated,
 * into @buf (for logs and test output). Returns @buf.
 */
char *rdma__ofi_order_str(uint64_t order, char *buf, size_t cap);

/**
 * rdma__ofi_route_source -- the local IP address this host would use to
 * reach @host (a connected UDP socket: no packet is sent), as text in @buf.
 * A tcp client binds its endpoint there, so the address it announces in its
 * HELLO is one the node can reach and recognise.
 * Return: 0; -errno or -EINVAL if @host does not resolve.
 */
int rdma__ofi_route_source(const char *host, char *buf, size_t cap);

#endif /* RDMA_SRC_OFI_COMMON_H */
