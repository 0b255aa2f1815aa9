// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/objects_test.cc -- the counter, queue and map of onll/objects.h.
// ObjectType* drive the struct onll_type callbacks directly (no ONLL core):
// semantics against std::deque/std::map over seeded random sequences, reads
// that never write, snapshot round trips and canonical bytes, malformed
// snapshots and ops. ObjectsOnOnll* run the typed wrappers through a real
// ONLL object in a pool, and check the state survives close and reopen.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "pm/tests/test_util.h"

namespace {

using Bytes = std::vector<uint8_t>;

// Copies of objects.c's private op encoding and result layout (its essay
// has the table); the callbacks are tested at the byte level.
enum Opcode : uint8_t {
	kCounterAdd = 0x01,
	kCounterGet = 0x02,
	kQueueEnqueue = 0x11,
	kQueueDequeue = 0x12,
	kQueueFront = 0x13,
	kQueueSize = 0x14,
	kMapPut = 0x21,
	kMapRemove = 0x22,
	kMapGet = 0x23,
	kMapSize = 0x24,
};

struct Result {
	int32_t err;
	uint32_t found;
	uint64_t value;
};
static_assert(sizeof(Result) == 16, "objects.c's struct obj_result");

// A value no callback reports: shows whether the result was written.
constexpr Result kUnwritten = { 12345, 777, 0xdeadbeefULL };

void PutU64(Bytes &b, uint64_t v)
{
	uint8_t w[8];
	std::memcpy(w, &v, sizeof(v));
	b.insert(b.end(), w, w + 8);
}

Bytes Op(uint8_t code)
{
	return Bytes{ code };
}

Bytes Op(uint8_t code, uint64_t a)
{
	Bytes b{ code };
	PutU64(b, a);
	return b;
}

Bytes Op(uint8_t code, uint64_t a, uint64_t b)
{
	Bytes o = Op(code, a);
	PutU64(o, b);
	return o;
}

// Expected snapshots, as objects.h and objects.c document them.
Bytes CounterSnap(uint64_t v)
{
	Bytes b;
	PutU64(b, v);
	return b;
}

Bytes QueueSnap(const std::deque<uint64_t> &q)
{
	Bytes b;
	PutU64(b, q.size());
	for (uint64_t v : q)
		PutU64(b, v);
	return b;
}

Bytes MapSnap(const std::map<uint64_t, uint64_t> &m)
{
	Bytes b;
	PutU64(b, m.size());
	for (const auto &kv : m) {
		PutU64(b, kv.first);
		PutU64(b, kv.second);
	}
	return b;
}

// One state of a type, freed at scope exit.
class State {
public:
	explicit State(const onll_type *ty) : ty_(ty)
	{
		EXPECT_EQ(ty_->state_new(ty_->ctx, &st_), 0);
	}

	// From a snapshot; load_ret() says whether it loaded.
	State(const onll_type *ty, const Bytes &snap) : ty_(ty)
	{
		load_ret_ = ty_->snapshot_load(ty_->ctx, snap.data(), snap.size(), &st_);
		if (load_ret_ != 0)
			st_ = nullptr;
	}

	~State()
	{
		if (st_ != nullptr)
			ty_->state_free(ty_->ctx, st_);
	}

	State(const State &) = delete;
	State &operator=(const State &) = delete;

	int load_ret() const { return load_ret_; }
	bool ok() const { return st_ != nullptr; }
	void *raw() const { return st_; }

	Result Apply(const Bytes &op, int *ret = nullptr)
	{
		return ApplyRaw(op.empty() ? nullptr : op.data(), op.size(), ret);
	}

	Result ApplyRaw(const void *op, size_t len, int *ret = nullptr)
	{
		Result r = kUnwritten;
		int rc = ty_->apply(ty_->ctx, st_, op, len, &r);
		if (ret != nullptr)
			*ret = rc;
		else
			EXPECT_EQ(rc, 0);
		return r;
	}

	Result Compute(const Bytes &op) const
	{
		return ComputeRaw(op.empty() ? nullptr : op.data(), op.size());
	}

	Result ComputeRaw(const void *op, size_t len) const
	{
		Result r = kUnwritten;
		ty_->compute(ty_->ctx, st_, op, len, &r);
		return r;
	}

