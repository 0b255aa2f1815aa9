/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rdma/src/nodefile.c -- writing and reading the node file (nodefile.h).
 * Parsing uses inih (Debian libinih-dev) rather than a hand-written INI
 * reader; every value is then checked here. The token hash is libxcrypt's
 * yescrypt (Debian libcrypt-dev).
 */
#include <crypt.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ini.h>

#include "nodefile.h"

/* 2: the token as a yescrypt string instead of an XXH3 hash and salt. */
#define NODEFILE_VERSION 2
/* How a token hash starts: libxcrypt's prefix for yescrypt. */
#define TOKEN_HASH_PREFIX "$y$"

/* rdma__token_hash -- yescrypt string of @token with a fresh salt */
int
rdma__token_hash(const char *token, char out[RDMA__TOKEN_HASH_SIZE])
{
	char setting[CRYPT_GENSALT_OUTPUT_SIZE];
	struct crypt_data *data;
	const char *h;
	int ret = 0;

	/* NULL random bytes: crypt_gensalt_rn draws the salt from the OS. */
	if (crypt_gensalt_rn(TOKEN_HASH_PREFIX, 0, NULL, 0, setting, sizeof(setting)) == NULL)
		return errno != 0 ? -errno : -EINVAL;
	/* 32 KiB: too much for the stack of an arbitrary caller's thread. */
	data = calloc(1, sizeof(*data));
	if (data == NULL)
		return -ENOMEM;
	h = crypt_rn(token, setting, data, sizeof(*data));
	if (h == NULL)
		ret = errno != 0 ? -errno : -EINVAL;
	else if (strlen(h) >= RDMA__TOKEN_HASH_SIZE)
		ret = -ENOSPC;
	else
		strcpy(out, h);
	/* data->input held the token. */
	explicit_bzero(data, sizeof(*data));
	free(data);
	return ret;
}

/* ct_differ -- whether C strings @a and @b differ, visiting every byte of
 * the longer one whatever matches (no timing hint of a common prefix) */
static int
ct_differ(const char *a, const char *b)
{
	size_t alen = strlen(a), blen = strlen(b);
	unsigned diff = alen != blen;

	for (size_t i = 0; i < (alen > blen ? alen : blen); i++)
		diff |= (unsigned)(i < alen ? (unsigned char)a[i] : 0) ^
			(unsigned)(i < blen ? (unsigned char)b[i] : 0);
	return diff != 0;
}

/*
 * The last pairs of token and hash that matched. yescrypt is deterministic
 * for a hash's salt, so the same pair matches again: a client that reopens
 * its nodes (kv_open after kv_close, a reconnect), or a process forked from
 * one (the crash simulator checks each image in a fork that opens the
 * store), skips a hash that costs 16 MiB and tens of milliseconds by
 * design. Each node file has its own salt, so there is one entry per node
 * of a store of up to TOKEN_CACHE nodes. The token is in the caller's
 * memory already. Taken with trylock: a process forked while another
 * thread held the lock computes the hash instead of waiting for ever.
 */
#define TOKEN_CACHE 8
static pthread_mutex_t token_cache_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	char token[RDMA_TOKEN_MAX + 1];
	char hash[RDMA__TOKEN_HASH_SIZE]; /* "" if the entry is unused */
} token_cache[TOKEN_CACHE];
static unsigned token_cache_next; /* the entry replaced next */

/* token_cached -- whether @token and @hash matched before (the cache) */
static int
token_cached(const char *token, const char *hash)
{
	int hit = 0;

	if (pthread_mutex_trylock(&token_cache_lock) != 0)
		return 0;
	for (unsigned i = 0; i < TOKEN_CACHE && !hit; i++)
		hit = strcmp(hash, token_cache[i].hash) == 0 &&
			!ct_differ(token, token_cache[i].token);
	pthread_mutex_unlock(&token_cache_lock);
	return hit;
}

