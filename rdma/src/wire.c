/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/wire.c -- encoding and decoding of the messages of wire.h.
 *
 * Every field is written and read one byte at a time at the fixed offset
 * the format in wire.h gives it, so neither the host's byte order nor the
 * compiler's struct layout reaches the wire, and no access is ever
 * unaligned.
 *
 * Decoders follow one discipline: check that the bytes a field occupies
 * were received before reading it, check every length against its limit
 * before adding it to anything, and check that the body has exactly the
 * size its fields announce (no trailing bytes either: a sender that adds
 * bytes the receiver ignores is a sender that can smuggle them). Reserved
 * fields must be zero, so a later version can give them a meaning; with
 * that, every message has exactly one encoding (tests/wire_fuzz.cc checks
 * that re-encoding what a decoder accepted gives the same bytes). Sums of
 * lengths are done in 64 bits, where 32 lengths of at most 2^32 cannot
 * overflow.
 *
 * Replies are filled in place (rdma_wire_batch_rep_prepare): the node's
 * executor stores CAS/FAA old values as native uint64_t into the result
 * slots of the reply buffer. The slots are little-endian on the wire, so
 * this holds only on little-endian hosts (asserted below), and only if the
 * slots are 8-aligned, which is why prepare demands an 8-aligned buffer.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "wire.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	"replies are filled in place with native stores of little-endian words");
_Static_assert(RDMA_WIRE_MSG_MAX <= INT32_MAX,
	"encoders return message sizes as int");
_Static_assert(RDMA_WIRE_HEADER_SIZE % 8 == 0 && RDMA_WIRE_OP_SIZE % 8 == 0,
	"result slots of an 8-aligned reply are 8-aligned");

/* Fixed parts of the bodies, in bytes. */
#define WIRE_HELLO_FIXED 6
#define WIRE_WELCOME_FIXED 16
#define WIRE_REGION_SIZE 24
#define WIRE_REFUSE_FIXED 8
#define WIRE_STATUS_REQ_FIXED 4
#define WIRE_BATCH_REQ_FIXED 8
#define WIRE_BATCH_REP_FIXED 8
#define WIRE_RESULT_SIZE 8

/* Offsets inside one BATCH_REQ operation. */
#define WIRE_OP_TYPE 0
#define WIRE_OP_PAD8 1
#define WIRE_OP_PAD16 2
#define WIRE_OP_REGION 4
#define WIRE_OP_OFFSET 8
#define WIRE_OP_LEN 16
#define WIRE_OP_PAD32 20
#define WIRE_OP_COMPARE 24
#define WIRE_OP_OPERAND 32

/* put_u8 -- store one byte */
static inline void
put_u8(uint8_t *p, uint8_t v)
{
	p[0] = v;
}

/* put_u16 -- store @v little-endian */
static inline void
put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* put_u32 -- store @v little-endian */
static inline void
put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* put_u64 -- store @v little-endian */
static inline void
put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* get_u16 -- load a little-endian u16 */
static inline uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

/* get_u32 -- load a little-endian u32 */
static inline uint32_t
get_u32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* get_u64 -- load a little-endian u64 */
static inline uint64_t
get_u64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

/* wire_begin -- check that header + @body_len bytes fit in @cap and write
 * the header; returns the body pointer, or NULL if it does not fit */
static uint8_t *
wire_begin(void *buf, size_t cap, uint16_t type, uint32_t seq, size_t body_len)
{
	struct rdma_wire_header h = {
		.magic = RDMA_WIRE_MAGIC,
		.version = RDMA_WIRE_VERSION,
		.type = type,
		.length = (uint32_t)body_len,
		.seq = seq,
	};

	if (buf == NULL || cap < RDMA_WIRE_HEADER_SIZE ||
	    body_len > cap - RDMA_WIRE_HEADER_SIZE)
		return NULL;
	rdma_wire_header_encode(buf, &h);
	return (uint8_t *)buf + RDMA_WIRE_HEADER_SIZE;
}

/* wire_total -- the size an encoder returns for a body of @body_len */
static int
wire_total(size_t body_len)
{
	return (int)(RDMA_WIRE_HEADER_SIZE + body_len);
}

