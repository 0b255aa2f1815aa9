// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/set_test_util.h -- what the tests of the three lock-free sets on
// reclaim/ share: one C++ adapter over ds/hmlist.h, ds/skiplist.h and
// ds/nmbst.h, so that every test is written once and parametrised over
// structure x reclamation scheme; a domain config with short intervals so
// that reclamation really happens during a test; a free callback that
// poisons nodes and counts them; RAII for domains and thread registrations.
#ifndef DS_TESTS_SET_TEST_UTIL_H
#define DS_TESTS_SET_TEST_UTIL_H

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <ds/hmlist.h>
#include <ds/nmbst.h>
#include <ds/skiplist.h>
#include <reclaim/reclaim.h>

// Also the TSan suppression for liburcu's own code (not instrumented), so
// the urcu-qsbr scheme runs under TSan here too.
#include "reclaim/tests/reclaim_test_util.h"

namespace settest {

enum class Kind { kHmList, kSkipList, kNmBst };

inline const char *KindName(Kind k)
{
	switch (k) {
	case Kind::kHmList:
		return "hmlist";
	case Kind::kSkipList:
		return "skiplist";
	case Kind::kNmBst:
		return "nmbst";
	}
	return "?";
}

inline const std::vector<Kind> &AllKinds()
{
	static const std::vector<Kind> v = { Kind::kHmList, Kind::kSkipList, Kind::kNmBst };
	return v;
}

inline std::vector<reclaim_scheme> AllSchemes()
{
	std::vector<reclaim_scheme> v;
	for (int s = 0; s < RECLAIM_NSCHEMES; s++)
		v.push_back(static_cast<reclaim_scheme>(s));
	return v;
}

// Whether @s keeps hazard pointers (the structures validate under it).
inline bool UsesHazards(reclaim_scheme s)
{
	return s == RECLAIM_HP || s == RECLAIM_CADENCE || s == RECLAIM_QSENSE;
}

// Skip-list level count the tests use unless they say otherwise (the
// library default: 16 levels, 32 hazard slots).
constexpr unsigned kLevels = DS_SKIPLIST_DEFAULT_LEVELS;

// Hazard slots a structure needs.
inline unsigned Hazards(Kind k, unsigned levels = kLevels)
{
	switch (k) {
	case Kind::kHmList:
		return DS_HMLIST_HAZARDS;
	case Kind::kSkipList:
		return ds_skiplist_hazards(levels);
	case Kind::kNmBst:
		return DS_NMBST_HAZARDS;
	}
	return 0;
}

// Nodes one key costs, hence nodes retired per successful remove and
// freed per successful insert over a set's life.
inline unsigned NodesPerKey(Kind k)
{
	return k == Kind::kNmBst ? 2 : 1;
}

inline uint64_t KeyMax(Kind k)
{
	switch (k) {
	case Kind::kHmList:
		return DS_HMLIST_KEY_MAX;
	case Kind::kSkipList:
		return DS_SKIPLIST_KEY_MAX;
	case Kind::kNmBst:
		return DS_NMBST_KEY_MAX;
	}
	return 0;
}

// One structure behind a uniform interface (the C calls, unchanged).
class Set {
public:
	virtual ~Set() = default;
	virtual int Insert(reclaim_thread *t, uint64_t k) = 0;
	virtual int Remove(reclaim_thread *t, uint64_t k) = 0;
	virtual int Contains(reclaim_thread *t, uint64_t k) = 0;
	virtual size_t Size() const = 0;
	// 0, or the check's error with its message in *why.
	virtual int Check(std::string *why) const = 0;
};

class HmList final : public Set {
public:
	explicit HmList(ds_hmlist *l) : l_(l) {}
	~HmList() override { EXPECT_EQ(ds_hmlist_delete(&l_), 0); }
	int Insert(reclaim_thread *t, uint64_t k) override { return ds_hmlist_insert(l_, t, k); }
	int Remove(reclaim_thread *t, uint64_t k) override { return ds_hmlist_remove(l_, t, k); }
	int Contains(reclaim_thread *t, uint64_t k) override { return ds_hmlist_contains(l_, t, k); }
	size_t Size() const override { return ds_hmlist_size(l_); }
	int Check(std::string *why) const override
	{
		char buf[256];
		int r = ds_hmlist_check(l_, buf, sizeof(buf));
		*why = buf;
		return r;
	}

private:
	ds_hmlist *l_;
};

class SkipList final : public Set {
public:
	explicit SkipList(ds_skiplist *s) : s_(s) {}
	~SkipList() override { EXPECT_EQ(ds_skiplist_delete(&s_), 0); }
	int Insert(reclaim_thread *t, uint64_t k) override { return ds_skiplist_insert(s_, t, k); }
	int Remove(reclaim_thread *t, uint64_t k) override { return ds_skiplist_remove(s_, t, k); }
	int Contains(reclaim_thread *t, uint64_t k) override
	{
		return ds_skiplist_contains(s_, t, k);
	}
	size_t Size() const override { return ds_skiplist_size(s_); }
	int Check(std::string *why) const override
	{
		char buf[256];
		int r = ds_skiplist_check(s_, buf, sizeof(buf));
		*why = buf;
		return r;
	}

private:
	ds_skiplist *s_;
};

class NmBst final : public Set {
public:
	explicit NmBst(ds_nmbst *b) : b_(b) {}
	~NmBst() override { EXPECT_EQ(ds_nmbst_delete(&b_), 0); }
	int Insert(reclaim_thread *t, uint64_t k) override { return ds_nmbst_insert(b_, t, k); }
	int Remove(reclaim_thread *t, uint64_t k) override { return ds_nmbst_remove(b_, t, k); }
	int Contains(reclaim_thread *t, uint64_t k) override { return ds_nmbst_contains(b_, t, k); }
	size_t Size() const override { return ds_nmbst_size(b_); }
	int Check(std::string *why) const override
	{
		char buf[256];
		int r = ds_nmbst_check(b_, buf, sizeof(buf));
		*why = buf;
		return r;
	}

private:
	ds_nmbst *b_;
};

// MakeSet -- create a @k on @d whose nodes go to @fn(@ctx); 0 or the
// create function's error.
inline int MakeSet(Kind k, reclaim_domain *d, reclaim_free_fn fn, void *ctx,
	std::unique_ptr<Set> *out, unsigned levels = kLevels)
{
	int r = -EINVAL;
	switch (k) {
	case Kind::kHmList: {
		ds_hmlist *l = nullptr;
		r = ds_hmlist_new(&l, d, fn, ctx);
		if (r == 0)
			out->reset(new HmList(l));
		break;
	}
	case Kind::kSkipList: {
		ds_skiplist *s = nullptr;
		r = ds_skiplist_new(&s, d, levels, fn, ctx);
		if (r == 0)
			out->reset(new SkipList(s));
		break;
	}
	case Kind::kNmBst: {
		ds_nmbst *b = nullptr;
		r = ds_nmbst_new(&b, d, fn, ctx);
		if (r == 0)
			out->reset(new NmBst(b));
		break;
	}
	}
	return r;
}

// What the poisoning free callback counts.
struct FreeCounter {
	std::atomic<uint64_t> freed{0};
};

// PoisonFree -- the tests' node free function: overwrite the node with
// 0xdd (so that a reader still using it reads garbage keys and wild
// pointers instead of plausible stale data), count it, free it.
inline void PoisonFree(void *node, void *ctx)
{
	memset(node, 0xdd, malloc_usable_size(node));
	if (ctx != nullptr)
		static_cast<FreeCounter *>(ctx)->freed.fetch_add(1, std::memory_order_relaxed);
	free(node);
}

// One test configuration.
struct Param {
	Kind kind;
	reclaim_scheme scheme;
};

inline std::vector<Param> Params(const std::vector<reclaim_scheme> &schemes)
{
	std::vector<Param> v;
	for (Kind k : AllKinds())
		for (reclaim_scheme s : schemes)
			v.push_back({ k, s });
	return v;
}

inline std::vector<Param> AllParams()
{
	return Params(AllSchemes());
}

inline std::string ParamName(const Param &p)
{
	std::string s = std::string(KindName(p.kind)) + "_" + reclaim_scheme_name(p.scheme);
	std::replace(s.begin(), s.end(), '-', '_');
	return s;
}

// For INSTANTIATE_TEST_SUITE_P.
struct ParamNamer {
	std::string operator()(const testing::TestParamInfo<Param> &info) const
	{
		return ParamName(info.param);
	}
};

// TestConfig -- @scheme with enough hazard slots for @kind and short
// intervals: a rooster round of 1 ms, a quiescent state every 8
// operations, a scan every 32 retires, QSense's fallback after 256, so that
// nodes are really freed (and poisoned) while the test runs.
inline reclaim_config TestConfig(reclaim_scheme scheme, Kind kind, unsigned max_threads = 16)
{
	reclaim_config c;
	reclaim_config_init(&c, scheme);
	c.max_threads = max_threads;
	c.hazards_per_thread = std::max(8u, Hazards(kind));
	c.quiescence_threshold = 8;
	c.scan_threshold = 32;
	c.fallback_threshold = 256;
	c.rooster_interval_us = 1000;
	return c;
}

// A domain and one set on it, torn down in the right order (set, then
// domain, which frees what is still retired). Every thread registration
// must be gone before the destructor runs.
struct Env {
	reclaim_domain *d = nullptr;
	std::unique_ptr<Set> set;
	FreeCounter frees;
	Param param {};