/* token_remember -- enter a matching @token and @hash into the cache */
static void
token_remember(const char *token, const char *hash)
{
	if (pthread_mutex_trylock(&token_cache_lock) != 0)
		return;
	strcpy(token_cache[token_cache_next].token, token);
	strcpy(token_cache[token_cache_next].hash, hash);
	token_cache_next = (token_cache_next + 1) % TOKEN_CACHE;
	pthread_mutex_unlock(&token_cache_lock);
}

/* rdma__token_check -- hash @token with @hash's salt and compare */
int
rdma__token_check(const char *token, const char *hash)
{
	struct crypt_data *data;
	const char *h;
	int ret;

	if (strnlen(token, RDMA_TOKEN_MAX + 1) > RDMA_TOKEN_MAX ||
	    strnlen(hash, RDMA__TOKEN_HASH_SIZE) == RDMA__TOKEN_HASH_SIZE)
		return RDMA_E_AUTH;
	if (hash[0] != '\0' && token_cached(token, hash))
		return 0;
	data = calloc(1, sizeof(*data));
	if (data == NULL)
		return -ENOMEM;
	h = crypt_rn(token, hash, data, sizeof(*data));
	if (h == NULL)
		ret = RDMA_E_PROTO;
	else
		ret = ct_differ(h, hash) ? RDMA_E_AUTH : 0;
	explicit_bzero(data, sizeof(*data));
	free(data);
	if (ret == 0)
		token_remember(token, hash);
	return ret;
}

/* token_hash_ok -- @s looks like a yescrypt string that fits the field:
 * the prefix, then only crypt(3)'s alphabet and '$' separators (so nothing
 * that would break the INI line) */
static int
token_hash_ok(const char *s)
{
	size_t n = strnlen(s, RDMA__TOKEN_HASH_SIZE);

	if (n == RDMA__TOKEN_HASH_SIZE ||
	    strncmp(s, TOKEN_HASH_PREFIX, strlen(TOKEN_HASH_PREFIX)) != 0)
		return 0;
	return strspn(s, "$./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz") == n;
}

int
rdma__nodefile_write(const char *path, const struct rdma__nodefile *nf)
{
	char tmp[PATH_MAX + 16];
	char dir[PATH_MAX];
	const char *dname = pm_durability_name(nf->durability);
	FILE *f;
	int fd, ret = 0;

	if (dname == NULL || nf->nregions == 0 || nf->nregions > RDMA__MAX_REGIONS ||
	    !token_hash_ok(nf->token_hash))
		return -EINVAL;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (f == NULL) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		return ret;
	}
	fprintf(f, "# memory node file: how local clients map this node's regions\n");
	fprintf(f, "[node]\nversion = %d\npool = %s\ndurability = %s\n",
		NODEFILE_VERSION, nf->pool, dname);
	fprintf(f, "incarnation = %" PRIu64 "\ntoken_hash = %s\nregions = %u\n",
		nf->incarnation, nf->token_hash, nf->nregions);
	for (unsigned i = 0; i < nf->nregions; i++)
		fprintf(f, "[region.%u]\noffset = %" PRIu64 "\nlength = %" PRIu64 "\n",
			i, nf->regions[i].offset, nf->regions[i].length);
	if (fflush(f) != 0 || fsync(fd) != 0)
		ret = -errno;
	if (fclose(f) != 0 && ret == 0)
		ret = -errno;
	if (ret == 0 && rename(tmp, path) != 0)
		ret = -errno;
	if (ret != 0) {
		unlink(tmp);
		return ret;
	}
	/* Make the rename itself durable. */
	snprintf(dir, sizeof(dir), "%s", path);
	fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		if (fsync(fd) != 0)
			ret = -errno;
		close(fd);
	}
	return ret;
}

/* Fields of [node], as bits of parse_state.seen. */
enum {
	SEEN_VERSION = 1u << 0,
	SEEN_POOL = 1u << 1,
	SEEN_DURABILITY = 1u << 2,
	SEEN_INCARNATION = 1u << 3,
	SEEN_TOKEN_HASH = 1u << 4,
	SEEN_REGIONS = 1u << 5,
	SEEN_ALL = (1u << 6) - 1,
};

struct parse_state {
	struct rdma__nodefile *nf;
	unsigned seen;
	unsigned region_seen[RDMA__MAX_REGIONS]; /* bit 0 offset, bit 1 length */
};

