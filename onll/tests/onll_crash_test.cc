// SPDX-License-Identifier: BSD-3-Clause
// onll/tests/onll_crash_test.cc -- ONLL objects under the crash simulator.
//
// For each shipped object (counter, queue, map): every crash point of a
// single-threaded workload long enough to checkpoint and reuse its log,
// every crash point of a three-thread run, crashes during recovery
// (sampled images, every point of recovery), and every crash point of a
// create over an area an earlier object used, and of the new object's
// first updates (issue 20: a create that leaves the old log entries or
// checkpoint valid lets recovery replay the old object's updates); and
// crash, recover, run on another thread until the log has wrapped, crash
// again (a recovery checkpoint that is not durable shows only then); and
// every crash point of a thread that finds its log full while another
// holds the checkpoint flag, waits, and reuses its entries on the strength
// of the other's checkpoint. After
// recovery at index N the object must hold exactly the updates with
// execution indexes 1..N applied in index order: every update that returned
// has its index at most N (nothing completed is lost), the order agrees with
// the indexes (the state is compared byte for byte with a model replaying
// them), and a prefix is kept (no reflected update misses one it depended
// on). Indexes of updates in flight at the crash are unknown; the check
// tries every way of placing them (each thread's in program order).
#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/pool.h>

#include "onll/tests/onll_test_util.h"
#include "pm/tests/test_util.h"

namespace {

constexpr unsigned kMaxThreads = 3;
constexpr unsigned kMaxOps = 32;

enum class Obj { kCounter, kQueue, kMap };

struct Op {
	int kind; // counter: 0 add; queue: 0 enqueue, 1 dequeue; map: 0 put, 1 remove
	uint64_t a, b;
};

// The object's documented snapshot bytes (onll/objects.h) of a model state.
struct Model {
	Obj obj;
	int64_t counter = 0;
	std::vector<uint64_t> queue;
	size_t head = 0;
	std::map<uint64_t, uint64_t> map;

	void Apply(const Op &op)
	{
		switch (obj) {
		case Obj::kCounter:
			counter = int64_t(uint64_t(counter) + op.a);
			break;
		case Obj::kQueue:
			if (op.kind == 0)
				queue.push_back(op.a);
			else if (head < queue.size())
				head++;
			break;
		case Obj::kMap:
			if (op.kind == 0)
				map[op.a] = op.b;
			else
				map.erase(op.a);
			break;
		}
	}

