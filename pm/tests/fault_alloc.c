/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/tests/fault_alloc.c -- the interposed allocator of pm/tests/fault_alloc.h.
 *
 * The executable's definitions of the malloc family take precedence over
 * libc's for every shared object of the process (ELF symbol interposition),
 * so allocations inside the libraries under test come here too. Each one
 * forwards to glibc's own entry points (__libc_malloc and friends), so free()
 * stays libc's. The per-thread countdown uses the initial-exec TLS model:
 * the general model may allocate on a thread's first access, which would
 * recurse into malloc.
 */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>

#include "pm/tests/fault_alloc.h"

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)

bool
fault_alloc_available(void)
{
	return false;
}

void
fault_alloc_arm(unsigned n)
{
	(void)n;
}

bool
fault_alloc_fired(void)
{
	return false;
}

#else

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t size);
extern void *__libc_memalign(size_t align, size_t size);

/* Allocations left before the failing one (0: disarmed), and whether it
 * happened. */
static __thread unsigned fa_countdown __attribute__((tls_model("initial-exec")));
static __thread bool fa_fired __attribute__((tls_model("initial-exec")));

/* fa_fail_now -- count one allocation; true if it is the one to fail */
static bool
fa_fail_now(void)
{
	if (fa_countdown == 0 || --fa_countdown != 0)
		return false;
	fa_fired = true;
	errno = ENOMEM;
	return true;
}

bool
fault_alloc_available(void)
{
	return true;
}

void
fault_alloc_arm(unsigned n)
{
	fa_countdown = n;
	fa_fired = false;
}

bool
fault_alloc_fired(void)
{
	bool fired = fa_fired;

	fa_countdown = 0;
	fa_fired = false;
	return fired;
}

void *
malloc(size_t size)
{
	return fa_fail_now() ? NULL : __libc_malloc(size);
}

void *
calloc(size_t n, size_t size)
{
	return fa_fail_now() ? NULL : __libc_calloc(n, size);
}

void *
realloc(void *p, size_t size)
{
	return fa_fail_now() ? NULL : __libc_realloc(p, size);
}

void *
memalign(size_t align, size_t size)
{
	return fa_fail_now() ? NULL : __libc_memalign(align, size);
}

void *
aligned_alloc(size_t align, size_t size)
{
	return fa_fail_now() ? NULL : __libc_memalign(align, size);
}

int
posix_memalign(void **out, size_t align, size_t size)
{
	void *p;

	if (align % sizeof(void *) != 0 || (align & (align - 1)) != 0)
		return EINVAL;
	if (fa_fail_now())
		return ENOMEM;
	p = __libc_memalign(align, size);
	if (p == NULL)
		return ENOMEM;
	*out = p;
	return 0;
}

#endif
