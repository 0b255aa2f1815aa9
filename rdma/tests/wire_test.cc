// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/wire_test.cc -- the wire format of rdma/src/wire.h.
//
// Round trips of every message with boundary values; the exact bytes of a
// batch request against an independent little-endian builder (so the
// offsets in wire.h's format comment are what goes out); every truncation
// of every valid message rejected, with the truncated body in a heap block
// of exactly its size so that AddressSanitizer catches any read past it;
// header corruption; each malformed batch request; replies that do not fit
// their request; and encoders refusing buffers that are too small.
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/wire.h"
}

namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kHdr = RDMA_WIRE_HEADER_SIZE;

void PutLE(Bytes &b, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		b.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void SetLE(Bytes &b, size_t at, uint64_t v, int n)
{
	// at(): bounds-checked, which also keeps gcc -O2's stringop-overflow
	// false positive (an inlined store into a vector it thinks empty) away
	for (int i = 0; i < n; i++)
		b.at(at + i) = static_cast<uint8_t>(v >> (8 * i));
}

// One operation of a BATCH_REQ as the format comment lays it out.
struct RawOp {
	uint8_t type;
	uint32_t region;
	uint64_t offset;
	uint32_t len;
	uint64_t compare;
	uint64_t operand;
};

// A BATCH_REQ body written by hand from wire.h's format comment.
Bytes RawReqBody(const std::vector<RawOp> &ops, const Bytes &payload, uint32_t nops)
{
	Bytes b;
	PutLE(b, nops, 4);
	PutLE(b, 0, 4);
	for (const RawOp &op : ops) {
		PutLE(b, op.type, 1);
		PutLE(b, 0, 1);
		PutLE(b, 0, 2);
		PutLE(b, op.region, 4);
		PutLE(b, op.offset, 8);
		PutLE(b, op.len, 4);
		PutLE(b, 0, 4);
		PutLE(b, op.compare, 8);
		PutLE(b, op.operand, 8);
	}
	b.insert(b.end(), payload.begin(), payload.end());
	return b;
}

Bytes RawReqBody(const std::vector<RawOp> &ops, const Bytes &payload)
{
	return RawReqBody(ops, payload, static_cast<uint32_t>(ops.size()));
}

int DecodeReq(const Bytes &body, rdma_batch *out)
{
	// An exact-size heap copy: any read past the end is an ASan report.
	Bytes copy(body);
	rdma_batch scratch;
	int ret = rdma_wire_batch_req_decode(copy.data(), copy.size(), &scratch);
	if (out != nullptr && ret == 0) {
		*out = scratch;
		// WRITE ops point into the copy, which dies here.
		for (unsigned i = 0; i < out->n; i++)
			out->ops[i].local = nullptr;
	}
	return ret;
}

// Encode with a lambda taking (buf, cap); check that every smaller buffer
// gives -EMSGSIZE and return the message.
Bytes EncodeChecked(const std::function<int(void *, size_t)> &enc)
{
	Bytes buf(RDMA_WIRE_MSG_MAX);
	int n = enc(buf.data(), buf.size());
	EXPECT_GT(n, 0);
	if (n <= 0)
		return {};
	buf.resize(static_cast<size_t>(n));
	for (size_t cap = 0; cap < buf.size(); cap++) {
		Bytes small(cap + 1);
		EXPECT_EQ(enc(small.data(), cap), -EMSGSIZE) << "cap " << cap;
	}
	// Exactly enough room is enough.
	Bytes exact(buf.size());
	EXPECT_EQ(enc(exact.data(), exact.size()), n);
	EXPECT_EQ(exact, buf);
	return buf;
}

rdma_wire_header Header(const Bytes &msg)
{
	rdma_wire_header h{};
	EXPECT_EQ(rdma_wire_header_decode(msg.data(), msg.size(), &h), 0);
	EXPECT_EQ(h.length, msg.size() - kHdr);
	return h;
}

Bytes Body(const Bytes &msg)
{
	return Bytes(msg.begin() + kHdr, msg.end());
}

// Decodes a whole message the way a receiver does: header, then a body of
// exactly the announced length, by type. Returns 0 or the decoder's code.
int DecodeMessage(const Bytes &msg, const rdma_batch *req_for_rep)
{
	rdma_wire_header h;
	int ret = rdma_wire_header_decode(msg.data(), msg.size(), &h);
	if (ret != 0)
		return ret;
	if (msg.size() - kHdr != h.length)
		return RDMA_E_PROTO;
	Bytes body(msg.begin() + kHdr, msg.end());
	switch (h.type) {
	case RDMA_WIRE_HELLO: {
		rdma_wire_hello m;
		return rdma_wire_hello_decode(body.data(), body.size(), &m);
	}
	case RDMA_WIRE_WELCOME: {
		rdma_wire_welcome m;
		return rdma_wire_welcome_decode(body.data(), body.size(), &m);
	}
	case RDMA_WIRE_REFUSE: {
		rdma_wire_refuse m;
		return rdma_wire_refuse_decode(body.data(), body.size(), &m);
	}
	case RDMA_WIRE_STATUS_REQ: {
		const char *t;
		uint16_t tl;
		return rdma_wire_status_req_decode(body.data(), body.size(), &t, &tl);
	}
	case RDMA_WIRE_STATUS: {
		std::vector<char> text(RDMA_WIRE_STATUS_MAX + 1);
		return rdma_wire_status_decode(body.data(), body.size(), text.data(),
			text.size());
	}
	case RDMA_WIRE_BATCH_REQ:
		return DecodeReq(body, nullptr);
	case RDMA_WIRE_BATCH_REP:
		return rdma_wire_batch_rep_decode(body.data(), body.size(), req_for_rep);
	}
	return RDMA_E_PROTO;
}

// Every strict prefix of @msg fails as a message; where @body_check is
// set, every strict prefix of the body fails its decoder too. The whole
// message decodes to @full (an error reply decodes to its status).
void ExpectTruncationsRejected(const Bytes &msg, const rdma_batch *req,
	const std::function<int(const Bytes &)> &body_check, int full = 0)
{
	ASSERT_EQ(DecodeMessage(msg, req), full);
	for (size_t k = 0; k < msg.size(); k++) {
		Bytes prefix(msg.begin(), msg.begin() + k);
		EXPECT_EQ(DecodeMessage(prefix, req), RDMA_E_PROTO) << "prefix " << k;
	}
	if (!body_check)
		return;
	Bytes body = Body(msg);
	ASSERT_EQ(body_check(body), full);
	for (size_t k = 0; k < body.size(); k++) {
		Bytes prefix(body.begin(), body.begin() + k);
		EXPECT_EQ(body_check(prefix), RDMA_E_PROTO) << "body prefix " << k;
	}
}

rdma_wire_hello MakeHello(uint8_t backend, size_t token_len, size_t addr_len)
{
	rdma_wire_hello m{};
	m.backend = backend;
	m.token_len = static_cast<uint16_t>(token_len);
	m.addr_len = static_cast<uint16_t>(addr_len);
	for (size_t i = 0; i < token_len; i++)
		m.token[i] = static_cast<char>('a' + i % 26);
	for (size_t i = 0; i < addr_len; i++)
		m.addr[i] = static_cast<uint8_t>(0xff - i);
	return m;
}

rdma_wire_welcome MakeWelcome(uint32_t nregions, size_t addr_len)
{
	rdma_wire_welcome m{};
	m.incarnation = UINT64_MAX - 1;
	m.nregions = nregions;
	m.addr_len = static_cast<uint16_t>(addr_len);
	for (uint32_t i = 0; i < nregions; i++) {
		m.regions[i].length = (uint64_t{1} << 63) + i;
		m.regions[i].key = UINT64_MAX - i;
		m.regions[i].addr = 0x0102030405060708ULL * (i + 1);
	}
	for (size_t i = 0; i < addr_len; i++)
		m.addr[i] = static_cast<uint8_t>(i * 7);
	return m;
}

TEST(WireHeader, RoundTripAndCorruption)
{
	for (uint16_t type = RDMA_WIRE_HELLO; type <= RDMA_WIRE_BATCH_REP; type++) {
		for (uint32_t length : {0u, 1u, static_cast<uint32_t>(RDMA_WIRE_BODY_MAX)}) {
			rdma_wire_header h = { RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, type,
				length, UINT32_MAX - type };
			Bytes buf(kHdr);
			rdma_wire_header_encode(buf.data(), &h);
			rdma_wire_header d{};
			ASSERT_EQ(rdma_wire_header_decode(buf.data(), buf.size(), &d), 0);
			EXPECT_EQ(d.magic, h.magic);
			EXPECT_EQ(d.version, h.version);
			EXPECT_EQ(d.type, h.type);
			EXPECT_EQ(d.length, h.length);
			EXPECT_EQ(d.seq, h.seq);
		}
	}
	// The bytes: "RDMN" little-endian, then version, type, length, seq.
	rdma_wire_header h = { RDMA_WIRE_MAGIC, RDMA_WIRE_VERSION, RDMA_WIRE_STATUS,
		0x0a0b0c0d, 0x01020304 };
	Bytes buf(kHdr);
	rdma_wire_header_encode(buf.data(), &h);
	const Bytes want = { 'R', 'D', 'M', 'N', 1, 0, 5, 0, 0x0d, 0x0c, 0x0b, 0x0a,
		4, 3, 2, 1 };
	EXPECT_EQ(buf, want);

	auto decode = [](const Bytes &b) {
		rdma_wire_header d;
		return rdma_wire_header_decode(b.data(), b.size(), &d);
	};
	h.length = 7;
	rdma_wire_header_encode(buf.data(), &h);
	ASSERT_EQ(decode(buf), 0);
	for (size_t k = 0; k < kHdr; k++)
		EXPECT_EQ(decode(Bytes(buf.begin(), buf.begin() + k)), RDMA_E_PROTO);
	for (size_t i = 0; i < 4; i++) { // magic, each byte
		Bytes b = buf;
		b[i] ^= 0x20;
		EXPECT_EQ(decode(b), RDMA_E_PROTO);
	}
	for (uint16_t version : {0, 2, 0x100, 0xffff}) {
		Bytes b = buf;
		SetLE(b, 4, version, 2);
		EXPECT_EQ(decode(b), RDMA_E_PROTO);
	}
	for (uint16_t type : {0, 8, 0x106, 0xffff}) {
		Bytes b = buf;
		SetLE(b, 6, type, 2);
		EXPECT_EQ(decode(b), RDMA_E_PROTO);
	}
	for (uint64_t length : {uint64_t{RDMA_WIRE_BODY_MAX} + 1, uint64_t{UINT32_MAX}}) {
		Bytes b = buf;
		SetLE(b, 8, length, 4);
		EXPECT_EQ(decode(b), RDMA_E_PROTO);
	}
	EXPECT_EQ(rdma_wire_header_decode(nullptr, kHdr, &h), RDMA_E_PROTO);
}

TEST(WireHello, RoundTripBoundaries)
{
	for (uint8_t backend : {RDMA_WIRE_BACKEND_OFI_TCP, RDMA_WIRE_BACKEND_OFI_SHM,
		     RDMA_WIRE_BACKEND_VERBS, RDMA_WIRE_BACKEND_OFI_VERBS}) {
		for (size_t tl : {size_t{0}, size_t{1}, size_t{RDMA_TOKEN_MAX}}) {
			for (size_t al : {size_t{0}, size_t{3}, size_t{RDMA_WIRE_ADDR_MAX}}) {
				rdma_wire_hello m = MakeHello(backend, tl, al);
				Bytes msg = EncodeChecked([&](void *b, size_t c) {
					return rdma_wire_hello_encode(b, c, 42, &m);
				});
				rdma_wire_header h = Header(msg);
				EXPECT_EQ(h.type, RDMA_WIRE_HELLO);
				EXPECT_EQ(h.seq, 42u);
				EXPECT_EQ(msg.size(), kHdr + 6 + tl + al);
				Bytes body = Body(msg);
				rdma_wire_hello d;
				ASSERT_EQ(rdma_wire_hello_decode(body.data(), body.size(), &d), 0);
				EXPECT_EQ(d.backend, backend);
				ASSERT_EQ(d.token_len, tl);
				ASSERT_EQ(d.addr_len, al);
				EXPECT_EQ(std::memcmp(d.token, m.token, tl), 0);
				EXPECT_EQ(std::memcmp(d.addr, m.addr, al), 0);
			}
		}
	}
}

TEST(WireHello, RejectsBadFields)
{
	Bytes buf(RDMA_WIRE_MSG_MAX);
	rdma_wire_hello m = MakeHello(RDMA_WIRE_BACKEND_OFI_TCP, 4, 4);
	m.token_len = RDMA_TOKEN_MAX + 1;
	EXPECT_EQ(rdma_wire_hello_encode(buf.data(), buf.size(), 0, &m), -EINVAL);
	m = MakeHello(RDMA_WIRE_BACKEND_OFI_TCP, 4, 4);
	m.addr_len = RDMA_WIRE_ADDR_MAX + 1;
	EXPECT_EQ(rdma_wire_hello_encode(buf.data(), buf.size(), 0, &m), -EINVAL);
	m = MakeHello(0, 4, 4);
	EXPECT_EQ(rdma_wire_hello_encode(buf.data(), buf.size(), 0, &m), -EINVAL);

	m = MakeHello(RDMA_WIRE_BACKEND_VERBS, 4, 4);
	Bytes body = Body(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_hello_encode(b, c, 1, &m);
	}));
	auto decode = [](const Bytes &b) {
		rdma_wire_hello d;
		return rdma_wire_hello_decode(b.data(), b.size(), &d);
	};
	ASSERT_EQ(decode(body), 0);
	for (uint8_t backend : {0, 5, 255}) {
		Bytes b = body;
		b[0] = backend;
		EXPECT_EQ(decode(b), RDMA_E_PROTO);
	}
	Bytes b = body;
	b[1] = 1; // reserved
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 2, RDMA_TOKEN_MAX + 1, 2);
	b.resize(6 + RDMA_TOKEN_MAX + 1 + 4); // consistent, but over the limit
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 4, RDMA_WIRE_ADDR_MAX + 1, 2);
	b.resize(6 + 4 + RDMA_WIRE_ADDR_MAX + 1);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b.push_back(0); // trailing byte
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
}

