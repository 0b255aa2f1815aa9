/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/local.c -- the local backend: the node's pool file mapped into
 * this process (the CXL shared-memory model). The node file next to the
 * pool says where the regions are; a batch is executed by this thread
 * with loads, stores, atomics and pm/ flushes (exec.c), so it completes
 * inside rdma_post.
 *
 * Every connection to the same file in a process shares one mapping:
 * pm/persist.h keeps a small table of registered regions, and one mapping
 * per thread would exhaust it.
 *
 * rdma_local_fail() models the failure of the device behind a pool file
 * (a CXL memory device, or the host serving it) for this process: every
 * access through it fails and no connection to it opens until it is
 * restored, with its contents as they were -- what a memory node killed
 * and restarted from its pool looks like to its clients.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pm/persist.h>

#include "core.h"
#include "exec.h"
#include "nodefile.h"

/* One mapping of a pool file, shared by the connections to it. */
struct local_map {
	struct local_map *next;
	dev_t dev;
	ino_t ino;
	void *base;
	size_t size;
	unsigned refs;
	atomic_bool failed; /* the device failed (rdma_local_fail) */
};

/* A failed device, by file identity; kept while no mapping of it exists. */
struct local_fault {
	struct local_fault *next;
	dev_t dev;
	ino_t ino;
};

/* Protects local_maps, local_faults and every map's refs. */
static pthread_mutex_t local_maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct local_map *local_maps;
static struct local_fault *local_faults;

/* Whether the device of (@dev, @ino) failed. Caller holds the lock. */
static struct local_fault **
local_fault_find(dev_t dev, ino_t ino)
{
	struct local_fault **pp;

	for (pp = &local_faults; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->dev == dev && (*pp)->ino == ino)
			return pp;
	return NULL;
}

struct local_conn {
	struct local_map *map;
	struct rdma__exec_region regions[RDMA__MAX_REGIONS];
	int done; /* the posted batch has executed */
};

/* Durability for the client's mapping: what the node used, falling back to
 * msync where this process cannot treat the mapping as persistent memory
 * (msync is durable too, only slower). */
static enum pm_durability
local_durability(void *base, size_t size, enum pm_durability node_mode)
{
	int mode = pm_durability_resolve(base, size, node_mode);

	return mode < 0 ? PM_DURABILITY_MSYNC : (enum pm_durability)mode;
}

/* Find or create the shared mapping of @path. Caller holds the lock. */
static int
local_map_get(const char *path, enum pm_durability node_mode, struct local_map **out)
{
	struct local_map *m;
	struct stat st;
	int fd, ret;

	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) != 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (local_fault_find(st.st_dev, st.st_ino) != NULL) {
		close(fd);
		return RDMA_E_CONN;
	}
	for (m = local_maps; m != NULL; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino) {
			close(fd);
			m->refs++;
			*out = m;
			return 0;
		}
	m = calloc(1, sizeof(*m));
	if (m == NULL) {
		close(fd);
		return -ENOMEM;
	}
	m->dev = st.st_dev;
	m->ino = st.st_ino;
	m->size = (size_t)st.st_size;
	m->base = m->size == 0 ? MAP_FAILED :
		mmap(NULL, m->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ret = m->base == MAP_FAILED ? (m->size == 0 ? RDMA_E_PROTO : -errno) : 0;
	close(fd);
	if (ret == 0) {
		ret = pm_region_add(m->base, m->size,
			local_durability(m->base, m->size, node_mode));
		if (ret != 0)
			munmap(m->base, m->size);
	}
	if (ret != 0) {
		free(m);
		return ret;
	}
	m->refs = 1;
	m->next = local_maps;
	local_maps = m;
	*out = m;
	return 0;
}

/* Drop one reference; unmap with the last. Caller holds the lock. */
static void
local_map_put(struct local_map *m)
{
	struct local_map **pp;

	if (--m->refs > 0)
		return;
	for (pp = &local_maps; *pp != m; pp = &(*pp)->next)
		;
	*pp = m->next;
	(void)pm_region_remove(m->base);
	munmap(m->base, m->size);
	free(m);
}

