/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/cost.c -- registry of per-thread cost counters.
 *
 * Each thread's block lives in its TLS. On first use the block is linked into
 * a registry so totals can be read from any thread; a pthread key destructor
 * folds the block into pm_cost_retired and unlinks it when the thread exits,
 * so the registry never points into dead TLS.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <pm/cost.h>

__thread struct pm_cost__thread pm_cost__self;

struct pm_cost_node {
	struct pm_cost__thread *block;
	struct pm_cost_node *next;
};

/* Protects pm_cost_threads and pm_cost_retired; a leaf lock (nothing nests in it). */
static pthread_mutex_t pm_cost_lock = PTHREAD_MUTEX_INITIALIZER;
static struct pm_cost_node *pm_cost_threads;
static struct pm_cost pm_cost_retired;
static pthread_key_t pm_cost_key;
static pthread_once_t pm_cost_key_once = PTHREAD_ONCE_INIT;
static int pm_cost_key_ok;

static const char *const pm_cost_names[PM_COST_NCOUNTERS] = {
	[PM_COST_CAS] = "cas",
	[PM_COST_FLUSH] = "flush",
	[PM_COST_FENCE] = "fence",
	[PM_COST_ROUND_TRIP] = "round_trip",
	[PM_COST_REMOTE_READ] = "remote_read",
	[PM_COST_REMOTE_WRITE] = "remote_write",
	[PM_COST_REMOTE_ATOMIC] = "remote_atomic",
	[PM_COST_REMOTE_PERSIST] = "remote_persist",
};

/* pm_cost_thread_exit -- fold an exiting thread's counts into the retired total */
static void
pm_cost_thread_exit(void *arg)
{
	struct pm_cost_node *node = arg;
	struct pm_cost_node **pp;

	pthread_mutex_lock(&pm_cost_lock);
	for (int i = 0; i < PM_COST_NCOUNTERS; i++)
		pm_cost_retired.n[i] +=
			__atomic_load_n(&node->block->n[i], __ATOMIC_RELAXED);
	for (pp = &pm_cost_threads; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			break;
		}
	}
	pthread_mutex_unlock(&pm_cost_lock);
	free(node);
}

/* pm_cost_key_init -- create the key whose destructor runs at thread exit */
static void
pm_cost_key_init(void)
{
	pm_cost_key_ok = pthread_key_create(&pm_cost_key, pm_cost_thread_exit) == 0;
}

/* pm_cost__register -- link the calling thread's block into the registry;
 * -ENOMEM leaves it unregistered, so a later call tries again */
int
pm_cost__register(void)
{
	struct pm_cost_node *node;

	/* Without a node or a key the thread still counts; only totals miss
	 * it. Linking without a key would leave a dangling block at exit. */
	pthread_once(&pm_cost_key_once, pm_cost_key_init);
	if (!pm_cost_key_ok) {
		pm_cost__self.registered = 1;
		return 0;
	}
	node = malloc(sizeof(*node));
	if (node == NULL)
		return -ENOMEM;
	pm_cost__self.registered = 1;
	node->block = &pm_cost__self;
	pthread_mutex_lock(&pm_cost_lock);
	node->next = pm_cost_threads;
	pm_cost_threads = node;
	pthread_mutex_unlock(&pm_cost_lock);
	if (pthread_setspecific(pm_cost_key, node) != 0) {
		/* No destructor will run: unlink now so no dangling block stays. */
		pm_cost_thread_exit(node);
	}
	return 0;
}

/* pm_cost_read_thread -- the caller's counters */
void
pm_cost_read_thread(struct pm_cost *out)
{
	for (int i = 0; i < PM_COST_NCOUNTERS; i++)
		out->n[i] = pm_cost__self.n[i];
}

/* pm_cost_read_total -- all live threads plus retired ones */
void
pm_cost_read_total(struct pm_cost *out)
{
	pthread_mutex_lock(&pm_cost_lock);
	*out = pm_cost_retired;
	for (struct pm_cost_node *p = pm_cost_threads; p != NULL; p = p->next)
		for (int i = 0; i < PM_COST_NCOUNTERS; i++)
			out->n[i] += __atomic_load_n(&p->block->n[i], __ATOMIC_RELAXED);
	pthread_mutex_unlock(&pm_cost_lock);
}

/* pm_cost_diff -- counter-wise difference */
void
pm_cost_diff(const struct pm_cost *after, const struct pm_cost *before,
	struct pm_cost *out)
{
	for (int i = 0; i < PM_COST_NCOUNTERS; i++)
		out->n[i] = after->n[i] - before->n[i];
}

/* pm_cost_name -- stable counter name */
const char *
pm_cost_name(enum pm_cost_counter c)
{
	if ((unsigned)c >= PM_COST_NCOUNTERS)
		return NULL;
	return pm_cost_names[c];
}
