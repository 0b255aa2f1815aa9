/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ds/src/mcas_bind.c -- binding a structure to an MCAS instance and an area
 * (mcas_bind.h).
 */
#include <errno.h>
#include <stddef.h>

#include <pm/error.h>

#include "mcas_bind.h"

int
ds__mcas_bind(struct mcas *m, struct pm_pool *pool, uint64_t area_off, size_t len,
	size_t align, const char *what, const char *kind, void **area)
{
	bool persistent = area != NULL;
	int ret;

	if (m == NULL)
		return pm_error_set(-EINVAL, "%s: no MCAS instance", what);
	if (persistent && pool == NULL)
		return pm_error_set(-EINVAL, "%s: no pool", what);
	if (mcas_is_persistent(m) != persistent)
		return pm_error_set(-EINVAL, "%s: a %s %s needs a %s MCAS instance", what,
			persistent ? "persistent" : "volatile", kind,
			persistent ? "persistent" : "volatile");
	if ((mcas_value_mask(m) & ~MCAS_VALUE_PORTABLE_MASK) != 0)
		return pm_error_set(-EINVAL, "%s: MCAS algorithm %s reserves bits beyond "
			"MCAS_VALUE_PORTABLE_MASK (mask %#llx)", what,
			mcas_algorithm_name(mcas_algorithm_of(m)),
			(unsigned long long)mcas_value_mask(m));
	if (!persistent)
		return 0;
	ret = pm_pool_area(pool, area_off, len, align, what, area);
	if (ret != 0)
		return ret;
	if (!mcas_covers(m, *area, len))
		return pm_error_set(-EINVAL, "%s: the MCAS instance is not in the %s's pool",
			what, kind);
	return 0;
}
