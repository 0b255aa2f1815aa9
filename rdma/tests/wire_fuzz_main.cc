// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/wire_fuzz_main.cc -- runs the wire fuzz target without
// libFuzzer: over the files named on the command line, or else over a fixed
// set of seeded inputs made by mutating valid encodings of every message
// type (bit flips, boundary bytes in length and count fields, truncations,
// extensions, spliced bodies). Prints the plain "N passed, 0 failed" line;
// a failing input aborts the process.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <vector>

#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/wire.h"
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

namespace {

using Bytes = std::vector<uint8_t>;

Bytes Encoded(int n, const Bytes &buf)
{
	if (n <= 0) {
		std::fprintf(stderr, "wire_fuzz: seed encoding failed (%d)\n", n);
		std::abort();
	}
	return Bytes(buf.begin(), buf.begin() + n);
}

// Valid messages of every type; batches that pass and fail the node's
// region check (regions 0 and 1 of 64 and 200 bytes in wire_fuzz.cc).
std::vector<Bytes> Seeds()
{
	std::vector<Bytes> s;
	Bytes buf(RDMA_WIRE_MSG_MAX);
	const size_t cap = buf.size();

	rdma_wire_hello hello{};
	hello.backend = RDMA_WIRE_BACKEND_OFI_TCP;
	hello.token_len = 5;
	std::memcpy(hello.token, "token", 5);
	hello.addr_len = 4;
	s.push_back(Encoded(rdma_wire_hello_encode(buf.data(), cap, 1, &hello), buf));

	rdma_wire_welcome welcome{};
	welcome.incarnation = 3;
	welcome.nregions = 2;
	welcome.regions[0] = { 64, 1, 0 };
	welcome.regions[1] = { 200, 2, 0x1000 };
	welcome.addr_len = 6;
	s.push_back(Encoded(rdma_wire_welcome_encode(buf.data(), cap, 2, &welcome), buf));

	s.push_back(Encoded(rdma_wire_refuse_encode(buf.data(), cap, 3, RDMA_E_AUTH,
		"bad token"), buf));
	s.push_back(Encoded(rdma_wire_status_req_encode(buf.data(), cap, 4, "tok", 3), buf));
	s.push_back(Encoded(rdma_wire_status_encode(buf.data(), cap, 5,
		"batches 1\npersists 2\n", 21), buf));

	static uint8_t w[40];
	static uint8_t r[64];
	static uint64_t old;
	rdma_batch b;
	rdma_batch_init(&b);
	rdma_batch_write(&b, 1, 3, w, 17);
	rdma_batch_persist(&b, 1, 0, 200);
	rdma_batch_cas(&b, 0, 8, 0, 5, &old);
	rdma_batch_faa(&b, 0, 56, 1, &old);
	rdma_batch_read(&b, 0, 0, r, 64);
	rdma_batch_read(&b, 1, 190, r, 10);
	s.push_back(Encoded(rdma_wire_batch_req_encode(buf.data(), cap, 6, &b), buf));

	rdma_batch_init(&b);
	rdma_batch_write(&b, 0, 60, w, 8); // 4 bytes past region 0
	s.push_back(Encoded(rdma_wire_batch_req_encode(buf.data(), cap, 7, &b), buf));

	rdma_batch_init(&b);
	rdma_batch_read(&b, 2, 0, r, 1); // no region 2
	rdma_batch_write(&b, 0, 0, w, 40);
	s.push_back(Encoded(rdma_wire_batch_req_encode(buf.data(), cap, 8, &b), buf));

	rdma_batch_init(&b);
	while (b.n < RDMA_BATCH_MAX_OPS)
		rdma_batch_faa(&b, b.n % 2, 8 * (b.n % 8), b.n, nullptr);
	s.push_back(Encoded(rdma_wire_batch_req_encode(buf.data(), cap, 9, &b), buf));

	s.push_back(Encoded(rdma_wire_batch_rep_encode_error(buf.data(), cap, 10, 6,
		RDMA_E_BOUNDS), buf));
	return s;
}

// One deterministic mutation of @m.
Bytes Mutate(const Bytes &m, const std::vector<Bytes> &seeds, std::mt19937 &gen)
{
	Bytes out = m;
	const uint8_t boundary[] = { 0, 1, 7, 8, 0x7f, 0x80, 0xfe, 0xff };
	switch (gen() % 7) {
	case 0: { // flip a few bits
		unsigned k = 1 + gen() % 4;
		for (unsigned i = 0; i < k && !out.empty(); i++)
			out[gen() % out.size()] ^= static_cast<uint8_t>(1u << (gen() % 8));
		break;
	}
	case 1: // a boundary byte in the header or the fixed body fields
		if (!out.empty())
			out[gen() % std::min<size_t>(out.size(), 64)] = boundary[gen() % 8];
		break;
	case 2: // truncate
		out.resize(out.empty() ? 0 : gen() % out.size());
		break;
	case 3: { // extend with bytes
		unsigned k = 1 + gen() % 48;
		for (unsigned i = 0; i < k; i++)
			out.push_back(static_cast<uint8_t>(gen()));
		break;
	}
	case 4: // the body of one message behind the header of another
		if (out.size() >= RDMA_WIRE_HEADER_SIZE) {
			const Bytes &o = seeds[gen() % seeds.size()];
			out.resize(RDMA_WIRE_HEADER_SIZE);
			out.insert(out.end(), o.begin() + RDMA_WIRE_HEADER_SIZE, o.end());
		}
		break;
	case 5: // the header's length field set to a boundary value
		if (out.size() >= RDMA_WIRE_HEADER_SIZE) {
			const uint32_t lens[] = { 0, 1, static_cast<uint32_t>(out.size()),
				RDMA_WIRE_BODY_MAX, RDMA_WIRE_BODY_MAX + 1, UINT32_MAX };
			uint32_t v = lens[gen() % 6];
			for (int i = 0; i < 4; i++)
				out[8 + i] = static_cast<uint8_t>(v >> (8 * i));
		}
		break;
	case 6: { // a little-endian 16- or 32-bit boundary value in the body
		if (out.size() < RDMA_WIRE_HEADER_SIZE + 4)
			break;
		size_t at = RDMA_WIRE_HEADER_SIZE + gen() % (out.size() - RDMA_WIRE_HEADER_SIZE - 3);
		const uint32_t vals[] = { 0, 1, 8, 32, 33, 256, 257, 0xffff, 0x10000,
			RDMA_BATCH_MAX_BYTES, RDMA_BATCH_MAX_BYTES + 1, UINT32_MAX };
		uint32_t v = vals[gen() % 12];
		int width = gen() % 2 ? 4 : 2;
		for (int i = 0; i < width; i++)
			out[at + i] = static_cast<uint8_t>(v >> (8 * i));
		break;
	}
	}
	return out;
}

} // namespace