	Bytes Snapshot() const
	{
		Bytes b(ty_->snapshot_size(ty_->ctx, st_));
		ty_->snapshot_save(ty_->ctx, st_, b.data());
		return b;
	}

private:
	const onll_type *ty_;
	void *st_ = nullptr;
	int load_ret_ = 0;
};

// ---------------------------------------------------------------------------
// The type callbacks, without the ONLL core.

TEST(ObjectTypes, NamesAndCtx)
{
	EXPECT_STREQ(onll_counter_type()->name, "counter");
	EXPECT_STREQ(onll_queue_type()->name, "queue");
	EXPECT_STREQ(onll_map_type()->name, "map");
	for (const onll_type *ty : { onll_counter_type(), onll_queue_type(), onll_map_type() }) {
		EXPECT_NE(ty->ctx, nullptr);
		EXPECT_NE(ty->state_new, nullptr);
		EXPECT_NE(ty->state_free, nullptr);
		EXPECT_NE(ty->apply, nullptr);
		EXPECT_NE(ty->compute, nullptr);
		EXPECT_NE(ty->snapshot_size, nullptr);
		EXPECT_NE(ty->snapshot_save, nullptr);
		EXPECT_NE(ty->snapshot_load, nullptr);
	}
	EXPECT_EQ(onll_counter_type(), onll_counter_type());
}

TEST(ObjectTypes, InitialStates)
{
	State c(onll_counter_type()), q(onll_queue_type()), m(onll_map_type());
	EXPECT_EQ(c.Snapshot(), CounterSnap(0));
	EXPECT_EQ(q.Snapshot(), QueueSnap({}));
	EXPECT_EQ(m.Snapshot(), MapSnap({}));
	Result r = q.Compute(Op(kQueueFront));
	EXPECT_EQ(r.err, 0);
	EXPECT_EQ(r.found, 0u);
	r = q.Apply(Op(kQueueDequeue));
	EXPECT_EQ(r.err, 0);
	EXPECT_EQ(r.found, 0u);
	EXPECT_EQ(m.Compute(Op(kMapGet, 0)).found, 0u);
	EXPECT_EQ(m.Apply(Op(kMapRemove, 0)).found, 0u);
	EXPECT_EQ(m.Compute(Op(kMapSize)).value, 0u);
}

TEST(ObjectTypes, CounterMatchesReferenceAndWraps)
{
	State c(onll_counter_type());
	uint64_t ref = 0;
	std::mt19937_64 rng(11);
	const int64_t extremes[] = { INT64_MAX, INT64_MIN, -1, 1, 0 };
	for (int i = 0; i < 5000; i++) {
		int64_t d;
		if (i % 7 == 0)
			d = extremes[(i / 7) % 5];
		else
			d = static_cast<int64_t>(rng() % 2001) - 1000;
		ref += static_cast<uint64_t>(d);
		Result r = c.Apply(Op(kCounterAdd, static_cast<uint64_t>(d)));
		ASSERT_EQ(r.err, 0);
		ASSERT_EQ(r.value, ref) << "op " << i;
		if (i % 13 == 0) {
			// A read as a read, and a read submitted as an update.
			ASSERT_EQ(c.Compute(Op(kCounterGet)).value, ref);
			ASSERT_EQ(c.Apply(Op(kCounterGet)).value, ref);
		}
	}
	EXPECT_EQ(c.Snapshot(), CounterSnap(ref));

	// Wrap at both ends.
	State w(onll_counter_type());
	w.Apply(Op(kCounterAdd, static_cast<uint64_t>(INT64_MAX)));
	Result r = w.Apply(Op(kCounterAdd, 1));
	EXPECT_EQ(static_cast<int64_t>(r.value), INT64_MIN);
	r = w.Apply(Op(kCounterAdd, static_cast<uint64_t>(int64_t{ -1 })));
	EXPECT_EQ(static_cast<int64_t>(r.value), INT64_MAX);
}

// Random queue ops in phases that grow the queue to thousands, drain it
// to empty and hover (the ring wraps around at every size).
TEST(ObjectTypes, QueueMatchesDeque)
{
	State q(onll_queue_type());
	std::deque<uint64_t> ref;
	std::mt19937_64 rng(21);
	size_t max_size = 0;
	const unsigned kEnqueuePct[] = { 75, 20, 50, 95, 5, 52 };
	for (unsigned i = 0; i < 40000; i++) {
		unsigned pct = kEnqueuePct[(i / 4000) % 6];
		unsigned pick = rng() % 100;
		if (pick < pct) {
			uint64_t v = rng();
			ref.push_back(v);
			Result r = q.Apply(Op(kQueueEnqueue, v));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.found, 0u);
		} else {
			Result r = q.Apply(Op(kQueueDequeue));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.found, ref.empty() ? 0u : 1u) << "op " << i;
			if (!ref.empty()) {
				ASSERT_EQ(r.value, ref.front()) << "op " << i;
				ref.pop_front();
			}
		}
		max_size = std::max(max_size, ref.size());
		Result f = q.Compute(Op(kQueueFront));
		ASSERT_EQ(f.err, 0);
		ASSERT_EQ(f.found, ref.empty() ? 0u : 1u);
		if (!ref.empty()) {
			ASSERT_EQ(f.value, ref.front());
		}
		Result s = (i % 2) ? q.Compute(Op(kQueueSize)) : q.Apply(Op(kQueueSize));
		ASSERT_EQ(s.err, 0);
		ASSERT_EQ(s.value, ref.size());
		if (i % 1000 == 0) {
			ASSERT_EQ(q.Snapshot(), QueueSnap(ref)) << "op " << i;
		}
	}
	EXPECT_EQ(q.Snapshot(), QueueSnap(ref));
	EXPECT_GT(max_size, 3000u);
}

// A ring of the smallest size wrapped many times, then grown and shrunk
// while its front is in the middle of the buffer.
TEST(ObjectTypes, QueueWrapAroundThenGrow)
{
	State q(onll_queue_type());
	std::deque<uint64_t> ref;
	uint64_t next = 1;
	for (int i = 0; i < 5; i++) {
		q.Apply(Op(kQueueEnqueue, next));
		ref.push_back(next++);
	}
	for (int i = 0; i < 1000; i++) {
		q.Apply(Op(kQueueEnqueue, next));
		ref.push_back(next++);
		Result r = q.Apply(Op(kQueueDequeue));
		ASSERT_EQ(r.value, ref.front());
		ref.pop_front();
	}
	for (int i = 0; i < 100; i++) {
		q.Apply(Op(kQueueEnqueue, next));
		ref.push_back(next++);
	}
	ASSERT_EQ(q.Snapshot(), QueueSnap(ref));
	while (!ref.empty()) {
		Result r = q.Apply(Op(kQueueDequeue));
		ASSERT_EQ(r.found, 1u);
		ASSERT_EQ(r.value, ref.front());
		ref.pop_front();
	}
	EXPECT_EQ(q.Apply(Op(kQueueDequeue)).found, 0u);
	EXPECT_EQ(q.Snapshot(), QueueSnap({}));
}

