// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/wire_fuzz.cc -- fuzz target for the wire decoders and for the
// node's handling of shipped batches.
//
// Input: arbitrary bytes, used three ways. As a whole message handed to
// rdma__serve_batch on two small malloc'd regions: it must return a reply
// that is itself a well-formed BATCH_REP (or RDMA_E_PROTO), and when the
// request decodes, the reply must decode against it. As a message whose
// header is decoded and whose body (after the 16 header bytes) goes to the
// decoder of its type. And as a bare body fed to every decoder. Whatever a
// decoder accepts must re-encode to exactly the same bytes (wire.c gives
// every message one encoding). Any other outcome aborts; reads outside the
// input are caught by ASan, since the input is copied to a heap block of
// exactly its size. Built as a libFuzzer binary with --config=fuzz, and as
// a seeded regression test (wire_fuzz_main.cc) otherwise.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include <rdma/node.h>
#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/core.h"
#include "rdma/src/exec.h"
#include "rdma/src/server.h"
#include "rdma/src/wire.h"
}

namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kHdr = RDMA_WIRE_HEADER_SIZE;

void Check(bool ok)
{
	if (!ok)
		std::abort(); // a wrong outcome is a bug
}

// The node every input is served by: two small regions (lengths that are
// not powers of two, to catch off-by-ones at odd ends).
struct Node {
	static constexpr uint64_t kLen[2] = { 64, 200 };
	rdma__exec_region regions[2];
	rdma_region_info info[2];
	rdma__server_counters counters = {};
	rdma__server_env env = {};
	std::vector<uint64_t> rep;  // 8-aligned reply buffer
	std::vector<uint64_t> rep2; // for re-encoding checks

	Node()
	{
		for (int i = 0; i < 2; i++) {
			regions[i] = { std::calloc(1, kLen[i]), kLen[i] };
			info[i] = { static_cast<uint32_t>(i), kLen[i] };
			Check(regions[i].base != nullptr);
		}
		env.nregions = 2;
		env.regions = regions;
		env.info = info;
		env.host = "127.0.0.1";
		env.counters = &counters;
		rep.assign(RDMA_WIRE_MSG_MAX / 8 + 1, 0);
		rep2.assign(RDMA_WIRE_MSG_MAX / 8 + 1, 0);
	}
};

Node &GetNode()
{
	static Node *n = new Node; // lives for the whole process
	return *n;
}

uint8_t *Buf(std::vector<uint64_t> &v)
{
	return reinterpret_cast<uint8_t *>(v.data());
}

// Re-encoding what was accepted gives exactly the input body.
void CheckSameBody(int n, const uint8_t *body, size_t len, const uint8_t *msg)
{
	Check(n >= static_cast<int>(kHdr));
	Check(static_cast<size_t>(n) - kHdr == len);
	Check(len == 0 || std::memcmp(msg + kHdr, body, len) == 0);
}

// A client batch shaped like @req (READ buffers in @bufs), to decode a
// reply against.
void ClientLike(const rdma_batch &req, rdma_batch *client,
	std::vector<Bytes> &bufs, std::vector<uint64_t> &olds)
{
	*client = req;
	bufs.assign(req.n, Bytes());
	olds.assign(req.n, 0);
	for (unsigned i = 0; i < req.n; i++) {
		rdma_op &op = client->ops[i];
		op.result = nullptr;
		if (op.type == RDMA_OP_READ) {
			bufs[i].resize(op.len);
			op.local = bufs[i].data();
		} else if (op.type == RDMA_OP_CAS || op.type == RDMA_OP_FAA) {
			op.result = &olds[i];
		}
	}
}

// Serve the input as a message and check the reply.
void FuzzServe(Node &node, const uint8_t *data, size_t size)
{
	uint8_t *rep = Buf(node.rep);
	uint64_t bad = node.counters.bad_messages;
	int n = rdma__serve_batch(&node.env, data, size, rep, RDMA_WIRE_MSG_MAX);
	if (n < 0) {
		Check(n == RDMA_E_PROTO);
		Check(node.counters.bad_messages == bad + 1);
		return;
	}
	rdma_wire_header h;
	Check(n >= static_cast<int>(kHdr) + 8);
	Check(rdma_wire_header_decode(rep, n, &h) == 0);
	Check(h.type == RDMA_WIRE_BATCH_REP);
	Check(h.length == static_cast<uint32_t>(n) - kHdr);

	// If the request decodes, its reply must decode against it.
	rdma_wire_header rh;
	rdma_batch req;
	if (rdma_wire_header_decode(data, size, &rh) != 0 || rh.type != RDMA_WIRE_BATCH_REQ ||
	    rh.length != size - kHdr ||
	    rdma_wire_batch_req_decode(data + kHdr, rh.length, &req) != 0) {
		Check(node.counters.bad_messages == bad + 1);
		return;
	}
	Check(h.seq == rh.seq);
	rdma_batch client;
	std::vector<Bytes> bufs;
	std::vector<uint64_t> olds;
	ClientLike(req, &client, bufs, olds);
	int st = rdma_wire_batch_rep_decode(rep + kHdr, h.length, &client);
	Check(st == 0 || st == RDMA_E_BOUNDS || st == RDMA_E_NO_REGION || st == -EINVAL);
}