TEST(WireWelcome, RoundTripBoundaries)
{
	for (uint32_t nr : {1u, 2u, static_cast<uint32_t>(RDMA_WIRE_MAX_REGIONS)}) {
		for (size_t al : {size_t{0}, size_t{RDMA_WIRE_ADDR_MAX}}) {
			rdma_wire_welcome m = MakeWelcome(nr, al);
			Bytes msg = EncodeChecked([&](void *b, size_t c) {
				return rdma_wire_welcome_encode(b, c, 0, &m);
			});
			EXPECT_EQ(Header(msg).type, RDMA_WIRE_WELCOME);
			EXPECT_EQ(msg.size(), kHdr + 16 + 24 * nr + al);
			Bytes body = Body(msg);
			rdma_wire_welcome d;
			ASSERT_EQ(rdma_wire_welcome_decode(body.data(), body.size(), &d), 0);
			EXPECT_EQ(d.incarnation, m.incarnation);
			ASSERT_EQ(d.nregions, nr);
			ASSERT_EQ(d.addr_len, al);
			for (uint32_t i = 0; i < nr; i++) {
				EXPECT_EQ(d.regions[i].length, m.regions[i].length);
				EXPECT_EQ(d.regions[i].key, m.regions[i].key);
				EXPECT_EQ(d.regions[i].addr, m.regions[i].addr);
			}
			EXPECT_EQ(std::memcmp(d.addr, m.addr, al), 0);
		}
	}
}

