// SPDX-License-Identifier: BSD-3-Clause
// verbs_wr_test -- the verbs backend's work-request chains and completion
// mapping, on synthetic batches and work completions (no device needed).
#include <gtest/gtest.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "rdma/src/verbs_wr.h"

namespace {

constexpr uint32_t kMaxInline = 64;
constexpr uint32_t kLkey = 0xabcd;

// Two regions at node addresses of different magnitude, 8-aligned.
const rdma__verbs_remote kRegions[2] = {
	{0x10000, 4096, 0x1111},
	{0x7f0000001000ull, 1 << 20, 0x2222},
};

class VerbsWr : public ::testing::Test {
protected:
	void SetUp() override
	{
		rdma_batch_init(&b);
		bounce_mem.assign(RDMA__VERBS_BOUNCE_SIZE / 8, 0);
		bounce.base = bounce_mem.data();
		bounce.size = RDMA__VERBS_BOUNCE_SIZE;
		bounce.lkey = kLkey;
		memset(&w, 0x5a, sizeof(w)); // builder must not rely on zeroing
	}

	int Build(uint64_t seq = 7, uint32_t max_inline = kMaxInline)
	{
		return rdma__verbs_wr_build(&b, kRegions, 2, &bounce, max_inline,
			seq, &w);
	}

	uint64_t Base() const { return (uintptr_t)bounce.base; }
	char *Slot(unsigned i) { return (char *)bounce.base + w.off[i]; }

	rdma_batch b;
	std::vector<uint64_t> bounce_mem; // uint64_t: 8-aligned storage
	rdma__verbs_bounce bounce;
	rdma__verbs_wrs w;
};

TEST_F(VerbsWr, ReadAndWriteRequests)
{
	char big[100], small[8], dst[300];
	memset(big, 1, sizeof(big));
	memset(small, 2, sizeof(small));

	ASSERT_EQ(0, rdma_batch_write(&b, 1, 16, big, sizeof(big)));
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, small, sizeof(small)));
	ASSERT_EQ(0, rdma_batch_read(&b, 1, 4000, dst, sizeof(dst)));
	ASSERT_EQ(0, Build());
	ASSERT_EQ(3u, w.n);

	EXPECT_EQ(IBV_WR_RDMA_WRITE, w.wr[0].opcode);
	EXPECT_EQ(kRegions[1].addr + 16, w.wr[0].wr.rdma.remote_addr);
	EXPECT_EQ(kRegions[1].rkey, w.wr[0].wr.rdma.rkey);
	EXPECT_EQ(100u, w.wr[0].sg_list->length);
	EXPECT_EQ(0u, w.wr[0].send_flags); // 100 > max_inline

	EXPECT_EQ(IBV_WR_RDMA_WRITE, w.wr[1].opcode);
	EXPECT_EQ(kRegions[0].addr, w.wr[1].wr.rdma.remote_addr);
	EXPECT_EQ(kRegions[0].rkey, w.wr[1].wr.rdma.rkey);
	EXPECT_EQ(8u, w.wr[1].sg_list->length);
	EXPECT_EQ((unsigned)IBV_SEND_INLINE, w.wr[1].send_flags);

	EXPECT_EQ(IBV_WR_RDMA_READ, w.wr[2].opcode);
	EXPECT_EQ(kRegions[1].addr + 4000, w.wr[2].wr.rdma.remote_addr);
	EXPECT_EQ(kRegions[1].rkey, w.wr[2].wr.rdma.rkey);
	EXPECT_EQ(300u, w.wr[2].sg_list->length);
	// Reads after writes need no fence; the last one is signalled.
	EXPECT_EQ((unsigned)IBV_SEND_SIGNALED, w.wr[2].send_flags);

	for (unsigned i = 0; i < w.n; i++) {
		EXPECT_EQ(&w.sge[i], w.wr[i].sg_list);
		EXPECT_EQ(1, w.wr[i].num_sge);
		EXPECT_EQ(kLkey, w.wr[i].sg_list->lkey);
		EXPECT_EQ(Base() + w.off[i], w.wr[i].sg_list->addr);
	}
}

TEST_F(VerbsWr, InlineThresholdAndDisabled)
{
	char buf[kMaxInline + 1] = {};

	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, buf, kMaxInline));
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 128, buf, kMaxInline + 1));
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 512, buf, 1));
	ASSERT_EQ(0, Build());
	EXPECT_TRUE(w.wr[0].send_flags & IBV_SEND_INLINE);
	EXPECT_FALSE(w.wr[1].send_flags & IBV_SEND_INLINE);
	EXPECT_TRUE(w.wr[2].send_flags & IBV_SEND_INLINE);

	ASSERT_EQ(0, Build(7, 0));
	for (unsigned i = 0; i < w.n; i++)
		EXPECT_FALSE(w.wr[i].send_flags & IBV_SEND_INLINE) << i;
}

