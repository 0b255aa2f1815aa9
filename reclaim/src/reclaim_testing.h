/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * reclaim/src/reclaim_testing.h -- hooks for reclaim's own tests, to reach
 * states that only a hostile environment produces otherwise. Not part of the
 * API; C and C++. Declared and compiled in only by the testonly
 * //reclaim:reclaim_testing build of the sources (which defines
 * RECLAIM_TESTING), never by //reclaim:reclaim.
 */
#ifndef RECLAIM_TESTING_H
#define RECLAIM_TESTING_H

#include <stdbool.h>
#include <stdint.h>

#include <reclaim/reclaim.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifdef RECLAIM_TESTING

/*
 * reclaim__test_task_dir -- make @d look up its threads under @path instead
 * of /proc/self/task: "TID/stat" files there stand for live threads, and a
 * missing one for a dead thread, but only while the calling thread's own
 * entry is there (an empty directory is what a process that lost /proc
 * sees). Call it while no other thread is inside a call on @d; threads
 * registered before keep the start times read from /proc.
 * Return: 0, or -errno from opening @path.
 */
int reclaim__test_task_dir(struct reclaim_domain *d, const char *path);

/*
 * reclaim__test_claim -- claim a slot of @d for the calling thread and leave
 * it half-registered (CLAIMED), as a thread that dies inside
 * reclaim_thread_register() would.
 * Return: 0, or -ENOSPC.
 */
int reclaim__test_claim(struct reclaim_domain *d);

/*
 * reclaim__test_hold_roosters -- @hold: wake every rooster of @d and park
 * it, returning once all are parked; a parked rooster records no wake-up,
 * so no node retired from now on becomes old enough (Cadence) until the
 * roosters are let go. !@hold: let them go (they record their next wake-up
 * as usual). reclaim_domain_delete() stops parked roosters too.
 * Return: 0; -EINVAL if @d has no roosters.
 */
int reclaim__test_hold_roosters(struct reclaim_domain *d, bool hold);

/*
 * reclaim__test_min_wake -- the earliest of @d's roosters' last wake-up
 * times (0 without roosters), on the clock of reclaim__test_now(). Cadence
 * frees a node retired at time s once s + epsilon is below it, so a test
 * can pace its retirements by the roosters' progress instead of by sleeps.
 */
uint64_t reclaim__test_min_wake(const struct reclaim_domain *d);

/* reclaim__test_now -- the clock retirements are stamped with (ns). */
uint64_t reclaim__test_now(void);

#endif /* RECLAIM_TESTING */

#ifdef __cplusplus
}
#endif

#endif /* RECLAIM_TESTING_H */
