/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/src/area.c -- the checksummed header of a persistent area (see
 * pm/area.h).
 */
#include <stddef.h>

#include <xxhash.h>

#include <pm/area.h>
#include <pm/error.h>
#include <pm/persist.h>

_Static_assert(sizeof(struct pm_area_hdr) == 32, "the prefix is half a cache line");
_Static_assert(offsetof(struct pm_area_hdr, checksum) + sizeof(uint64_t) ==
	sizeof(struct pm_area_hdr), "the checksum ends the prefix: the body follows it");

/* pm_area_sum -- XXH3 of the prefix before the checksum, seeding the body's */
uint64_t
pm_area_sum(const struct pm_area_hdr *hdr)
{
	uint64_t seed = XXH3_64bits(hdr, offsetof(struct pm_area_hdr, checksum));

	return XXH3_64bits_withSeed(hdr + 1, hdr->hdr_size - sizeof(*hdr), seed);
}

/* pm_area_invalidate -- durable magic 0 */
void
pm_area_invalidate(struct pm_area_hdr *hdr)
{
	hdr->magic = 0;
	pm_persist(&hdr->magic, sizeof(hdr->magic));
}

/* pm_area_seal -- prefix, checksum, then one persist of the whole header */
void
pm_area_seal(struct pm_area_hdr *hdr, const struct pm_area_type *type, uint64_t area_size)
{
	hdr->magic = type->magic;
	hdr->version = type->version;
	hdr->hdr_size = type->hdr_size;
	hdr->area_size = area_size;
	hdr->checksum = pm_area_sum(hdr);
	pm_persist(hdr, type->hdr_size);
}

/* pm_area_check -- magic, checksum, version, then size */
int
pm_area_check(const struct pm_area_hdr *hdr, const struct pm_area_type *type, const char *who)
{
	pm_error_clear();
	if (hdr->magic == 0)
		return pm_error_set(PM_E_CORRUPT, "%s: no %s header: never formatted, or its "
			"creation did not finish", who, type->name);
	if (hdr->magic != type->magic)
		return pm_error_set(PM_E_LAYOUT, "%s: no %s header (magic %#llx): the area holds "
			"another kind of object", who, type->name, (unsigned long long)hdr->magic);
	/* Only type->hdr_size bytes are known to be readable, so a larger
	 * header cannot be summed. Its version field alone proves nothing: a
	 * seal cut short by a crash leaves the magic durable beside the
	 * version and size of whatever the area held before (zero, or an
	 * older format), which the crash tests of ds/ produce. */
	if (hdr->hdr_size < sizeof(*hdr) || hdr->hdr_size > type->hdr_size)
		return pm_error_set(PM_E_CORRUPT, "%s: %s header of %u bytes, expected %u", who,
			type->name, hdr->hdr_size, type->hdr_size);
	if (hdr->checksum != pm_area_sum(hdr))
		return pm_error_set(PM_E_CORRUPT, "%s: %s header checksum mismatch: damaged", who,
			type->name);
	if (hdr->version != type->version)
		return pm_error_set(PM_E_VERSION, "%s: %s layout version %u, expected %u", who,
			type->name, hdr->version, type->version);
	if (hdr->hdr_size != type->hdr_size)
		return pm_error_set(PM_E_CORRUPT, "%s: %s header of %u bytes, expected %u", who,
			type->name, hdr->hdr_size, type->hdr_size);
	return 0;
}