// Random map ops against std::map: a small key range (replacements, dense
// clusters), a large one and full 64-bit keys (0 and UINT64_MAX included),
// in phases that grow the table to thousands of keys and shrink it again.
TEST(ObjectTypes, MapMatchesStdMap)
{
	State m(onll_map_type());
	std::map<uint64_t, uint64_t> ref;
	std::mt19937_64 rng(31);
	size_t max_size = 0;
	struct Phase {
		unsigned put_pct, remove_pct;
		uint64_t range; // 0: any 64-bit key
	};
	const Phase kPhases[] = {
		{ 60, 20, 64 }, { 85, 5, 1u << 20 }, { 70, 25, 0 }, { 10, 80, 1u << 20 },
		{ 5, 90, 0 }, { 45, 45, 4096 }, { 20, 75, 4096 },
	};
	const uint64_t kSpecial[] = { 0, 1, UINT64_MAX, UINT64_MAX - 1, 1ull << 63 };
	for (unsigned i = 0; i < 60000; i++) {
		const Phase &ph = kPhases[(i / 6000) % 7];
		uint64_t key;
		if (rng() % 50 == 0) {
			key = kSpecial[rng() % 5];
		} else if (ph.range == 0 && !ref.empty() && rng() % 2) {
			// One of the smallest keys present: hits among huge keys.
			long nth = static_cast<long>(rng() % std::min<size_t>(ref.size(), 64));
			key = std::next(ref.begin(), nth)->first;
		} else {
			key = ph.range ? rng() % ph.range : rng();
		}
		unsigned pick = rng() % 100;
		if (pick < ph.put_pct) {
			uint64_t v = rng();
			auto it = ref.find(key);
			Result r = m.Apply(Op(kMapPut, key, v));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.found, it != ref.end() ? 1u : 0u) << "op " << i << " put " << key;
			if (it != ref.end()) {
				ASSERT_EQ(r.value, it->second);
			}
			ref[key] = v;
		} else if (pick < ph.put_pct + ph.remove_pct) {
			auto it = ref.find(key);
			Result r = m.Apply(Op(kMapRemove, key));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.found, it != ref.end() ? 1u : 0u) << "op " << i << " remove " << key;
			if (it != ref.end()) {
				ASSERT_EQ(r.value, it->second);
				ref.erase(it);
			}
		} else {
			auto it = ref.find(key);
			Result r = (i % 2) ? m.Compute(Op(kMapGet, key)) : m.Apply(Op(kMapGet, key));
			ASSERT_EQ(r.err, 0);
			ASSERT_EQ(r.found, it != ref.end() ? 1u : 0u) << "op " << i << " get " << key;
			if (it != ref.end()) {
				ASSERT_EQ(r.value, it->second);
			}
		}
		max_size = std::max(max_size, ref.size());
		if (i % 97 == 0) {
			ASSERT_EQ(m.Compute(Op(kMapSize)).value, ref.size());
		}
		if (i % 1500 == 0) {
			ASSERT_EQ(m.Snapshot(), MapSnap(ref)) << "op " << i;
			// Every key is still reachable (backward shifts kept the
			// probe invariant).
			for (const auto &kv : ref) {
				Result r = m.Compute(Op(kMapGet, kv.first));
				ASSERT_EQ(r.found, 1u) << kv.first;
				ASSERT_EQ(r.value, kv.second);
			}
		}
	}
	EXPECT_EQ(m.Snapshot(), MapSnap(ref));
	EXPECT_GT(max_size, 3000u);
}

// Dense consecutive keys make long clusters; removing every other key, then
// the rest, exercises backward-shift deletion across cluster boundaries and
// the table's shrinking.
TEST(ObjectTypes, MapDenseRemoval)
{
	State m(onll_map_type());
	const uint64_t n = 5000;
	for (uint64_t k = 0; k < n; k++)
		ASSERT_EQ(m.Apply(Op(kMapPut, k, k * 3)).found, 0u);
	for (uint64_t k = 0; k < n; k += 2)
		ASSERT_EQ(m.Apply(Op(kMapRemove, k)).found, 1u);
	for (uint64_t k = 0; k < n; k++) {
		Result r = m.Compute(Op(kMapGet, k));
		ASSERT_EQ(r.found, k % 2) << k;
		if (k % 2) {
			ASSERT_EQ(r.value, k * 3);
		}
	}
	for (uint64_t k = 1; k < n; k += 2)
		ASSERT_EQ(m.Apply(Op(kMapRemove, k)).found, 1u);
	EXPECT_EQ(m.Compute(Op(kMapSize)).value, 0u);
	EXPECT_EQ(m.Snapshot(), MapSnap({}));
	ASSERT_EQ(m.Apply(Op(kMapPut, 42, 1)).found, 0u);
	EXPECT_EQ(m.Compute(Op(kMapGet, 42)).value, 1u);
}

// A populated state of each type, for the tests below.
void Populate(State &s, const onll_type *ty, unsigned n, uint64_t seed)
{
	std::mt19937_64 rng(seed);
	for (unsigned i = 0; i < n; i++) {
		if (ty == onll_counter_type())
			s.Apply(Op(kCounterAdd, rng()));
		else if (ty == onll_queue_type())
			s.Apply(rng() % 3 ? Op(kQueueEnqueue, rng()) : Op(kQueueDequeue));
		else
			s.Apply(rng() % 4 ? Op(kMapPut, rng() % 4096, rng())
					  : Op(kMapRemove, rng() % 4096));
	}
}

const onll_type *const kTypes[] = { onll_counter_type(), onll_queue_type(), onll_map_type() };