TEST_F(VerbsWr, AtomicRequests)
{
	uint64_t old1, old2;

	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 24, 5, 9, &old1));
	ASSERT_EQ(0, rdma_batch_faa(&b, 1, 4096, 3, &old2));
	ASSERT_EQ(0, Build());

	EXPECT_EQ(IBV_WR_ATOMIC_CMP_AND_SWP, w.wr[0].opcode);
	EXPECT_EQ(kRegions[0].addr + 24, w.wr[0].wr.atomic.remote_addr);
	EXPECT_EQ(kRegions[0].rkey, w.wr[0].wr.atomic.rkey);
	EXPECT_EQ(5u, w.wr[0].wr.atomic.compare_add);
	EXPECT_EQ(9u, w.wr[0].wr.atomic.swap);
	EXPECT_EQ(8u, w.wr[0].sg_list->length);

	EXPECT_EQ(IBV_WR_ATOMIC_FETCH_AND_ADD, w.wr[1].opcode);
	EXPECT_EQ(kRegions[1].addr + 4096, w.wr[1].wr.atomic.remote_addr);
	EXPECT_EQ(kRegions[1].rkey, w.wr[1].wr.atomic.rkey);
	EXPECT_EQ(3u, w.wr[1].wr.atomic.compare_add);
	EXPECT_EQ(8u, w.wr[1].sg_list->length);
	// FAA after an outstanding CAS is fenced.
	EXPECT_EQ((unsigned)(IBV_SEND_FENCE | IBV_SEND_SIGNALED), w.wr[1].send_flags);
	EXPECT_EQ(0u, w.wr[0].send_flags);

	for (unsigned i = 0; i < w.n; i++)
		EXPECT_EQ(0u, w.wr[i].sg_list->addr % 8) << "result slot " << i;
}

// The sequence DESIGN.md sect. 7 needs in one round trip.
TEST_F(VerbsWr, WritePersistCasPersist)
{
	char buf[256];
	uint64_t old;
	memset(buf, 7, sizeof(buf));

	ASSERT_EQ(0, rdma_batch_write(&b, 1, 1024, buf, sizeof(buf)));
	ASSERT_EQ(0, rdma_batch_persist(&b, 1, 1024, sizeof(buf)));
	ASSERT_EQ(0, rdma_batch_cas(&b, 1, 0, 0, 1024, &old));
	ASSERT_EQ(0, rdma_batch_persist(&b, 1, 0, 8));
	ASSERT_EQ(0, Build());
	ASSERT_EQ(4u, w.n);

	const ibv_wr_opcode ops[4] = {IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_RDMA_READ};
	const unsigned flags[4] = {0, 0, IBV_SEND_FENCE,
		IBV_SEND_FENCE | IBV_SEND_SIGNALED};
	for (unsigned i = 0; i < 4; i++) {
		EXPECT_EQ(ops[i], w.wr[i].opcode) << i;
		EXPECT_EQ(flags[i], w.wr[i].send_flags) << i;
	}
	// Flush reads: the last 8-aligned word of each persisted range.
	EXPECT_EQ(kRegions[1].addr + 1024 + 256 - 8, w.wr[1].wr.rdma.remote_addr);
	EXPECT_EQ(8u, w.wr[1].sg_list->length);
	EXPECT_EQ(kRegions[1].rkey, w.wr[1].wr.rdma.rkey);
	EXPECT_EQ(kRegions[1].addr, w.wr[3].wr.rdma.remote_addr);
	EXPECT_EQ(8u, w.wr[3].sg_list->length);
	EXPECT_EQ(kRegions[1].addr, w.wr[2].wr.atomic.remote_addr);
}