	std::string Bytes() const
	{
		std::vector<uint64_t> w;
		switch (obj) {
		case Obj::kCounter:
			w.push_back(uint64_t(counter));
			break;
		case Obj::kQueue:
			w.push_back(queue.size() - head);
			w.insert(w.end(), queue.begin() + long(head), queue.end());
			break;
		case Obj::kMap:
			w.push_back(map.size());
			for (auto &kv : map) {
				w.push_back(kv.first);
				w.push_back(kv.second);
			}
			break;
		}
		return std::string(reinterpret_cast<const char *>(w.data()), w.size() * 8);
	}
};

const onll_type *TypeOf(Obj o)
{
	switch (o) {
	case Obj::kCounter: return onll_counter_type();
	case Obj::kQueue: return onll_queue_type();
	case Obj::kMap: return onll_map_type();
	}
	return nullptr;
}

// Everything the run and the check share. The check runs in a process
// forked at the crash point, so it sees these fields as they were then.
struct World {
	onlltest::Env env;
	Obj obj = Obj::kCounter;
	unsigned threads = 1;
	std::vector<Op> ops[kMaxThreads];
	// Per thread: updates returned, and the index of each (written before
	// the count is raised).
	std::atomic<unsigned> done[kMaxThreads];
	uint64_t index[kMaxThreads][kMaxOps];
	bool nested = false;
	// over_used: the run formats a new object (with cfg) over the area an
	// earlier one used, then runs the ops; created once onll_create returned
	bool over_used = false;
	onll_config cfg{};
	std::vector<Op> old_ops; // what the earlier object holds
	std::atomic<bool> created{false};
	// reuse: the nested run recovers (n1: the index it recovered) and runs
	// ops2 on a thread of its own; done2 counts those that returned
	bool reuse = false;
	std::vector<Op> ops2;
	uint64_t n1 = 0;
	std::atomic<bool> life2{false};
	std::atomic<unsigned> done2{0};
	// lockstep: steps (thread, kCheckpoint or kUpdate) run one at a time
	// in this order, each on its thread's own OS thread, so whose fence
	// orders whose flushes is fixed
	std::vector<std::pair<unsigned, int>> script;
	// contended: RunContended's schedule (thread 1 finds its log full
	// while thread 0 holds the checkpoint flag)
	bool contended = false;
};

constexpr int kUpdate = 0;     // a script step: the thread's next op
constexpr int kCheckpoint = 1; // a script step: onll_checkpoint()

int RunOp(onll_thread *t, Obj obj, const Op &op)
{
	switch (obj) {
	case Obj::kCounter: return onll_counter_add(t, int64_t(op.a), nullptr);
	case Obj::kQueue: return op.kind == 0 ? onll_queue_enqueue(t, op.a)
		: onll_queue_dequeue(t, nullptr);
	case Obj::kMap: return op.kind == 0 ? onll_map_put(t, op.a, op.b)
		: onll_map_remove(t, op.a);
	}
	return -1;
}

int RunThread(World *w, unsigned i)
{
	onll_thread *t = nullptr;
	if (onll_thread_register(w->env.o, &t) != 0)
		return 1;
	int bad = 0;
	for (unsigned k = 0; k < w->ops[i].size(); k++) {
		if (RunOp(t, w->obj, w->ops[i][k]) < 0)
			bad = 1;
		w->index[i][k] = onll_thread_last_index(t);
		w->done[i].store(k + 1, std::memory_order_release);
	}
	onll_thread_unregister(&t);
	return bad;
}

// Runs w->script: thread i takes the steps that name it, each once the
// step before it (of any thread) has returned.
int RunScript(World *w)
{
	std::atomic<size_t> turn{0};
	std::atomic<int> bad{0};
	std::vector<std::thread> th;
	for (unsigned i = 0; i < w->threads; i++)
		th.emplace_back([w, i, &turn, &bad] {
			onll_thread *t = nullptr;
			if (onll_thread_register(w->env.o, &t) != 0)
				bad = 1;
			unsigned k = 0;
			for (size_t s = 0; s < w->script.size(); s++) {
				if (w->script[s].first != i)
					continue;
				while (turn.load() != s)
					std::this_thread::yield();
				if (t == nullptr) {
					// registration failed: only pass the turn on
				} else if (w->script[s].second == kCheckpoint) {
					if (onll_checkpoint(t) != 0)
						bad = 1;
				} else {
					if (RunOp(t, w->obj, w->ops[i][k]) < 0)
						bad = 1;
					w->index[i][k] = onll_thread_last_index(t);
					w->done[i].store(++k, std::memory_order_release);
				}
				turn.store(s + 1);
			}
			onll_thread_unregister(&t);
		});
	for (auto &x : th)
		x.join();
	return bad.load();
}

// The type the contended run creates its object with: the object's own,
// except that snapshot_save, once armed, stops inside the checkpoint (with
// the checkpoint flag held) until released. It keeps the object's name, so
// the checks open the area with the plain type.
struct Gate {
	const onll_type *inner = nullptr;
	onll_type type{};
	std::atomic<bool> armed{false}, held{false}, release{false};
};
Gate gate;

void GatedSave(void *ctx, const void *state, void *buf)
{
	if (gate.armed.exchange(false)) {
		gate.held.store(true);
		while (!gate.release.load())
			std::this_thread::yield();
	}
	gate.inner->snapshot_save(ctx, state, buf);
}

const onll_type *GatedType(Obj o)
{
	gate.inner = TypeOf(o);
	gate.type = *gate.inner;
	gate.type.snapshot_save = GatedSave;
	gate.armed = false;
	gate.held = false;
	gate.release = false;
	return &gate.type;
}

// Thread 1 updates twice; thread 0 checkpoints them and stops inside the
// checkpoint, holding the flag; thread 1 updates twice more (the flag is
// taken, so neither piggy-backs a checkpoint) and its 4-entry log is full:
// its fifth update waits in onll__log_reserve. Once it counts the wait,
// thread 0 finishes; thread 1 then reuses the entries thread 0's
// checkpoint covers, the first over its first update's entry, and
// piggy-backs a checkpoint of its own. Only thread 0's fence makes the
// checkpoint thread 1's reuse relies on durable.
int RunContended(World *w)
{
	std::atomic<int> phase{0}, bad{0};
	auto update = [w, &bad](onll_thread *t, unsigned k) {
		if (RunOp(t, w->obj, w->ops[1][k]) < 0)
			bad = 1;
		w->index[1][k] = onll_thread_last_index(t);
		w->done[1].store(k + 1, std::memory_order_release);
	};
	std::thread writer([w, &phase, &bad, &update] {
		onll_thread *t = nullptr;
		if (onll_thread_register(w->env.o, &t) != 0) {
			bad = 1;
			phase = 1;
			return;
		}
		update(t, 0);
		update(t, 1);
		phase = 1;
		while (phase.load() != 2)
			std::this_thread::yield();
		for (unsigned k = 2; k < w->ops[1].size(); k++)
			update(t, k);
		onll_thread_unregister(&t);
	});
	std::thread checkpointer([w, &phase, &bad] {
		while (phase.load() != 1)
			std::this_thread::yield();
		onll_thread *t = nullptr;
		gate.armed = true;
		if (onll_thread_register(w->env.o, &t) != 0 || onll_checkpoint(t) != 0)
			bad = 1;
		gate.held = true; // failed before the gate: let the run end
		onll_thread_unregister(&t);
	});
	while (!gate.held.load())
		std::this_thread::yield();
	phase = 2;
	onll_stats st{};
	while (st.log_full_waits == 0 && bad.load() == 0) {
		std::this_thread::yield();
		onll_stats_total(w->env.o, &st);
	}
	gate.release = true;
	writer.join();
	checkpointer.join();
	return bad.load();
}

int Run(void *arg)
{
	World *w = static_cast<World *>(arg);
	if (w->contended)
		return RunContended(w);
	if (!w->script.empty())
		return RunScript(w);
	if (w->over_used) {
		if (onll_create(&w->env.o, w->env.pool, w->env.area_off, &w->cfg,
			TypeOf(w->obj)) != 0)
			return 1;
		w->created.store(true);
	}
	if (w->threads == 1)
		return RunThread(w, 0);
	std::vector<std::thread> th;
	std::atomic<int> bad{0};
	for (unsigned i = 0; i < w->threads; i++)
		th.emplace_back([w, i, &bad] { bad += RunThread(w, i); });
	for (auto &x : th)
		x.join();
	return bad.load();
}

void SaveSnapshot(void *arg, const void *state)
{
	auto *out = static_cast<std::pair<const onll_type *, std::string> *>(arg);
	const onll_type *type = out->first;
	out->second.resize(type->snapshot_size(type->ctx, state));
	type->snapshot_save(type->ctx, state, &out->second[0]);
}

// Fill the unknown indexes (positions of @slots left empty), in order, with
// the in-flight ops of the threads (each thread's in its program order), and
// check whether the model then reaches @want.
bool Matches(const World *w, std::vector<const Op *> &slots, size_t at,
	std::vector<std::vector<const Op *>> &pending, std::vector<size_t> &used,
	const std::string &want)
{
	while (at < slots.size() && slots[at] != nullptr)
		at++;
	if (at == slots.size()) {
		Model m{w->obj};
		for (const Op *op : slots)
			m.Apply(*op);
		return m.Bytes() == want;
	}
	for (size_t t = 0; t < pending.size(); t++) {
		if (used[t] == pending[t].size())
			continue;
		slots[at] = pending[t][used[t]++];
		bool ok = Matches(w, slots, at + 1, pending, used, want);
		slots[at] = nullptr;
		used[t]--;
		if (ok)
			return true;
	}
	return false;
}

// Recover the image and compare with every admissible history; "" if fine.
std::string CheckRecovered(World *w)
{
	onll *o = nullptr;
	int ret = onll_open(&o, w->env.pool, w->env.area_off, TypeOf(w->obj));
	if (ret != 0)
		return "onll_open failed: " + std::to_string(ret);
	uint64_t n = onll_recovered_index(o);
	std::vector<const Op *> slots(n, nullptr);
	std::vector<std::vector<const Op *>> pending(w->threads);
	std::vector<size_t> used(w->threads, 0);
	std::string err;
	for (unsigned i = 0; i < w->threads && err.empty(); i++) {
		unsigned done = w->done[i].load(std::memory_order_acquire);
		for (unsigned k = 0; k < done; k++) {
			uint64_t idx = w->index[i][k];
			if (idx == 0 || idx > n)
				err = "thread " + std::to_string(i) + " update " + std::to_string(k) +
					" returned with index " + std::to_string(idx) +
					" but recovery stopped at " + std::to_string(n);
			else if (slots[idx - 1] != nullptr)
				err = "two updates with index " + std::to_string(idx);
			else
				slots[idx - 1] = &w->ops[i][k];
		}
		// fork() write-protects pages one at a time while the other
		// threads run, so a thread's count can lag by one update: it
		// stops only at its next persistence event, which may be inside
		// the update after the one it has not yet counted.
		for (unsigned k = done; k < done + 2 && k < w->ops[i].size(); k++)
			pending[i].push_back(&w->ops[i][k]);
	}
	std::pair<const onll_type *, std::string> snap{TypeOf(w->obj), ""};
	onll_thread *t = nullptr;
	if (err.empty() && onll_thread_register(o, &t) != 0)
		err = "register after recovery failed";
	if (err.empty() && onll_query(t, SaveSnapshot, &snap) != 0)
		err = "query after recovery failed";
	if (err.empty() && !Matches(w, slots, 0, pending, used, snap.second)) {
		err = "recovered state at index " + std::to_string(n) +
			" is not the updates 1.." + std::to_string(n) + " in index order (known:";
		for (const Op *op : slots)
			err += op ? " " + std::to_string(op->a) : " ?";
		err += "; in flight:";
		for (auto &p : pending)
			for (const Op *op : p)
				err += " " + std::to_string(op->a);
		if (w->obj == Obj::kCounter && snap.second.size() == 8) {
			uint64_t v;
			std::memcpy(&v, snap.second.data(), 8);
			err += "; counter " + std::to_string(v);
		}
		for (unsigned i = 0; i < w->threads; i++)
			err += "; done" + std::to_string(i) + "=" + std::to_string(w->done[i].load());
		err += ")";
	}
	// The recovered object keeps working and continues the indexes.
	uint64_t idx = 0;
	if (err.empty() && (onll_update(t, "\x7f", 1, nullptr, &idx) != 0 || idx != n + 1))
		err = "update after recovery did not get index n + 1";
	onll_thread_unregister(&t);
	onll_close(&o);
	return err;
}

int NestedRun(void *arg)
{
	World *w = static_cast<World *>(arg);
	onll *o = nullptr;
	int ret = onll_open(&o, w->env.pool, w->env.area_off, TypeOf(w->obj));
	onll_close(&o);
	return ret == 0 ? 0 : 1;
}

int NestedCheck(void *arg, char *msg, size_t len)
{
	std::string err = CheckRecovered(static_cast<World *>(arg));
	std::snprintf(msg, len, "after a crash during recovery: %s", err.c_str());
	return err.empty() ? 0 : 1;
}

// The object's state now, as snapshot bytes, through a thread of @o.
std::string StateOf(onll *o, Obj obj)
{
	std::pair<const onll_type *, std::string> snap{TypeOf(obj), ""};
	onll_thread *t = nullptr;
	if (onll_thread_register(o, &t) != 0)
		return "?";
	if (onll_query(t, SaveSnapshot, &snap) != 0)
		snap.second = "?";
	onll_thread_unregister(&t);
	return snap.second;
}

// Single-threaded histories: the state after the first @n1 ops of the first
// life and the first @n2 of the second.
std::string ModelBytes(const World *w, uint64_t n1, uint64_t n2)
{
	Model m{w->obj};
	for (uint64_t k = 0; k < n1; k++)
		m.Apply(w->ops[0][k]);
	for (uint64_t k = 0; k < n2; k++)
		m.Apply(w->ops2[k]);
	return m.Bytes();
}

// "" if @n, an index recovery reached, and @state fit @done ops of @total
// returned (one or two more may have been in flight: see CheckRecovered).
std::string CheckLife(const World *w, uint64_t n, uint64_t done, uint64_t total,
	uint64_t base, const std::string &state, bool second)
{
	uint64_t k = n - base;
	if (n < base || k < done || k > done + 2 || k > total)
		return "recovered index " + std::to_string(n) + " with " + std::to_string(done) +
			" of " + std::to_string(total) + " updates returned after index " +
			std::to_string(base);
	if (state != (second ? ModelBytes(w, base, k) : ModelBytes(w, k, 0)))
		return "recovered state at index " + std::to_string(n) + " is not the updates "
			"up to it in order";
	return "";
}

// The second life: recover the first (checking it), then run ops2 on a
// thread other than the one that recovered.
int ReuseRun(void *arg)
{
	World *w = static_cast<World *>(arg);
	onll *o = nullptr;
	if (onll_open(&o, w->env.pool, w->env.area_off, TypeOf(w->obj)) != 0)
		return 1;
	w->n1 = onll_recovered_index(o);
	if (!CheckLife(w, w->n1, w->done[0].load(), w->ops[0].size(), 0, StateOf(o, w->obj),
		false).empty())
		return 2;
	w->env.o = o;
	w->life2.store(true);
	int bad = 0;
	std::thread([w, &bad] {
		onll_thread *t = nullptr;
		if (onll_thread_register(w->env.o, &t) != 0) {
			bad = 1;
			return;
		}
		for (const Op &op : w->ops2) {
			if (RunOp(t, w->obj, op) < 0)
				bad = 1;
			w->done2.fetch_add(1);
		}
		onll_thread_unregister(&t);
	}).join();
	return bad;
}

int ReuseCheck(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	std::string err;
	if (!w->life2.load()) {
		err = CheckRecovered(w); // crashed during the second recovery
	} else {
		onll *o = nullptr;
		int ret = onll_open(&o, w->env.pool, w->env.area_off, TypeOf(w->obj));
		if (ret != 0)
			err = "onll_open failed: " + std::to_string(ret);
		else
			err = CheckLife(w, onll_recovered_index(o), w->done2.load(), w->ops2.size(),
				w->n1, StateOf(o, w->obj), true);
		onll_close(&o);
	}
	std::snprintf(msg, len, "second crash, %u updates of the second life returned: %s",
		w->done2.load(), err.c_str());
	return err.empty() ? 0 : 1;
}

int Check(void *arg, char *msg, size_t len)
{
	World *w = static_cast<World *>(arg);
	if (w->reuse)
		return pmtest::CrashAgain("onll-reuse-second", 3, w->env.Area(), w->env.area_size,
			ReuseRun, ReuseCheck, w, msg, len);
	if (w->over_used && !w->created.load()) {
		// Crashed inside the create: the area holds the old object with
		// all its updates, the new one with none, or reads as no object;
		// never a mixture.
		onll *o = nullptr;
		int ret = onll_open(&o, w->env.pool, w->env.area_off, TypeOf(w->obj));
		bool ok = ret == PM_E_CORRUPT;
		if (ret == 0) {
			Model old{w->obj}, none{w->obj};
			for (const Op &op : w->old_ops)
				old.Apply(op);
			std::string state = StateOf(o, w->obj);
			ok = state == old.Bytes() ||
				(onll_recovered_index(o) == 0 && state == none.Bytes());
		}
		onll_close(&o);
		std::snprintf(msg, len, "crash inside a create over a used area: onll_open %d%s",
			ret, ret == 0 && !ok ? ", and the state is neither the old object's nor empty"
					     : "");
		return ok ? 0 : 1;
	}
	if (w->nested)
		return pmtest::CrashRecovery("onll-recovery", w->env.Area(), w->env.area_size,
			NestedRun, NestedCheck, w, msg, len);
	std::string err = CheckRecovered(w);
	std::snprintf(msg, len, "%s", err.c_str());
	return err.empty() ? 0 : 1;
}

// A seeded workload: thread i's values are tagged with i so every op is
// distinguishable; queues and maps get removals too.
void MakeOps(World *w, unsigned threads, unsigned n, unsigned seed)
{
	std::mt19937_64 rng(seed);
	w->threads = threads;
	for (unsigned i = 0; i < threads; i++) {
		w->done[i] = 0;
		w->ops[i].clear();
		for (unsigned k = 0; k < n; k++) {
			uint64_t tag = (uint64_t(i + 1) << 32) | (k + 1);
			Op op{0, tag, 0};
			if (w->obj == Obj::kCounter)
				op.a = uint64_t(1) << ((i * n + k) % 63); // each add visible
			else if (w->obj == Obj::kQueue)
				op.kind = rng() % 3 == 0 ? 1 : 0;
			else {
				op.kind = rng() % 3 == 0 ? 1 : 0;
				op.a = rng() % 5;
				op.b = tag;
			}
			w->ops[i].push_back(op);
		}
	}
}

pmtest::CrashRun Simulate(World *w, const std::string &name, pm_crashsim_mode mode,
	unsigned max_images = 16)
{
	pm_crashsim_config cfg;
	pm_crashsim_config_init(&cfg);
	cfg.name = name.c_str();
	cfg.mode = mode;
	cfg.sample_one_in = 4;
	cfg.max_images = max_images;
	return pmtest::RunCrashSim(cfg, w->env.Area(), w->env.area_size, Run, Check, w);
}

class Crash : public ::testing::TestWithParam<Obj> {
protected:
	// A fresh object; its creation is durable before the run starts.
	bool Make(World *w, const std::string &name, unsigned threads)
	{
		return Make(w, name, onlltest::SmallConfig(threads, 8));
	}