// Every op any of the objects knows, with arguments that hit and miss.
std::vector<Bytes> AllOps(uint64_t key)
{
	return {
		Op(kCounterAdd, 5), Op(kCounterGet), Op(kQueueEnqueue, 9), Op(kQueueDequeue),
		Op(kQueueFront), Op(kQueueSize), Op(kMapPut, key, 1), Op(kMapPut, 99999, 1),
		Op(kMapRemove, key), Op(kMapRemove, 99999), Op(kMapGet, key), Op(kMapGet, 99999),
		Op(kMapSize),
	};
}

bool IsUpdate(uint8_t code)
{
	return code == kCounterAdd || code == kQueueEnqueue || code == kQueueDequeue ||
	       code == kMapPut || code == kMapRemove;
}

// Whether @code belongs to @ty (by the opcode's high nibble).
bool Owns(const onll_type *ty, uint8_t code)
{
	uint8_t family = ty == onll_counter_type() ? 0x00 : ty == onll_queue_type() ? 0x10 : 0x20;
	return (code & 0xf0) == family;
}

TEST(ObjectTypes, ComputeNeverModifiesState)
{
	for (const onll_type *ty : kTypes) {
		SCOPED_TRACE(ty->name);
		State s(ty);
		Populate(s, ty, 3000, 41);
		const Bytes before = s.Snapshot();
		// The key of the map's first pair, so gets and removes hit.
		uint64_t key = 0;
		if (ty == onll_map_type() && before.size() >= 16)
			std::memcpy(&key, before.data() + 8, 8);
		for (const Bytes &op : AllOps(key)) {
			Result r = s.Compute(op);
			if (IsUpdate(op[0]) || !Owns(ty, op[0])) {
				EXPECT_EQ(r.err, -EINVAL) << "opcode " << int(op[0]);
			} else {
				EXPECT_EQ(r.err, 0) << "opcode " << int(op[0]);
			}
			ASSERT_EQ(s.Snapshot(), before) << "opcode " << int(op[0]);
		}
		// Reads submitted to apply() do not change the state either.
		for (const Bytes &op : AllOps(key)) {
			if (IsUpdate(op[0]) && Owns(ty, op[0]))
				continue;
			s.Apply(op);
			ASSERT_EQ(s.Snapshot(), before) << "opcode " << int(op[0]);
		}
		// compute() with no result buffer is harmless.
		ty->compute(ty->ctx, s.raw(), Op(kMapSize).data(), 1, nullptr);
		ASSERT_EQ(s.Snapshot(), before);
	}
}

TEST(ObjectTypes, SnapshotRoundTrip)
{
	for (const onll_type *ty : kTypes) {
		SCOPED_TRACE(ty->name);
		for (unsigned n : { 0u, 1u, 7u, 100u, 5000u }) {
			State s(ty);
			Populate(s, ty, n, 51 + n);
			const Bytes snap = s.Snapshot();
			State t(ty, snap);
			ASSERT_EQ(t.load_ret(), 0) << n;
			ASSERT_EQ(t.Snapshot(), snap) << n;
			// The loaded state behaves as the original from now on.
			std::mt19937_64 rng(n);
			for (int i = 0; i < 500; i++) {
				Bytes op;
				if (ty == onll_counter_type())
					op = Op(kCounterAdd, rng() % 10);
				else if (ty == onll_queue_type())
					op = rng() % 2 ? Op(kQueueEnqueue, rng()) : Op(kQueueDequeue);
				else
					op = rng() % 2 ? Op(kMapPut, rng() % 4096, rng())
						       : Op(kMapRemove, rng() % 4096);
				Result a = s.Apply(op), b = t.Apply(op);
				ASSERT_EQ(std::memcmp(&a, &b, sizeof(a)), 0) << n << " op " << i;
			}
			ASSERT_EQ(s.Snapshot(), t.Snapshot());
		}
	}
}

TEST(ObjectTypes, EqualMapsGiveEqualBytes)
{
	std::mt19937_64 rng(61);
	std::vector<uint64_t> keys;
	for (int i = 0; i < 3000; i++)
		keys.push_back(rng());
	std::sort(keys.begin(), keys.end());
	keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
	auto value = [](uint64_t k) { return k * 7 + 1; };

	State asc(onll_map_type()), desc(onll_map_type()), shuffled(onll_map_type()),
		churned(onll_map_type());
	for (uint64_t k : keys)
		asc.Apply(Op(kMapPut, k, value(k)));
	for (auto it = keys.rbegin(); it != keys.rend(); ++it)
		desc.Apply(Op(kMapPut, *it, value(*it)));
	std::vector<uint64_t> sh = keys;
	std::shuffle(sh.begin(), sh.end(), rng);
	for (uint64_t k : sh)
		shuffled.Apply(Op(kMapPut, k, value(k)));
	// Extra keys inserted and removed, values overwritten: grown to a
	// larger table and shrunk back, other cluster layouts.
	for (uint64_t k : sh)
		churned.Apply(Op(kMapPut, k, 0));
	for (int i = 0; i < 20000; i++)
		churned.Apply(Op(kMapPut, (1ull << 62) + static_cast<uint64_t>(i), i));
	for (int i = 0; i < 20000; i++)
		churned.Apply(Op(kMapRemove, (1ull << 62) + static_cast<uint64_t>(i)));
	for (uint64_t k : keys)
		churned.Apply(Op(kMapPut, k, value(k)));

	std::map<uint64_t, uint64_t> ref;
	for (uint64_t k : keys)
		ref[k] = value(k);
	const Bytes expect = MapSnap(ref);
	EXPECT_EQ(asc.Snapshot(), expect);
	EXPECT_EQ(desc.Snapshot(), expect);
	EXPECT_EQ(shuffled.Snapshot(), expect);
	EXPECT_EQ(churned.Snapshot(), expect);
}

