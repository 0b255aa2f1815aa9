// SPDX-License-Identifier: BSD-3-Clause
// rdma/tests/serve_batch_test.cc -- what the node does with a shipped batch
// (rdma__serve_batch in rdma/src/server.c), on two malloc'd regions: a good
// batch executes in order and its reply delivers data and old values; a
// batch touching memory outside its region, or a region that does not
// exist, is refused whole with nothing executed; garbage is counted and
// answered (or, with an unreadable header, not answered). Also rdma__log.
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <rdma/node.h>
#include <rdma/rdma.h>

extern "C" {
#include "rdma/src/exec.h"
#include "rdma/src/server.h"
#include "rdma/src/wire.h"
}

namespace {

using Bytes = std::vector<uint8_t>;

constexpr size_t kHdr = RDMA_WIRE_HEADER_SIZE;

class ServeBatch : public ::testing::Test {
protected:
	static constexpr uint64_t kLen0 = 4096;
	static constexpr uint64_t kLen1 = 256;

	void SetUp() override
	{
		// malloc gives 16-aligned memory: CAS/FAA need 8.
		mem_[0] = static_cast<uint8_t *>(std::malloc(kLen0));
		mem_[1] = static_cast<uint8_t *>(std::malloc(kLen1));
		ASSERT_NE(mem_[0], nullptr);
		ASSERT_NE(mem_[1], nullptr);
		for (uint64_t i = 0; i < kLen0; i++)
			mem_[0][i] = static_cast<uint8_t>(i * 13);
		for (uint64_t i = 0; i < kLen1; i++)
			mem_[1][i] = static_cast<uint8_t>(0xc0 ^ i);
		regions_[0] = { mem_[0], kLen0 };
		regions_[1] = { mem_[1], kLen1 };
		info_[0] = { 0, kLen0 };
		info_[1] = { 1, kLen1 };
		env_.nregions = 2;
		env_.regions = regions_;
		env_.info = info_;
		env_.host = "127.0.0.1";
		env_.counters = &counters_;
		env_.log = &ServeBatch::Log;
		env_.log_arg = this;
		// 8-aligned, as the reply's result slots require.
		rep_words_.assign(RDMA_WIRE_MSG_MAX / 8 + 1, 0);
	}

	void TearDown() override
	{
		std::free(mem_[0]);
		std::free(mem_[1]);
	}

	static void Log(void *arg, rdma_node_log_level level, const char *msg)
	{
		auto *self = static_cast<ServeBatch *>(arg);
		self->log_.push_back(std::to_string(level) + " " + msg);
	}

	uint8_t *rep() { return reinterpret_cast<uint8_t *>(rep_words_.data()); }

	Bytes Encode(const rdma_batch &b, uint32_t seq)
	{
		Bytes msg(RDMA_WIRE_MSG_MAX);
		int n = rdma_wire_batch_req_encode(msg.data(), msg.size(), seq, &b);
		EXPECT_GT(n, 0);
		msg.resize(n > 0 ? n : 0);
		return msg;
	}

	// Serves @msg; returns the reply size and decodes its header.
	int Serve(const Bytes &msg, rdma_wire_header *h)
	{
		// An exact-size copy so ASan sees any read past the message.
		Bytes copy(msg);
		int n = rdma__serve_batch(&env_, copy.data(), copy.size(), rep(),
			RDMA_WIRE_MSG_MAX);
		if (n > 0) {
			EXPECT_EQ(rdma_wire_header_decode(rep(), n, h), 0);
			EXPECT_EQ(h->type, RDMA_WIRE_BATCH_REP);
			EXPECT_EQ(h->length, static_cast<uint32_t>(n) - kHdr);
		}
		return n;
	}

	// The status of an error reply of @n bytes, checking its shape.
	int32_t ErrorStatus(int n, uint32_t nops)
	{
		EXPECT_EQ(n, static_cast<int>(kHdr + 8));
		int32_t status;
		uint32_t got_nops;
		std::memcpy(&status, rep() + kHdr, 4); // little-endian host
		std::memcpy(&got_nops, rep() + kHdr + 4, 4);
		EXPECT_EQ(got_nops, nops);
		return status;
	}

	Bytes Snapshot(int r) const
	{
		return Bytes(mem_[r], mem_[r] + (r == 0 ? kLen0 : kLen1));
	}

	uint64_t Word(int r, uint64_t off) const
	{
		uint64_t v;
		std::memcpy(&v, mem_[r] + off, 8);
		return v;
	}