/* has_nul -- whether @len bytes at @p contain a NUL (text must not) */
static bool
has_nul(const uint8_t *p, size_t len)
{
	return len > 0 && memchr(p, 0, len) != NULL;
}

/* code_plausible -- whether @code can be an error a node reports: -errno or
 * an RDMA_E_* code. Anything else (0 or positive included) would be read
 * by the client as success or as a state such as "in progress". */
static bool
code_plausible(int32_t code)
{
	if (code >= -4095 && code <= -1)
		return code != -EINPROGRESS;
	return code >= RDMA_E_LAST && code < RDMA_E_BASE;
}

void
rdma_wire_header_encode(void *buf, const struct rdma_wire_header *h)
{
	uint8_t *p = buf;

	put_u32(p + 0, h->magic);
	put_u16(p + 4, h->version);
	put_u16(p + 6, h->type);
	put_u32(p + 8, h->length);
	put_u32(p + 12, h->seq);
}

int
rdma_wire_header_decode(const void *buf, size_t len, struct rdma_wire_header *h)
{
	const uint8_t *p = buf;

	if (p == NULL || len < RDMA_WIRE_HEADER_SIZE)
		return RDMA_E_PROTO;
	h->magic = get_u32(p + 0);
	h->version = get_u16(p + 4);
	h->type = get_u16(p + 6);
	h->length = get_u32(p + 8);
	h->seq = get_u32(p + 12);
	if (h->magic != RDMA_WIRE_MAGIC || h->version != RDMA_WIRE_VERSION)
		return RDMA_E_PROTO;
	if (h->type < RDMA_WIRE_HELLO || h->type > RDMA_WIRE_BATCH_REP)
		return RDMA_E_PROTO;
	if (h->length > RDMA_WIRE_BODY_MAX)
		return RDMA_E_PROTO;
	return 0;
}

/* backend_known -- whether @b is an enum rdma_wire_backend value */
static bool
backend_known(uint8_t b)
{
	return b >= RDMA_WIRE_BACKEND_OFI_TCP && b <= RDMA_WIRE_BACKEND_OFI_VERBS;
}

int
rdma_wire_hello_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_wire_hello *m)
{
	if (!backend_known(m->backend) || m->token_len > RDMA_TOKEN_MAX ||
	    m->addr_len > RDMA_WIRE_ADDR_MAX)
		return -EINVAL;
	size_t body_len = WIRE_HELLO_FIXED + (size_t)m->token_len + m->addr_len;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_HELLO, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u8(p + 0, m->backend);
	put_u8(p + 1, 0);
	put_u16(p + 2, m->token_len);
	put_u16(p + 4, m->addr_len);
	memcpy(p + WIRE_HELLO_FIXED, m->token, m->token_len);
	memcpy(p + WIRE_HELLO_FIXED + m->token_len, m->addr, m->addr_len);
	return wire_total(body_len);
}

int
rdma_wire_hello_decode(const void *body, size_t len, struct rdma_wire_hello *out)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_HELLO_FIXED)
		return RDMA_E_PROTO;
	out->backend = p[0];
	out->token_len = get_u16(p + 2);
	out->addr_len = get_u16(p + 4);
	if (!backend_known(out->backend) || p[1] != 0)
		return RDMA_E_PROTO;
	if (out->token_len > RDMA_TOKEN_MAX || out->addr_len > RDMA_WIRE_ADDR_MAX)
		return RDMA_E_PROTO;
	if (len != WIRE_HELLO_FIXED + (size_t)out->token_len + out->addr_len)
		return RDMA_E_PROTO;
	memcpy(out->token, p + WIRE_HELLO_FIXED, out->token_len);
	memcpy(out->addr, p + WIRE_HELLO_FIXED + out->token_len, out->addr_len);
	return 0;
}