TEST(WireWelcome, RejectsBadFields)
{
	Bytes buf(RDMA_WIRE_MSG_MAX);
	rdma_wire_welcome m = MakeWelcome(0, 0);
	EXPECT_EQ(rdma_wire_welcome_encode(buf.data(), buf.size(), 0, &m), -EINVAL);
	m = MakeWelcome(RDMA_WIRE_MAX_REGIONS, 0);
	m.nregions = RDMA_WIRE_MAX_REGIONS + 1;
	EXPECT_EQ(rdma_wire_welcome_encode(buf.data(), buf.size(), 0, &m), -EINVAL);
	m = MakeWelcome(1, 0);
	m.addr_len = RDMA_WIRE_ADDR_MAX + 1;
	EXPECT_EQ(rdma_wire_welcome_encode(buf.data(), buf.size(), 0, &m), -EINVAL);

	m = MakeWelcome(2, 5);
	Bytes body = Body(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_welcome_encode(b, c, 0, &m);
	}));
	auto decode = [](const Bytes &b) {
		rdma_wire_welcome d;
		return rdma_wire_welcome_decode(b.data(), b.size(), &d);
	};
	ASSERT_EQ(decode(body), 0);
	Bytes b = body;
	SetLE(b, 8, 0, 4); // zero regions, rest consistent
	b.erase(b.begin() + 16, b.begin() + 16 + 48);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 8, RDMA_WIRE_MAX_REGIONS + 1, 4);
	b.insert(b.begin() + 16, 24 * (RDMA_WIRE_MAX_REGIONS - 1), 0);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 8, 3, 4); // one more region than the bytes hold
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 14, 1, 2); // reserved
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b.push_back(0);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
}