	uint8_t *mem_[2] = {};
	rdma__exec_region regions_[2];
	rdma_region_info info_[2];
	rdma__server_counters counters_ = {};
	rdma__server_env env_ = {};
	std::vector<uint64_t> rep_words_;
	std::vector<std::string> log_;
};

TEST_F(ServeBatch, GoodBatchExecutesInOrder)
{
	const uint64_t w0 = Word(0, 64), w1 = Word(0, 72);
	Bytes data(100);
	for (size_t i = 0; i < data.size(); i++)
		data[i] = static_cast<uint8_t>(0x30 + i);
	uint64_t cas_old = 1, faa_old = 1, cas_fail_old = 1;
	Bytes back(100), tail(7);

	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 1, 5, data.data(), data.size()), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 1, 5, data.size()), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 0, 64, w0, 0xfeedULL, &cas_old), 0);
	ASSERT_EQ(rdma_batch_cas(&b, 0, 64, w0, 0xbadULL, &cas_fail_old), 0); // loses
	ASSERT_EQ(rdma_batch_faa(&b, 0, 72, 3, &faa_old), 0);
	ASSERT_EQ(rdma_batch_persist(&b, 0, 64, 16), 0);
	// Reads see the effects of the earlier operations of the batch.
	ASSERT_EQ(rdma_batch_read(&b, 1, 5, back.data(), back.size()), 0);
	ASSERT_EQ(rdma_batch_read(&b, 0, kLen0 - 7, tail.data(), tail.size()), 0);
	Bytes before0 = Snapshot(0), before1 = Snapshot(1);

	rdma_wire_header h;
	int n = Serve(Encode(b, 0xabcdef), &h);
	ASSERT_GT(n, 0);
	EXPECT_EQ(h.seq, 0xabcdefu);
	ASSERT_EQ(rdma_wire_batch_rep_decode(rep() + kHdr, n - kHdr, &b), 0);
	EXPECT_EQ(cas_old, w0);
	EXPECT_EQ(cas_fail_old, 0xfeedULL);
	EXPECT_EQ(faa_old, w1);
	EXPECT_EQ(back, data);
	EXPECT_EQ(tail, Bytes(before0.end() - 7, before0.end()));

	// Memory: exactly the written bytes and the two words changed.
	Bytes want1 = before1;
	std::memcpy(want1.data() + 5, data.data(), data.size());
	EXPECT_EQ(Snapshot(1), want1);
	Bytes want0 = before0;
	uint64_t nw0 = 0xfeedULL, nw1 = w1 + 3;
	std::memcpy(want0.data() + 64, &nw0, 8);
	std::memcpy(want0.data() + 72, &nw1, 8);
	EXPECT_EQ(Snapshot(0), want0);

	EXPECT_EQ(counters_.batches_shipped, 1u);
	EXPECT_EQ(counters_.persists, 2u);
	EXPECT_EQ(counters_.batches_rejected, 0u);
	EXPECT_EQ(counters_.bad_messages, 0u);
}

TEST_F(ServeBatch, RefusedBatchesExecuteNothing)
{
	struct Case {
		const char *what;
		uint32_t region;
		uint64_t offset;
		uint32_t len;
		int want;
	};
	const Case cases[] = {
		{ "past the end", 1, kLen1 - 8, 9, RDMA_E_BOUNDS },
		{ "offset past the end", 0, kLen0 + 1, 1, RDMA_E_BOUNDS },
		{ "offset + len wraps", 0, UINT64_MAX - 3, 8, RDMA_E_BOUNDS },
		{ "no region 2", 2, 0, 8, RDMA_E_NO_REGION },
		{ "no region max", UINT32_MAX, 0, 8, RDMA_E_NO_REGION },
	};
	uint64_t n_rejected = 0;
	for (const Case &c : cases) {
		for (int last_type = RDMA_OP_READ; last_type < RDMA_OP_NTYPES; last_type++) {
			// Valid writes, a CAS and an FAA first, then the bad op
			// last: nothing at all may execute.
			Bytes w(32, 0xee), r(c.len);
			uint64_t old = 0;
			rdma_batch b;
			rdma_batch_init(&b);
			ASSERT_EQ(rdma_batch_write(&b, 0, 0, w.data(), w.size()), 0);
			ASSERT_EQ(rdma_batch_write(&b, 1, 0, w.data(), w.size()), 0);
			ASSERT_EQ(rdma_batch_cas(&b, 0, 32, Word(0, 32), 1, &old), 0);
			ASSERT_EQ(rdma_batch_faa(&b, 1, 40, 1, &old), 0);
			int ret = 0;
			switch (last_type) {
			case RDMA_OP_READ:
				ret = rdma_batch_read(&b, c.region, c.offset, r.data(), c.len);
				break;
			case RDMA_OP_WRITE:
				ret = rdma_batch_write(&b, c.region, c.offset, r.data(), c.len);
				break;
			case RDMA_OP_CAS:
			case RDMA_OP_FAA: {
				// Atomics must be 8-aligned and 8 long to reach
				// the bounds check.
				uint64_t off = c.offset & ~uint64_t{7};
				if (c.region < 2 && c.len != 8)
					off = (c.region == 0 ? kLen0 : kLen1);
				ret = last_type == RDMA_OP_CAS ?
					rdma_batch_cas(&b, c.region, off, 0, 1, &old) :
					rdma_batch_faa(&b, c.region, off, 1, &old);
				break;
			}
			case RDMA_OP_PERSIST:
				ret = rdma_batch_persist(&b, c.region, c.offset, c.len);
				break;
			}
			ASSERT_EQ(ret, 0) << c.what;
			Bytes before0 = Snapshot(0), before1 = Snapshot(1);
			rdma_wire_header h;
			int n = Serve(Encode(b, 5), &h);
			ASSERT_GT(n, 0) << c.what;
			EXPECT_EQ(h.seq, 5u);
			EXPECT_EQ(ErrorStatus(n, b.n), c.want) << c.what << " " << last_type;
			EXPECT_EQ(rdma_wire_batch_rep_decode(rep() + kHdr, n - kHdr, &b), c.want);
			EXPECT_EQ(Snapshot(0), before0) << c.what << " " << last_type;
			EXPECT_EQ(Snapshot(1), before1) << c.what << " " << last_type;
			n_rejected++;
		}
	}
	EXPECT_EQ(counters_.batches_rejected, n_rejected);
	EXPECT_EQ(counters_.batches_shipped, 0u);
	EXPECT_EQ(counters_.persists, 0u);
	EXPECT_EQ(counters_.bad_messages, 0u);
}