int
rdma_wire_welcome_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_wire_welcome *m)
{
	if (m->nregions == 0 || m->nregions > RDMA_WIRE_MAX_REGIONS ||
	    m->addr_len > RDMA_WIRE_ADDR_MAX)
		return -EINVAL;
	size_t regions_len = (size_t)m->nregions * WIRE_REGION_SIZE;
	size_t body_len = WIRE_WELCOME_FIXED + regions_len + m->addr_len;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_WELCOME, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u64(p + 0, m->incarnation);
	put_u32(p + 8, m->nregions);
	put_u16(p + 12, m->addr_len);
	put_u16(p + 14, 0);
	for (uint32_t i = 0; i < m->nregions; i++) {
		uint8_t *r = p + WIRE_WELCOME_FIXED + (size_t)i * WIRE_REGION_SIZE;

		put_u64(r + 0, m->regions[i].length);
		put_u64(r + 8, m->regions[i].key);
		put_u64(r + 16, m->regions[i].addr);
	}
	memcpy(p + WIRE_WELCOME_FIXED + regions_len, m->addr, m->addr_len);
	return wire_total(body_len);
}

int
rdma_wire_welcome_decode(const void *body, size_t len, struct rdma_wire_welcome *out)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_WELCOME_FIXED)
		return RDMA_E_PROTO;
	out->incarnation = get_u64(p + 0);
	out->nregions = get_u32(p + 8);
	out->addr_len = get_u16(p + 12);
	/* A node always has at least one region (rdma/node.h), and region
	 * ids are 0..nregions-1: zero regions is a broken node. */
	if (out->nregions == 0 || out->nregions > RDMA_WIRE_MAX_REGIONS ||
	    out->addr_len > RDMA_WIRE_ADDR_MAX || get_u16(p + 14) != 0)
		return RDMA_E_PROTO;
	size_t regions_len = (size_t)out->nregions * WIRE_REGION_SIZE;

	if (len != WIRE_WELCOME_FIXED + regions_len + out->addr_len)
		return RDMA_E_PROTO;
	for (uint32_t i = 0; i < out->nregions; i++) {
		const uint8_t *r = p + WIRE_WELCOME_FIXED + (size_t)i * WIRE_REGION_SIZE;

		out->regions[i].length = get_u64(r + 0);
		out->regions[i].key = get_u64(r + 8);
		out->regions[i].addr = get_u64(r + 16);
	}
	memcpy(out->addr, p + WIRE_WELCOME_FIXED + regions_len, out->addr_len);
	return 0;
}

int
rdma_wire_refuse_encode(void *buf, size_t cap, uint32_t seq, int32_t code,
	const char *reason)
{
	size_t reason_len = reason == NULL ? 0 : strnlen(reason, RDMA_WIRE_REASON_MAX + 1);

	if (!code_plausible(code) || reason_len > RDMA_WIRE_REASON_MAX)
		return -EINVAL;
	size_t body_len = WIRE_REFUSE_FIXED + reason_len;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_REFUSE, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u32(p + 0, (uint32_t)code);
	put_u16(p + 4, (uint16_t)reason_len);
	put_u16(p + 6, 0);
	if (reason_len > 0)
		memcpy(p + WIRE_REFUSE_FIXED, reason, reason_len);
	return wire_total(body_len);
}

int
rdma_wire_refuse_decode(const void *body, size_t len, struct rdma_wire_refuse *out)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_REFUSE_FIXED)
		return RDMA_E_PROTO;
	out->code = (int32_t)get_u32(p + 0);
	out->reason_len = get_u16(p + 4);
	/* The client returns the code from its connect call: a zero or
	 * positive code there would pass for success. */
	if (!code_plausible(out->code) || get_u16(p + 6) != 0)
		return RDMA_E_PROTO;
	if (out->reason_len > RDMA_WIRE_REASON_MAX ||
	    len != WIRE_REFUSE_FIXED + (size_t)out->reason_len)
		return RDMA_E_PROTO;
	if (has_nul(p + WIRE_REFUSE_FIXED, out->reason_len))
		return RDMA_E_PROTO;
	memcpy(out->reason, p + WIRE_REFUSE_FIXED, out->reason_len);
	out->reason[out->reason_len] = '\0';
	return 0;
}

int
rdma_wire_status_req_encode(void *buf, size_t cap, uint32_t seq,
	const char *token, uint16_t token_len)
{
	if (token_len > RDMA_TOKEN_MAX || (token == NULL && token_len > 0))
		return -EINVAL;
	size_t body_len = WIRE_STATUS_REQ_FIXED + (size_t)token_len;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_STATUS_REQ, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u16(p + 0, token_len);
	put_u16(p + 2, 0);
	if (token_len > 0)
		memcpy(p + WIRE_STATUS_REQ_FIXED, token, token_len);
	return wire_total(body_len);
}

