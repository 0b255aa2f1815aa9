// SPDX-License-Identifier: BSD-3-Clause
// mcas/tests/mcas_freeze.h -- deterministic interleavings for the mcas
// tests: threads frozen on page faults.
//
// A thread whose CAS (or load) hits a page the test made read-only (or
// inaccessible) takes SIGSEGV; the handler parks it until the test resumes
// it, and returning retries the instruction. That stops an operation at an
// exact step without touching the library: the test protects the page of a
// word, waits until the thread is frozen (WaitFor), lets other threads run
// into the stopped operation, then unprotects the page and resumes it.
//
// Not under TSan (MCAS_TEST_TSAN; kFreezeNoTsan says why): skip such tests
// there.
#ifndef MCAS_TESTS_MCAS_FREEZE_H
#define MCAS_TESTS_MCAS_FREEZE_H

#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <thread>

// Defined when the test is built with ThreadSanitizer (--config=tsan in
// .bazelrc passes -fsanitize=thread): GCC says so with __SANITIZE_THREAD__,
// clang with __has_feature(thread_sanitizer). Nothing in BUILD sets it.
#if defined(__SANITIZE_THREAD__)
#define MCAS_TEST_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MCAS_TEST_TSAN 1
#endif
#endif

namespace mcastest {

// Why freezing tests are skipped under TSan: its runtime performs atomics
// under internal per-address locks, so a thread parked in one would block
// every other thread's atomic on that address.
constexpr const char *kFreezeNoTsan =
	"parks threads inside atomics, which TSan runs under per-address locks";

// One frozen thread's park count: its n-th fault parks it until resumed
// reaches n (the test increments resumed to let it go on).
struct Freezer {
	std::atomic<int> frozen{0};
	std::atomic<int> resumed{0};
};

// The calling thread's freezer, set around the operation to be stopped; a
// fault on a thread without one is a real crash.
inline thread_local Freezer *tl_freezer = nullptr;

// FreezeOnSegv -- the SIGSEGV handler: park a thread that has a freezer,
// polling (lock-free atomics and nanosleep(), async-signal-safe) until the
// test resumes it; give up after 20 s and crash rather than hang.
inline void FreezeOnSegv(int sig, siginfo_t *, void *)
{
	Freezer *f = tl_freezer;
	if (f == nullptr) { // a real crash: fault again with the default action
		signal(sig, SIG_DFL);
		return;
	}
	int n = f->frozen.fetch_add(1) + 1;
	struct timespec ts = {0, 100 * 1000};
	for (long i = 0; f->resumed.load() < n; i++) {
		if (i > 200000) {
			signal(sig, SIG_DFL);
			return;
		}
		nanosleep(&ts, nullptr);
	}
}

// FreezeOnSegv installed as the SIGSEGV handler while the object lives;
// the previous handler comes back when it is destroyed.
class FreezeHandler {
public:
	FreezeHandler() = default;
	FreezeHandler(const FreezeHandler &) = delete;
	FreezeHandler &operator=(const FreezeHandler &) = delete;
	~FreezeHandler() { Uninstall(); }

	// Returns 0 or -errno.
	int Install()
	{
		struct sigaction sa;
		std::memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = FreezeOnSegv;
		sa.sa_flags = SA_SIGINFO;
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGSEGV, &sa, &old_) != 0)
			return -errno;
		installed_ = true;
		return 0;
	}

	void Uninstall()
	{
		if (installed_)
			sigaction(SIGSEGV, &old_, nullptr);
		installed_ = false;
	}

private:
	struct sigaction old_;
	bool installed_ = false;
};

inline size_t PageSize()
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

// The start of the page holding @p.
inline uintptr_t PageOf(const void *p)
{
	return (uintptr_t)p & ~(uintptr_t)(PageSize() - 1);
}

// mprotect() every page that [@addr, @addr + @len) touches. Returns 0 or
// -errno.
inline int ProtectPages(const void *addr, size_t len, int prot)
{
	uintptr_t lo = PageOf(addr);
	uintptr_t hi = PageOf((const char *)addr + len + PageSize() - 1);
	return mprotect((void *)lo, hi - lo, prot) == 0 ? 0 : -errno;
}

// Anonymous pages of their own (no other object shares them, so protecting
// one stops only accesses to what the test put there), unmapped when the
// object is destroyed.
class Pages {
public:
	Pages() = default;
	Pages(const Pages &) = delete;
	Pages &operator=(const Pages &) = delete;
	~Pages()
	{
		if (base_ != nullptr)
			munmap(base_, len_);
	}

	// Map @n read-write pages. Returns 0 or -errno.
	int Map(size_t n)
	{
		len_ = n * PageSize();
		void *p = mmap(nullptr, len_, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			return -errno;
		base_ = (char *)p;
		return 0;
	}

	// The first word of page @i.
	uint64_t *Word(size_t i) const { return (uint64_t *)(base_ + i * PageSize()); }

private:
	char *base_ = nullptr;
	size_t len_ = 0;
};

// Polls @cond every 200 us for up to 10 s; whether it became true.
inline bool WaitFor(const std::function<bool()> &cond)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
	while (!cond()) {
		if (std::chrono::steady_clock::now() > end)
			return false;
		std::this_thread::sleep_for(std::chrono::microseconds(200));
	}
	return true;
}

} // namespace mcastest

#endif