TEST(WireRefuse, RoundTripBoundaries)
{
	std::string longest(RDMA_WIRE_REASON_MAX, 'r');
	for (int32_t code : {RDMA_E_AUTH, RDMA_E_NO_DEVICE, RDMA_E_LAST, -1, -4095}) {
		for (const char *reason : {static_cast<const char *>(nullptr), "", "bad token",
			     longest.c_str()}) {
			Bytes msg = EncodeChecked([&](void *b, size_t c) {
				return rdma_wire_refuse_encode(b, c, 9, code, reason);
			});
			EXPECT_EQ(Header(msg).type, RDMA_WIRE_REFUSE);
			Bytes body = Body(msg);
			rdma_wire_refuse d;
			ASSERT_EQ(rdma_wire_refuse_decode(body.data(), body.size(), &d), 0);
			EXPECT_EQ(d.code, code);
			EXPECT_STREQ(d.reason, reason == nullptr ? "" : reason);
			EXPECT_EQ(d.reason_len, std::strlen(d.reason));
		}
	}
}

TEST(WireRefuse, RejectsBadFields)
{
	Bytes buf(RDMA_WIRE_MSG_MAX);
	std::string too_long(RDMA_WIRE_REASON_MAX + 1, 'r');
	EXPECT_EQ(rdma_wire_refuse_encode(buf.data(), buf.size(), 0, RDMA_E_AUTH,
		too_long.c_str()), -EINVAL);
	// A refusal must carry a failure: 0 or a positive code would pass
	// for success where the client returns it.
	for (int32_t code : {0, 1, -EINPROGRESS, RDMA_E_BASE, RDMA_E_LAST - 1, INT32_MIN})
		EXPECT_EQ(rdma_wire_refuse_encode(buf.data(), buf.size(), 0, code, "x"),
			-EINVAL) << code;

	Bytes body = Body(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_refuse_encode(b, c, 0, RDMA_E_AUTH, "nope");
	}));
	auto decode = [](const Bytes &b) {
		rdma_wire_refuse d;
		return rdma_wire_refuse_decode(b.data(), b.size(), &d);
	};
	ASSERT_EQ(decode(body), 0);
	for (int32_t code : {0, 1, -EINPROGRESS, RDMA_E_BASE, INT32_MIN}) {
		Bytes b = body;
		SetLE(b, 0, static_cast<uint32_t>(code), 4);
		EXPECT_EQ(decode(b), RDMA_E_PROTO) << code;
	}
	Bytes b = body;
	SetLE(b, 6, 1, 2); // reserved
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b[9] = '\0'; // NUL inside the reason
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 4, RDMA_WIRE_REASON_MAX + 1, 2);
	b.resize(8 + RDMA_WIRE_REASON_MAX + 1, 'x');
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b.push_back('x');
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
}

TEST(WireStatus, RoundTripBoundaries)
{
	std::string longest_token(RDMA_TOKEN_MAX, 't');
	for (size_t tl : {size_t{0}, size_t{1}, size_t{RDMA_TOKEN_MAX}}) {
		Bytes msg = EncodeChecked([&](void *b, size_t c) {
			return rdma_wire_status_req_encode(b, c, 3, longest_token.data(),
				static_cast<uint16_t>(tl));
		});
		EXPECT_EQ(Header(msg).type, RDMA_WIRE_STATUS_REQ);
		Bytes body = Body(msg);
		const char *t = nullptr;
		uint16_t got = 0;
		ASSERT_EQ(rdma_wire_status_req_decode(body.data(), body.size(), &t, &got), 0);
		ASSERT_EQ(got, tl);
		EXPECT_EQ(std::string(t, got), longest_token.substr(0, tl));
	}
	Bytes buf(RDMA_WIRE_MSG_MAX);
	EXPECT_EQ(rdma_wire_status_req_encode(buf.data(), buf.size(), 0,
		longest_token.data(), RDMA_TOKEN_MAX + 1), -EINVAL);

	std::string text(RDMA_WIRE_STATUS_MAX, 'k');
	for (size_t tl : {size_t{0}, size_t{12}, size_t{RDMA_WIRE_STATUS_MAX}}) {
		Bytes msg = EncodeChecked([&](void *b, size_t c) {
			return rdma_wire_status_encode(b, c, 3, text.data(), tl);
		});
		EXPECT_EQ(Header(msg).type, RDMA_WIRE_STATUS);
		Bytes body = Body(msg);
		std::vector<char> out(tl + 1, 'z');
		ASSERT_EQ(rdma_wire_status_decode(body.data(), body.size(), out.data(),
			out.size()), 0);
		EXPECT_EQ(std::string(out.data()), text.substr(0, tl));
		// One byte short of room for the NUL.
		if (tl > 0) {
			EXPECT_EQ(rdma_wire_status_decode(body.data(), body.size(),
				out.data(), tl), RDMA_E_PROTO);
		}
	}
	EXPECT_EQ(rdma_wire_status_encode(buf.data(), buf.size(), 0, text.data(),
		RDMA_WIRE_STATUS_MAX + 1), -EINVAL);
	Bytes long_text(RDMA_WIRE_STATUS_MAX + 1, 'k');
	std::vector<char> out(RDMA_WIRE_STATUS_MAX + 2);
	EXPECT_EQ(rdma_wire_status_decode(long_text.data(), long_text.size(), out.data(),
		out.size()), RDMA_E_PROTO);
	Bytes with_nul = { 'a', 0, 'b' };
	EXPECT_EQ(rdma_wire_status_decode(with_nul.data(), with_nul.size(), out.data(),
		out.size()), RDMA_E_PROTO);

	Bytes req = Body(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_status_req_encode(b, c, 3, "tok", 3);
	}));
	const char *t;
	uint16_t tl;
	Bytes b = req;
	SetLE(b, 2, 1, 2); // reserved
	EXPECT_EQ(rdma_wire_status_req_decode(b.data(), b.size(), &t, &tl), RDMA_E_PROTO);
	b = req;
	b.push_back('x');
	EXPECT_EQ(rdma_wire_status_req_decode(b.data(), b.size(), &t, &tl), RDMA_E_PROTO);
	b = req;
	SetLE(b, 0, RDMA_TOKEN_MAX + 1, 2);
	b.resize(4 + RDMA_TOKEN_MAX + 1, 'x');
	EXPECT_EQ(rdma_wire_status_req_decode(b.data(), b.size(), &t, &tl), RDMA_E_PROTO);
}

