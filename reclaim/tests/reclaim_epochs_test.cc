// SPDX-License-Identifier: BSD-3-Clause
// reclaim/tests/reclaim_epochs_test.cc -- the epoch flavour (reclaim.h, "The
// epoch flavour"): one registration per thread and flavour, the error
// contracts, grace periods that wait exactly for the sections that were open
// when they started (checked step by step, with the reader threads parked at
// known points, not by timing), and a two-grace reuse pipeline under
// concurrent readers whose records must never be seen recycled.
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <pm/error.h>
#include <reclaim/reclaim.h>

namespace {

// A thread parked at a point of its own choosing until the test lets it go.
class Gate {
public:
	void Arrive() { arrived_.store(true); }
	void WaitArrived() const
	{
		while (!arrived_.load())
			std::this_thread::yield();
	}
	void Open() { open_.store(true); }
	void WaitOpen() const
	{
		while (!open_.load())
			std::this_thread::yield();
	}

private:
	std::atomic<bool> arrived_{false};
	std::atomic<bool> open_{false};
};

// Runs @body on a new thread registered in @e; the thread unregisters after.
// A failed registration ends the test at once (its gates would never open).
std::thread Registered(reclaim_epochs *e, std::function<void(reclaim_epochs_thread *)> body)
{
	return std::thread([e, body] {
		reclaim_epochs_thread *t = nullptr;
		if (reclaim_epochs_thread_register(e, &t) != 0) {
			ADD_FAILURE() << "register: " << pm_errormsg();
			std::abort();
		}
		body(t);
		EXPECT_EQ(reclaim_epochs_thread_unregister(&t), 0);
	});
}

TEST(ReclaimEpochs, BadArgumentsAndBusyDelete)
{
	reclaim_epochs *e = nullptr;
	EXPECT_EQ(reclaim_epochs_new(&e, 0), -EINVAL);
	EXPECT_NE(std::string(pm_errormsg()).find("max_threads"), std::string::npos);
	EXPECT_EQ(reclaim_epochs_new(&e, 65537), -EINVAL);
	EXPECT_EQ(reclaim_epochs_delete(&e), 0); // NULL accepted
	ASSERT_EQ(reclaim_epochs_new(&e, 4), 0);
	reclaim_epochs_thread *t = nullptr;
	ASSERT_EQ(reclaim_epochs_thread_register(e, &t), 0);
	EXPECT_EQ(reclaim_epochs_delete(&e), -EBUSY);
	EXPECT_NE(e, nullptr);
	reclaim_epochs_enter(t);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&t), -EBUSY);
	EXPECT_NE(t, nullptr);
	reclaim_epochs_exit(t);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&t), 0);
	EXPECT_EQ(t, nullptr);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&t), 0); // NULL accepted
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
	EXPECT_EQ(e, nullptr);
}

TEST(ReclaimEpochs, AThreadRegistersOncePerFlavour)
{
	reclaim_epochs *e = nullptr, *other = nullptr;
	ASSERT_EQ(reclaim_epochs_new(&e, 1), 0);
	ASSERT_EQ(reclaim_epochs_new(&other, 1), 0);
	reclaim_epochs_thread *a = nullptr, *b = nullptr, *c = nullptr;
	ASSERT_EQ(reclaim_epochs_thread_register(e, &a), 0);
	ASSERT_EQ(reclaim_epochs_thread_register(e, &b), 0); // the one slot, again
	EXPECT_EQ(a, b);
	EXPECT_EQ(reclaim_epochs_registered(e), 1u);
	ASSERT_EQ(reclaim_epochs_thread_register(other, &c), 0); // another flavour: its own
	EXPECT_NE(a, c);
	// The slot is taken: another thread gets -EAGAIN and a message.
	std::thread([e] {
		reclaim_epochs_thread *x = nullptr;
		EXPECT_EQ(reclaim_epochs_thread_register(e, &x), -EAGAIN);
		EXPECT_NE(std::string(pm_errormsg()).find("slots"), std::string::npos);
		EXPECT_EQ(x, nullptr);
	}).join();
	// Sections are the thread's, whichever registration enters them.
	reclaim_epochs_enter(a);
	EXPECT_TRUE(reclaim_epochs_inside(b));
	reclaim_epochs_exit(b);
	EXPECT_FALSE(reclaim_epochs_inside(a));
	// Inside a section, dropping one of two registrations is harmless;
	// dropping the last is refused.
	reclaim_epochs_enter(a);
	reclaim_epochs_thread *keep = a;
	EXPECT_EQ(reclaim_epochs_thread_unregister(&a), 0);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&b), -EBUSY);
	EXPECT_EQ(b, keep);
	reclaim_epochs_exit(b);
	ASSERT_EQ(reclaim_epochs_thread_register(e, &a), 0);
	EXPECT_EQ(a, b);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&a), 0);
	EXPECT_EQ(reclaim_epochs_registered(e), 1u); // b still counts
	EXPECT_EQ(reclaim_epochs_delete(&e), -EBUSY);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&b), 0);
	EXPECT_EQ(reclaim_epochs_registered(e), 0u);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&c), 0);
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
	EXPECT_EQ(reclaim_epochs_delete(&other), 0);
}