TEST_F(ServeBatch, GarbageIsCountedAndAnswered)
{
	uint64_t x = 7;
	rdma_batch b;
	rdma_batch_init(&b);
	ASSERT_EQ(rdma_batch_write(&b, 0, 0, &x, 8), 0);
	ASSERT_EQ(rdma_batch_faa(&b, 0, 8, 1, nullptr), 0);
	const Bytes good = Encode(b, 9);
	const Bytes before0 = Snapshot(0), before1 = Snapshot(1);
	rdma_wire_header h;
	uint64_t bad = 0;

	// Unreadable headers: no reply at all.
	for (Bytes m : {Bytes{}, Bytes(good.begin(), good.begin() + kHdr - 1),
		     Bytes(64, 0xa5)}) {
		EXPECT_EQ(Serve(m, &h), RDMA_E_PROTO);
		EXPECT_EQ(counters_.bad_messages, ++bad);
	}
	Bytes m = good;
	m[0] ^= 1; // magic
	EXPECT_EQ(Serve(m, &h), RDMA_E_PROTO);
	EXPECT_EQ(counters_.bad_messages, ++bad);

	// Readable headers, bad messages: an RDMA_E_PROTO reply with nops 0.
	std::vector<Bytes> answered;
	answered.push_back(Bytes(good.begin(), good.end() - 1)); // truncated
	answered.push_back(good);
	answered.back().push_back(0); // trailing byte
	answered.push_back(good);
	answered.back()[6] = RDMA_WIRE_BATCH_REP; // wrong type
	answered.push_back(good);
	answered.back()[kHdr + 8] = 0x77; // op type
	answered.push_back(good);
	answered.back()[kHdr] = 0; // nops 0
	answered.push_back(Bytes(good.begin(), good.begin() + kHdr)); // no body
	answered.back()[8] = 0;
	answered.back()[9] = 0;
	for (const Bytes &a : answered) {
		int n = Serve(a, &h);
		ASSERT_GT(n, 0);
		EXPECT_EQ(h.seq, 9u);
		EXPECT_EQ(ErrorStatus(n, 0), RDMA_E_PROTO);
		EXPECT_EQ(rdma_wire_batch_rep_decode(rep() + kHdr, n - kHdr, &b), RDMA_E_PROTO);
		EXPECT_EQ(counters_.bad_messages, ++bad);
	}
	EXPECT_EQ(Snapshot(0), before0);
	EXPECT_EQ(Snapshot(1), before1);
	EXPECT_EQ(counters_.batches_shipped, 0u);
	EXPECT_EQ(counters_.batches_rejected, 0u);
	EXPECT_FALSE(log_.empty()); // malformed requests are logged (debug)

	// And the good one still works afterwards.
	int n = Serve(good, &h);
	ASSERT_GT(n, 0);
	ASSERT_EQ(rdma_wire_batch_rep_decode(rep() + kHdr, n - kHdr, &b), 0);
	EXPECT_EQ(Word(0, 0), 7u);
	EXPECT_EQ(counters_.batches_shipped, 1u);
}

TEST_F(ServeBatch, LogFormatsAndToleratesNoSink)
{
	rdma__log(&env_, RDMA_NODE_LOG_WARN, "client %d: %s", 3, "gone");
	ASSERT_EQ(log_.size(), 1u);
	EXPECT_EQ(log_[0], std::to_string(RDMA_NODE_LOG_WARN) + " client 3: gone");
	// Overlong lines are cut, not overflowed.
	std::string big(5000, 'z');
	rdma__log(&env_, RDMA_NODE_LOG_INFO, "%s", big.c_str());
	ASSERT_EQ(log_.size(), 2u);
	EXPECT_LT(log_[1].size(), big.size());
	env_.log = nullptr;
	rdma__log(&env_, RDMA_NODE_LOG_ERROR, "dropped %d", 1);
	EXPECT_EQ(log_.size(), 2u);
}

} // namespace