// A client batch with every op type; buffers live in the fixture.
struct ClientBatch {
	rdma_batch b;
	Bytes w1, w2;
	Bytes r1, r2;
	uint64_t cas_old = 0, faa_old = 0;

	ClientBatch()
	{
		rdma_batch_init(&b);
		w1.assign(13, 0x11);
		w2.assign(1, 0x22);
		r1.assign(8, 0);
		r2.assign(3, 0);
		EXPECT_EQ(rdma_batch_write(&b, 1, 3, w1.data(), w1.size()), 0);
		EXPECT_EQ(rdma_batch_persist(&b, 1, 0, 4096), 0);
		EXPECT_EQ(rdma_batch_cas(&b, 0, 8, 0x1111, UINT64_MAX, &cas_old), 0);
		EXPECT_EQ(rdma_batch_faa(&b, 0, 16, 5, &faa_old), 0);
		EXPECT_EQ(rdma_batch_read(&b, 0, 0, r1.data(), r1.size()), 0);
		EXPECT_EQ(rdma_batch_write(&b, 0, UINT64_MAX - 1, w2.data(), w2.size()), 0);
		EXPECT_EQ(rdma_batch_read(&b, UINT32_MAX, 1, r2.data(), r2.size()), 0);
	}
};

TEST(WireBatchReq, BytesMatchTheFormat)
{
	ClientBatch c;
	Bytes msg = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 77, &c.b);
	});
	rdma_wire_header h = Header(msg);
	EXPECT_EQ(h.type, RDMA_WIRE_BATCH_REQ);
	EXPECT_EQ(h.seq, 77u);
	Bytes payload = c.w1;
	payload.insert(payload.end(), c.w2.begin(), c.w2.end());
	Bytes want = RawReqBody({
		{ RDMA_OP_WRITE, 1, 3, 13, 0, 0 },
		{ RDMA_OP_PERSIST, 1, 0, 4096, 0, 0 },
		{ RDMA_OP_CAS, 0, 8, 8, 0x1111, UINT64_MAX },
		{ RDMA_OP_FAA, 0, 16, 8, 0, 5 },
		{ RDMA_OP_READ, 0, 0, 8, 0, 0 },
		{ RDMA_OP_WRITE, 0, UINT64_MAX - 1, 1, 0, 0 },
		{ RDMA_OP_READ, UINT32_MAX, 1, 3, 0, 0 },
	}, payload);
	EXPECT_EQ(Body(msg), want);
}

TEST(WireBatchReq, RoundTrip)
{
	ClientBatch c;
	Bytes msg = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 1, &c.b);
	});
	Bytes body = Body(msg);
	rdma_batch d;
	ASSERT_EQ(rdma_wire_batch_req_decode(body.data(), body.size(), &d), 0);
	ASSERT_EQ(d.n, c.b.n);
	EXPECT_EQ(d.bytes, c.b.bytes);
	for (unsigned i = 0; i < d.n; i++) {
		const rdma_op &a = c.b.ops[i], &o = d.ops[i];
		EXPECT_EQ(o.type, a.type) << i;
		EXPECT_EQ(o.region, a.region) << i;
		EXPECT_EQ(o.offset, a.offset) << i;
		EXPECT_EQ(o.len, a.len) << i;
		EXPECT_EQ(o.compare, a.type == RDMA_OP_CAS ? a.compare : 0) << i;
		EXPECT_EQ(o.operand, a.type == RDMA_OP_CAS || a.type == RDMA_OP_FAA ?
			a.operand : 0) << i;
		EXPECT_EQ(o.result, nullptr) << i;
		if (o.type == RDMA_OP_WRITE) {
			// Points into the body, at its payload.
			const uint8_t *p = static_cast<const uint8_t *>(o.local);
			ASSERT_GE(p, body.data());
			ASSERT_LE(p + o.len, body.data() + body.size());
			EXPECT_EQ(std::memcmp(p, a.local, a.len), 0) << i;
		} else {
			EXPECT_EQ(o.local, nullptr) << i;
		}
	}
}

TEST(WireBatchReq, LimitsRoundTrip)
{
	// The most ops, and the most payload, a batch can hold.
	rdma_batch b;
	rdma_batch_init(&b);
	Bytes big(RDMA_BATCH_MAX_BYTES - 8 * (RDMA_BATCH_MAX_OPS - 1), 0x5a);
	ASSERT_EQ(rdma_batch_write(&b, 2, 0, big.data(), big.size()), 0);
	while (b.n < RDMA_BATCH_MAX_OPS)
		ASSERT_EQ(rdma_batch_faa(&b, 0, 8 * b.n, 1, nullptr), 0);
	ASSERT_EQ(b.bytes, RDMA_BATCH_MAX_BYTES);
	Bytes buf(RDMA_WIRE_MSG_MAX);
	int n = rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b);
	ASSERT_GT(n, 0);
	rdma_batch d;
	ASSERT_EQ(rdma_wire_batch_req_decode(buf.data() + kHdr, n - kHdr, &d), 0);
	EXPECT_EQ(d.n, RDMA_BATCH_MAX_OPS);
	EXPECT_EQ(d.bytes, RDMA_BATCH_MAX_BYTES);
	EXPECT_EQ(std::memcmp(d.ops[0].local, big.data(), big.size()), 0);

	// A full-size write alone: the largest body the format allows fits.
	rdma_batch_init(&b);
	Bytes full(RDMA_BATCH_MAX_BYTES, 1);
	ASSERT_EQ(rdma_batch_write(&b, 0, 0, full.data(), full.size()), 0);
	n = rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b);
	ASSERT_GT(n, 0);
	EXPECT_LE(static_cast<size_t>(n), RDMA_WIRE_MSG_MAX);
	ASSERT_EQ(rdma_wire_batch_req_decode(buf.data() + kHdr, n - kHdr, &d), 0);

	rdma_batch_init(&b);
	EXPECT_EQ(rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b), -EINVAL);
}