	bool Make(World *w, const std::string &name, const onll_config &c)
	{
		w->obj = GetParam();
		int ret = w->env.Create("crash-" + name, c, TypeOf(w->obj));
		EXPECT_EQ(ret, 0);
		return ret == 0;
	}

	void Report(const std::string &what, const pmtest::CrashRun &r)
	{
		RecordProperty(what + "_events", std::to_string(r.st.events));
		RecordProperty(what + "_points", std::to_string(r.st.points));
		RecordProperty(what + "_images", std::to_string(r.st.images));
		std::printf("%s: %llu events, %llu points, %llu images\n", what.c_str(),
			(unsigned long long)r.st.events, (unsigned long long)r.st.points,
			(unsigned long long)r.st.images);
	}
};

std::string Name(Obj o)
{
	switch (o) {
	case Obj::kCounter: return "counter";
	case Obj::kQueue: return "queue";
	case Obj::kMap: return "map";
	}
	return "?";
}

// Every crash point of 20 updates: five checkpoints, and the 8-entry log
// wraps twice, so torn entries land on reused ones.
TEST_P(Crash, EveryPointSingleThread)
{
	World w;
	if (!Make(&w, "single", 1))
		return;
	MakeOps(&w, 1, 20, 7);
	std::string name = "onll-single-" + Name(w.obj);
	pmtest::CrashRun r = Simulate(&w, name, PM_CRASHSIM_EVERY);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	EXPECT_GT(r.st.points, 40u);
	Report("single", r);
}

// Every crash point of one schedule of three threads (10 updates each);
// two seeds. Built against the planted "no helping" bug (//onll:onll_nohelp:
// each entry holds only its own op; ONLL_CRASH_EXPECT_CAUGHT), the
// simulator must fail it: a later update's entry is durable while an earlier
// one's is not, and recovery finds the gap or loses a completed update.
TEST_P(Crash, EveryPointThreeThreads)
{
#ifdef ONLL_CRASH_EXPECT_CAUGHT
	unsigned caught = 0;
#endif
	for (unsigned seed = 1; seed <= 2; seed++) {
		World w;
		if (!Make(&w, "multi" + std::to_string(seed), 3))
			return;
		MakeOps(&w, 3, 10, seed);
		std::string name = "onll-multi-" + Name(w.obj) + "-" + std::to_string(seed);
		pmtest::CrashRun r = Simulate(&w, name, PM_CRASHSIM_EVERY);
#ifdef ONLL_CRASH_EXPECT_CAUGHT
		ASSERT_TRUE(r.ret == 0 || r.ret == PM_E_CHECK_FAILED) << pm_strerror(r.ret);
		caught += r.ret == PM_E_CHECK_FAILED;
#else
		ASSERT_EQ(r.ret, 0) << r.report;
		EXPECT_GT(r.st.points, 5u);
		Report("multi" + std::to_string(seed), r);
#endif
	}
#ifdef ONLL_CRASH_EXPECT_CAUGHT
	EXPECT_GT(caught, 0u) << "the planted no-helping bug survived every crash point";
#endif
}

// An object is used (20 updates: its log wraps twice, checkpoints in both
// slots) and closed; then every crash point of formatting a new object over
// the same area and of the new object's 12 updates. Recovery must find the
// new object with exactly its own updates: none of the old log entries or
// checkpoints may come back.
TEST_P(Crash, EveryPointOfACreateOverAUsedArea)
{
	World w;
	if (!Make(&w, "reformat", 1))
		return;
	MakeOps(&w, 1, 20, 5);
	ASSERT_EQ(RunThread(&w, 0), 0);
	ASSERT_EQ(onll_close(&w.env.o), 0);
	w.old_ops = w.ops[0];
	w.over_used = true;
	w.cfg = onlltest::SmallConfig(1, 8);
	MakeOps(&w, 1, 12, 6);
	std::string name = "onll-reformat-" + Name(w.obj);
	// Many images: the create's header and its invalidated entries must
	// be seen persisting in every order.
	pmtest::CrashRun r = Simulate(&w, name, PM_CRASHSIM_EVERY, 128);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	Report("reformat", r);
}

// Crash, recover, run until the log has wrapped (20 updates, 8 entries) on
// a thread other than the one that recovered, crash again: every point of
// the first life, sampled points of the second (two images each: every
// word durable, every word newest).
TEST_P(Crash, CrashRecoverReuseCrashAgain)
{
	World w;
	if (!Make(&w, "reuse", 2))
		return;
	MakeOps(&w, 1, 12, 8);
	std::vector<Op> first = w.ops[0];
	MakeOps(&w, 1, 20, 9);
	w.ops2 = w.ops[0];
	w.ops[0] = first;
	w.reuse = true;
	pmtest::CrashRun r = Simulate(&w, "onll-reuse-" + Name(w.obj), PM_CRASHSIM_EVERY, 2);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 3u);
	Report("reuse", r);
}

