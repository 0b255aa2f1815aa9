/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/wire.h -- the messages between clients and memory nodes:
 * control messages on the node's TCP control port (HELLO, WELCOME, REFUSE,
 * STATUS_REQ, STATUS) and shipped batches on the fabric (BATCH_REQ,
 * BATCH_REP). Not installed.
 *
 * Every message is a 16-byte header followed by `length` body bytes. All
 * integers are little-endian, fixed width, at fixed offsets; nothing is
 * copied as a C struct, so the format does not depend on the compiler.
 * Decoders trust nothing: every length, count, type and sum is checked
 * against the bytes actually received and against the protocol limits
 * before anything is used, and a bad message yields RDMA_E_PROTO (never a
 * read outside the buffer). tests/wire_fuzz.cc drives them with libFuzzer.
 *
 * Header: u32 magic RDMA_WIRE_MAGIC | u16 version | u16 type | u32 length |
 *         u32 seq (echoed in the answer).
 *
 * HELLO body: u8 backend (enum rdma_wire_backend) | u8 0 | u16 token_len |
 *         u16 addr_len | token bytes | addr bytes (client fabric address).
 * WELCOME body: u64 incarnation | u32 nregions | u16 addr_len | u16 0 |
 *         nregions x { u64 length | u64 key | u64 addr } | addr bytes
 *         (node fabric address; for verbs "port" as u16 then GID etc.,
 *         opaque here).
 * REFUSE body: i32 code (an RDMA_E_* or -errno) | u16 reason_len | u16 0 |
 *         reason bytes (not NUL-terminated on the wire).
 * STATUS_REQ body: u16 token_len | u16 0 | token bytes.
 * STATUS body: text bytes ("key value\n" lines).
 * BATCH_REQ body: u32 nops | u32 0 | nops x { u8 type | u8 0 | u16 0 |
 *         u32 region | u64 offset | u32 len | u32 0 | u64 compare |
 *         u64 operand } | the WRITE payloads, concatenated in op order.
 * BATCH_REP body: i32 status | u32 nops | nops x u64 (old value of a CAS or
 *         FAA, 0 for other ops) | the READ payloads, concatenated in op
 *         order (only when status is 0).
 */
#ifndef RDMA_SRC_WIRE_H
#define RDMA_SRC_WIRE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/rdma.h>

#define RDMA_WIRE_MAGIC 0x4e4d4452u /* "RDMN" */
#define RDMA_WIRE_VERSION 1
#define RDMA_WIRE_HEADER_SIZE 16
#define RDMA_WIRE_ADDR_MAX 256
#define RDMA_WIRE_REASON_MAX 256
#define RDMA_WIRE_STATUS_MAX 4096
#define RDMA_WIRE_MAX_REGIONS 16
#define RDMA_WIRE_OP_SIZE 40
/* Largest body of any message: a full BATCH_REQ. */
#define RDMA_WIRE_BODY_MAX (8 + RDMA_BATCH_MAX_OPS * RDMA_WIRE_OP_SIZE + RDMA_BATCH_MAX_BYTES)
#define RDMA_WIRE_MSG_MAX (RDMA_WIRE_HEADER_SIZE + RDMA_WIRE_BODY_MAX)

enum rdma_wire_type {
	RDMA_WIRE_HELLO = 1,
	RDMA_WIRE_WELCOME = 2,
	RDMA_WIRE_REFUSE = 3,
	RDMA_WIRE_STATUS_REQ = 4,
	RDMA_WIRE_STATUS = 5,
	RDMA_WIRE_BATCH_REQ = 6,
	RDMA_WIRE_BATCH_REP = 7,
};

enum rdma_wire_backend {
	RDMA_WIRE_BACKEND_OFI_TCP = 1,
	RDMA_WIRE_BACKEND_OFI_SHM = 2,
	RDMA_WIRE_BACKEND_VERBS = 3,
	RDMA_WIRE_BACKEND_OFI_VERBS = 4,
};

struct rdma_wire_header {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t length;
	uint32_t seq;
};

struct rdma_wire_hello {
	uint8_t backend;
	uint16_t token_len;
	uint16_t addr_len;
	char token[RDMA_TOKEN_MAX];
	uint8_t addr[RDMA_WIRE_ADDR_MAX];
};

struct rdma_wire_region {
	uint64_t length;
	uint64_t key;   /* fabric memory key (ofi) or rkey (verbs) */
	uint64_t addr;  /* remote address to add to offsets (0 if offset-based) */
};

