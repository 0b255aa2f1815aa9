/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/nodefile.h -- the node file "<pool>.node" through which a node
 * tells local clients how to map its regions (node.c writes, local.c
 * reads). Not installed.
 *
 * Format: INI text parsed with inih, for example
 *     [node]
 *     version = 1
 *     pool = /dev/shm/n0.pool
 *     durability = msync
 *     incarnation = 5
 *     salt = 1234
 *     token_hash = 0x0123456789abcdef
 *     regions = 1
 *     [region.0]
 *     offset = 1052672
 *     length = 67108864
 * The token is stored only as a salted XXH3 hash. It is a guard against
 * pointing a client at the wrong cluster, not a security boundary: whoever
 * can read the pool file can read the data, so file permissions protect a
 * local node.
 */
#ifndef RDMA_SRC_NODEFILE_H
#define RDMA_SRC_NODEFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <pm/persist.h>

#include "core.h"

struct rdma__nodefile {
	char pool[PATH_MAX];
	enum pm_durability durability; /* PMEM, MSYNC or NONE */
	uint64_t incarnation;
	uint64_t salt;
	uint64_t token_hash;
	unsigned nregions;
	struct {
		uint64_t offset; /* from the start of the pool file */
		uint64_t length;
	} regions[RDMA__MAX_REGIONS];
};

/**
 * rdma__token_hash -- salted hash of a token (XXH3-64 of the bytes, seeded
 * with @salt).
 */
uint64_t rdma__token_hash(const char *token, size_t len, uint64_t salt);

/**
 * rdma__nodefile_write -- write @nf to @path atomically (temporary file,
 * fsync, rename, fsync of the directory). Return: 0 or -errno.
 */
int rdma__nodefile_write(const char *path, const struct rdma__nodefile *nf);

/**
 * rdma__nodefile_read -- parse @path into *@nf. Every field is required and
 * checked (version 1, known durability, 1..RDMA__MAX_REGIONS regions, each
 * region present once, offsets 8-aligned, no overflow).
 * Return: 0; -ENOENT or other -errno opening it; RDMA_E_PROTO if malformed.
 */
int rdma__nodefile_read(const char *path, struct rdma__nodefile *nf);

#endif /* RDMA_SRC_NODEFILE_H */