// Which request carries IBV_SEND_FENCE, for every pair and a few longer
// sequences. 'W' write, 'R' read, 'P' persist, 'C' CAS, 'F' FAA.
TEST_F(VerbsWr, FencePlacement)
{
	static uint64_t word;
	static char byte[8];
	const std::vector<std::pair<const char *, const char *>> cases = {
		// sequence, fenced ('1') or not ('0') per request
		{"WW", "00"}, {"WR", "00"}, {"WP", "00"}, {"WC", "00"}, {"WF", "00"},
		{"RW", "01"}, {"RR", "00"}, {"RP", "00"}, {"RC", "01"}, {"RF", "01"},
		{"PW", "01"}, {"PR", "00"}, {"PP", "00"}, {"PC", "01"}, {"PF", "01"},
		{"CW", "01"}, {"CR", "01"}, {"CP", "01"}, {"CC", "01"}, {"CF", "01"},
		{"FW", "01"}, {"FR", "01"}, {"FP", "01"}, {"FC", "01"}, {"FF", "01"},
		{"RRRR", "0000"}, {"WWWW", "0000"}, {"WPCP", "0011"},
		{"RWWR", "0110"}, {"WWRWW", "00011"}, {"PRRC", "0001"},
		{"CRRW", "0111"},
	};

	for (const auto &[seq, fenced] : cases) {
		rdma_batch_init(&b);
		for (const char *p = seq; *p; p++) {
			uint64_t off = (uint64_t)(p - seq) * 8;
			switch (*p) {
			case 'W': ASSERT_EQ(0, rdma_batch_write(&b, 0, off, byte, 8)); break;
			case 'R': ASSERT_EQ(0, rdma_batch_read(&b, 0, off, byte, 8)); break;
			case 'P': ASSERT_EQ(0, rdma_batch_persist(&b, 0, off, 8)); break;
			case 'C': ASSERT_EQ(0, rdma_batch_cas(&b, 0, off, 0, 1, &word)); break;
			case 'F': ASSERT_EQ(0, rdma_batch_faa(&b, 0, off, 1, &word)); break;
			}
		}
		ASSERT_EQ(0, Build()) << seq;
		for (unsigned i = 0; i < w.n; i++) {
			bool want = fenced[i] == '1';
			EXPECT_EQ(want, (w.wr[i].send_flags & IBV_SEND_FENCE) != 0)
				<< seq << " request " << i;
			EXPECT_EQ(want, rdma__verbs_wr_needs_fence(&b, i)) << seq << " " << i;
		}
	}
}

TEST_F(VerbsWr, ChainSignalAndWrId)
{
	static char buf[8];
	for (unsigned i = 0; i < RDMA_BATCH_MAX_OPS; i++)
		ASSERT_EQ(0, rdma_batch_read(&b, 0, i * 8, buf, 8));
	const uint64_t seq = 0x123456789abcull;
	ASSERT_EQ(0, Build(seq));
	ASSERT_EQ((unsigned)RDMA_BATCH_MAX_OPS, w.n);
	for (unsigned i = 0; i < w.n; i++) {
		EXPECT_EQ(i + 1 < w.n ? &w.wr[i + 1] : nullptr, w.wr[i].next) << i;
		EXPECT_EQ(i + 1 == w.n, (w.wr[i].send_flags & IBV_SEND_SIGNALED) != 0) << i;
		EXPECT_EQ(rdma__verbs_wr_id(seq, i), w.wr[i].wr_id);
		EXPECT_EQ(seq, w.wr[i].wr_id >> RDMA__VERBS_WR_INDEX_BITS);
		EXPECT_EQ(i, w.wr[i].wr_id & 0xff);
		EXPECT_EQ(kRegions[0].addr + i * 8, w.wr[i].wr.rdma.remote_addr);
	}
	// Sequence numbers wrap at 56 bits, consistently in wr_id and in w.seq.
	ASSERT_EQ(0, Build(~0ull));
	EXPECT_EQ(~0ull >> 8, w.seq);
	EXPECT_EQ(w.seq, w.wr[0].wr_id >> 8);
}