int Load(const onll_type *ty, const Bytes &b)
{
	State s(ty, b);
	return s.load_ret();
}

TEST(ObjectTypes, MalformedSnapshotsRejected)
{
	const onll_type *c = onll_counter_type(), *q = onll_queue_type(), *m = onll_map_type();
	void *st = reinterpret_cast<void *>(0x1);
	for (const onll_type *ty : kTypes) {
		SCOPED_TRACE(ty->name);
		EXPECT_EQ(ty->snapshot_load(ty->ctx, nullptr, 0, &st), -EINVAL);
		EXPECT_EQ(ty->snapshot_load(ty->ctx, nullptr, 8, &st), -EINVAL);
		EXPECT_EQ(Load(ty, Bytes{}), -EINVAL);
		EXPECT_EQ(Load(ty, Bytes(7, 0)), -EINVAL);
	}
	EXPECT_EQ(st, reinterpret_cast<void *>(0x1)); // untouched on failure

	// Counter: exactly 8 bytes.
	EXPECT_EQ(Load(c, CounterSnap(5)), 0);
	EXPECT_EQ(Load(c, Bytes(9, 0)), -EINVAL);
	EXPECT_EQ(Load(c, Bytes(16, 0)), -EINVAL);

	// Queue: 8 + 8 * count bytes.
	std::deque<uint64_t> dq = { 1, 2, 3 };
	Bytes good = QueueSnap(dq);
	EXPECT_EQ(Load(q, good), 0);
	EXPECT_EQ(Load(q, QueueSnap({})), 0);
	Bytes b = good;
	b.pop_back(); // truncated mid-value
	EXPECT_EQ(Load(q, b), -EINVAL);
	b = good;
	b.resize(b.size() - 8); // a whole value missing
	EXPECT_EQ(Load(q, b), -EINVAL);
	b = good;
	PutU64(b, 4); // an extra value
	EXPECT_EQ(Load(q, b), -EINVAL);
	for (uint64_t count : { uint64_t{ 2 }, uint64_t{ 4 }, UINT64_MAX, UINT64_MAX / 8,
		     (UINT64_MAX / 8) + 4 }) {
		b = good;
		std::memcpy(b.data(), &count, 8);
		EXPECT_EQ(Load(q, b), -EINVAL) << count;
	}

	// Map: 8 + 16 * count bytes, keys strictly increasing.
	std::map<uint64_t, uint64_t> mp = { { 1, 10 }, { 5, 50 }, { 9, 90 } };
	good = MapSnap(mp);
	EXPECT_EQ(Load(m, good), 0);
	EXPECT_EQ(Load(m, MapSnap({})), 0);
	EXPECT_EQ(Load(m, MapSnap({ { 0, 0 }, { UINT64_MAX, 1 } })), 0);
	b = good;
	b.pop_back();
	EXPECT_EQ(Load(m, b), -EINVAL);
	b = good;
	b.resize(b.size() - 8); // half a pair
	EXPECT_EQ(Load(m, b), -EINVAL);
	b = good;
	b.resize(b.size() - 16); // a pair missing
	EXPECT_EQ(Load(m, b), -EINVAL);
	for (uint64_t count : { uint64_t{ 2 }, uint64_t{ 4 }, UINT64_MAX, UINT64_MAX / 16,
		     (UINT64_MAX / 16) + 3 }) {
		b = good;
		std::memcpy(b.data(), &count, 8);
		EXPECT_EQ(Load(m, b), -EINVAL) << count;
	}
	// Duplicate key (5, 5).
	b = good;
	uint64_t five = 5;
	std::memcpy(b.data() + 8 + 32, &five, 8);
	EXPECT_EQ(Load(m, b), -EINVAL);
	// Unsorted keys (1, 9, 5).
	b = Bytes();
	PutU64(b, 3);
	for (uint64_t k : { 1, 9, 5 }) {
		PutU64(b, k);
		PutU64(b, k);
	}
	EXPECT_EQ(Load(m, b), -EINVAL);
	// Adjacent duplicates at the start, and at the end.
	b = Bytes();
	PutU64(b, 2);
	for (uint64_t k : { 0, 0 }) {
		PutU64(b, k);
		PutU64(b, 1);
	}
	EXPECT_EQ(Load(m, b), -EINVAL);
	b = Bytes();
	PutU64(b, 3);
	for (uint64_t k : { uint64_t{ 0 }, UINT64_MAX, UINT64_MAX }) {
		PutU64(b, k);
		PutU64(b, 1);
	}
	EXPECT_EQ(Load(m, b), -EINVAL);

	// Another type's snapshot, where the lengths disagree.
	EXPECT_EQ(Load(c, MapSnap(mp)), -EINVAL);
	EXPECT_EQ(Load(m, QueueSnap(dq)), -EINVAL);
}