int
rdma_wire_status_req_decode(const void *body, size_t len,
	const char **token, uint16_t *token_len)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_STATUS_REQ_FIXED)
		return RDMA_E_PROTO;
	uint16_t tl = get_u16(p + 0);

	if (tl > RDMA_TOKEN_MAX || get_u16(p + 2) != 0 ||
	    len != WIRE_STATUS_REQ_FIXED + (size_t)tl)
		return RDMA_E_PROTO;
	*token = (const char *)(p + WIRE_STATUS_REQ_FIXED);
	*token_len = tl;
	return 0;
}

int
rdma_wire_status_encode(void *buf, size_t cap, uint32_t seq,
	const char *text, size_t text_len)
{
	if (text_len > RDMA_WIRE_STATUS_MAX || (text == NULL && text_len > 0))
		return -EINVAL;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_STATUS, seq, text_len);

	if (p == NULL)
		return -EMSGSIZE;
	if (text_len > 0)
		memcpy(p, text, text_len);
	return wire_total(text_len);
}

int
rdma_wire_status_decode(const void *body, size_t len, char *text, size_t cap)
{
	const uint8_t *p = body;

	if ((p == NULL && len > 0) || len > RDMA_WIRE_STATUS_MAX || cap == 0 ||
	    len > cap - 1 || has_nul(p, len))
		return RDMA_E_PROTO;
	if (len > 0)
		memcpy(text, p, len);
	text[len] = '\0';
	return 0;
}

/* op_atomic -- whether @type is an 8-byte atomic (CAS or FAA) */
static bool
op_atomic(uint8_t type)
{
	return type == RDMA_OP_CAS || type == RDMA_OP_FAA;
}

/* op_payload -- whether an op of @type moves payload (counted in
 * rdma_batch.bytes, as rdma_batch_* count it: all but PERSIST) */
static bool
op_payload(uint8_t type)
{
	return type != RDMA_OP_PERSIST;
}

int
rdma_wire_batch_req_encode(void *buf, size_t cap, uint32_t seq,
	const struct rdma_batch *b)
{
	uint64_t payload = 0;

	if (b->n == 0 || b->n > RDMA_BATCH_MAX_OPS)
		return -EINVAL;
	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];

		if (op->type >= RDMA_OP_NTYPES)
			return -EINVAL;
		if (op->type == RDMA_OP_WRITE) {
			if (op->local == NULL && op->len > 0)
				return -EINVAL;
			payload += op->len;
		}
	}
	/* 32 ops of at most 4 GiB each cannot overflow a uint64_t; a size
	 * past the message limit cannot fit any buffer we are given. */
	if (payload > RDMA_BATCH_MAX_BYTES)
		return -EMSGSIZE;
	size_t body_len = WIRE_BATCH_REQ_FIXED + (size_t)b->n * RDMA_WIRE_OP_SIZE +
		(size_t)payload;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_BATCH_REQ, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u32(p + 0, b->n);
	put_u32(p + 4, 0);
	uint8_t *data = p + WIRE_BATCH_REQ_FIXED + (size_t)b->n * RDMA_WIRE_OP_SIZE;

	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		uint8_t *o = p + WIRE_BATCH_REQ_FIXED + (size_t)i * RDMA_WIRE_OP_SIZE;

		put_u8(o + WIRE_OP_TYPE, op->type);
		put_u8(o + WIRE_OP_PAD8, 0);
		put_u16(o + WIRE_OP_PAD16, 0);
		put_u32(o + WIRE_OP_REGION, op->region);
		put_u64(o + WIRE_OP_OFFSET, op->offset);
		put_u32(o + WIRE_OP_LEN, op->len);
		put_u32(o + WIRE_OP_PAD32, 0);
		/* Fields the type does not use go out as zero, whatever the
		 * caller's struct holds there. */
		put_u64(o + WIRE_OP_COMPARE, op->type == RDMA_OP_CAS ? op->compare : 0);
		put_u64(o + WIRE_OP_OPERAND, op_atomic(op->type) ? op->operand : 0);
		if (op->type == RDMA_OP_WRITE && op->len > 0) {
			memcpy(data, op->local, op->len);
			data += op->len;
		}
	}
	return wire_total(body_len);
}