	// Create -- 0, or the error of reclaim_domain_new() or of the
	// set's create function.
	int Create(Param p, unsigned max_threads = 16, unsigned levels = kLevels)
	{
		param = p;
		reclaim_config c = TestConfig(p.scheme, p.kind, max_threads);
		if (p.kind == Kind::kSkipList)
			c.hazards_per_thread = std::max(c.hazards_per_thread, Hazards(p.kind, levels));
		int r = reclaim_domain_new(&d, &c);
		if (r != 0)
			return r;
		return MakeSet(p.kind, d, PoisonFree, &frees, &set, levels);
	}

	// Stats -- the domain's counters now.
	reclaim_stats Stats() const
	{
		reclaim_stats st;
		reclaim_domain_stats(d, &st);
		return st;
	}

	// DeleteAll -- delete the set and the domain now; returns the
	// domain's result.
	int DeleteAll()
	{
		set.reset();
		int r = reclaim_domain_delete(&d);
		d = nullptr;
		return r;
	}

	~Env()
	{
		if (d != nullptr) {
			EXPECT_EQ(DeleteAll(), 0);
		}
	}
};

// A thread's registration in a domain for the lifetime of the object.
class Registration {
public:
	explicit Registration(reclaim_domain *d) { rc_ = reclaim_thread_register(d, &t_); }
	~Registration()
	{
		if (rc_ == 0) {
			EXPECT_EQ(reclaim_thread_unregister(&t_), 0);
		}
	}
	Registration(const Registration &) = delete;
	Registration &operator=(const Registration &) = delete;
	int rc() const { return rc_; }
	reclaim_thread *get() const { return t_; }

private:
	reclaim_thread *t_ = nullptr;
	int rc_;
};

// The keys of @s in [0, @range), read with Contains() by @t.
inline std::vector<uint64_t> Keys(Set &s, reclaim_thread *t, uint64_t range)
{
	std::vector<uint64_t> keys;
	for (uint64_t k = 0; k < range; k++)
		if (s.Contains(t, k) == 1)
			keys.push_back(k);
	return keys;
}

// Scale for iteration counts: sanitizers make every operation several
// times slower (TSan about 10x), and the targets must stay short.
#if defined(__SANITIZE_THREAD__)
constexpr unsigned kSlowdown = 4;
#elif defined(__SANITIZE_ADDRESS__)
constexpr unsigned kSlowdown = 2;
#else
constexpr unsigned kSlowdown = 1;
#endif

}  // namespace settest

#endif  // DS_TESTS_SET_TEST_UTIL_H