// A checkpoint that one thread writes lets another reuse its log entries
// (onll__checkpoint_locked, the path of onll_checkpoint() and of a full
// log). In lockstep, with a 4-entry log and checkpoints piggy-backed every
// third entry: thread 1 logs 2 updates; thread 0 checkpoints them; thread 1
// logs 3 more, the last over the entry of its first. Every crash point: the
// first update must survive, through thread 0's checkpoint, which only
// thread 0's fence makes durable (thread 1's fences order its own flushes).
TEST_P(Crash, EveryPointOfAnotherThreadsCheckpointLettingLogEntriesBeReused)
{
	World w;
	onll_config c = onlltest::SmallConfig(2, 4);
	c.checkpoint_every = 3;
	if (!Make(&w, "ckpt-other", c))
		return;
	MakeOps(&w, 2, 5, 10);
	w.ops[0].clear();
	w.script = { { 1, kUpdate }, { 1, kUpdate }, { 0, kCheckpoint }, { 1, kUpdate },
		{ 1, kUpdate }, { 1, kUpdate } };
	pmtest::CrashRun r = Simulate(&w, "onll-ckpt-other-" + Name(w.obj), PM_CRASHSIM_EVERY, 32);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	onll_stats st;
	onll_stats_total(w.env.o, &st);
	EXPECT_EQ(st.checkpoints, 2u) << "thread 0's and thread 1's piggy-backed one";
	Report("ckpt-other", r);
}

