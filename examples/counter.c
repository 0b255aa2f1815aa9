/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * examples/counter.c -- a persistent counter on ONLL (onll/objects.h),
 * built against the installed libraries with pkg-config (README, Install).
 *
 * Usage: counter POOL [DELTA]
 * Creates POOL on first use, adds DELTA (default 1) and prints the value:
 * run it twice and the second run starts where the first ended. Every
 * onll_counter_add() is durable when it returns, so a crash at any point
 * loses no completed addition.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <onll/objects.h>
#include <onll/onll.h>
#include <pm/pool.h>

#include "example.h"

int
main(int argc, char **argv)
{
	struct pm_pool_config pc;
	struct onll_config oc;
	struct pm_pool *pool = NULL;
	struct onll *o = NULL;
	struct onll_thread *t = NULL;
	int64_t delta = argc > 2 ? strtoll(argv[2], NULL, 0) : 1, value = 0;
	uint64_t area_off;
	int ret, fresh;

	if (argc < 2) {
		fprintf(stderr, "usage: counter POOL [DELTA]\n");
		return 2;
	}
	onll_config_init(&oc);
	pm_pool_config_init(&pc);
	pc.path = argv[1];
	pc.layout = "dmem-example-counter";
	/* The object's area is the pool's root object (64-byte aligned). */
	pc.root_size = onll_area_size(&oc);
	ret = example_pool(&pool, &pc, &fresh);
	if (ret != 0)
		return example_fail("counter", argv[1], ret);
	area_off = pm_pool_off(pool, pm_pool_root(pool));
	ret = fresh ? onll_create(&o, pool, area_off, &oc, onll_counter_type())
		    : onll_open(&o, pool, area_off, onll_counter_type());
	if (ret != 0)
		return example_fail("counter", "opening the counter", ret);
	ret = onll_thread_register(o, &t);
	if (ret == 0)
		ret = onll_counter_add(t, delta, &value);
	if (ret != 0)
		return example_fail("counter", "adding", ret);
	printf("counter: %" PRId64 "\n", value);
	onll_thread_unregister(&t);
	onll_close(&o);
	pm_pool_close(&pool);
	return 0;
}
