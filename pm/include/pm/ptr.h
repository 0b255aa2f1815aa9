/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/ptr.h -- pool-relative offsets and mark bits for words stored in
 * persistent memory.
 *
 * A pool is mapped at a different address in every run, so persistent data
 * never stores raw pointers: it stores offsets from the start of the mapping.
 * Offset 0 is the pool's own header, never a user object, so it doubles as
 * the null offset.
 *
 * Objects the suite links are 8-byte aligned, so the low PM_MARK_BITS bits of
 * an offset (or of a value word) are free to tag it, for example "this word
 * holds a descriptor, not a value" in MCAS. The helpers are pure functions of
 * their arguments: thread-safe, no ordering, no persistence.
 */
#ifndef PM_PTR_H
#define PM_PTR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The null offset. */
#define PM_OFF_NULL ((uint64_t)0)

/* Number of low bits available for marks in an 8-byte-aligned word. */
#define PM_MARK_BITS 3
/* Mask of the mark bits. */
#define PM_MARK_MASK ((uint64_t)((1u << PM_MARK_BITS) - 1))

/* pm_off_from_ptr -- offset of @ptr from @base; NULL maps to PM_OFF_NULL.
 * Return: the offset.
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_off_from_ptr(const void *base, const void *ptr)
{
	if (ptr == NULL)
		return PM_OFF_NULL;
	return (uint64_t)((const char *)ptr - (const char *)base);
}

/* pm_off_to_ptr -- pointer for offset @off from @base; PM_OFF_NULL maps to NULL.
 * No bounds check: use pm_pool_ptr() for offsets read from untrusted data.
 * Return: the pointer.
 * Thread-safety: any thread; pure.
 */
static inline void *
pm_off_to_ptr(const void *base, uint64_t off)
{
	if (off == PM_OFF_NULL)
		return NULL;
	return (char *)base + off;
}

/* pm_word_mark -- @w with mark bits @mark (a subset of PM_MARK_MASK) set.
 * Return: the marked word.
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_word_mark(uint64_t w, uint64_t mark)
{
	return w | (mark & PM_MARK_MASK);
}

/* pm_word_marks -- the mark bits of @w.
 * Return: the mark bits.
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_word_marks(uint64_t w)
{
	return w & PM_MARK_MASK;
}

/* pm_word_unmark -- @w with every mark bit cleared.
 * Return: the word without marks.
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_word_unmark(uint64_t w)
{
	return w & ~PM_MARK_MASK;
}

/* pm_word_is_markable -- whether @w leaves the mark bits clear, i.e. whether
 * it can be stored in a word whose mark bits the caller uses.
 * Return: nonzero if the low bits are free.
 * Thread-safety: any thread; pure.
 */
static inline int
pm_word_is_markable(uint64_t w)
{
	return (w & PM_MARK_MASK) == 0;
}

#ifdef __cplusplus
}
#endif

#endif /* PM_PTR_H */