TEST(WireBatchReq, RejectsMalformed)
{
	const RawOp write4 = { RDMA_OP_WRITE, 0, 0, 4, 0, 0 };
	const RawOp read8 = { RDMA_OP_READ, 0, 0, 8, 0, 0 };
	const Bytes pay4 = { 1, 2, 3, 4 };
	ASSERT_EQ(DecodeReq(RawReqBody({ write4, read8 }, pay4), nullptr), 0);

	struct Case {
		const char *what;
		Bytes body;
	};
	std::vector<Case> cases;
	cases.push_back({ "empty body", {} });
	cases.push_back({ "no ops", RawReqBody({}, {}) });
	for (uint8_t t : {static_cast<uint8_t>(RDMA_OP_NTYPES), uint8_t{0x80}, uint8_t{0xff}})
		cases.push_back({ "bad type", RawReqBody({ { t, 0, 0, 8, 0, 0 } }, {}) });
	for (uint8_t t = 0; t < RDMA_OP_NTYPES; t++)
		cases.push_back({ "zero len", RawReqBody({ { t, 0, 0, 0, 0, 0 } }, {}) });
	for (uint8_t t : {uint8_t{RDMA_OP_CAS}, uint8_t{RDMA_OP_FAA}}) {
		for (uint32_t len : {1u, 4u, 7u, 9u, 16u, UINT32_MAX})
			cases.push_back({ "atomic len != 8",
				RawReqBody({ { t, 0, 0, len, 0, 0 } }, {}) });
		for (uint64_t off : {uint64_t{1}, uint64_t{4}, uint64_t{12}, UINT64_MAX})
			cases.push_back({ "misaligned atomic",
				RawReqBody({ { t, 0, off, 8, 0, 0 } }, {}) });
	}
	std::vector<RawOp> many(RDMA_BATCH_MAX_OPS + 1, read8);
	cases.push_back({ "too many ops", RawReqBody(many, {}) });
	cases.push_back({ "nops huge", RawReqBody({ read8 }, {}, UINT32_MAX) });
	cases.push_back({ "nops past the ops", RawReqBody({ read8 }, {}, 2) });
	cases.push_back({ "payload short", RawReqBody({ write4, read8 }, { 1, 2, 3 }) });
	cases.push_back({ "payload long", RawReqBody({ write4, read8 }, { 1, 2, 3, 4, 5 }) });
	cases.push_back({ "payload without write", RawReqBody({ read8 }, { 1 }) });
	// Reads count against the byte limit though they carry no payload
	// here: their data comes back in the reply.
	cases.push_back({ "read bytes over the limit", RawReqBody({
		{ RDMA_OP_READ, 0, 0, RDMA_BATCH_MAX_BYTES / 2 + 1, 0, 0 },
		{ RDMA_OP_READ, 0, 0, RDMA_BATCH_MAX_BYTES / 2, 0, 0 } }, {}) });
	cases.push_back({ "one read over the limit", RawReqBody({
		{ RDMA_OP_READ, 0, 0, RDMA_BATCH_MAX_BYTES + 1, 0, 0 } }, {}) });
	cases.push_back({ "huge reads that wrap 32 bits", RawReqBody({
		{ RDMA_OP_READ, 0, 0, UINT32_MAX, 0, 0 },
		{ RDMA_OP_READ, 0, 0, 2, 0, 0 } }, {}) });
	cases.push_back({ "write over the limit", RawReqBody({
		{ RDMA_OP_WRITE, 0, 0, RDMA_BATCH_MAX_BYTES + 1, 0, 0 } },
		Bytes(RDMA_BATCH_MAX_BYTES + 1, 7)) });
	cases.push_back({ "write plus faa over the limit", RawReqBody({
		{ RDMA_OP_WRITE, 0, 0, RDMA_BATCH_MAX_BYTES, 0, 0 },
		{ RDMA_OP_FAA, 0, 0, 8, 0, 1 } },
		Bytes(RDMA_BATCH_MAX_BYTES, 7)) });
	{
		Bytes b = RawReqBody({ write4, read8 }, pay4);
		SetLE(b, 4, 1, 4); // reserved after nops
		cases.push_back({ "reserved header word", b });
		for (size_t at : {size_t{1}, size_t{2}, size_t{3}, size_t{20}, size_t{23}}) {
			Bytes c = RawReqBody({ write4, read8 }, pay4);
			c[8 + RDMA_WIRE_OP_SIZE + at] = 1;
			cases.push_back({ "reserved op byte", c });
		}
	}
	for (const Case &c : cases)
		EXPECT_EQ(DecodeReq(c.body, nullptr), RDMA_E_PROTO) << c.what;

	// Persist ranges move no payload and may be as long as a region.
	EXPECT_EQ(DecodeReq(RawReqBody({ { RDMA_OP_PERSIST, 0, 0, UINT32_MAX, 0, 0 },
		{ RDMA_OP_READ, 0, 0, RDMA_BATCH_MAX_BYTES, 0, 0 } }, {}), nullptr), 0);
	// Words an op type does not use must be zero, as the encoder sends
	// them.
	for (uint8_t t = 0; t < RDMA_OP_NTYPES; t++) {
		uint64_t off = 0;
		uint32_t len = 8;
		Bytes payload = t == RDMA_OP_WRITE ? Bytes(8, 1) : Bytes();
		int want_compare = t == RDMA_OP_CAS ? 0 : RDMA_E_PROTO;
		int want_operand = t == RDMA_OP_CAS || t == RDMA_OP_FAA ? 0 : RDMA_E_PROTO;
		EXPECT_EQ(DecodeReq(RawReqBody({ { t, 0, off, len, 1, 0 } }, payload), nullptr),
			want_compare) << int{t};
		EXPECT_EQ(DecodeReq(RawReqBody({ { t, 0, off, len, 0, 1 } }, payload), nullptr),
			want_operand) << int{t};
	}
}