// Slots are 8-aligned, disjoint, in op order, and a worst-case batch fits
// the documented bounce size.
TEST_F(VerbsWr, BounceLayout)
{
	static std::vector<char> data(RDMA_BATCH_MAX_BYTES);
	static uint64_t word;
	const uint32_t n = RDMA_BATCH_MAX_OPS;
	// Half odd-length reads/writes using all payload bytes, half 8-byte slots.
	// CAS payloads count against the batch's byte limit too.
	uint32_t left = RDMA_BATCH_MAX_BYTES - 8 * (n / 4);
	for (unsigned i = 0; i < n; i++) {
		switch (i % 4) {
		case 0: case 1: {
			uint32_t len = i == n - 3 ? left : 4093;
			if (i % 2 == 0)
				ASSERT_EQ(0, rdma_batch_read(&b, 1, 0, data.data(), len));
			else
				ASSERT_EQ(0, rdma_batch_write(&b, 1, 0, data.data(), len));
			left -= len;
			break;
		}
		case 2: ASSERT_EQ(0, rdma_batch_cas(&b, 1, 64, 0, 1, &word)); break;
		case 3: ASSERT_EQ(0, rdma_batch_persist(&b, 1, 3, 77)); break;
		}
	}
	ASSERT_EQ(0, Build());
	std::vector<std::pair<uint64_t, uint64_t>> spans;
	for (unsigned i = 0; i < w.n; i++) {
		EXPECT_EQ(0u, w.off[i] % 8) << i;
		spans.push_back({w.off[i], w.off[i] + w.wr[i].sg_list->length});
		EXPECT_LE(w.off[i] + w.wr[i].sg_list->length, w.used);
	}
	for (unsigned i = 1; i < spans.size(); i++)
		EXPECT_LE(spans[i - 1].second, spans[i].first) << i;
	EXPECT_LE(w.used, (uint32_t)RDMA__VERBS_BOUNCE_SIZE);

	// The same batch does not fit a buffer one slot short of its layout.
	bounce.size = w.used - 8;
	EXPECT_EQ(-EINVAL, Build());
}

TEST_F(VerbsWr, PersistWord)
{
	struct {
		uint64_t off;
		uint32_t len;
		uint64_t word;
		uint32_t wlen;
	} cases[] = {
		{3, 2, 0, 8},          // inside one word
		{8, 8, 8, 8},          // exactly one word
		{5, 4, 8, 8},          // straddles: last byte 8 is in word 8
		{0, 4096, 4088, 8},    // whole region 0
		{4095, 1, 4088, 8},    // last byte
	};
	for (const auto &c : cases) {
		rdma_batch_init(&b);
		ASSERT_EQ(0, rdma_batch_persist(&b, 0, c.off, c.len));
		ASSERT_EQ(0, Build());
		EXPECT_EQ(IBV_WR_RDMA_READ, w.wr[0].opcode);
		EXPECT_EQ(kRegions[0].addr + c.word, w.wr[0].wr.rdma.remote_addr) << c.off;
		EXPECT_EQ(c.wlen, w.wr[0].sg_list->length) << c.off;
	}
	// A region whose length is not a multiple of 8: the word is clipped.
	const rdma__verbs_remote odd[1] = {{0x20000, 12, 0x33}};
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 9, 3));
	ASSERT_EQ(0, rdma__verbs_wr_build(&b, odd, 1, &bounce, 0, 1, &w));
	EXPECT_EQ(0x20008u, w.wr[0].wr.rdma.remote_addr);
	EXPECT_EQ(4u, w.wr[0].sg_list->length);
}

TEST_F(VerbsWr, Rejections)
{
	static char buf[16];
	static uint64_t word;

	EXPECT_EQ(-EINVAL, Build()); // empty

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 2, 0, buf, 8)); // no region 2
	EXPECT_EQ(-EINVAL, Build());

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_write(&b, 0, 4090, buf, 8)); // past the end
	EXPECT_EQ(-EINVAL, Build());

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 0, UINT64_MAX - 2, buf, 8)); // overflow
	EXPECT_EQ(-EINVAL, Build());

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_persist(&b, 1, 1 << 20, 1));
	EXPECT_EQ(-EINVAL, Build());

	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_faa(&b, 0, 4096, 1, &word)); // word past the end
	EXPECT_EQ(-EINVAL, Build());

	// A hand-made CAS of the wrong size, and an unknown operation type.
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 0, 0, 1, &word));
	b.ops[0].len = 4;
	EXPECT_EQ(-EINVAL, Build());
	b.ops[0].len = 8;
	b.ops[0].type = RDMA_OP_NTYPES;
	EXPECT_EQ(-EINVAL, Build());

	// A region at a misaligned node address cannot take atomics.
	const rdma__verbs_remote skew[1] = {{0x10004, 4096, 1}};
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 8, 0, 1, &word));
	EXPECT_EQ(-EINVAL, rdma__verbs_wr_build(&b, skew, 1, &bounce, 0, 1, &w));

	// A region whose address plus length wraps.
	const rdma__verbs_remote wrap[1] = {{UINT64_MAX - 8, 4096, 1}};
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 0, buf, 8));
	EXPECT_EQ(-EINVAL, rdma__verbs_wr_build(&b, wrap, 1, &bounce, 0, 1, &w));

	// Bounce buffer too small or misaligned.
	rdma__verbs_bounce small = bounce;
	small.size = 8;
	rdma_batch_init(&b);
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 0, buf, 16));
	EXPECT_EQ(-EINVAL, rdma__verbs_wr_build(&b, kRegions, 2, &small, 0, 1, &w));
	rdma__verbs_bounce skewed = bounce;
	skewed.base = (char *)bounce.base + 4;
	EXPECT_EQ(-EINVAL, rdma__verbs_wr_build(&b, kRegions, 2, &skewed, 0, 1, &w));
	EXPECT_EQ(0, Build());
}

