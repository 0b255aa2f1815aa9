/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/crashsim.h -- crash simulator for persistent-memory code.
 *
 * It replaces pmreorder/pmemcheck (not packaged in Debian). A workload runs on
 * ordinary memory ("working memory") in which some ranges are *tracked*. For
 * each tracked range the simulator keeps a shadow *durable image* that
 * receives data only the way hardware makes it durable: pm_flush() takes a
 * snapshot of the flushed cache lines, and the flushing thread's next
 * pm_fence() copies those snapshots into the durable image.
 *
 * Persistence events are numbered from 1: every pm_flush() or pm_cas() that
 * touches a tracked range and every pm_fence(). Crash point k is the state
 * after k events; with E events in a run there are E + 1 crash points, the
 * last one after the workload returned.
 *
 * At a crash point the process forks (so the workload itself is not
 * disturbed). The child computes which 8-byte words could hold something
 * other than their durable value -- a word whose working value differs from
 * the durable one (the cache may have written it back at any time) or whose
 * flushed-but-unfenced snapshot differs -- and builds post-crash *images*:
 * each word takes its durable value or one of those candidates. When the
 * combinations number at most max_images they are all enumerated; otherwise
 * image 0 keeps every durable value, image 1 takes every newest value, and
 * the rest choose from a generator seeded by (seed, point, image): odd
 * images per word, even images per 64-byte line (all of a line's dirty
 * words durable, or all newest, as hardware evicts whole lines).
 * Each crash point is checked in a child process, which remaps the tracked
 * ranges privately (so file-backed pools on disk are never touched); each
 * image but the last is checked in a grandchild forked from it, the last in
 * the point's child itself. The image is written into copy-on-write pages
 * and the caller's check function runs recovery and tests invariants on it
 * at the same addresses.
 *
 * Model limits, deliberately: words are independent (real hardware evicts
 * whole cache lines, so this admits more states, never fewer, except that
 * values stored and overwritten between two events are not seen, since
 * plain stores are not intercepted); aligned 8-byte stores are atomic.
 *
 * Stricter than x86 about ordering: a thread's pending flushes reach the
 * durable image at its next pm_fence() or pm_cas() (a LOCK-prefixed
 * instruction) only. On x86 every locked instruction orders them -- any
 * atomic read-modify-write, and a seq_cst store, which compiles to xchg
 * (mcas's epoch announcement is one) -- but the simulator does not see
 * those. So a reported failure may be a state x86 cannot reach when the
 * code relied on such an instruction to order a flush. The suite never
 * does (it orders with pm_fence() or pm_cas() where it needs order), so a
 * failure here means a missing fence or pm_cas() in the protocol; code
 * that does rely on another locked instruction must say so where it does,
 * and may then see false alarms.
 *
 * The first failure is kept as a report naming the crash point and image and
 * a command that replays exactly that image: PM_CRASHSIM_REPLAY=
 * <name>:<point>:<image>:<seed> in the environment makes a simulator with that
 * name check only that image.
 *
 * Only one simulator may run a workload at a time in a process. The library
 * never prints; progress is reported through a callback.
 */
#ifndef PM_CRASHSIM_H
#define PM_CRASHSIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct pm_crashsim;

enum pm_crashsim_mode {
	/* Check every crash point: for small single-threaded workloads. */
	PM_CRASHSIM_EVERY,
	/* Check each event with probability 1/sample_one_in (seeded), plus the
	 * final point: for larger or multi-threaded workloads. */
	PM_CRASHSIM_SAMPLE,
};

struct pm_crashsim_stats {
	uint64_t events;   /* persistence events counted in the run */
	uint64_t points;   /* crash points checked */
	uint64_t images;   /* post-crash images checked */
	uint64_t failures; /* images whose check failed (the run stops checking after the first) */
	uint64_t max_dirty_words; /* most words with a non-durable candidate at one point */
};

typedef void (*pm_crashsim_progress_fn)(void *arg, const struct pm_crashsim_stats *stats);

struct pm_crashsim_config {
	const char *name;       /* names the workload in reports and replays; required */
	enum pm_crashsim_mode mode; /* default PM_CRASHSIM_EVERY */
	uint64_t seed;          /* default 1 */
	unsigned max_images;    /* images per crash point; default 64, at least 2 */
	unsigned sample_one_in; /* SAMPLE mode; default 64 */
	unsigned max_points;    /* stop checking after this many points; 0 (default) = no limit */
	unsigned image_timeout_s; /* a check running longer fails; default 60 */
	pm_crashsim_progress_fn progress; /* called after each checked point; default NULL */
	void *progress_arg;
};

/**
 * pm_crashsim_config_init -- fill @cfg with the defaults documented above.
 * Thread-safety: any thread; writes only @cfg.
 */
void pm_crashsim_config_init(struct pm_crashsim_config *cfg);

/**
 * pm_crashsim_new -- create a simulator.
 * @out: receives it; released with pm_crashsim_delete().
 * Return: 0; -EINVAL for a bad config; -ENOMEM.
 * Thread-safety: any thread.
 */
int pm_crashsim_new(struct pm_crashsim **out, const struct pm_crashsim_config *cfg);

/**
 * pm_crashsim_track -- add [@addr, @addr + @len) to the tracked memory.
 *
 * The range is widened to 8-byte boundaries. Its durable image is taken from
 * its contents when pm_crashsim_run() starts: whatever the range holds then
 * is assumed durable (typically just after creating and persisting a pool).
 * Return: 0; -EINVAL for an empty range or one overlapping a tracked range;
 * -EBUSY while a run is in progress; -ENOMEM.
 * Thread-safety: not concurrently with other calls on @sim.
 */
int pm_crashsim_track(struct pm_crashsim *sim, void *addr, size_t len);

/* Runs the workload. Its return value is returned by pm_crashsim_run(). */
typedef int (*pm_crashsim_run_fn)(void *arg);

/*
 * Runs in a grandchild process on one post-crash image, with the tracked
 * ranges holding the image at their usual addresses and every other part of
 * memory as it was at the crash point (so volatile bookkeeping the workload
 * kept, such as a count of completed operations, is readable). It runs
 * recovery and checks invariants. It must not reopen files to reach the
 * tracked data: the on-disk file is not the image. Return 0 if every
 * invariant holds; otherwise write a reason into @msg (NUL-terminated,
 * @msg_len bytes) and return non-zero. Crashing, or running longer than
 * image_timeout_s, also counts as a failure.
 */
typedef int (*pm_crashsim_check_fn)(void *arg, char *msg, size_t msg_len);

/**
 * pm_crashsim_run -- run @run(@arg) under the simulator, checking crash points
 * with @check(@arg, ...) as the mode says.
 *
 * Threads the workload starts are covered: their persistence events are
 * serialised through the simulator and counted. At a crash point the thread
 * that hit it holds the simulator while its check processes run, so other
 * threads stop at their next persistence event.
 * Return: 0 if @run returned 0 and every check passed; PM_E_CHECK_FAILED if a
 * check failed (see pm_crashsim_report()); the non-zero value @run returned;
 * -EBUSY if another simulator is running; -EINVAL if nothing is tracked or a
 * replay request names this simulator with a malformed value; -ENOMEM;
 * -errno if fork or mmap failed.
 * Thread-safety: one run per process at a time.
 */
int pm_crashsim_run(struct pm_crashsim *sim, pm_crashsim_run_fn run,
	pm_crashsim_check_fn check, void *arg);

/**
 * pm_crashsim_get_stats -- copy the counts of the last run into @out.
 * Thread-safety: not during a run of @sim.
 */
void pm_crashsim_get_stats(const struct pm_crashsim *sim, struct pm_crashsim_stats *out);

/**
 * pm_crashsim_report -- the first failure of the last run: crash point,
 * image, the check's message and the command that replays it; "" if none.
 * Owned by @sim, valid until the next run or delete.
 * Return: the report (a string owned by @sim).
 * Thread-safety: not during a run of @sim.
 */
const char *pm_crashsim_report(const struct pm_crashsim *sim);

/**
 * pm_crashsim_delete -- free @*sim (NULL accepted) and set it to NULL.
 * Return: 0; -EBUSY (and nothing freed) if it is running.
 * Thread-safety: not during a run of @sim; one caller.
 */
int pm_crashsim_delete(struct pm_crashsim **sim);

#ifdef __cplusplus
}
#endif

#endif /* PM_CRASHSIM_H */