/* Strict decimal uint64: digits only, no sign, no overflow. */
static int
parse_u64(const char *s, uint64_t *out)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno != 0 || *end != '\0') ? -1 : 0;
}

/* Marks @bit in *@seen; fails if it was already there. */
static int
mark_once(unsigned *seen, unsigned bit)
{
	if (*seen & bit)
		return -1;
	*seen |= bit;
	return 0;
}

static int
node_key(struct parse_state *st, const char *name, const char *value)
{
	struct rdma__nodefile *nf = st->nf;
	uint64_t v;

	if (strcmp(name, "pool") == 0) {
		size_t n = strlen(value);

		if (n == 0 || n >= sizeof(nf->pool) || value[0] != '/' ||
		    mark_once(&st->seen, SEEN_POOL) != 0)
			return -1;
		memcpy(nf->pool, value, n + 1);
		return 0;
	}
	if (strcmp(name, "durability") == 0) {
		/* A node records the mode it resolved to, never "auto". */
		if (pm_durability_parse(value, &nf->durability) != 0 ||
		    nf->durability == PM_DURABILITY_AUTO)
			return -1;
		return mark_once(&st->seen, SEEN_DURABILITY);
	}
	if (strcmp(name, "token_hash") == 0) {
		if (!token_hash_ok(value))
			return -1;
		strcpy(nf->token_hash, value);
		return mark_once(&st->seen, SEEN_TOKEN_HASH);
	}
	if (parse_u64(value, &v) != 0)
		return -1;
	if (strcmp(name, "version") == 0)
		return v == NODEFILE_VERSION ? mark_once(&st->seen, SEEN_VERSION) : -1;
	if (strcmp(name, "incarnation") == 0) {
		nf->incarnation = v;
		return mark_once(&st->seen, SEEN_INCARNATION);
	}
	if (strcmp(name, "regions") == 0) {
		if (v == 0 || v > RDMA__MAX_REGIONS)
			return -1;
		nf->nregions = (unsigned)v;
		return mark_once(&st->seen, SEEN_REGIONS);
	}
	return -1;
}

static int
region_key(struct parse_state *st, unsigned idx, const char *name, const char *value)
{
	uint64_t v;

	if (parse_u64(value, &v) != 0)
		return -1;
	if (strcmp(name, "offset") == 0) {
		if (v % 8 != 0)
			return -1;
		st->nf->regions[idx].offset = v;
		return mark_once(&st->region_seen[idx], 1);
	}
	if (strcmp(name, "length") == 0) {
		if (v == 0)
			return -1;
		st->nf->regions[idx].length = v;
		return mark_once(&st->region_seen[idx], 2);
	}
	return -1;
}

/* inih handler: nonzero means "accepted". */
static int
on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *st = user;
	uint64_t idx;

	if (strcmp(section, "node") == 0)
		return node_key(st, name, value) == 0;
	if (strncmp(section, "region.", 7) == 0 && parse_u64(section + 7, &idx) == 0 &&
	    idx < RDMA__MAX_REGIONS)
		return region_key(st, (unsigned)idx, name, value) == 0;
	return 0;
}

int
rdma__nodefile_read(const char *path, struct rdma__nodefile *nf)
{
	struct parse_state st = { .nf = nf };
	FILE *f;
	int rc;

	memset(nf, 0, sizeof(*nf));
	f = fopen(path, "re");
	if (f == NULL)
		return -errno;
	rc = ini_parse_file(f, on_key, &st);
	fclose(f);
	if (rc != 0 || st.seen != SEEN_ALL)
		return RDMA_E_PROTO;
	for (unsigned i = 0; i < RDMA__MAX_REGIONS; i++) {
		const uint64_t off = nf->regions[i].offset, len = nf->regions[i].length;

		if (i >= nf->nregions) {
			if (st.region_seen[i] != 0)
				return RDMA_E_PROTO; /* a region beyond the count */
			continue;
		}
		if (st.region_seen[i] != 3 || off > UINT64_MAX - len)
			return RDMA_E_PROTO;
	}
	return 0;
}
