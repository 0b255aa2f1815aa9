// SPDX-License-Identifier: BSD-3-Clause
// ds/tests/mcas_crash.h -- the crash-test driver of the MCAS structures
// (dll_crash_test, bztree_crash_test): per-thread operation plans run under
// the crash simulator (pm/crashsim.h), and the check of each post-crash
// image: mcas_pmem_open, then the structure's pmem_open, on the same pool;
// the structure's own checks; every completed operation and all or nothing
// of the one in flight per thread; a structure that keeps working.
#ifndef DS_TESTS_MCAS_CRASH_H
#define DS_TESTS_MCAS_CRASH_H

#include <algorithm>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <mcas/mcas.h>
#include <pm/crashsim.h>
#include <pm/error.h>
#include <pm/persist.h>

#include "ds/tests/mcas_env.h"
#include "ds/tests/mcas_variants.h"
#include "mcas/tests/mcas_test_util.h"
#include "pm/tests/test_util.h"

namespace dstest {

constexpr unsigned kCrashMaxThreads = 2;

// A workload over structure @S (as in Env), given as a traits class:
//   Thread               the structure's handle;
//   State, Op            a thread's share of the contents, and one
//                        operation of it, with its expected result `expect`;
//   kOpen                the name of S's pmem_open, for messages;
//   Register(s, &h), Unregister(&h), Apply(h, op);
//   Owned(h, t, threads) thread @t's share of what @h reads;
//   Describe(state);
//   Recovered(env, h)    S's checks after recovery: "" or what is wrong;
//   Fresh(h)             S's checks of a newly created, empty structure;
//   Exercise(h)          a new key in and out, and S's check: "" or not.
template <class S, class W> struct CrashWorld {
	using Thread = typename W::Thread;
	using State = typename W::State;
	using Op = typename W::Op;

	Env<S> env;
	// Per thread: its operations, the model state after each prefix, and
	// how many operations have returned (written after each return).
	unsigned threads = 1;
	std::vector<std::vector<Op>> ops;
	std::vector<std::vector<State>> states;
	std::atomic<unsigned> done[kCrashMaxThreads];
	// Creation workload: set once the structure's pmem_create returned.
	std::atomic<int> created{0};
	// Second life (single-threaded workloads, CheckReuse): after the
	// outer crash the nested run recovers, plans ops2 from the recovered
	// state with plan2, and runs them on another thread; done2 counts
	// those that returned, life2 is set once they start.
	std::function<void(CrashWorld *, const State &)> plan2;
	std::vector<Op> ops2;
	std::vector<State> states2;
	std::atomic<unsigned> done2{0};
	std::atomic<int> life2{0};
	unsigned reuse_one_in = 4;
	size_t tracked = 0; // bytes the outer simulation tracks
	// Creation over a used area (SimulateCreateOverUsed): what the old
	// structure held when it was closed.
	bool over_used = false;
	State old{};

	void SetThreads(unsigned n)
	{
		threads = n;
		ops.assign(n, {});
		states.assign(n, {});
	}

	// Recovery plus the checks that hold for any workload; "" if fine.
	// Leaves the recovered structure open in env with a registered handle
	// in *@hp.
	std::string Recover(Thread **hp)
	{
		Env<S> &e = env;
		// The crashed instances are abandoned, as a dead process's would be.
		e.m = nullptr;
		e.ds = nullptr;
		mcas_config after = mcastest::AfterCrash(e.cfg);
		int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &after);
		if (ret != 0)
			return "mcas_pmem_open: " + std::string(pm_strerror(ret));
		ret = S::PmemOpen(&e.ds, e.m, e.pool, e.ds_off);
		if (ret != 0)
			return std::string(W::kOpen) + ": " + pm_strerror(ret) + ": " + pm_errormsg();
		ret = W::Register(e.ds, hp);
		if (ret != 0)
			return "register: " + std::to_string(ret);
		std::string err = W::Recovered(e, *hp);
		return err.empty() ? "" : "after recovery: " + err;
	}

	std::string Finish(Thread **hp)
	{
		if (W::Unregister(hp) != 0 || S::Close(&env.ds) != 0 || mcas_close(&env.m) != 0)
			return "clean shutdown after recovery failed";
		return "";
	}

	std::string VerifyOps()
	{
		Thread *h = nullptr;
		std::string err = Recover(&h);
		if (!err.empty())
			return err;
		for (unsigned t = 0; t < threads; t++) {
			State mine = W::Owned(h, t, threads);
			unsigned d = done[t].load();
			bool ok = false;
			for (unsigned s = d; s <= d + 1 && s < states[t].size(); s++)
				ok |= mine == states[t][s];
			if (!ok)
				return "thread " + std::to_string(t) + ": " + std::to_string(d) +
					" operations returned and the recovered state is " +
					W::Describe(mine) + ", expected " + W::Describe(states[t][d]) +
					(d + 1 < states[t].size() ?
							" or " + W::Describe(states[t][d + 1]) :
							"");
		}
		err = W::Exercise(h);
		return err.empty() ? Finish(&h) : err;
	}

