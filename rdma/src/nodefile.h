/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/nodefile.h -- the node file "<pool>.node" through which a node
 * tells local clients how to map its regions (node.c writes, local.c
 * reads). Not installed.
 *
 * Format: INI text parsed with inih, for example
 *     [node]
 *     version = 2
 *     pool = /dev/shm/n0.pool
 *     durability = msync
 *     incarnation = 5
 *     token_hash = $y$j9T$Rn/86klM0ptOXkozL1Cz/0$ZvOwXcemJ5qHatEkcbp4TQTiOe97m8oTIeoQAljBl38
 *     regions = 1
 *     [region.0]
 *     offset = 1052672
 *     length = 67108864
 * The token is stored only as a yescrypt password hash (libxcrypt's
 * crypt(3) string, which carries its own random salt), so the file does not
 * give the cluster token away to those who may read it; it stays a guard
 * against pointing a local client at the wrong cluster, not a boundary
 * around the data: whoever can read the pool file can read the data, so
 * file permissions protect a local node.
 *
 * Version 1 files (an XXH3 hash and a separate salt) read as malformed: the
 * node rewrites its file at every open, so restarting the node replaces one.
 */
#ifndef RDMA_SRC_NODEFILE_H
#define RDMA_SRC_NODEFILE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <pm/persist.h>

#include "core.h"

/* Room for a yescrypt string and its NUL: "$y$", the cost parameters, the
 * salt and the hash make 73 characters at the default cost; higher costs
 * and longer salts add a few. */
#define RDMA__TOKEN_HASH_SIZE 128

struct rdma__nodefile {
	char pool[PATH_MAX];
	enum pm_durability durability; /* PMEM, MSYNC or NONE */
	uint64_t incarnation;
	char token_hash[RDMA__TOKEN_HASH_SIZE]; /* rdma__token_hash() string */
	unsigned nregions;
	struct {
		uint64_t offset; /* from the start of the pool file */
		uint64_t length;
	} regions[RDMA__MAX_REGIONS];
};

/**
 * rdma__token_hash -- hash @token (a C string of at most RDMA_TOKEN_MAX
 * bytes) with yescrypt at libxcrypt's default cost and a salt from
 * libxcrypt's own entropy source, into @out.
 * Return: 0; -ENOMEM; -ENOSPC if the string would not fit @out; another
 * -errno if libxcrypt fails (no entropy, for one).
 */
int rdma__token_hash(const char *token, char out[RDMA__TOKEN_HASH_SIZE]);

/**
 * rdma__token_check -- whether @token is the one @hash (a string from
 * rdma__token_hash) was made from; the final comparison takes time that
 * does not depend on where the strings differ. The last pair that matched
 * is remembered per process and matches again without the hash (a reopen
 * of the same node). Thread-safe.
 * Return: 0 if it is; RDMA_E_AUTH if not, or if @token is longer than
 * RDMA_TOKEN_MAX; RDMA_E_PROTO if @hash is not a usable crypt string;
 * -ENOMEM.
 */
int rdma__token_check(const char *token, const char *hash);

/**
 * rdma__nodefile_write -- write @nf to @path atomically (temporary file,
 * fsync, rename, fsync of the directory). Return: 0 or -errno.
 */
int rdma__nodefile_write(const char *path, const struct rdma__nodefile *nf);

/**
 * rdma__nodefile_read -- parse @path into *@nf. Every field is required and
 * checked (version 2, a "$y$" token hash that fits, known durability, 1..RDMA__MAX_REGIONS regions, each
 * region present once, offsets 8-aligned, no overflow).
 * Return: 0; -ENOENT or other -errno opening it; RDMA_E_PROTO if malformed
 * or of another version.
 */
int rdma__nodefile_read(const char *path, struct rdma__nodefile *nf);

#endif /* RDMA_SRC_NODEFILE_H */
