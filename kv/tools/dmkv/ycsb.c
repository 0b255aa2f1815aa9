/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/tools/dmkv/ycsb.c -- the YCSB request generator (ycsb.h).
 *
 * Zipfian ranks (Gray et al., SIGMOD'94, section 4; YCSB's
 * ZipfianGenerator): with u uniform in [0, 1) and the constants of the
 * keyspace,
 *   u * zeta(n) < 1                 -> rank 0
 *   u * zeta(n) < 1 + 1/2^theta     -> rank 1
 *   otherwise                       -> floor(n * (eta * u - eta + 1)^alpha)
 * The first two are the exact zipfian probabilities of ranks 0 and 1
 * (1/zeta(n) and 2^-theta/zeta(n)); the third inverts a continuous
 * approximation of the CDF, chosen so that it starts at rank 2 where the
 * second ends (eta) and reaches n at u = 1.
 *
 * Random bits: xoshiro256** (Blackman and Vigna), whose 256-bit state is
 * filled from splitmix64 as its authors recommend; thread t of a seed
 * takes outputs 4t .. 4t+3 of the splitmix64 sequence starting at the
 * seed, so the threads' states never coincide.
 */
#include "kv/tools/dmkv/ycsb.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <string.h>

/* splitmix64's increment (2^64 / golden ratio, odd) */
#define DMKV_YCSB_GOLDEN UINT64_C(0x9e3779b97f4a7c15)

/* FNV-1a 64 parameters */
#define DMKV_YCSB_FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define DMKV_YCSB_FNV_PRIME UINT64_C(0x100000001b3)

/* The zipfian math turns ids into doubles: they must be exact. */
#define DMKV_YCSB_RECORDS_MAX (UINT64_C(1) << 53)

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t),
	"C++ callers see next_id as std::atomic<uint64_t>: same size");

static const struct dmkv_ycsb_workload dmkv_ycsb_core[] = {
	{ 'A', 0.50, 0.50, 0, 0, DMKV_YCSB_ZIPFIAN },
	{ 'B', 0.95, 0.05, 0, 0, DMKV_YCSB_ZIPFIAN },
	{ 'C', 1.00, 0, 0, 0, DMKV_YCSB_ZIPFIAN },
	{ 'D', 0.95, 0, 0.05, 0, DMKV_YCSB_LATEST },
	{ 'F', 0.50, 0, 0, 0.50, DMKV_YCSB_ZIPFIAN },
};

int
dmkv_ycsb_workload(char letter, struct dmkv_ycsb_workload *out)
{
	char up = (char)toupper((unsigned char)letter);

	if (out == NULL)
		return -EINVAL;
	if (up == 'E')
		return -ENOTSUP;
	for (size_t i = 0; i < sizeof(dmkv_ycsb_core) / sizeof(dmkv_ycsb_core[0]); i++) {
		if (dmkv_ycsb_core[i].name == up) {
			*out = dmkv_ycsb_core[i];
			return 0;
		}
	}
	return -EINVAL;
}

int
dmkv_ycsb_keyspace_init(struct dmkv_ycsb_keyspace *ks, uint64_t records, double theta)
{
	double zetan = 0;

	/* Written so that NaN fails too. */
	if (records == 0 || records > DMKV_YCSB_RECORDS_MAX || !(theta > 0 && theta < 1))
		return -EINVAL;
	/* Smallest terms first: they would vanish against a large sum. */
	for (uint64_t i = records; i > 0; i--)
		zetan += pow((double)i, -theta);
	ks->loaded = records;
	atomic_init(&ks->next_id, records);
	ks->theta = theta;
	ks->zetan = zetan;
	ks->zeta2 = 1.0 + pow(2.0, -theta);
	ks->alpha = 1.0 / (1.0 - theta);
	/* With n <= 2 the first two cases cover every u (u * zetan < zeta2)
	 * and eta, 0/0 there, is never used. */
	ks->eta = records <= 2 ? 0 :
		(1.0 - pow(2.0 / (double)records, 1.0 - theta)) / (1.0 - ks->zeta2 / zetan);
	return 0;
}