	static int CheckOps(void *arg, char *msg, size_t len)
	{
		std::string err = static_cast<CrashWorld *>(arg)->VerifyOps();
		std::snprintf(msg, len, "%s", err.c_str());
		return err.empty() ? 0 : 1;
	}

	// The nested run of CheckReuse: recover the first life (its checks
	// must hold), plan ops2 from what it left, run them on a thread other
	// than the one that recovered (so only the second life's own flushes
	// and fences order anything), and keep the structure open.
	static int ReuseRun(void *arg)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		Thread *h = nullptr;
		if (!w->Recover(&h).empty())
			return 1;
		State now = W::Owned(h, 0, 1);
		unsigned d = w->done[0].load();
		if (!(now == w->states[0][d] ||
			    (d + 1 < w->states[0].size() && now == w->states[0][d + 1])))
			return 2;
		if (W::Unregister(&h) != 0)
			return 3;
		w->plan2(w, now);
		w->life2.store(1);
		int ret = 0;
		std::thread([w, &ret] {
			Thread *t = nullptr;
			if (W::Register(w->env.ds, &t) != 0) {
				ret = 4;
				return;
			}
			for (size_t i = 0; i < w->ops2.size(); i++) {
				if (W::Apply(t, w->ops2[i]) != w->ops2[i].expect) {
					ret = 100 + (int)i;
					return;
				}
				w->done2.store((unsigned)i + 1);
			}
			if (W::Unregister(&t) != 0)
				ret = 5;
		}).join();
		return ret;
	}

	// The nested check: recover again; the state must be the second
	// life's after its completed operations (or one more), or, crashed
	// during the second recovery, the first life's.
	static int ReuseCheck(void *arg, char *msg, size_t len)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		std::string err;
		if (!w->life2.load()) {
			err = w->VerifyOps();
		} else {
			Thread *h = nullptr;
			err = w->Recover(&h);
			if (err.empty()) {
				State now = W::Owned(h, 0, 1);
				unsigned d = w->done2.load();
				bool ok = false;
				for (unsigned s = d; s <= d + 1 && s < w->states2.size(); s++)
					ok |= now == w->states2[s];
				if (!ok)
					err = std::to_string(d) + " operations of the second life "
						"returned and the recovered state is " + W::Describe(now);
				else if ((err = W::Exercise(h)).empty())
					err = w->Finish(&h);
			}
		}
		std::snprintf(msg, len, "second crash: %s", err.c_str());
		return err.empty() ? 0 : 1;
	}

	// Crash, recover, run the second life, crash again: the check of each
	// point of the first life is a nested simulation of the second.
	static int CheckReuse(void *arg, char *msg, size_t len)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		std::string name = std::string("second-life-") + W::kOpen;
		return pmtest::CrashAgain(name.c_str(), w->reuse_one_in, w->env.ds_area, w->tracked,
			ReuseRun, ReuseCheck, w, msg, len);
	}

	// One thread's operations; returns 0 or 100 + the index of a wrong result.
	int RunThread(unsigned t)
	{
		Thread *h = nullptr;
		if (W::Register(env.ds, &h) != 0)
			return 1;
		for (size_t i = 0; i < ops[t].size(); i++) {
			if (W::Apply(h, ops[t][i]) != ops[t][i].expect)
				return 100 + (int)i;
			done[t].store((unsigned)i + 1);
		}
		// Unregistering drains the reclamation pipeline: detaching
		// descriptors (flushes, a fence) is crash-tested too.
		return W::Unregister(&h) == 0 ? 0 : 2;
	}

	static int RunAll(void *arg)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		if (w->threads == 1)
			return w->RunThread(0);
		std::vector<std::thread> th;
		std::atomic<int> failed{0};
		for (unsigned t = 0; t < w->threads; t++)
			th.emplace_back([w, t, &failed] {
				int r = w->RunThread(t);
				if (r != 0)
					failed.store(r);
			});
		for (auto &x : th)
			x.join();
		return failed.load();
	}

	// The creation workload: the structure's pmem_create on env's area,
	// with env's params.
	static int RunCreate(void *arg)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		Env<S> &e = w->env;
		if (S::PmemCreate(&e.ds, e.m, e.pool, e.ds_off, e.params) != 0)
			return 1;
		w->created.store(1);
		return 0;
	}

	// A crash inside a create over a used area left the old structure
	// openable: it must be whole and hold what it held when closed.
	std::string OldWhole(Thread *h)
	{
		std::string err = W::Recovered(env, h);
		if (!err.empty())
			return "the old structure opens after a crash inside the create, damaged: " +
				err;
		State now = W::Owned(h, 0, 1);
		if (!(now == old))
			return "the old structure opens after a crash inside the create with " +
				W::Describe(now) + ", not " + W::Describe(old);
		return "";
	}

	// Checks an image of the creation workload: before the header is
	// durable the area reads as corrupt (or, over a used area, as the old
	// structure, whole); after creation returned it must open as an empty
	// structure (W::Fresh); either keeps working.
	static int CheckCreate(void *arg, char *msg, size_t len)
	{
		CrashWorld *w = static_cast<CrashWorld *>(arg);
		Env<S> &e = w->env;
		std::string err;
		e.m = nullptr;
		e.ds = nullptr;
		mcas_config after = mcastest::AfterCrash(e.cfg);
		int ret = mcas_pmem_open(&e.m, e.pool, e.mcas_off, &after);
		if (ret != 0) {
			err = "mcas_pmem_open: " + std::string(pm_strerror(ret));
		} else {
			ret = S::PmemOpen(&e.ds, e.m, e.pool, e.ds_off);
			if (ret == PM_E_CORRUPT && !w->created.load())
				return 0; // not formatted yet: the caller formats again
			Thread *h = nullptr;
			if (ret != 0)
				err = std::string(W::kOpen) + ": " + pm_strerror(ret) + ": " +
					pm_errormsg();
			else if (W::Register(e.ds, &h) != 0)
				err = "register failed";
			else if (!w->created.load() && w->over_used && !W::Fresh(h).empty())
				err = w->OldWhole(h);
			else if (!(err = W::Fresh(h)).empty())
				err = "a newly created structure is not empty and whole: " + err;
			if (err.empty() && (err = W::Exercise(h)).empty())
				err = w->Finish(&h);
		}
		std::snprintf(msg, len, "%s", err.c_str());
		return err.empty() ? 0 : 1;
	}

	// Every crash point of creating the structure on its area, zeroed
	// first (never formatted); only that area is tracked, since creation
	// writes nothing else.
	pmtest::CrashRun SimulateCreate(const pm_crashsim_config &cfg)
	{
		EXPECT_EQ(S::Close(&env.ds), 0);
		std::memset(env.ds_area, 0, env.ds_size);
		pm_persist(env.ds_area, env.ds_size);
		return Simulate(cfg, env.ds_size, RunCreate, CheckCreate);
	}

	// Every crash point of creating the structure on the area of the one
	// open in env, which is closed first: what it holds (thread 0's view of
	// all of it) must survive any crash before the new header is durable,
	// and none of it may show in the new structure.
	pmtest::CrashRun SimulateCreateOverUsed(const pm_crashsim_config &cfg)
	{
		Thread *h = nullptr;
		EXPECT_EQ(W::Register(env.ds, &h), 0);
		old = W::Owned(h, 0, 1);
		EXPECT_EQ(W::Unregister(&h), 0);
		EXPECT_EQ(S::Close(&env.ds), 0);
		over_used = true;
		return Simulate(cfg, env.ds_size, RunCreate, CheckCreate);
	}

	// Runs @run and checks it with @check (both on this world) under a
	// simulator configured by @cfg that tracks @len bytes from the start of
	// the pool's root (the structure's area, then the MCAS area); prints
	// the counts.
	pmtest::CrashRun Simulate(const pm_crashsim_config &cfg, size_t len, pm_crashsim_run_fn run,
		pm_crashsim_check_fn check)
	{
		for (unsigned t = 0; t < kCrashMaxThreads; t++)
			done[t].store(0);
		tracked = len;
		pmtest::CrashRun r = pmtest::RunCrashSim(cfg, env.ds_area, len, run, check, this);
		std::printf("%-40s events=%" PRIu64 " points=%" PRIu64 " images=%" PRIu64
			" max_dirty_words=%" PRIu64 "\n", cfg.name, r.st.events, r.st.points,
			r.st.images, r.st.max_dirty_words);
		return r;
	}
};

// The MCAS config of the crash tests: 4 threads x 16 descriptors keeps the
// tracked MCAS area small; a small reclaim batch and frequent
// efficient-read detaching put those paths (and their flushes) inside the
// workload.
inline mcas_config CrashConfig(mcas_algorithm alg)
{
	mcas_config c = SmallConfig(alg, 4, 16);
	c.reclaim_batch = 2;
	c.read_detach_one_in = 4;
	return c;
}

// "@prefix-<test>-<variant>": the running test's pool and simulator name.
inline std::string CrashPoolName(const std::string &prefix)
{
	std::string test = testing::UnitTest::GetInstance()->current_test_info()->name();
	std::replace(test.begin(), test.end(), '/', '-');
	return prefix + "-" + test;
}

} // namespace dstest

#endif