// Stage copies the write sources in; deliver copies reads and old values
// out, byte for byte as the HCA left them (host order).
TEST_F(VerbsWr, StageAndDeliver)
{
	char src[13], dst[21];
	uint64_t old_cas = 0, old_faa = 0;
	for (unsigned i = 0; i < sizeof(src); i++)
		src[i] = (char)(0x40 + i);
	memset(dst, 0, sizeof(dst));

	ASSERT_EQ(0, rdma_batch_write(&b, 0, 0, src, sizeof(src)));
	ASSERT_EQ(0, rdma_batch_cas(&b, 0, 16, 1, 2, &old_cas));
	ASSERT_EQ(0, rdma_batch_read(&b, 0, 32, dst, sizeof(dst)));
	ASSERT_EQ(0, rdma_batch_faa(&b, 0, 64, 1, &old_faa));
	ASSERT_EQ(0, rdma_batch_faa(&b, 0, 72, 1, nullptr));
	ASSERT_EQ(0, rdma_batch_persist(&b, 0, 0, 80));
	ASSERT_EQ(0, Build());

	rdma__verbs_wr_stage(&b, &w, bounce.base);
	EXPECT_EQ(0, memcmp(Slot(0), src, sizeof(src)));

	// What the HCA would leave behind.
	for (unsigned i = 0; i < sizeof(dst); i++)
		Slot(2)[i] = (char)(0x80 + i);
	const uint64_t v1 = 0x0102030405060708ull, v2 = 0xfffffffffffffffeull;
	memcpy(Slot(1), &v1, 8);
	memcpy(Slot(3), &v2, 8);
	memcpy(Slot(4), &v1, 8);
	rdma__verbs_wr_deliver(&b, &w, bounce.base);
	for (unsigned i = 0; i < sizeof(dst); i++)
		EXPECT_EQ((char)(0x80 + i), dst[i]) << i;
	EXPECT_EQ(v1, old_cas);
	EXPECT_EQ(v2, old_faa);
}

TEST(VerbsWc, StatusMapping)
{
	EXPECT_EQ(0, rdma__verbs_wc_status(IBV_WC_SUCCESS));
	EXPECT_EQ(RDMA_E_BOUNDS, rdma__verbs_wc_status(IBV_WC_REM_ACCESS_ERR));
	for (ibv_wc_status s : {IBV_WC_RETRY_EXC_ERR, IBV_WC_RNR_RETRY_EXC_ERR,
		     IBV_WC_WR_FLUSH_ERR, IBV_WC_RESP_TIMEOUT_ERR,
		     IBV_WC_REM_ABORT_ERR, IBV_WC_FATAL_ERR})
		EXPECT_EQ(RDMA_E_CONN, rdma__verbs_wc_status(s)) << ibv_wc_status_str(s);
	for (ibv_wc_status s : {IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR,
		     IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_PROT_ERR, IBV_WC_MW_BIND_ERR,
		     IBV_WC_BAD_RESP_ERR, IBV_WC_LOC_ACCESS_ERR,
		     IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_OP_ERR,
		     IBV_WC_LOC_RDD_VIOL_ERR, IBV_WC_REM_INV_RD_REQ_ERR,
		     IBV_WC_INV_EECN_ERR, IBV_WC_INV_EEC_STATE_ERR,
		     IBV_WC_GENERAL_ERR, IBV_WC_TM_ERR, IBV_WC_TM_RNDV_INCOMPLETE})
		EXPECT_EQ(-EIO, rdma__verbs_wc_status(s)) << ibv_wc_status_str(s);
	EXPECT_EQ(-EIO, rdma__verbs_wc_status((ibv_wc_status)999));
}