struct rdma_wire_welcome {
	uint64_t incarnation; /* changes each time the node starts */
	uint32_t nregions;
	uint16_t addr_len;
	struct rdma_wire_region regions[RDMA_WIRE_MAX_REGIONS];
	uint8_t addr[RDMA_WIRE_ADDR_MAX];
};

struct rdma_wire_refuse {
	int32_t code;
	uint16_t reason_len;
	char reason[RDMA_WIRE_REASON_MAX + 1]; /* NUL-terminated after decode */
};

/**
 * rdma_wire_header_encode -- write @h into @buf (RDMA_WIRE_HEADER_SIZE bytes).
 */
void rdma_wire_header_encode(void *buf, const struct rdma_wire_header *h);

/**
 * rdma_wire_header_decode -- parse the header at @buf (@len bytes available).
 * Checks magic, version, a known type and length <= RDMA_WIRE_BODY_MAX.
 * Return: 0; RDMA_E_PROTO.
 */
int rdma_wire_header_decode(const void *buf, size_t len, struct rdma_wire_header *h);

/*
 * Encoders write header + body into @buf of @cap bytes and return the total
 * message size, or -EMSGSIZE if it does not fit / -EINVAL for out-of-limit
 * fields. Decoders take the BODY (after the header) and its length, and
 * return 0 or RDMA_E_PROTO; on error *@out is unspecified.
 */
int rdma_wire_hello_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_wire_hello *m);
int rdma_wire_hello_decode(const void *body, size_t len, struct rdma_wire_hello *out);

int rdma_wire_welcome_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_wire_welcome *m);
int rdma_wire_welcome_decode(const void *body, size_t len, struct rdma_wire_welcome *out);

int rdma_wire_refuse_encode(void *buf, size_t cap, uint32_t seq, int32_t code,
	const char *reason);
int rdma_wire_refuse_decode(const void *body, size_t len, struct rdma_wire_refuse *out);

int rdma_wire_status_req_encode(void *buf, size_t cap, uint32_t seq,
	const char *token, uint16_t token_len);
/* *@token points into @body (not NUL-terminated). */
int rdma_wire_status_req_decode(const void *body, size_t len,
	const char **token, uint16_t *token_len);

int rdma_wire_status_encode(void *buf, size_t cap, uint32_t seq,
	const char *text, size_t text_len);
/* Copies the text into @text (NUL-terminated; RDMA_E_PROTO if it does not
 * fit in @cap, contains a NUL, or is longer than RDMA_WIRE_STATUS_MAX). */
int rdma_wire_status_decode(const void *body, size_t len, char *text, size_t cap);

/**
 * rdma_wire_batch_req_encode -- encode batch @b (copying WRITE payloads from
 * op->local). Return: message size or -EMSGSIZE.
 */
int rdma_wire_batch_req_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_batch *b);

/**
 * rdma_wire_batch_req_decode -- rebuild the batch in *@out: WRITE ops point
 * into @body (which must outlive @out), READ ops and results are NULL (see
 * rdma_wire_batch_rep_prepare). Checks op types, counts, len 8 for CAS/FAA,
 * per-batch limits and that the payload length is exactly the sum of the
 * WRITE lengths. Region bounds are NOT checked here (rdma__batch_check).
 */
int rdma_wire_batch_req_decode(const void *body, size_t len, struct rdma_batch *out);

/**
 * rdma_wire_batch_rep_prepare -- lay out the reply to @b (decoded request)
 * in @buf: point every READ op's local at its place in the reply payload and
 * every CAS/FAA result at its slot, so executing @b fills the reply in
 * place. Return: the reply size if status is 0, or -EMSGSIZE.
 */
int rdma_wire_batch_rep_prepare(void *buf, size_t cap, uint32_t seq,
	struct rdma_batch *b);

/**
 * rdma_wire_batch_rep_encode_error -- a reply carrying only a failure
 * @status (no results, no payload). Return: message size or -EMSGSIZE.
 */
int rdma_wire_batch_rep_encode_error(void *buf, size_t cap, uint32_t seq,
	uint32_t nops, int32_t status);

/**
 * rdma_wire_batch_rep_decode -- check that reply @body fits request @b
 * (same nops; payload exactly the sum of @b's READ lengths when status is
 * 0) and deliver it: READ data into op->local, old values into *op->result
 * (where not NULL). Return: the batch status carried by the reply (0 or the
 * node's negative code), or RDMA_E_PROTO if the reply does not fit.
 */
int rdma_wire_batch_rep_decode(const void *body, size_t len,
	const struct rdma_batch *b);

#endif /* RDMA_SRC_WIRE_H */