TEST(ReclaimEpochs, OnlyTheRegisteringThreadUnregisters)
{
	reclaim_epochs *e = nullptr;
	ASSERT_EQ(reclaim_epochs_new(&e, 2), 0);
	reclaim_epochs_thread *t = nullptr;
	ASSERT_EQ(reclaim_epochs_thread_register(e, &t), 0);
	std::thread([&t] {
		reclaim_epochs_thread *mine = t;
		EXPECT_EQ(reclaim_epochs_thread_unregister(&mine), -EPERM);
		EXPECT_EQ(mine, t); // nothing changed
	}).join();
	EXPECT_EQ(reclaim_epochs_registered(e), 1u);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&t), 0);
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
}

TEST(ReclaimEpochs, AGraceWaitsForTheSectionsOpenAtItsStartOnly)
{
	reclaim_epochs *e = nullptr;
	ASSERT_EQ(reclaim_epochs_new(&e, 8), 0);
	reclaim_epochs_thread *me = nullptr;
	ASSERT_EQ(reclaim_epochs_thread_register(e, &me), 0);
	reclaim_epochs_grace g;
	ASSERT_EQ(reclaim_epochs_grace_init(&g, e), 0);
	EXPECT_FALSE(reclaim_epochs_grace_started(&g));
	EXPECT_TRUE(reclaim_epochs_grace_elapsed(&g, me)); // never started

	// Reader 1 is inside a (nested) section when the grace period starts.
	Gate in1, out1;
	std::thread r1 = Registered(e, [&](reclaim_epochs_thread *t) {
		reclaim_epochs_enter(t);
		reclaim_epochs_enter(t);
		in1.Arrive();
		out1.WaitOpen(); // leave the inner section only
		reclaim_epochs_exit(t);
		out1.Arrive();
		in1.WaitOpen();
		reclaim_epochs_exit(t);
	});
	in1.WaitArrived();
	EXPECT_FALSE(reclaim_epochs_others_outside(me));
	// The caller's own section never holds its grace periods.
	reclaim_epochs_enter(me);
	reclaim_epochs_grace_start(&g, me);
	EXPECT_TRUE(reclaim_epochs_grace_started(&g));
	EXPECT_FALSE(reclaim_epochs_grace_elapsed(&g, me));

	// Reader 2 enters after the start and stays: it does not hold g.
	Gate in2;
	std::thread r2 = Registered(e, [&](reclaim_epochs_thread *t) {
		reclaim_epochs_enter(t);
		in2.Arrive();
		in2.WaitOpen();
		reclaim_epochs_exit(t);
	});
	in2.WaitArrived();
	out1.Open();
	out1.WaitArrived(); // reader 1 left its inner section, still inside
	EXPECT_FALSE(reclaim_epochs_grace_elapsed(&g, me));
	in1.Open();
	r1.join();
	EXPECT_TRUE(reclaim_epochs_grace_elapsed(&g, me));
	EXPECT_FALSE(reclaim_epochs_others_outside(me)); // reader 2

	// A grace period started now waits for reader 2.
	reclaim_epochs_grace_start(&g, me);
	EXPECT_FALSE(reclaim_epochs_grace_elapsed(&g, me));
	in2.Open();
	r2.join();
	EXPECT_TRUE(reclaim_epochs_grace_elapsed(&g, me));
	EXPECT_TRUE(reclaim_epochs_others_outside(me));
	reclaim_epochs_exit(me);

	reclaim_epochs_grace_fini(&g);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&me), 0);
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
}