TEST_F(VerbsWr, Classify)
{
	static char buf[8];
	for (unsigned i = 0; i < 3; i++)
		ASSERT_EQ(0, rdma_batch_write(&b, 0, i * 8, buf, 8));
	ASSERT_EQ(0, Build(42));

	ibv_wc wc;
	memset(&wc, 0, sizeof(wc));
	wc.status = IBV_WC_SUCCESS;
	wc.wr_id = rdma__verbs_wr_id(42, 2);
	EXPECT_EQ(1, rdma__verbs_wc_classify(&wc, &w)); // last: done
	wc.wr_id = rdma__verbs_wr_id(42, 0);
	EXPECT_EQ(0, rdma__verbs_wc_classify(&wc, &w)); // earlier success
	wc.wr_id = rdma__verbs_wr_id(42, 3);
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_wc_classify(&wc, &w)); // no such WR
	wc.wr_id = rdma__verbs_wr_id(41, 2);
	EXPECT_EQ(0, rdma__verbs_wc_classify(&wc, &w)); // stale batch

	// An error completion may come from any request, signalled or not.
	wc.status = IBV_WC_REM_ACCESS_ERR;
	wc.wr_id = rdma__verbs_wr_id(42, 0);
	EXPECT_EQ(RDMA_E_BOUNDS, rdma__verbs_wc_classify(&wc, &w));
	wc.status = IBV_WC_WR_FLUSH_ERR;
	wc.wr_id = rdma__verbs_wr_id(42, 1);
	EXPECT_EQ(RDMA_E_CONN, rdma__verbs_wc_classify(&wc, &w));
	wc.status = IBV_WC_REM_INV_REQ_ERR;
	wc.wr_id = rdma__verbs_wr_id(42, 2);
	EXPECT_EQ(-EIO, rdma__verbs_wc_classify(&wc, &w));
	wc.status = IBV_WC_RETRY_EXC_ERR;
	wc.wr_id = rdma__verbs_wr_id(40, 1);
	EXPECT_EQ(0, rdma__verbs_wc_classify(&wc, &w)); // stale error
}

TEST(VerbsAddr, RoundTripAndRejects)
{
	uint8_t a[RDMA__VERBS_ADDR_LEN];
	uint16_t port = 0;
	uint64_t ticket = 0;

	rdma__verbs_addr_encode(a, 20886, 0x0123456789abcdefull);
	// Little-endian on the wire whatever the host.
	EXPECT_EQ(0x96, a[0]);
	EXPECT_EQ(0x51, a[1]);
	EXPECT_EQ(1, a[2]);
	EXPECT_EQ(0xef, a[8]);
	EXPECT_EQ(0x01, a[15]);
	ASSERT_EQ(0, rdma__verbs_addr_decode(a, sizeof(a), &port, &ticket));
	EXPECT_EQ(20886, port);
	EXPECT_EQ(0x0123456789abcdefull, ticket);

	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_addr_decode(a, sizeof(a) - 1, &port, &ticket));
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_addr_decode(a, sizeof(a) + 1, &port, &ticket));
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_addr_decode(nullptr, 16, &port, &ticket));
	uint8_t bad[RDMA__VERBS_ADDR_LEN];
	for (unsigned byte : {0u, 2u, 4u, 7u}) {
		memcpy(bad, a, sizeof(a));
		if (byte == 0) {
			bad[0] = bad[1] = 0; // port 0
		} else {
			bad[byte] ^= 0x10; // version or reserved bytes
		}
		EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_addr_decode(bad, sizeof(bad), &port, &ticket))
			<< byte;
	}
}

TEST(VerbsPriv, RoundTripPaddingAndRejects)
{
	uint8_t p[56]; // IB CM pads REQ private data to 56 bytes
	uint64_t ticket = 0;

	memset(p, 0xee, sizeof(p));
	rdma__verbs_priv_encode(p, 0xfeedfacecafebeefull);
	ASSERT_EQ(0, rdma__verbs_priv_decode(p, RDMA__VERBS_PRIV_LEN, &ticket));
	EXPECT_EQ(0xfeedfacecafebeefull, ticket);
	ticket = 0;
	ASSERT_EQ(0, rdma__verbs_priv_decode(p, sizeof(p), &ticket));
	EXPECT_EQ(0xfeedfacecafebeefull, ticket);

	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_priv_decode(p, RDMA__VERBS_PRIV_LEN - 1, &ticket));
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_priv_decode(nullptr, 0, &ticket));
	p[0] ^= 1;
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_priv_decode(p, sizeof(p), &ticket));
	p[0] ^= 1;
	p[4] = 2;
	EXPECT_EQ(RDMA_E_PROTO, rdma__verbs_priv_decode(p, sizeof(p), &ticket));
}

} // namespace
