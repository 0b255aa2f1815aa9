/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pm/area.h -- the checksummed header of a persistent area: the part of a
 * pool a module formats for one object (an MCAS instance, an ONLL object, a
 * list, a tree) and finds again after a restart.
 *
 * An area starts with its module's header struct, whose first member is a
 * struct pm_area_hdr (the common prefix) and whose remaining bytes (the body)
 * hold the module's own fields: sizes, configuration, type ids.
 *
 *   struct my_header {
 *           struct pm_area_hdr area;     // first: magic, version, sizes, checksum
 *           uint32_t capacity;           // the body
 *           ...
 *   };
 *   static const struct pm_area_type my_type = {
 *           "my list", MY_MAGIC, MY_VERSION, sizeof(struct my_header) };
 *
 * Create: pm_area_invalidate() first (a crash from then on reads as
 * unformatted, never as the old object half-reset), then format and persist
 * the rest of the area, then fill the body and pm_area_seal() it: the header
 * goes in last, so an area whose creation did not finish never checks.
 * Open: pm_area_check(), then the module validates its body (including
 * area_size against what the body implies).
 *
 * Codes, the same for every module: magic 0 (never formatted, or a create
 * that did not finish) and a checksum mismatch are PM_E_CORRUPT; another
 * nonzero magic (the area holds something else) is PM_E_LAYOUT; another
 * layout version is PM_E_VERSION.
 *
 * Persistence goes through pm/persist.h, so the crash simulator sees it.
 */
#ifndef PM_AREA_H
#define PM_AREA_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The common prefix of every area header (32 bytes; the body follows). */
struct pm_area_hdr {
	uint64_t magic;     /* the module's constant; 0: not (yet) sealed */
	uint32_t version;   /* the module's layout version */
	uint32_t hdr_size;  /* bytes of the whole header: prefix and body */
	uint64_t area_size; /* bytes of the whole area, header included */
	uint64_t checksum;  /* XXH3 of the header's other bytes (pm_area_sum) */
};

/* What a module's header is: constant, one per module. */
struct pm_area_type {
	const char *name;  /* for messages: "MCAS", "list", ... */
	uint64_t magic;    /* nonzero */
	uint32_t version;  /* the current layout version */
	uint32_t hdr_size; /* sizeof the module's header struct */
};

/**
 * pm_area_sum -- the checksum of the header at @hdr: XXH3 of its first
 * hdr->hdr_size bytes except the checksum field.
 * @hdr: hdr->hdr_size bytes must be readable (at least the prefix).
 *
 * For tests that rewrite a header field and want it to check again;
 * modules use pm_area_seal() and pm_area_check().
 * Return: the checksum.
 * Thread-safety: any thread; reads @hdr only.
 */
uint64_t pm_area_sum(const struct pm_area_hdr *hdr);

/**
 * pm_area_invalidate -- make the header at @hdr read as unformatted
 * (magic 0), durably, before the area is formatted again.
 *
 * Persistence: the zero magic is durable on return (pm_persist), so no
 * crash after it reads the old contents as a valid object.
 * Return: nothing (void).
 * Thread-safety: one caller per area; nothing else may use it.
 */
void pm_area_invalidate(struct pm_area_hdr *hdr);

/**
 * pm_area_seal -- write the prefix of the header at @hdr for @type and
 * @area_size, checksum the header, and persist it.
 * @hdr: type->hdr_size bytes; the caller has filled the body.
 *
 * Call it last at create: the rest of the area must already be durable
 * (pm_persist, or pm_flush then pm_fence), since a crash right after the
 * seal opens the area as it is.
 * Persistence: the whole header is durable on return. A crash before that
 * leaves magic 0 or a header whose checksum fails: pm_area_check() says
 * PM_E_CORRUPT.
 * Return: nothing (void).
 * Thread-safety: one caller per area; nothing else may use it.
 */
void pm_area_seal(struct pm_area_hdr *hdr, const struct pm_area_type *type,
	uint64_t area_size);

/**
 * pm_area_check -- validate the header at @hdr against @type: magic,
 * header size (against the prefix and type->hdr_size), checksum, version,
 * and header size again (exactly type->hdr_size), in that order.
 * @hdr: type->hdr_size readable bytes (no more are read).
 * @who: the calling function, for the message ("mcas_pmem_open").
 *
 * The body and area_size are the caller's to validate.
 * Return: 0; PM_E_CORRUPT for magic 0 (never formatted, or a create that
 * did not finish), a header size above type->hdr_size or below the prefix
 * (it cannot be summed), a checksum mismatch, or a summed header of this
 * version whose size is not type->hdr_size; PM_E_LAYOUT for another nonzero
 * magic (the area holds another kind of object); PM_E_VERSION for a summed
 * header of another layout version. So a later layout version may shrink
 * its header but not grow it past the prefix's reach: older readers would
 * call it PM_E_CORRUPT. Every failure leaves a message in pm_errormsg()
 * ("@who: ...").
 * Thread-safety: any thread; reads @hdr only, which nobody may write
 * meanwhile.
 */
int pm_area_check(const struct pm_area_hdr *hdr, const struct pm_area_type *type,
	const char *who);

#ifdef __cplusplus
}
#endif

#endif /* PM_AREA_H */