TEST(WireBatchReq, EncoderRejectsWhatItCannotSend)
{
	Bytes buf(RDMA_WIRE_MSG_MAX);
	rdma_batch b;
	rdma_batch_init(&b);
	uint64_t x = 0;
	ASSERT_EQ(rdma_batch_write(&b, 0, 0, &x, 8), 0);
	b.ops[0].type = RDMA_OP_NTYPES;
	EXPECT_EQ(rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b), -EINVAL);
	b.ops[0].type = RDMA_OP_WRITE;
	b.ops[0].local = nullptr;
	EXPECT_EQ(rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b), -EINVAL);
	b.n = RDMA_BATCH_MAX_OPS + 1;
	EXPECT_EQ(rdma_wire_batch_req_encode(buf.data(), buf.size(), 0, &b), -EINVAL);
}

// What the node does with a decoded request: prepare the reply, then play
// the executor (old values into the result slots, data into READ locals).
Bytes NodeReply(const Bytes &req_msg, uint64_t cas_old, uint64_t faa_old, uint8_t fill)
{
	Bytes body = Body(req_msg);
	rdma_batch d;
	EXPECT_EQ(rdma_wire_batch_req_decode(body.data(), body.size(), &d), 0);
	std::vector<uint64_t> rep(RDMA_WIRE_MSG_MAX / 8 + 1); // 8-aligned
	uint8_t *buf = reinterpret_cast<uint8_t *>(rep.data());
	int n = rdma_wire_batch_rep_prepare(buf, RDMA_WIRE_MSG_MAX, 5, &d);
	EXPECT_GT(n, 0);
	for (size_t cap = 0; cap < static_cast<size_t>(n); cap++) {
		rdma_batch again = d;
		EXPECT_EQ(rdma_wire_batch_rep_prepare(buf, cap, 5, &again), -EMSGSIZE);
	}
	n = rdma_wire_batch_rep_prepare(buf, RDMA_WIRE_MSG_MAX, 5, &d);
	for (unsigned i = 0; i < d.n; i++) {
		rdma_op &op = d.ops[i];
		if (op.type == RDMA_OP_CAS)
			*op.result = cas_old;
		else if (op.type == RDMA_OP_FAA)
			*op.result = faa_old;
		else if (op.type == RDMA_OP_READ)
			std::memset(op.local, fill + i, op.len);
		else
			EXPECT_EQ(op.result, nullptr);
	}
	return Bytes(buf, buf + n);
}

TEST(WireBatchRep, RoundTrip)
{
	ClientBatch c;
	Bytes req = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 1, &c.b);
	});
	Bytes rep = NodeReply(req, UINT64_MAX, 0x8000000000000001ULL, 0x40);
	rdma_wire_header h = Header(rep);
	EXPECT_EQ(h.type, RDMA_WIRE_BATCH_REP);
	EXPECT_EQ(h.seq, 5u);
	EXPECT_EQ(rep.size(), kHdr + 8 + 8 * c.b.n + c.r1.size() + c.r2.size());
	Bytes body = Body(rep);
	ASSERT_EQ(rdma_wire_batch_rep_decode(body.data(), body.size(), &c.b), 0);
	EXPECT_EQ(c.cas_old, UINT64_MAX);
	EXPECT_EQ(c.faa_old, 0x8000000000000001ULL);
	EXPECT_EQ(c.r1, Bytes(8, 0x40 + 4)); // op 4
	EXPECT_EQ(c.r2, Bytes(3, 0x40 + 6)); // op 6
	// The slots of other ops are zero on the wire.
	for (unsigned i = 0; i < c.b.n; i++) {
		uint64_t v = 0;
		for (int k = 7; k >= 0; k--)
			v = (v << 8) | body[8 + 8 * i + k];
		if (i == 2)
			EXPECT_EQ(v, UINT64_MAX);
		else if (i == 3)
			EXPECT_EQ(v, 0x8000000000000001ULL);
		else
			EXPECT_EQ(v, 0u) << i;
	}
	// NULL result pointers are allowed.
	c.b.ops[2].result = nullptr;
	ASSERT_EQ(rdma_wire_batch_rep_decode(body.data(), body.size(), &c.b), 0);
}

TEST(WireBatchRep, ErrorReplies)
{
	ClientBatch c;
	for (int32_t status : {RDMA_E_BOUNDS, RDMA_E_NO_REGION, RDMA_E_PROTO, -EINVAL}) {
		Bytes rep = EncodeChecked([&](void *buf, size_t cap) {
			return rdma_wire_batch_rep_encode_error(buf, cap, 8, c.b.n, status);
		});
		EXPECT_EQ(rep.size(), kHdr + 8);
		Bytes body = Body(rep);
		c.r1.assign(8, 0xee);
		EXPECT_EQ(rdma_wire_batch_rep_decode(body.data(), body.size(), &c.b), status);
		EXPECT_EQ(c.r1, Bytes(8, 0xee)); // nothing delivered
		// With status RDMA_E_PROTO this shows only that nothing is
		// delivered; the other statuses show the rejection too.
		ExpectTruncationsRejected(rep, &c.b, [&](const Bytes &b) {
			return rdma_wire_batch_rep_decode(b.data(), b.size(), &c.b);
		}, status);
	}
	Bytes buf(64);
	for (int32_t status : {0, 1, -EINPROGRESS, INT32_MIN})
		EXPECT_EQ(rdma_wire_batch_rep_encode_error(buf.data(), buf.size(), 0, 1,
			status), -EINVAL) << status;
	EXPECT_EQ(rdma_wire_batch_rep_encode_error(buf.data(), buf.size(), 0,
		RDMA_BATCH_MAX_OPS + 1, RDMA_E_PROTO), -EINVAL);
}

