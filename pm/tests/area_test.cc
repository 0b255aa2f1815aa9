// SPDX-License-Identifier: BSD-3-Clause
// pm/tests/area_test.cc -- pm_area: sealing, each damaged field and its
// code, and an interrupted re-format under the crash simulator.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <string>

#include <pm/area.h>
#include <pm/cost.h>
#include <pm/error.h>

#include "pm/tests/test_util.h"

namespace {

// A module's header: the prefix, then a body of two fields.
struct TestHeader {
	pm_area_hdr area;
	uint64_t capacity;
	uint64_t type_id;
};

const pm_area_type kType = { "test", 0x5453455441455241ull, 3, sizeof(TestHeader) };

TestHeader Sealed(uint64_t capacity)
{
	TestHeader h;
	std::memset(&h, 0, sizeof(h));
	h.capacity = capacity;
	h.type_id = 7;
	pm_area_seal(&h.area, &kType, 4096);
	return h;
}

TEST(Area, SealWritesThePrefixAndChecks)
{
	TestHeader h = Sealed(10);
	EXPECT_EQ(h.area.magic, kType.magic);
	EXPECT_EQ(h.area.version, kType.version);
	EXPECT_EQ(h.area.hdr_size, sizeof(TestHeader));
	EXPECT_EQ(h.area.area_size, 4096u);
	EXPECT_EQ(h.area.checksum, pm_area_sum(&h.area));
	EXPECT_EQ(pm_area_check(&h.area, &kType, "open"), 0);
	EXPECT_STREQ(pm_errormsg(), "");
	EXPECT_EQ(h.capacity, 10u); // the body is the caller's
}

TEST(Area, SealPersistsTheWholeHeaderOnce)
{
	alignas(64) static TestHeader h;
	pm_cost before, now, d;
	pm_cost_read_thread(&before);
	pm_area_seal(&h.area, &kType, 4096);
	pm_cost_read_thread(&now);
	pm_cost_diff(&now, &before, &d);
	EXPECT_EQ(d.n[PM_COST_FLUSH], 1u); // one cache line
	EXPECT_EQ(d.n[PM_COST_FENCE], 1u);
}

// Each field damaged alone, and the code pm_area_check() gives for it.
TEST(Area, EachDamageHasItsCode)
{
	struct Case {
		const char *what;
		std::function<void(TestHeader *)> damage;
		int code;
		const char *msg; // a part of the message
	};
	const Case cases[] = {
		{ "undamaged", [](TestHeader *) {}, 0, nullptr },
		{ "magic 0 (never sealed)", [](TestHeader *h) { h->area.magic = 0; },
			PM_E_CORRUPT, "never formatted" },
		{ "another magic", [](TestHeader *h) { h->area.magic ^= 1; }, PM_E_LAYOUT,
			"another kind" },
		{ "version, unsummed", [](TestHeader *h) { h->area.version++; }, PM_E_CORRUPT,
			"checksum" },
		{ "version, summed", [](TestHeader *h) {
			h->area.version++;
			h->area.checksum = pm_area_sum(&h->area);
		}, PM_E_VERSION, "layout version 4, expected 3" },
		{ "smaller header of another version", [](TestHeader *h) {
			h->area.version = 1;
			h->area.hdr_size = sizeof(pm_area_hdr) + 8;
			h->area.checksum = pm_area_sum(&h->area);
		}, PM_E_VERSION, "layout version 1" },
		{ "larger header of another version", [](TestHeader *h) {
			h->area.version = 4;
			h->area.hdr_size = 4096; // not summed: beyond what is readable
		}, PM_E_CORRUPT, "header of 4096 bytes" },
		{ "seal cut short (magic durable, the rest zero)", [](TestHeader *h) {
			uint64_t magic = h->area.magic;
			std::memset(h, 0, sizeof(*h));
			h->area.magic = magic;
		}, PM_E_CORRUPT, "header of 0 bytes" },
		{ "header size, unsummed", [](TestHeader *h) { h->area.hdr_size -= 8; },
			PM_E_CORRUPT, "checksum" },
		{ "header size, summed", [](TestHeader *h) {
			h->area.hdr_size -= 8;
			h->area.checksum = pm_area_sum(&h->area);
		}, PM_E_CORRUPT, "header of 40 bytes, expected 48" },
		{ "header size below the prefix", [](TestHeader *h) { h->area.hdr_size = 8; },
			PM_E_CORRUPT, "header of 8 bytes" },
		{ "header size past the type's", [](TestHeader *h) { h->area.hdr_size = 4096; },
			PM_E_CORRUPT, "header of 4096 bytes" },
		{ "area size", [](TestHeader *h) { h->area.area_size++; }, PM_E_CORRUPT,
			"checksum" },
		{ "checksum", [](TestHeader *h) { h->area.checksum++; }, PM_E_CORRUPT,
			"checksum" },
		{ "body", [](TestHeader *h) { h->capacity++; }, PM_E_CORRUPT, "checksum" },
		{ "last body byte", [](TestHeader *h) { h->type_id ^= 1ull << 63; },
			PM_E_CORRUPT, "checksum" },
	};
	for (const Case &c : cases) {
		TestHeader h = Sealed(10);
		c.damage(&h);
		EXPECT_EQ(pm_area_check(&h.area, &kType, "open_fn"), c.code) << c.what;
		std::string msg = pm_errormsg();
		if (c.msg == nullptr) {
			EXPECT_EQ(msg, "") << c.what;
		} else {
			EXPECT_EQ(msg.rfind("open_fn: ", 0), 0u) << c.what << ": " << msg;
			EXPECT_NE(msg.find(c.msg), std::string::npos) << c.what << ": " << msg;
		}
	}
}

// Formatting an area (invalidate, write the body, seal) crashes at every
// point: each image either checks with the old body, or the new one, or is
// PM_E_CORRUPT; never PM_E_LAYOUT or PM_E_VERSION, never a mixed body.
struct Reformat {
	TestHeader *h = nullptr;
};

int ReformatRun(void *arg)
{
	TestHeader *h = static_cast<Reformat *>(arg)->h;
	pm_area_invalidate(&h->area);
	h->capacity = 20;
	h->type_id = 8;
	pm_area_seal(&h->area, &kType, 8192);
	return 0;
}

int ReformatCheck(void *arg, char *msg, size_t len)
{
	const TestHeader *h = static_cast<Reformat *>(arg)->h;
	int ret = pm_area_check(&h->area, &kType, "check");
	if (ret == PM_E_CORRUPT)
		return 0;
	if (ret != 0) {
		snprintf(msg, len, "code %d: %s", ret, pm_errormsg());
		return 1;
	}
	bool old_body = h->capacity == 10 && h->type_id == 7 && h->area.area_size == 4096;
	bool new_body = h->capacity == 20 && h->type_id == 8 && h->area.area_size == 8192;
	if (!old_body && !new_body) {
		snprintf(msg, len, "a header that checks with capacity %llu, type %llu",
			(unsigned long long)h->capacity, (unsigned long long)h->type_id);
		return 1;
	}
	return 0;
}

// @sealed: start from a sealed header (a re-format), else from zeros (a
// first create, where a seal cut short leaves the magic beside zeros).
void CrashFormat(bool sealed, const char *name)
{
	void *mem = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(mem, MAP_FAILED);
	Reformat r;
	r.h = static_cast<TestHeader *>(mem);
	if (sealed)
		*r.h = Sealed(10);
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name;
	pmtest::CrashRun run = pmtest::RunCrashSim(cfg, r.h, sizeof(TestHeader), ReformatRun,
		ReformatCheck, &r);
	EXPECT_EQ(run.ret, 0) << run.report;
	EXPECT_GE(run.st.points, 4u); // flush and fence of the invalidate and the seal
	EXPECT_EQ(pm_area_check(&r.h->area, &kType, "after"), 0);
	EXPECT_EQ(r.h->capacity, 20u);
	munmap(mem, 4096);
}

TEST(Area, InterruptedReformatNeverChecksHalfWritten)
{
	CrashFormat(true, "area-reformat");
}

TEST(Area, InterruptedCreateNeverChecksHalfWritten)
{
	CrashFormat(false, "area-create");
}

} // namespace