// The contended checkpoint path (issue 20): a thread whose log is full
// while another holds the checkpoint flag waits, then reuses its entries on
// the strength of the other thread's checkpoint (RunContended). Every crash
// point: every update that returned must survive, through that checkpoint
// once the first entry is overwritten.
TEST_P(Crash, EveryPointOfAFullLogWaitingForAnotherThreadsCheckpoint)
{
	World w;
	w.obj = GetParam();
	onll_config c = onlltest::SmallConfig(2, 4);
	c.checkpoint_every = 3;
	ASSERT_EQ(w.env.Create("crash-ckpt-contended", c, GatedType(w.obj)), 0);
	MakeOps(&w, 2, 6, 11);
	w.ops[0].clear();
	w.contended = true;
	pmtest::CrashRun r = Simulate(&w, "onll-ckpt-contended-" + Name(w.obj),
		PM_CRASHSIM_EVERY, 32);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_EQ(r.st.points, r.st.events + 1);
	onll_stats st;
	onll_stats_total(w.env.o, &st);
	EXPECT_EQ(st.log_full_waits, 1u) << "thread 1's fifth update waited for the flag";
	EXPECT_EQ(st.checkpoints, 2u) << "thread 0's, and thread 1's piggy-backed one";
	EXPECT_EQ(w.done[1].load(), 6u);
	Report("ckpt-contended", r);
}

// Crash the recovery of sampled crash images at every point of recovery.
TEST_P(Crash, CrashDuringRecovery)
{
	World w;
	if (!Make(&w, "nested", 1))
		return;
	MakeOps(&w, 1, 12, 3);
	w.nested = true;
	pmtest::CrashRun r = Simulate(&w, "onll-nested-" + Name(w.obj), PM_CRASHSIM_SAMPLE);
	ASSERT_EQ(r.ret, 0) << r.report;
	EXPECT_GT(r.st.points, 3u);
	Report("nested", r);
}

INSTANTIATE_TEST_SUITE_P(Objects, Crash,
	::testing::Values(Obj::kCounter, Obj::kQueue, Obj::kMap),
	[](const ::testing::TestParamInfo<Obj> &i) { return Name(i.param); });

} // namespace