TEST(WireBatchRep, RejectsRepliesThatDoNotFit)
{
	ClientBatch c;
	Bytes req = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 1, &c.b);
	});
	Bytes body = Body(NodeReply(req, 1, 2, 0x10));
	auto decode = [&](const Bytes &b) {
		c.r1.assign(8, 0xee);
		c.cas_old = 12345;
		int r = rdma_wire_batch_rep_decode(b.data(), b.size(), &c.b);
		if (r != 0) {
			// Nothing is delivered from a reply that does not fit.
			EXPECT_EQ(c.r1, Bytes(8, 0xee));
			EXPECT_EQ(c.cas_old, 12345u);
		}
		return r;
	};
	ASSERT_EQ(decode(body), 0);
	Bytes b = body;
	SetLE(b, 4, c.b.n - 1, 4); // nops
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	SetLE(b, 4, c.b.n + 1, 4);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b.pop_back(); // payload short
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b.push_back(0); // payload long
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	b = body;
	b[8 + 8 * 0] = 1; // result slot of a WRITE
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	for (int32_t status : {1, -EINPROGRESS, RDMA_E_BASE, INT32_MIN}) {
		b = body;
		SetLE(b, 0, static_cast<uint32_t>(status), 4);
		EXPECT_EQ(decode(b), RDMA_E_PROTO) << status;
	}
	b = body; // an error status with a payload
	SetLE(b, 0, static_cast<uint32_t>(RDMA_E_BOUNDS), 4);
	EXPECT_EQ(decode(b), RDMA_E_PROTO);
	// The reply to a different request (one read fewer).
	ClientBatch other;
	other.b.n--;
	EXPECT_EQ(rdma_wire_batch_rep_decode(body.data(), body.size(), &other.b),
		RDMA_E_PROTO);
	// A node that could not read the request answers nops 0.
	Bytes rep0(64);
	int n = rdma_wire_batch_rep_encode_error(rep0.data(), rep0.size(), 0, 0,
		RDMA_E_PROTO);
	ASSERT_GT(n, 0);
	EXPECT_EQ(rdma_wire_batch_rep_decode(rep0.data() + kHdr, n - kHdr, &c.b),
		RDMA_E_PROTO);

	ExpectTruncationsRejected(NodeReply(req, 1, 2, 0x10), &c.b, decode);
}

TEST(WireBatchRep, PrepareNeedsAnAlignedBuffer)
{
	ClientBatch c;
	Bytes req = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 1, &c.b);
	});
	Bytes body = Body(req);
	rdma_batch d;
	ASSERT_EQ(rdma_wire_batch_req_decode(body.data(), body.size(), &d), 0);
	std::vector<uint64_t> rep(1024);
	uint8_t *buf = reinterpret_cast<uint8_t *>(rep.data());
	EXPECT_EQ(rdma_wire_batch_rep_prepare(buf + 4, 4096, 0, &d), -EINVAL);
	EXPECT_GT(rdma_wire_batch_rep_prepare(buf, 4096, 0, &d), 0);
}

TEST(WireTruncation, EveryMessageType)
{
	rdma_wire_hello hello = MakeHello(RDMA_WIRE_BACKEND_OFI_SHM, 5, 7);
	ExpectTruncationsRejected(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_hello_encode(b, c, 1, &hello);
	}), nullptr, [](const Bytes &b) {
		rdma_wire_hello d;
		return rdma_wire_hello_decode(b.data(), b.size(), &d);
	});
	rdma_wire_welcome welcome = MakeWelcome(3, 9);
	ExpectTruncationsRejected(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_welcome_encode(b, c, 1, &welcome);
	}), nullptr, [](const Bytes &b) {
		rdma_wire_welcome d;
		return rdma_wire_welcome_decode(b.data(), b.size(), &d);
	});
	ExpectTruncationsRejected(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_refuse_encode(b, c, 1, RDMA_E_AUTH, "token");
	}), nullptr, [](const Bytes &b) {
		rdma_wire_refuse d;
		return rdma_wire_refuse_decode(b.data(), b.size(), &d);
	});
	ExpectTruncationsRejected(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_status_req_encode(b, c, 1, "secret", 6);
	}), nullptr, [](const Bytes &b) {
		const char *t;
		uint16_t tl;
		return rdma_wire_status_req_decode(b.data(), b.size(), &t, &tl);
	});
	// A prefix of status text is text: only the header's length catches a
	// short STATUS, so no body check.
	ExpectTruncationsRejected(EncodeChecked([&](void *b, size_t c) {
		return rdma_wire_status_encode(b, c, 1, "batches 3\n", 10);
	}), nullptr, nullptr);
	ClientBatch c;
	Bytes req = EncodeChecked([&](void *buf, size_t cap) {
		return rdma_wire_batch_req_encode(buf, cap, 1, &c.b);
	});
	ExpectTruncationsRejected(req, nullptr, [](const Bytes &b) {
		return DecodeReq(b, nullptr);
	});
	ExpectTruncationsRejected(NodeReply(req, 3, 4, 0), &c.b, [&](const Bytes &b) {
		return rdma_wire_batch_rep_decode(b.data(), b.size(), &c.b);
	});
}

} // namespace