int main(int argc, char **argv)
{
	unsigned runs = 0;
	if (argc > 1) {
		for (int i = 1; i < argc; i++) {
			std::ifstream f(argv[i], std::ios::binary);
			Bytes in((std::istreambuf_iterator<char>(f)),
				std::istreambuf_iterator<char>());
			LLVMFuzzerTestOneInput(in.data(), in.size());
			runs++;
		}
	} else {
		const std::vector<Bytes> seeds = Seeds();
		std::mt19937 gen(2026);
		for (const Bytes &s : seeds) {
			LLVMFuzzerTestOneInput(s.data(), s.size());
			runs++;
			// Every prefix of a valid message, then mutations of
			// mutations: up to three in a row.
			for (size_t k = 0; k < s.size(); k += 1 + s.size() / 40) {
				LLVMFuzzerTestOneInput(s.data(), k);
				runs++;
			}
			for (int i = 0; i < 40; i++) {
				Bytes m = s;
				int depth = 1 + i % 3;
				for (int d = 0; d < depth; d++)
					m = Mutate(m, seeds, gen);
				LLVMFuzzerTestOneInput(m.data(), m.size());
				runs++;
			}
		}
	}
	std::printf("wire_fuzz: %u passed, 0 failed\n", runs);
	return 0;
}