int
rdma_wire_batch_req_decode(const void *body, size_t len, struct rdma_batch *out)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_BATCH_REQ_FIXED)
		return RDMA_E_PROTO;
	uint32_t nops = get_u32(p + 0);

	if (nops == 0 || nops > RDMA_BATCH_MAX_OPS || get_u32(p + 4) != 0)
		return RDMA_E_PROTO;
	size_t ops_end = WIRE_BATCH_REQ_FIXED + (size_t)nops * RDMA_WIRE_OP_SIZE;

	if (len < ops_end)
		return RDMA_E_PROTO;

	/* First pass: every op is well formed and the sums fit the limits,
	 * so the payload length can be checked before any pointer into it
	 * is made. */
	uint64_t bytes = 0, written = 0;

	for (uint32_t i = 0; i < nops; i++) {
		const uint8_t *o = p + WIRE_BATCH_REQ_FIXED + (size_t)i * RDMA_WIRE_OP_SIZE;
		uint8_t type = o[WIRE_OP_TYPE];
		uint64_t offset = get_u64(o + WIRE_OP_OFFSET);
		uint32_t op_len = get_u32(o + WIRE_OP_LEN);

		if (type >= RDMA_OP_NTYPES || op_len == 0)
			return RDMA_E_PROTO;
		if (o[WIRE_OP_PAD8] != 0 || get_u16(o + WIRE_OP_PAD16) != 0 ||
		    get_u32(o + WIRE_OP_PAD32) != 0)
			return RDMA_E_PROTO;
		if (op_atomic(type) && (op_len != 8 || offset % 8 != 0))
			return RDMA_E_PROTO;
		/* Words the type does not use are sent as zero, like the
		 * reserved ones; so every message has one encoding. */
		if ((type != RDMA_OP_CAS && get_u64(o + WIRE_OP_COMPARE) != 0) ||
		    (!op_atomic(type) && get_u64(o + WIRE_OP_OPERAND) != 0))
			return RDMA_E_PROTO;
		if (op_payload(type))
			bytes += op_len;
		if (type == RDMA_OP_WRITE)
			written += op_len;
		if (bytes > RDMA_BATCH_MAX_BYTES)
			return RDMA_E_PROTO;
	}
	if (len - ops_end != written)
		return RDMA_E_PROTO;

	const uint8_t *data = p + ops_end;

	out->n = nops;
	out->bytes = (uint32_t)bytes;
	for (uint32_t i = 0; i < nops; i++) {
		const uint8_t *o = p + WIRE_BATCH_REQ_FIXED + (size_t)i * RDMA_WIRE_OP_SIZE;
		struct rdma_op *op = &out->ops[i];

		op->type = o[WIRE_OP_TYPE];
		op->region = get_u32(o + WIRE_OP_REGION);
		op->offset = get_u64(o + WIRE_OP_OFFSET);
		op->len = get_u32(o + WIRE_OP_LEN);
		op->compare = get_u64(o + WIRE_OP_COMPARE);
		op->operand = get_u64(o + WIRE_OP_OPERAND);
		op->result = NULL;
		op->local = NULL;
		if (op->type == RDMA_OP_WRITE) {
			/* The executor only reads a WRITE's source; the cast
			 * drops const for the shared struct, not to write. */
			op->local = (void *)data;
			data += op->len;
		}
	}
	return 0;
}

int
rdma_wire_batch_rep_prepare(void *buf, size_t cap, uint32_t seq,
	struct rdma_batch *b)
{
	uint64_t read = 0;