TEST(ObjectTypes, MalformedOpsLeaveStateUnchanged)
{
	for (const onll_type *ty : kTypes) {
		SCOPED_TRACE(ty->name);
		State s(ty);
		Populate(s, ty, 200, 71);
		const Bytes before = s.Snapshot();
		// Every first byte at lengths 0..3, and at each op length +-1.
		// Valid only: a 1-byte op whose opcode is one of @ty's that
		// takes no argument.
		for (size_t len : { 0, 1, 2, 3, 8, 10, 16, 18 }) {
			for (unsigned code = 0; code < 256; code++) {
				Bytes op(len, 0xa5);
				if (len > 0)
					op[0] = static_cast<uint8_t>(code);
				bool valid = len == 1 && Owns(ty, op[0]) &&
					     (code == kCounterGet || code == kQueueDequeue ||
						     code == kQueueFront || code == kQueueSize ||
						     code == kMapSize);
				if (valid)
					continue;
				int ret = 1;
				Result r = s.Apply(op, &ret);
				ASSERT_EQ(ret, 0) << "len " << len << " code " << code;
				ASSERT_EQ(r.err, -EINVAL) << "len " << len << " code " << code;
				ASSERT_EQ(s.Snapshot(), before) << "len " << len << " code " << code;
				r = s.Compute(op);
				ASSERT_EQ(r.err, -EINVAL) << "len " << len << " code " << code;
			}
		}
		// Well-formed ops of the other objects.
		for (const Bytes &op : AllOps(0)) {
			if (Owns(ty, op[0]))
				continue;
			Result r = s.Apply(op);
			ASSERT_EQ(r.err, -EINVAL) << "opcode " << int(op[0]);
			ASSERT_EQ(s.Snapshot(), before);
		}
		// NULL op bytes, with and without a length.
		Result r = s.ApplyRaw(nullptr, 0);
		EXPECT_EQ(r.err, -EINVAL);
		r = s.ApplyRaw(nullptr, 9);
		EXPECT_EQ(r.err, -EINVAL);
		r = s.ComputeRaw(nullptr, 1);
		EXPECT_EQ(r.err, -EINVAL);
		EXPECT_EQ(s.Snapshot(), before);
	}
}

// Ops and results at odd addresses (the encoding is packed; ONLL hands out
// op bytes from its logs at any alignment), and apply() with no result
// buffer (replay).
TEST(ObjectTypes, UnalignedBuffersAndReplay)
{
	const onll_type *ty = onll_map_type();
	State m(ty), replay(ty);
	alignas(16) uint8_t opbuf[64];
	alignas(16) uint8_t resbuf[64];
	for (uint64_t k = 0; k < 100; k++) {
		Bytes op = Op(kMapPut, k, k + 1000);
		std::memcpy(opbuf + 3, op.data(), op.size());
		std::memset(resbuf, 0x5a, sizeof(resbuf));
		ASSERT_NE(m.raw(), nullptr);
		ASSERT_EQ(ty->apply(ty->ctx, m.raw(), opbuf + 3, op.size(), resbuf + 5), 0);
		Result r;
		std::memcpy(&r, resbuf + 5, sizeof(r));
		ASSERT_EQ(r.err, 0);
		ASSERT_EQ(r.found, 0u);
		ASSERT_EQ(resbuf[4], 0x5a); // nothing written outside the result
		ASSERT_EQ(resbuf[5 + sizeof(Result)], 0x5a);
		ASSERT_EQ(ty->apply(ty->ctx, replay.raw(), op.data(), op.size(), nullptr), 0);
	}
	Bytes get = Op(kMapGet, 42);
	std::memcpy(opbuf + 1, get.data(), get.size());
	ty->compute(ty->ctx, m.raw(), opbuf + 1, get.size(), resbuf + 7);
	Result r;
	std::memcpy(&r, resbuf + 7, sizeof(r));
	EXPECT_EQ(r.found, 1u);
	EXPECT_EQ(r.value, 1042u);
	EXPECT_EQ(m.Snapshot(), replay.Snapshot());

	// Snapshots saved to and loaded from odd addresses.
	Bytes snap = m.Snapshot();
	std::vector<uint8_t> odd(snap.size() + 1);
	ty->snapshot_save(ty->ctx, m.raw(), odd.data() + 1);
	EXPECT_EQ(std::memcmp(odd.data() + 1, snap.data(), snap.size()), 0);
	void *st = nullptr;
	ASSERT_EQ(ty->snapshot_load(ty->ctx, odd.data() + 1, snap.size(), &st), 0);
	ty->state_free(ty->ctx, st);
}

// ---------------------------------------------------------------------------
// Through the ONLL core, in a pool.

// An ONLL object in the root of a fresh pool.
struct OnllEnv {
	std::string path;
	pm_pool *pool = nullptr;
	onll *o = nullptr;
	onll_thread *t = nullptr;
	onll_config cfg {};
	const onll_type *type = nullptr;
	size_t area_size = 0;
	uint64_t area_off = 0;

	static constexpr const char *kLayout = "onll-objects-test";

	pm_pool_config PoolConfig() const
	{
		pm_pool_config pc = pmtest::PoolConfig(path, kLayout, area_size);
		pc.pool_size = std::max(PM_POOL_MIN_SIZE, area_size + (size_t{ 8 } << 20));
		// Real msyncs would only slow the tests down.
		pc.durability = PM_DURABILITY_NONE;
		return pc;
	}

	// Creates the pool and the object, and registers this thread.
	int Create(const std::string &name, const onll_type *ty)
	{
		type = ty;
		onll_config_init(&cfg);
		cfg.max_threads = 4;
		// Small logs: the runs below checkpoint many times.
		cfg.log_entries = 16;
		cfg.checkpoint_every = 8;
		cfg.checkpoint_capacity = 1u << 20;
		area_size = onll_area_size(&cfg);
		if (area_size == 0)
			return -EINVAL;
		path = pmtest::TempPath(name + ".pool");
		pm_pool_config pc = PoolConfig();
		int ret = pm_pool_create(&pool, &pc);
		if (ret != 0)
			return ret;
		area_off = pm_pool_off(pool, pm_pool_root(pool));
		ret = onll_create(&o, pool, area_off, &cfg, type);
		if (ret != 0)
			return ret;
		return onll_thread_register(o, &t);
	}