// The use the flavour exists for: mcas/'s pipeline, reduced. One writer
// replaces the published record, retires the old one, and reuses a record
// only two grace periods after retiring it (the first marks it detached,
// the second makes it free), poisoning it on reuse. Readers inside
// sections must never see a record change. Run under TSan as well.
TEST(ReclaimEpochs, ReadersNeverSeeARecordReusedAfterTwoGracePeriods)
{
	constexpr int kReaders = 3;
	constexpr int kRecords = 16;
	constexpr uint64_t kPoison = ~0ull;
	struct Record {
		std::atomic<uint64_t> value{0};
	};
	std::vector<Record> records(kRecords);
	std::atomic<Record *> published{&records[0]};
	std::atomic<bool> stop{false}, changed{false};
	std::atomic<uint64_t> reads{0};
	std::atomic<int> started{0};
	reclaim_epochs *e = nullptr;
	ASSERT_EQ(reclaim_epochs_new(&e, kReaders + 1), 0);

	std::vector<std::thread> readers;
	for (int i = 0; i < kReaders; i++)
		readers.push_back(Registered(e, [&](reclaim_epochs_thread *t) {
			bool first = true;
			while (!stop.load(std::memory_order_relaxed)) {
				reclaim_epochs_enter(t);
				Record *r = published.load(std::memory_order_acquire);
				// A record does not change while anyone may hold it.
				uint64_t v = r->value.load(std::memory_order_relaxed);
				bool same = v != kPoison;
				for (int k = 0; k < 8; k++)
					same &= r->value.load(std::memory_order_relaxed) == v;
				reclaim_epochs_exit(t);
				if (!same)
					changed.store(true);
				reads.fetch_add(1, std::memory_order_relaxed);
				if (first)
					started.fetch_add(1);
				first = false;
			}
		}));

	reclaim_epochs_thread *w = nullptr;
	ASSERT_EQ(reclaim_epochs_thread_register(e, &w), 0);
	reclaim_epochs_grace g;
	ASSERT_EQ(reclaim_epochs_grace_init(&g, e), 0);
	std::vector<Record *> free_list, retired, detached;
	for (int i = 1; i < kRecords; i++)
		free_list.push_back(&records[i]);
	uint64_t published_count = 0, graces = 0;
	// Every reader inside the loop first, then enough publications and
	// enough reads that they overlapped many times.
	while (started.load() < kReaders)
		std::this_thread::yield();
	while (published_count < 20000 || reads.load(std::memory_order_relaxed) < 20000) {
		if (reclaim_epochs_grace_elapsed(&g, w)) {
			if (reclaim_epochs_grace_started(&g))
				graces++;
			free_list.insert(free_list.end(), detached.begin(), detached.end());
			detached = retired;
			retired.clear();
			reclaim_epochs_grace_start(&g, w);
		}
		if (free_list.empty()) {
			std::this_thread::yield();
			continue;
		}
		Record *n = free_list.back();
		free_list.pop_back();
		n->value.store(kPoison, std::memory_order_relaxed); // reuse
		n->value.store(++published_count, std::memory_order_relaxed);
		// seq_cst: the replacement is ordered before the next grace
		// period's loads (reclaim_epochs_grace_start()).
		retired.push_back(published.exchange(n, std::memory_order_seq_cst));
	}
	stop.store(true);
	for (std::thread &r : readers)
		r.join();
	EXPECT_FALSE(changed.load()) << "a reader saw a record change under it";
	EXPECT_GT(graces, 100u);
	reclaim_epochs_grace_fini(&g);
	EXPECT_EQ(reclaim_epochs_thread_unregister(&w), 0);
	EXPECT_EQ(reclaim_epochs_delete(&e), 0);
}

} // namespace