void FuzzBody(Node &node, const uint8_t *body, size_t len)
{
	uint8_t *out = Buf(node.rep2);
	const size_t cap = RDMA_WIRE_MSG_MAX;

	rdma_wire_hello hello;
	if (rdma_wire_hello_decode(body, len, &hello) == 0)
		CheckSameBody(rdma_wire_hello_encode(out, cap, 0, &hello), body, len, out);

	rdma_wire_welcome welcome;
	if (rdma_wire_welcome_decode(body, len, &welcome) == 0)
		CheckSameBody(rdma_wire_welcome_encode(out, cap, 0, &welcome), body, len, out);

	rdma_wire_refuse refuse;
	if (rdma_wire_refuse_decode(body, len, &refuse) == 0) {
		Check(refuse.code < 0);
		Check(std::strlen(refuse.reason) == refuse.reason_len);
		CheckSameBody(rdma_wire_refuse_encode(out, cap, 0, refuse.code,
			refuse.reason), body, len, out);
	}

	const char *token;
	uint16_t token_len;
	if (rdma_wire_status_req_decode(body, len, &token, &token_len) == 0) {
		Check(token_len == 0 || (reinterpret_cast<const uint8_t *>(token) >= body &&
			reinterpret_cast<const uint8_t *>(token) + token_len <= body + len));
		CheckSameBody(rdma_wire_status_req_encode(out, cap, 0, token, token_len),
			body, len, out);
	}

	static char text[RDMA_WIRE_STATUS_MAX + 1];
	if (rdma_wire_status_decode(body, len, text, sizeof(text)) == 0) {
		Check(std::strlen(text) == len);
		CheckSameBody(rdma_wire_status_encode(out, cap, 0, text, len), body, len, out);
	}

	static rdma_batch req;
	if (rdma_wire_batch_req_decode(body, len, &req) == 0) {
		Check(req.n >= 1 && req.n <= RDMA_BATCH_MAX_OPS);
		Check(req.bytes <= RDMA_BATCH_MAX_BYTES);
		CheckSameBody(rdma_wire_batch_req_encode(out, cap, 0, &req), body, len, out);
		// Any checked batch executes within its regions.
		if (rdma__batch_check(&req, node.info, 2) == 0) {
			rdma_batch exec = req;
			uint8_t *rep = Buf(node.rep);
			int n = rdma_wire_batch_rep_prepare(rep, cap, 0, &exec);
			Check(n > 0);
			rdma__exec_batch(&exec, node.regions);
		}
	}

	// A reply against a fixed client batch of every op type.
	static Bytes r1(5), r2(8);
	static uint64_t old1, old2;
	static rdma_batch client = [] {
		rdma_batch b;
		rdma_batch_init(&b);
		static uint8_t w[3] = { 1, 2, 3 };
		rdma_batch_read(&b, 0, 0, r1.data(), r1.size());
		rdma_batch_cas(&b, 0, 8, 1, 2, &old1);
		rdma_batch_write(&b, 1, 0, w, sizeof(w));
		rdma_batch_faa(&b, 1, 16, 1, &old2);
		rdma_batch_persist(&b, 1, 0, 32);
		rdma_batch_read(&b, 1, 3, r2.data(), r2.size());
		return b;
	}();
	int st = rdma_wire_batch_rep_decode(body, len, &client);
	Check(st == 0 || st == RDMA_E_PROTO ||
		(st >= RDMA_E_LAST && st < RDMA_E_BASE) || (st < 0 && st >= -4095));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Node &node = GetNode();
	// An exact-size heap copy: a read past the input is an ASan report
	// even when the fuzzer's own buffer is larger.
	Bytes in(data, data + size);
	const uint8_t *p = in.data();

	FuzzServe(node, p, size);
	FuzzBody(node, p, size);
	rdma_wire_header h;
	if (rdma_wire_header_decode(p, size, &h) == 0) {
		Check(h.length <= RDMA_WIRE_BODY_MAX);
		FuzzBody(node, p + kHdr, size - kHdr);
	}
	return 0;
}