/* dmkv_ycsb_splitmix64 -- the next output of the splitmix64 sequence at *@s */
static uint64_t
dmkv_ycsb_splitmix64(uint64_t *s)
{
	uint64_t z = (*s += DMKV_YCSB_GOLDEN);

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

void
dmkv_ycsb_gen_init(struct dmkv_ycsb_gen *g, const struct dmkv_ycsb_workload *w,
	enum dmkv_ycsb_dist dist, struct dmkv_ycsb_keyspace *ks, uint64_t seed,
	unsigned thread)
{
	uint64_t s = seed + 4 * DMKV_YCSB_GOLDEN * (uint64_t)thread;

	g->w = w;
	g->ks = ks;
	g->dist = dist;
	/* Four consecutive splitmix64 outputs are never all zero (it is a
	 * bijection of its state), the one state xoshiro must avoid. */
	for (unsigned i = 0; i < 4; i++)
		g->rng[i] = dmkv_ycsb_splitmix64(&s);
}

/* dmkv_ycsb_rotl -- @x rotated left by @k (0 < k < 64) */
static inline uint64_t
dmkv_ycsb_rotl(uint64_t x, unsigned k)
{
	return (x << k) | (x >> (64 - k));
}

uint64_t
dmkv_ycsb_rand(struct dmkv_ycsb_gen *g)
{
	uint64_t *s = g->rng;
	uint64_t out = dmkv_ycsb_rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = dmkv_ycsb_rotl(s[3], 45);
	return out;
}

/* dmkv_ycsb_unit -- a uniform double in [0, 1) (53 random bits) */
static double
dmkv_ycsb_unit(struct dmkv_ycsb_gen *g)
{
	return (double)(dmkv_ycsb_rand(g) >> 11) * 0x1.0p-53;
}

/* dmkv_ycsb_below -- a uniform integer in [0, @n): the high half of a
 * 64x64-bit product, biased by at most n / 2^64 */
static uint64_t
dmkv_ycsb_below(struct dmkv_ycsb_gen *g, uint64_t n)
{
	return (uint64_t)(((unsigned __int128)dmkv_ycsb_rand(g) * n) >> 64);
}

uint64_t
dmkv_ycsb_zipf(const struct dmkv_ycsb_keyspace *ks, double u)
{
	double uz = u * ks->zetan;
	uint64_t r;

	if (uz < 1.0)
		return 0;
	if (uz < ks->zeta2)
		return 1;
	r = (uint64_t)((double)ks->loaded * pow(ks->eta * u - ks->eta + 1.0, ks->alpha));
	/* u close to 1 may round up to n. */
	return r < ks->loaded ? r : ks->loaded - 1;
}

/* dmkv_ycsb_zipf_rank -- a zipfian rank in [0, ks->loaded), 0 the most
 * popular (the file comment) */
static uint64_t
dmkv_ycsb_zipf_rank(struct dmkv_ycsb_gen *g)
{
	return dmkv_ycsb_zipf(g->ks, dmkv_ycsb_unit(g));
}

/* dmkv_ycsb_fnv1a -- FNV-1a 64 of @v's eight bytes, least significant
 * first (YCSB's fnvhash64, which scrambles its zipfian ranks) */
static uint64_t
dmkv_ycsb_fnv1a(uint64_t v)
{
	uint64_t h = DMKV_YCSB_FNV_OFFSET;

	for (unsigned i = 0; i < 8; i++) {
		h ^= (v >> (8 * i)) & 0xff;
		h *= DMKV_YCSB_FNV_PRIME;
	}
	return h;
}

/* dmkv_ycsb_pick_op -- the op whose share of [0, 1) holds @u */
static enum dmkv_ycsb_op
dmkv_ycsb_pick_op(const struct dmkv_ycsb_workload *w, double u)
{
	const double p[] = { w->read, w->update, w->insert, w->rmw };
	static const enum dmkv_ycsb_op op[] = {
		DMKV_YCSB_READ, DMKV_YCSB_UPDATE, DMKV_YCSB_INSERT, DMKV_YCSB_RMW,
	};
	double c = 0;
	unsigned last = 0;

	for (unsigned i = 0; i < 4; i++) {
		if (!(p[i] > 0))
			continue;
		c += p[i];
		last = i;
		if (u < c)
			return op[i];
	}
	/* Proportions that sum to a little under 1 after rounding: the last
	 * op present takes the rest. */
	return op[last];
}

void
dmkv_ycsb_next(struct dmkv_ycsb_gen *g, struct dmkv_ycsb_req *out)
{
	struct dmkv_ycsb_keyspace *ks = g->ks;

	out->op = dmkv_ycsb_pick_op(g->w, dmkv_ycsb_unit(g));
	if (out->op == DMKV_YCSB_INSERT) {
		/* Relaxed: the id is a unique ticket and publishes nothing. */
		out->id = atomic_fetch_add_explicit(&ks->next_id, 1, memory_order_relaxed);
		return;
	}
	switch (g->dist) {
	case DMKV_YCSB_UNIFORM:
		/* Relaxed: any id allocated so far will do (ycsb.h). */
		out->id = dmkv_ycsb_below(g,
			atomic_load_explicit(&ks->next_id, memory_order_relaxed));
		break;
	case DMKV_YCSB_LATEST:
		out->id = atomic_load_explicit(&ks->next_id, memory_order_relaxed) - 1 -
			dmkv_ycsb_zipf_rank(g);
		break;
	case DMKV_YCSB_ZIPFIAN:
	default:
		out->id = dmkv_ycsb_fnv1a(dmkv_ycsb_zipf_rank(g)) % ks->loaded;
		break;
	}
}

size_t
dmkv_ycsb_key(uint64_t id, size_t key_size, char *buf)
{
	if (key_size < DMKV_YCSB_KEY_MIN)
		return 0;
	memcpy(buf, "user", 4);
	/* Right to left: the digits, then zeros once id is used up. */
	for (size_t i = key_size; i > 4; i--) {
		buf[i - 1] = (char)('0' + id % 10);
		id /= 10;
	}
	return key_size;
}

int
dmkv_ycsb_key_id(const char *key, size_t klen, uint64_t *id)
{
	uint64_t v = 0;

	if (key == NULL || id == NULL || klen < DMKV_YCSB_KEY_MIN || memcmp(key, "user", 4) != 0)
		return -EINVAL;
	for (size_t i = 4; i < klen; i++) {
		unsigned d = (unsigned)(unsigned char)key[i] - '0';

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -EINVAL;
		v = v * 10 + d;
	}
	*id = v;
	return 0;
}