	if (b->n == 0 || b->n > RDMA_BATCH_MAX_OPS)
		return -EINVAL;
	/* The executor stores old values through uint64_t pointers into
	 * the result slots. */
	if ((uintptr_t)buf % 8 != 0)
		return -EINVAL;
	for (unsigned i = 0; i < b->n; i++)
		if (b->ops[i].type == RDMA_OP_READ)
			read += b->ops[i].len;
	if (read > RDMA_BATCH_MAX_BYTES)
		return -EMSGSIZE;
	size_t slots_len = (size_t)b->n * WIRE_RESULT_SIZE;
	size_t body_len = WIRE_BATCH_REP_FIXED + slots_len + (size_t)read;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_BATCH_REP, seq, body_len);

	if (p == NULL)
		return -EMSGSIZE;
	put_u32(p + 0, 0);
	put_u32(p + 4, b->n);
	/* Zero slots stay zero for ops that are not CAS/FAA, as the format
	 * demands; READ payload needs no clearing, the executor fills all
	 * of it. */
	memset(p + WIRE_BATCH_REP_FIXED, 0, slots_len);
	uint8_t *data = p + WIRE_BATCH_REP_FIXED + slots_len;

	for (unsigned i = 0; i < b->n; i++) {
		struct rdma_op *op = &b->ops[i];
		uint8_t *slot = p + WIRE_BATCH_REP_FIXED + (size_t)i * WIRE_RESULT_SIZE;

		if (op_atomic(op->type)) {
			op->result = (uint64_t *)(void *)slot;
		} else if (op->type == RDMA_OP_READ) {
			op->local = data;
			data += op->len;
		}
	}
	return wire_total(body_len);
}

int
rdma_wire_batch_rep_encode_error(void *buf, size_t cap, uint32_t seq,
	uint32_t nops, int32_t status)
{
	if (!code_plausible(status) || nops > RDMA_BATCH_MAX_OPS)
		return -EINVAL;
	uint8_t *p = wire_begin(buf, cap, RDMA_WIRE_BATCH_REP, seq,
		WIRE_BATCH_REP_FIXED);

	if (p == NULL)
		return -EMSGSIZE;
	put_u32(p + 0, (uint32_t)status);
	put_u32(p + 4, nops);
	return wire_total(WIRE_BATCH_REP_FIXED);
}

int
rdma_wire_batch_rep_decode(const void *body, size_t len,
	const struct rdma_batch *b)
{
	const uint8_t *p = body;

	if (p == NULL || len < WIRE_BATCH_REP_FIXED ||
	    b->n == 0 || b->n > RDMA_BATCH_MAX_OPS)
		return RDMA_E_PROTO;
	int32_t status = (int32_t)get_u32(p + 0);
	uint32_t nops = get_u32(p + 4);

	/* nops must match even in an error reply: a reply to some other
	 * request is no answer to this one. (A node that could not read
	 * the request answers nops 0 and RDMA_E_PROTO, which is then what
	 * the client gets either way.) */
	if (nops != b->n)
		return RDMA_E_PROTO;
	if (status != 0) {
		if (!code_plausible(status) || len != WIRE_BATCH_REP_FIXED)
			return RDMA_E_PROTO;
		return status;
	}

	uint64_t read = 0;

	for (unsigned i = 0; i < b->n; i++)
		if (b->ops[i].type == RDMA_OP_READ)
			read += b->ops[i].len;
	size_t slots_len = (size_t)nops * WIRE_RESULT_SIZE;

	if (len < WIRE_BATCH_REP_FIXED + slots_len ||
	    len - WIRE_BATCH_REP_FIXED - slots_len != read)
		return RDMA_E_PROTO;
	/* Validate everything before delivering anything, so a bad reply
	 * leaves the caller's buffers untouched. */
	for (unsigned i = 0; i < b->n; i++) {
		const uint8_t *slot = p + WIRE_BATCH_REP_FIXED + (size_t)i * WIRE_RESULT_SIZE;

		if (!op_atomic(b->ops[i].type) && get_u64(slot) != 0)
			return RDMA_E_PROTO;
	}

	const uint8_t *data = p + WIRE_BATCH_REP_FIXED + slots_len;

	for (unsigned i = 0; i < b->n; i++) {
		const struct rdma_op *op = &b->ops[i];
		const uint8_t *slot = p + WIRE_BATCH_REP_FIXED + (size_t)i * WIRE_RESULT_SIZE;

		if (op_atomic(op->type)) {
			if (op->result != NULL)
				*op->result = get_u64(slot);
		} else if (op->type == RDMA_OP_READ) {
			memcpy(op->local, data, op->len);
			data += op->len;
		}
	}
	return 0;
}