	// Closes everything, reopens the pool, recovers and registers.
	int Reopen()
	{
		int ret = onll_thread_unregister(&t);
		if (ret == 0)
			ret = onll_close(&o);
		if (ret == 0)
			ret = pm_pool_close(&pool);
		if (ret != 0)
			return ret;
		pm_pool_config pc = PoolConfig();
		ret = pm_pool_open(&pool, &pc);
		if (ret != 0)
			return ret;
		ret = onll_open(&o, pool, area_off, type);
		if (ret != 0)
			return ret;
		return onll_thread_register(o, &t);
	}

	// Reopens after a run of @updates updates that left snapshot @snap:
	// recovery replays every one of them and gives the same bytes.
	void ExpectSurvivesReopen(const Bytes &snap, uint64_t updates)
	{
		EXPECT_EQ(Snapshot(), snap);
		ASSERT_EQ(Reopen(), 0);
		EXPECT_EQ(onll_recovered_index(o), updates);
		EXPECT_EQ(Snapshot(), snap);
	}

	// The snapshot of the newest state, through onll_query().
	Bytes Snapshot()
	{
		struct Arg {
			const onll_type *ty;
			Bytes out;
		} arg{ type, {} };
		int ret = onll_query(
			t,
			[](void *a, const void *state) {
				Arg *x = static_cast<Arg *>(a);
				x->out.resize(x->ty->snapshot_size(x->ty->ctx, state));
				x->ty->snapshot_save(x->ty->ctx, state, x->out.data());
			},
			&arg);
		EXPECT_EQ(ret, 0);
		return arg.out;
	}

	~OnllEnv()
	{
		onll_thread_unregister(&t);
		onll_close(&o);
		pm_pool_close(&pool);
		if (!path.empty())
			unlink(path.c_str());
	}
};

#define ONLL_SETUP(env, name, type)                                                       \
	do {                                                                              \
		int setup_ret_ = (env).Create((name), (type));                            \
		ASSERT_EQ(setup_ret_, 0) << "setup failed: " << pm_strerror(setup_ret_); \
	} while (0)

TEST(ObjectsOnOnll, CounterSurvivesReopen)
{
	OnllEnv env;
	ONLL_SETUP(env, "counter", onll_counter_type());
	int64_t v = 99;
	ASSERT_EQ(onll_counter_get(env.t, &v), 0);
	EXPECT_EQ(v, 0);
	uint64_t ref = 0;
	std::mt19937_64 rng(101);
	const unsigned n = 3000;
	for (unsigned i = 0; i < n; i++) {
		int64_t d = i % 100 == 0 ? INT64_MAX : static_cast<int64_t>(rng() % 201) - 100;
		ref += static_cast<uint64_t>(d);
		ASSERT_EQ(onll_counter_add(env.t, d, i % 2 ? &v : nullptr), 0);
		if (i % 2) {
			ASSERT_EQ(static_cast<uint64_t>(v), ref) << "op " << i;
		}
		if (i % 10 == 0) {
			ASSERT_EQ(onll_counter_get(env.t, &v), 0);
			ASSERT_EQ(static_cast<uint64_t>(v), ref);
		}
	}
	EXPECT_EQ(onll_recovered_index(env.o), 0u);
	ASSERT_NO_FATAL_FAILURE(env.ExpectSurvivesReopen(CounterSnap(ref), n));
	ASSERT_EQ(onll_counter_get(env.t, &v), 0);
	EXPECT_EQ(static_cast<uint64_t>(v), ref);
	// Later updates follow the recovered history.
	Bytes add = Op(kCounterAdd, 1);
	Result r = kUnwritten;
	uint64_t index = 0;
	ASSERT_EQ(onll_update(env.t, add.data(), add.size(), &r, &index), 0);
	EXPECT_EQ(r.err, 0);
	EXPECT_EQ(r.value, ref + 1);
	EXPECT_EQ(index, n + 1);
}

TEST(ObjectsOnOnll, QueueSurvivesReopen)
{
	OnllEnv env;
	ONLL_SETUP(env, "queue", onll_queue_type());
	std::deque<uint64_t> ref;
	std::mt19937_64 rng(111);
	uint64_t v = 0, size = 99;
	EXPECT_EQ(onll_queue_front(env.t, &v), 0);
	EXPECT_EQ(onll_queue_dequeue(env.t, &v), 0);
	ASSERT_EQ(onll_queue_size(env.t, &size), 0);
	EXPECT_EQ(size, 0u);
	uint64_t updates = 1; // the dequeue above
	for (unsigned i = 0; i < 4000; i++) {
		unsigned pct = (i / 500) % 2 ? 30 : 80;
		if (rng() % 100 < pct) {
			uint64_t x = rng();
			ASSERT_EQ(onll_queue_enqueue(env.t, x), 0);
			ref.push_back(x);
		} else {
			int ret = onll_queue_dequeue(env.t, i % 3 ? &v : nullptr);
			ASSERT_EQ(ret, ref.empty() ? 0 : 1) << "op " << i;
			if (!ref.empty()) {
				if (i % 3) {
					ASSERT_EQ(v, ref.front());
				}
				ref.pop_front();
			}
		}
		updates++;
		if (i % 7 == 0) {
			int ret = onll_queue_front(env.t, &v);
			ASSERT_EQ(ret, ref.empty() ? 0 : 1);
			if (!ref.empty()) {
				ASSERT_EQ(v, ref.front());
			}
			ASSERT_EQ(onll_queue_size(env.t, &size), 0);
			ASSERT_EQ(size, ref.size());
		}
	}
	ASSERT_NO_FATAL_FAILURE(env.ExpectSurvivesReopen(QueueSnap(ref), updates));
	ASSERT_EQ(onll_queue_size(env.t, &size), 0);
	EXPECT_EQ(size, ref.size());
	while (!ref.empty()) {
		ASSERT_EQ(onll_queue_dequeue(env.t, &v), 1);
		ASSERT_EQ(v, ref.front());
		ref.pop_front();
	}
	EXPECT_EQ(onll_queue_dequeue(env.t, &v), 0);
}

