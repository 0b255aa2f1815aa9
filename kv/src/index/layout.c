/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/index/layout.c -- the superblock (layout.h).
 */
#include <errno.h>
#include <string.h>

#include <pm/error.h>

#include "kv/src/index/layout.h"

static const struct pm_area_type kv_ix_super_type = {
	"kv index superblock", KV_IX_SUPER_MAGIC, KV_IX_SUPER_VERSION,
	sizeof(struct kv_ix_super)
};

static uint64_t
align_up(uint64_t x, uint64_t a)
{
	return (x + a - 1) & ~(a - 1);
}

int
kv__ix_super_check(const struct kv_ix_super *s, uint64_t region_len, unsigned n,
	unsigned member)
{
	int ret = pm_area_check(&s->area, &kv_ix_super_type, "kv_index");

	if (ret != 0)
		return ret;
	if (s->n != n || s->member != member)
		return pm_error_set(KV_E_GROUP,
			"kv_index: node configured as %u of %u holds member %u of %u",
			member, n, s->member, s->n);
	if (s->area.area_size > region_len || s->max_clients == 0 ||
		s->max_clients > (1u << KV_IXW_CID_BITS) || s->recs_per_client == 0 ||
		(uint64_t)s->max_clients * s->recs_per_client > (UINT64_C(1) << KV_IXW_REC_BITS) ||
		s->mark_off < KV_IX_SUPER_SIZE ||
		s->rec_off < s->mark_off + (uint64_t)s->max_clients * 8 ||
		s->bucket_off < s->rec_off +
			(uint64_t)s->max_clients * s->recs_per_client * KV_IX_REC_SIZE ||
		s->nbuckets < 2 || (s->nbuckets & (s->nbuckets - 1)) != 0 ||
		s->nbuckets > (UINT64_C(1) << (KV_IXB_MAX_DEPTH + 1)) ||
		s->bucket_off + s->nbuckets * KV_IXB_SIZE > s->area.area_size)
		return pm_error_set(KV_E_GROUP,
			"kv_index: superblock geometry does not fit the %llu-byte region",
			(unsigned long long)region_len);
	return 0;
}

int
kv__ix_super_make(struct kv_ix_super *s, uint64_t region_len, const uint8_t uuid[16],
	unsigned n, unsigned member, unsigned max_clients, unsigned recs_per_client)
{
	uint64_t room, nb = 2;

	memset(s, 0, sizeof(*s));
	memcpy(s->uuid, uuid, sizeof(s->uuid));
	s->n = n;
	s->member = member;
	s->max_clients = max_clients;
	s->recs_per_client = recs_per_client;
	s->mark_off = KV_IX_SUPER_SIZE;
	s->rec_off = align_up(s->mark_off + (uint64_t)max_clients * 8, 4096);
	s->bucket_off = align_up(s->rec_off +
		(uint64_t)max_clients * recs_per_client * KV_IX_REC_SIZE, 4096);
	if (s->bucket_off + 2 * KV_IXB_SIZE > region_len)
		return -ENOSPC;
	room = (region_len - s->bucket_off) / KV_IXB_SIZE;
	while (nb * 2 <= room && nb < (UINT64_C(1) << (KV_IXB_MAX_DEPTH + 1)))
		nb *= 2;
	s->nbuckets = nb;
	s->area.magic = KV_IX_SUPER_MAGIC;
	s->area.version = KV_IX_SUPER_VERSION;
	s->area.hdr_size = sizeof(*s);
	s->area.area_size = s->bucket_off + nb * KV_IXB_SIZE;
	s->area.checksum = pm_area_sum(&s->area);
	return 0;
}