static int
local_open(struct rdma_conn *c, const char *path)
{
	char nodefile[PATH_MAX];
	struct rdma__nodefile nf;
	struct local_conn *lc;
	struct stat st;
	bool failed;
	int ret;

	if (snprintf(nodefile, sizeof(nodefile), "%s.node", path) >= (int)sizeof(nodefile))
		return -ENAMETOOLONG;
	/* A failed device refuses at once, before the token's (deliberately
	 * slow) hash: clients retry their reconnects while it is down. */
	if (stat(path, &st) == 0) {
		pthread_mutex_lock(&local_maps_lock);
		failed = local_fault_find(st.st_dev, st.st_ino) != NULL;
		pthread_mutex_unlock(&local_maps_lock);
		if (failed)
			return RDMA_E_CONN;
	}
	ret = rdma__nodefile_read(nodefile, &nf);
	if (ret != 0)
		return ret;
	ret = rdma__token_check(c->token, nf.token_hash);
	if (ret != 0)
		return ret;
	lc = calloc(1, sizeof(*lc));
	if (lc == NULL)
		return -ENOMEM;
	pthread_mutex_lock(&local_maps_lock);
	ret = local_map_get(path, nf.durability, &lc->map);
	pthread_mutex_unlock(&local_maps_lock);
	if (ret != 0) {
		free(lc);
		return ret;
	}
	for (unsigned i = 0; i < nf.nregions; i++) {
		/* A node file that does not match its pool must not make us
		 * touch memory outside the mapping. */
		if (nf.regions[i].offset > lc->map->size ||
		    nf.regions[i].length > lc->map->size - nf.regions[i].offset) {
			pthread_mutex_lock(&local_maps_lock);
			local_map_put(lc->map);
			pthread_mutex_unlock(&local_maps_lock);
			free(lc);
			return RDMA_E_PROTO;
		}
		lc->regions[i].base = (char *)lc->map->base + nf.regions[i].offset;
		lc->regions[i].length = nf.regions[i].length;
		c->regions[i].id = i;
		c->regions[i].length = nf.regions[i].length;
	}
	c->nregions = nf.nregions;
	c->be = lc;
	return 0;
}

static void
local_close(struct rdma_conn *c)
{
	struct local_conn *lc = c->be;

	pthread_mutex_lock(&local_maps_lock);
	local_map_put(lc->map);
	pthread_mutex_unlock(&local_maps_lock);
	free(lc);
	c->be = NULL;
}

static int
local_post(struct rdma_conn *c, struct rdma_batch *b)
{
	struct local_conn *lc = c->be;

	/* Relaxed: a batch racing the failure may run before or after it, as
	 * an access racing a real device failure would. */
	if (atomic_load_explicit(&lc->map->failed, memory_order_relaxed))
		return RDMA_E_CONN;
	(void)rdma__exec_batch(b, lc->regions);
	lc->done = 1;
	return 0;
}

static int
local_poll(struct rdma_conn *c)
{
	struct local_conn *lc = c->be;

	if (!lc->done)
		return -EINPROGRESS;
	lc->done = 0;
	return 0;
}

int
rdma_local_fail(const char *path, int failed)
{
	struct local_fault **pp, *f;
	struct local_map *m;
	struct stat st;
	int ret = 0;

	pm_error_clear();
	if (path == NULL)
		return pm_error_set(-EINVAL, "rdma_local_fail: NULL path");
	if (stat(path, &st) != 0) {
		ret = -errno;
		return pm_error_set(ret, "rdma_local_fail: %s: %s", path, pm_strerror(ret));
	}
	pthread_mutex_lock(&local_maps_lock);
	pp = local_fault_find(st.st_dev, st.st_ino);
	if (failed && pp == NULL) {
		f = calloc(1, sizeof(*f));
		if (f == NULL) {
			ret = -ENOMEM;
			goto out;
		}
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->next = local_faults;
		local_faults = f;
	} else if (!failed && pp != NULL) {
		f = *pp;
		*pp = f->next;
		free(f);
	}
	for (m = local_maps; m != NULL; m = m->next)
		if (m->dev == st.st_dev && m->ino == st.st_ino)
			atomic_store_explicit(&m->failed, failed != 0, memory_order_relaxed);
out:
	pthread_mutex_unlock(&local_maps_lock);
	return ret == 0 ? 0 : pm_error_set(ret, "rdma_local_fail: out of memory");
}

const struct rdma__backend rdma__backend_local = {
	.name = "local",
	.open = local_open,
	.close = local_close,
	.post = local_post,
	.poll = local_poll,
};