TEST(ObjectsOnOnll, MapSurvivesReopen)
{
	OnllEnv env;
	ONLL_SETUP(env, "map", onll_map_type());
	std::map<uint64_t, uint64_t> ref;
	std::mt19937_64 rng(121);
	uint64_t v = 0, size = 99;
	uint64_t updates = 0;
	for (unsigned i = 0; i < 6000; i++) {
		// Grow to thousands of keys, then shrink, on two key ranges.
		bool growing = i < 4000;
		uint64_t key = i % 5 == 0 ? rng() : rng() % 8192;
		unsigned pick = rng() % 100;
		if (pick < (growing ? 70u : 15u)) {
			uint64_t x = rng();
			int ret = onll_map_put(env.t, key, x);
			ASSERT_EQ(ret, ref.count(key) ? 1 : 0) << "op " << i;
			ref[key] = x;
			updates++;
		} else if (pick < 85) {
			int ret = onll_map_remove(env.t, key);
			ASSERT_EQ(ret, ref.erase(key) ? 1 : 0) << "op " << i;
			updates++;
		} else {
			auto it = ref.find(key);
			int ret = onll_map_get(env.t, key, i % 2 ? &v : nullptr);
			ASSERT_EQ(ret, it != ref.end() ? 1 : 0) << "op " << i;
			if (it != ref.end() && i % 2) {
				ASSERT_EQ(v, it->second);
			}
		}
		if (i % 101 == 0) {
			ASSERT_EQ(onll_map_size(env.t, &size), 0);
			ASSERT_EQ(size, ref.size());
		}
	}
	ASSERT_NO_FATAL_FAILURE(env.ExpectSurvivesReopen(MapSnap(ref), updates));
	ASSERT_EQ(onll_map_size(env.t, &size), 0);
	EXPECT_EQ(size, ref.size());
	for (const auto &kv : ref) {
		ASSERT_EQ(onll_map_get(env.t, kv.first, &v), 1);
		ASSERT_EQ(v, kv.second);
	}
	EXPECT_EQ(onll_map_put(env.t, 1ull << 63, 5), ref.count(1ull << 63) ? 1 : 0);
}

// The raw API with this module's types: an update op through onll_read()
// and a malformed op through onll_update() report -EINVAL in the result
// and change nothing.
TEST(ObjectsOnOnll, RawOpsOfTheWrongKind)
{
	OnllEnv env;
	ONLL_SETUP(env, "raw", onll_map_type());
	ASSERT_EQ(onll_map_put(env.t, 7, 70), 0);
	const Bytes before = env.Snapshot();
	Result r = kUnwritten;
	Bytes put = Op(kMapPut, 8, 80);
	ASSERT_EQ(onll_read(env.t, put.data(), put.size(), &r), 0);
	EXPECT_EQ(r.err, -EINVAL);
	r = kUnwritten;
	Bytes bad = Op(kCounterAdd, 1);
	ASSERT_EQ(onll_update(env.t, bad.data(), bad.size(), &r, nullptr), 0);
	EXPECT_EQ(r.err, -EINVAL);
	EXPECT_EQ(env.Snapshot(), before);
	uint64_t v = 0;
	EXPECT_EQ(onll_map_get(env.t, 8, &v), 0);
	EXPECT_EQ(onll_map_get(env.t, 7, &v), 1);
	EXPECT_EQ(v, 70u);
}

// Opening a queue's area as a map: the core refuses another type by name
// (PM_E_LAYOUT, onll.c's type_id). A map type that borrows the queue's name
// gets as far as loading the checkpoints, which are not map snapshots
// (their lengths disagree), so the open fails as corrupt.
TEST(ObjectsOnOnll, OpenWithAnotherTypeFails)
{
	OnllEnv env;
	ONLL_SETUP(env, "wrongtype", onll_queue_type());
	for (uint64_t x : { 1, 2, 3 })
		ASSERT_EQ(onll_queue_enqueue(env.t, x), 0);
	ASSERT_EQ(onll_checkpoint(env.t), 0); // 32 bytes: (32 - 8) % 16 != 0
	ASSERT_EQ(onll_queue_enqueue(env.t, 4), 0);
	ASSERT_EQ(onll_checkpoint(env.t), 0); // 40 bytes: count 4, not 2
	ASSERT_EQ(onll_thread_unregister(&env.t), 0);
	ASSERT_EQ(onll_close(&env.o), 0);

	onll *wrong = nullptr;
	int ret = onll_open(&wrong, env.pool, env.area_off, onll_map_type());
	EXPECT_EQ(ret, PM_E_LAYOUT) << pm_strerror(ret);
	if (ret == 0)
		onll_close(&wrong);
	onll_type disguised = *onll_map_type();
	disguised.name = onll_queue_type()->name;
	ret = onll_open(&wrong, env.pool, env.area_off, &disguised);
	EXPECT_EQ(ret, PM_E_CORRUPT) << pm_strerror(ret);
	if (ret == 0)
		onll_close(&wrong);

	// Nothing was written: it still opens as the queue it is.
	ASSERT_EQ(onll_open(&env.o, env.pool, env.area_off, onll_queue_type()), 0);
	ASSERT_EQ(onll_thread_register(env.o, &env.t), 0);
	EXPECT_EQ(env.Snapshot(), QueueSnap({ 1, 2, 3, 4 }));
}

} // namespace
