/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * examples/kcas.c -- a 4-word persistent MCAS (mcas/mcas.h, AOPT: 5 CAS and
 * 2 persistent fences when uncontended) on words in a pm/ pool, built
 * against the installed libraries with pkg-config (README, Install).
 *
 * Usage: kcas POOL
 * Creates POOL on first use (the words start at 0); each run adds 1 to all
 * four words in one MCAS and prints them, so they are always equal: opening
 * runs recovery, and after a crash the words are either all old or all new.
 */
#include <inttypes.h>
#include <stdio.h>

#include <mcas/mcas.h>
#include <pm/pool.h>

#include "example.h"

#define K 4

/* The pool's root: the target words, then the MCAS instance's area. */
struct root {
	_Alignas(64) uint64_t words[K];
	_Alignas(64) unsigned char area[];
};

int
main(int argc, char **argv)
{
	struct pm_pool_config pc;
	struct mcas_config mc;
	struct pm_pool *pool = NULL;
	struct mcas *m = NULL;
	struct mcas_thread *t = NULL;
	struct mcas_desc *d = NULL;
	struct root *r;
	uint64_t old[K];
	int ret, fresh;

	if (argc != 2) {
		fprintf(stderr, "usage: kcas POOL\n");
		return 2;
	}
	mcas_config_init(&mc);
	mc.max_threads = 4;
	pm_pool_config_init(&pc);
	pc.path = argv[1];
	pc.layout = "dmem-example-kcas";
	pc.root_size = sizeof(struct root) + mcas_pmem_area_size(&mc);
	ret = example_pool(&pool, &pc, &fresh);
	if (ret != 0)
		return example_fail("kcas", argv[1], ret);
	r = PM_POOL_ROOT(pool, struct root);
	ret = fresh ? mcas_pmem_create(&m, pool, pm_pool_off(pool, r->area), &mc)
		    : mcas_pmem_open(&m, pool, pm_pool_off(pool, r->area), &mc);
	if (ret != 0)
		return example_fail("kcas", "opening the MCAS area", ret);
	ret = mcas_thread_register(m, &t);
	if (ret != 0)
		return example_fail("kcas", "registering", ret);
	/* Values are shifted left by 3: the low bits are the algorithm's. */
	for (int i = 0; i < K; i++)
		old[i] = mcas_read(t, &r->words[i]);
	ret = mcas_desc_begin(t, &d);
	for (int i = 0; ret == 0 && i < K; i++)
		ret = mcas_desc_add(d, &r->words[i], old[i], old[i] + (1u << 3));
	if (ret != 0)
		return example_fail("kcas", "building the MCAS", ret);
	ret = mcas_desc_execute(d);
	if (ret < 0)
		return example_fail("kcas", "executing the MCAS", ret);
	printf("kcas: %s:", ret == 1 ? "swapped" : "words changed meanwhile");
	for (int i = 0; i < K; i++)
		printf(" %" PRIu64, mcas_read(t, &r->words[i]) >> 3);
	printf("\n");
	mcas_thread_unregister(&t);
	mcas_close(&m);
	pm_pool_close(&pool);
	return 0;
}
