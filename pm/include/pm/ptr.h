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
 * Two kinds of helpers convert: pm_off_from_ptr() and pm_off_to_ptr() map
 * NULL to PM_OFF_NULL and back, for words that may be null;
 * pm_off_from_addr() and pm_off_to_addr() are branch-free, for hot paths
 * whose words never are (MCAS references, list and tree links), and take
 * the base as an integer so that base 0 turns the same code into raw
 * pointers for a volatile instance. pm_off_in_range() is the one bounds
 * check of an offset read from untrusted data.
 *
 * Objects the suite links are 8-byte aligned, so the low PM_MARK_BITS bits of
 * an offset (or of a value word) are free to tag it, for example "this word
 * holds a descriptor, not a value" in MCAS. The helpers are pure functions of
 * their arguments: thread-safe, no ordering, no persistence.
 */
#ifndef PM_PTR_H
#define PM_PTR_H

#include <stdbool.h>
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

/* pm_off_from_addr -- offset of @ptr from @base, with no NULL mapping and
 * no branch; @base 0 gives the address itself.
 * Return: the offset (wrapped around if @ptr is below @base).
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_off_from_addr(uintptr_t base, const void *ptr)
{
	return (uint64_t)((uintptr_t)ptr - base);
}

/* pm_off_to_addr -- pointer for offset @off from @base, with no NULL
 * mapping, no branch and no bounds check; @base 0 takes @off as the address.
 * Return: the pointer.
 * Thread-safety: any thread; pure.
 */
static inline void *
pm_off_to_addr(uintptr_t base, uint64_t off)
{
	return (void *)(base + (uintptr_t)off);
}

/* pm_off_from_ptr -- offset of @ptr from @base; NULL maps to PM_OFF_NULL.
 * Return: the offset.
 * Thread-safety: any thread; pure.
 */
static inline uint64_t
pm_off_from_ptr(const void *base, const void *ptr)
{
	if (ptr == NULL)
		return PM_OFF_NULL;
	return pm_off_from_addr((uintptr_t)base, ptr);
}

/* pm_off_to_ptr -- pointer for offset @off from @base; PM_OFF_NULL maps to NULL.
 * No bounds check: use pm_off_in_range() or pm_pool_ptr() for offsets read
 * from untrusted data.
 * Return: the pointer.
 * Thread-safety: any thread; pure.
 */
static inline void *
pm_off_to_ptr(const void *base, uint64_t off)
{
	if (off == PM_OFF_NULL)
		return NULL;
	return pm_off_to_addr((uintptr_t)base, off);
}

/* pm_off_in_range -- whether [@off, @off + @len) lies inside a mapping of
 * @size bytes, without overflow for any @off and @len (an offset computed
 * by pm_off_from_addr() from a pointer below the base wraps around and is
 * out of range).
 * Return: true if inside.
 * Thread-safety: any thread; pure.
 */
static inline bool
pm_off_in_range(uint64_t off, size_t len, size_t size)
{
	return off <= size && len <= size - off;
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
