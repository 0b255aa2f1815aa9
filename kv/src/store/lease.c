/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kv/src/store/lease.c -- client ids with leases: how a client proves it
 * is alive through the memory nodes, stops itself when it cannot, and how
 * the others free the id of a client that went silent (kv/DESIGN.md,
 * "Client liveness"; the Spin model kv/spin/m10.pml).
 *
 * The claim word of an id (layout.h, kv_st_claim) holds the tag of the
 * client life that owns it and a beat. The owner's lease runs L
 * (kv_st_super.lease_ms) from the first post of the renewal that last put
 * a new beat on f+1 nodes; once it ran out the client posts nothing
 * (kv__ix_fence): it renews first, or finds its id gone (fenced) and
 * takes a new one. Others watch every claim word in the same renewal
 * rounds, per node, with their own clock: a word unchanged on a node for
 * the suspicion time D = (L + T) + (L + T)/16 (the lease, the in-flight
 * bound T of a batch -- the cluster's operation timeout, kv_st_super.
 * timeout_ms, which no client's exceeds -- and a sixteenth for clock
 * rates) is zeroed there. An id whose word is 0 on f+1 nodes at once was
 * given up: no lease can be valid then (a valid lease has its beat on
 * f+1 nodes, each changed less than D ago), and none can become valid
 * again (renewing from 0 needs a valid lease). Its hazard words are
 * cleared, and anyone may claim it.
 *
 * This is Mu's pull-score (a counter others read) with rTX's timed lease:
 * safety rests on bounded clock rates and on batches landing within an
 * operation timeout of their post, the same assumption the recycling of
 * value buffers makes; a client paused between its fence check and the
 * post it guards (microseconds) for longer than D - L minus the batch's
 * flight breaks it (Spin m10_gap): T + (L + T)/16 for a batch that lands
 * at once, (L + T)/16 for one that takes its whole T. That tolerance was
 * larger while D was 2L + L/8 (L - T + L/8 for the slowest batch); the
 * shorter D is what frees a dead client's id within about the lease and
 * one operation.
 */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include <pm/error.h>

#include "kv/src/store/store_internal.h"

/* The claim word of client id @id. */
static uint64_t
claim_off(const struct kv_client *c, unsigned id)
{
	return c->sb.id_off + 8u * id;
}

uint64_t
kv__st_suspect_ns(const struct kv_client *c)
{
	return c->lease_ns + c->inflight_ns + (c->lease_ns + c->inflight_ns) / 16;
}

int
kv__st_lease_claim(struct kv_client *c)
{
	uint64_t rnd;
	int ret;

	if (getrandom(&rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return pm_error_set(-errno, "kv_open: getrandom failed");
	/* Tombstone numbers start at random: a tombstone the id's previous
	 * holder left is then unlikely to pass for one of this client's. */
	c->tomb_nonce = rnd >> 11;
	c->id_tag = (uint32_t)rnd | 1;
	c->beat = 0;
	c->lease_end = 0; /* no fence while claiming */
	for (unsigned k = 0; k < c->C; k++) {
		unsigned id = (unsigned)(((rnd >> 32) + k) % c->C);
		uint64_t word = kv_st_claim(c->id_tag, 0), start = kv__ix_now_ns();
		bool won;

		ret = kv__ix_claim(&c->g, c->region, claim_off(c, id), word, c->deadline, &won);
		if (ret != 0)
			break;
		if (won) {
			c->cid = id;
			for (unsigned i = 0; i < c->g.n; i++)
				c->id_word[i] = word;
			c->lease_end = start + c->lease_ns;
			return 0;
		}
		ret = kv__ix_unclaim(&c->g, c->region, claim_off(c, id), word, c->deadline);
		if (ret != 0)
			break;
	}
	c->id_tag = 0;
	if (ret != 0)
		return ret;
	return pm_error_set(KV_E_UNAVAILABLE,
		"kv_open: all %u client ids are taken (a client that stopped without "
		"kv_close frees its id %llu ms after its lease ran out)", c->C,
		(unsigned long long)(kv__st_suspect_ns(c) / 1000000u));
}

/* Member @i's claim words, read at @now: note the words that changed, and
 * in @stale[j] the members where client j's word has stood still for the
 * suspicion time. */
static void
lease_observe(struct kv_client *c, unsigned i, const uint64_t *words, uint64_t now,
	unsigned *stale)
{
	for (unsigned j = 0; j < c->C; j++) {
		struct kv_st_seen *s = &c->seen[j][i];

		if (j == c->cid)
			continue;
		if (words[j] != s->word) {
			s->word = words[j];
			s->since = now;
		} else if (words[j] != 0 && now - s->since >= kv__st_suspect_ns(c)) {
			stale[j] |= 1u << i;
		}
	}
}

/*
 * When the next operation should look at the claim words again although
 * its lease needs no renewal: when the first word others hold may have
 * stood still for D. Renewals alone look every L - T or so, which would
 * add up to that much to the time a dead client's id takes to be freed
 * (run_kv_kill.sh); looking when a word is due frees it within about an
 * operation of D. Only the words of the members in @answered (those the
 * last look read) count: a member that does not answer has words that
 * stand still for ever, and looking again cannot zero them, so with a
 * node down the looks stay at one per L - T. A word that stays due
 * (answered, yet not freed: f+1 members do not answer) is looked at again
 * every L/16 at most.
 */
static uint64_t
lease_watch_due(const struct kv_client *c, unsigned answered)
{
	uint64_t due = UINT64_MAX, soonest = kv__ix_now_ns() + c->lease_ns / 16;

	for (unsigned j = 0; j < c->C; j++)
		for (unsigned i = 0; i < c->g.n; i++)
			if (j != c->cid && (answered >> i & 1) && c->seen[j][i].word != 0 &&
				c->seen[j][i].since + kv__st_suspect_ns(c) < due)
				due = c->seen[j][i].since + kv__st_suspect_ns(c);
	return due > soonest ? due : soonest;
}

/* Run a round that ends with a READ of every claim word (after what the
 * batches of the members in @mask already hold) into their scratch. */
static unsigned
lease_read_round(struct kv_client *c, unsigned mask)
{
	for (unsigned i = 0; i < c->g.n; i++)
		if ((mask >> i & 1) &&
			rdma_batch_read(&c->g.m[i].batch, c->region, c->sb.id_off, c->g.m[i].buf,
				8u * c->C) != 0)
			mask &= ~(1u << i);
	c->st.rounds++;
	return kv__ix_round_run(&c->g, mask, c->g.n, c->deadline);
}

/* The members whose claim word of client @j is 0 in their scratch. */
static unsigned
lease_zeros(const struct kv_client *c, unsigned ok, unsigned j)
{
	unsigned zeros = 0;

	for (unsigned i = 0; i < c->g.n; i++) {
		uint64_t w;

		memcpy(&w, c->g.m[i].buf + 8u * j, 8);
		zeros |= (unsigned)((ok >> i & 1) && w == 0) << i;
	}
	return zeros;
}

/*
 * Client @j, whose last life had tag @tag, was given up: clear the hazard
 * words that life left up, each by a CAS from the word read (its
 * write-backs landed long ago; a new life's hazard carries another
 * sequence number and is left alone), and its claim word on the members
 * (at most f) where watchers had not zeroed it yet. Left there, such a
 * word would keep the next life of the id from holding that member until
 * some watcher zeroed it, D later or never, and status would count the id
 * as registered there. Clearing it is safe: a life with 0 on f+1 members
 * at once is over for good, and the CAS is from a word of that life only.
 * Best effort: a hazard left up only keeps a buffer from reuse; a claim
 * word left up is zeroed by watchers.
 */
static void
lease_repair(struct kv_client *c, unsigned j, uint32_t tag)
{
	uint64_t off = c->sb.hz_off + 8u * (uint64_t)j * KV_ST_HZ;
	unsigned mask = kv__ix_round_begin(&c->g), ok;

	for (unsigned i = 0; i < c->g.n; i++)
		if ((mask >> i & 1) &&
			(rdma_batch_read(&c->g.m[i].batch, c->region, off, c->g.m[i].buf,
				 8u * KV_ST_HZ) != 0 ||
				rdma_batch_read(&c->g.m[i].batch, c->region, claim_off(c, j),
					c->g.m[i].buf + 8u * KV_ST_HZ, 8) != 0))
			mask &= ~(1u << i);
	c->st.rounds++;
	ok = kv__ix_round_run(&c->g, mask, c->g.n, c->deadline);
	/* The clears, and the repair counters every node keeps (status). */
	mask = kv__ix_round_begin(&c->g);
	for (unsigned i = 0; i < c->g.n; i++) {
		struct kv_ix_member *m = &c->g.m[i];
		uint64_t hz[KV_ST_HZ], claim, cleared = 0;

		if (!(mask >> i & 1))
			continue;
		memcpy(hz, m->buf, sizeof(hz));
		memcpy(&claim, m->buf + 8u * KV_ST_HZ, 8);
		if ((ok >> i & 1) && claim != 0 && kv_st_claim_tag(claim) == tag &&
			(rdma_batch_cas(&m->batch, c->region, claim_off(c, j), claim, 0,
				 &m->old[KV_ST_HZ + 2]) != 0 ||
				rdma_batch_persist(&m->batch, c->region, claim_off(c, j), 8) != 0))
			mask &= ~(1u << i);
		for (unsigned s = 0; (ok >> i & 1) && s < KV_ST_HZ; s++) {
			if (hz[s] == 0)
				continue;
			cleared++;
			if (rdma_batch_cas(&m->batch, c->region, off + 8u * s, hz[s], 0, &m->old[s]) != 0 ||
				rdma_batch_persist(&m->batch, c->region, off + 8u * s, 8) != 0)
				mask &= ~(1u << i);
		}
		if (rdma_batch_faa(&m->batch, c->region, KV_ST_COUNT_OFF + 8u * KV_ST_COUNT_IDS_FREED, 1,
			    &m->old[KV_ST_HZ]) != 0 ||
			rdma_batch_faa(&m->batch, c->region, KV_ST_COUNT_OFF + 8u * KV_ST_COUNT_HAZARDS,
				cleared, &m->old[KV_ST_HZ + 1]) != 0 ||
			rdma_batch_persist(&m->batch, c->region, KV_ST_COUNT_OFF, 16) != 0)
			mask &= ~(1u << i);
	}
	c->st.rounds++;
	(void)kv__ix_round_run(&c->g, mask, c->g.n, c->deadline);
}

/*
 * Zero the claim words that stood still for the suspicion time (@stale,
 * per client, the members), then read the words twice more: a client
 * whose word this round zeroed somewhere and that both reads show 0 on
 * the same f+1 members is taken as given up: repair what it left. The
 * second read only skips a word caught in passing (a claimant's claim and
 * undo, a release, a clear move a word away from 0 and back quickly, so
 * the reads do not prove one moment of f+1 zeros); safety does not rest
 * on it: the repair clears only words of the dead life (its tag) and
 * hazard words by CAS from the word read (Spin m10 with -DVIEWS frees
 * from reads taken at different times, and holds).
 */
static void
lease_take_over(struct kv_client *c, const unsigned *stale)
{
	unsigned mask = kv__ix_round_begin(&c->g), ok, zeros[KV_MAX_CLIENTS];
	unsigned took[KV_MAX_CLIENTS] = { 0 };
	uint32_t tag[KV_MAX_CLIENTS] = { 0 };
	bool any = false;

	for (unsigned i = 0; i < c->g.n; i++) {
		struct kv_ix_member *m = &c->g.m[i];
		unsigned k = 0;

		if (!(mask >> i & 1))
			continue;
		/* CAS results go to old[]; half the batch, the persists. */
		for (unsigned j = 0; j < c->C && k < RDMA_BATCH_MAX_OPS / 2 - 1; j++) {
			if (!(stale[j] >> i & 1))
				continue;
			if (rdma_batch_cas(&m->batch, c->region, claim_off(c, j), c->seen[j][i].word, 0,
				    &m->old[k]) != 0 ||
				rdma_batch_persist(&m->batch, c->region, claim_off(c, j), 8) != 0)
				break;
			k++;
		}
	}
	ok = lease_read_round(c, mask);
	for (unsigned j = 0; j < c->C; j++) {
		for (unsigned i = 0; i < c->g.n; i++) {
			uint64_t w;

			if (!(ok >> i & 1) || !(stale[j] >> i & 1))
				continue;
			memcpy(&w, c->g.m[i].buf + 8u * j, 8);
			if (w == 0 && c->seen[j][i].word != 0) {
				took[j] |= 1u << i;
				tag[j] = kv_st_claim_tag(c->seen[j][i].word);
				c->seen[j][i].word = 0;
				c->seen[j][i].since = kv__ix_now_ns();
			}
		}
		zeros[j] = lease_zeros(c, ok, j);
		any |= took[j] != 0 && (unsigned)__builtin_popcount(zeros[j]) >= c->g.f + 1;
	}
	if (!any)
		return;
	ok = lease_read_round(c, kv__ix_round_begin(&c->g));
	for (unsigned j = 0; j < c->C; j++) {
		if (took[j] == 0 ||
			(unsigned)__builtin_popcount(zeros[j] & lease_zeros(c, ok, j)) < c->g.f + 1)
			continue;
		c->st.ids_freed++;
		lease_repair(c, j, tag[j]);
	}
}

/* Renew the lease and look at the claim words (kv__st_lease_keep when the
 * lease does not cover the operation or a watched word is due). */
static int
lease_renew(struct kv_client *c)
{
	unsigned holds = 0, lost = 0, answered = 0, stale[KV_MAX_CLIENTS] = { 0 };
	uint64_t first = 0, want;
	int ret = 0;

	/* A new beat for every attempt: one that gave up may have left its
	 * beat on a member, and a later renewal that wrote the same word there
	 * again would not change it: watchers would count its age from the
	 * first time (Spin, m10_beatsucc). */
	want = kv_st_claim(c->id_tag, ++c->beat);
	/* Renewing is a CAS from this life's own word: harmless even after
	 * the lease ran out (if nobody took the id, it is valid again). */
	c->g.fence_open = true;
	for (;;) {
		unsigned mask = kv__ix_round_begin(&c->g) & ~holds, ok;
		/* Re-owning a member where the word is 0 (a watcher zeroed it
		 * while this client could not reach it) only while the lease
		 * runs: after that the zero may be a release. */
		bool valid = kv__ix_now_ns() < c->lease_end;

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];

			if (!(mask >> i & 1))
				continue;
			/* Only from this life's own word, or from 0 while the
			 * lease runs: never over another life's claim (Spin,
			 * m10_mut_casany: the first version did). */
			if (c->id_word[i] != 0 && kv_st_claim_tag(c->id_word[i]) != c->id_tag)
				continue;
			if ((c->id_word[i] != 0 || valid) &&
				(rdma_batch_cas(&m->batch, c->region, claim_off(c, c->cid), c->id_word[i],
					 want, &m->old[0]) != 0 ||
					rdma_batch_persist(&m->batch, c->region, claim_off(c, c->cid), 8) != 0))
				mask &= ~(1u << i);
		}
		if (first == 0)
			first = kv__ix_now_ns();
		ok = lease_read_round(c, mask);
		answered |= ok;
		for (unsigned i = 0; i < c->g.n; i++) {
			const uint64_t *words = (const uint64_t *)c->g.m[i].buf;
			uint64_t now = kv__ix_now_ns();

			if (!(ok >> i & 1))
				continue;
			/* The READ follows the CAS in the batch: it shows the
			 * word the CAS left. */
			c->id_word[i] = words[c->cid];
			if (words[c->cid] == want)
				holds |= 1u << i;
			if ((words[c->cid] == 0 && !valid) ||
				(words[c->cid] != 0 && kv_st_claim_tag(words[c->cid]) != c->id_tag))
				lost |= 1u << i;
			else
				lost &= ~(1u << i);
			lease_observe(c, i, words, now, stale);
		}
		if ((unsigned)__builtin_popcount(holds) >= c->g.f + 1) {
			c->lease_end = first + c->lease_ns;
			c->st.lease_renewals++;
			break;
		}
		if ((unsigned)__builtin_popcount(lost) >= c->g.f + 1) {
			ret = pm_error_set(-EOWNERDEAD,
				"kv: client id %u was given to another client (lease ran out)", c->cid);
			break;
		}
		/* Run out, and every member that answers has settled -- holds
		 * the new beat, or shows a word this life may not renew from
		 * (another's, or 0: a watcher's zero, a rebuilt node) -- yet
		 * fewer than f+1 hold, with the others silent: asking again
		 * cannot help. Give the id up and take a new one (always safe:
		 * the old one is freed after D by watchers, its log recovered
		 * by its next holder). Without this a client whose id lost its
		 * word on a rebuilt node, with another node down, retried at
		 * every operation for ever (dmkv bench after `node rebuild`). */
		if (!valid && ok != 0 && ((holds | lost) & ok) == ok &&
			(unsigned)__builtin_popcount(holds | lost) >= c->g.f + 1) {
			ret = pm_error_set(-EOWNERDEAD,
				"kv: client id %u could not be renewed (lease ran out)", c->cid);
			break;
		}
		ret = kv__st_retry(c, ok == 0);
		if (ret != 0)
			break;
	}
	c->g.fence_open = false;
	if (ret == 0) {
		bool any = false;

		for (unsigned j = 0; j < c->C; j++)
			any |= stale[j] != 0;
		if (any)
			lease_take_over(c, stale);
		c->watch_due = lease_watch_due(c, answered);
	}
	return ret;
}

int
kv__st_lease_keep(struct kv_client *c)
{
	/* Apart from lease_renew(): its tables, zeroed on entry, cost every
	 * operation more than the check itself. */
	if (c->lease_end >= c->deadline && kv__ix_now_ns() < c->watch_due)
		return 0; /* the lease covers this operation; no word is due */
	return lease_renew(c);
}

int
kv__st_lease_release(struct kv_client *c)
{
	/* CAS this life's word -> 0 on every member; one that shows another
	 * beat of this life is asked again with it. */
	c->g.fence_open = true;
	while (kv__ix_now_ns() < c->deadline) {
		unsigned mask = kv__ix_round_begin(&c->g), ours = 0;

		for (unsigned i = 0; i < c->g.n; i++) {
			struct kv_ix_member *m = &c->g.m[i];

			if (c->id_word[i] == 0 || kv_st_claim_tag(c->id_word[i]) != c->id_tag)
				continue;
			ours |= 1u << i;
			if ((mask >> i & 1) &&
				(rdma_batch_cas(&m->batch, c->region, claim_off(c, c->cid),
					 c->id_word[i], 0, &m->old[0]) != 0 ||
					rdma_batch_persist(&m->batch, c->region, claim_off(c, c->cid), 8) != 0))
				mask &= ~(1u << i);
		}
		if ((mask & ours) == 0) {
			/* A member still busy with an earlier batch (a
			 * straggler of a round that returned at f+1: the
			 * marks' stores just before) is waited for: left
			 * there, the word would stay registered until some
			 * watcher zeroed it, D later, or for ever if this was
			 * the last client (kv_proc_ofi_test saw both). Members
			 * the reconnect thread holds keep the word; the others
			 * zero it after D. */
			if ((kv__ix_group_up(&c->g) & ours) == 0)
				break;
			kv__ix_sleep(&c->g, 50000);
			continue;
		}
		mask = kv__ix_round_run(&c->g, mask & ours, c->g.n, c->deadline);
		for (unsigned i = 0; i < c->g.n; i++)
			if (mask >> i & 1)
				c->id_word[i] = c->g.m[i].old[0] == c->id_word[i] ? 0 : c->g.m[i].old[0];
	}
	c->g.fence_open = false;
	for (unsigned i = 0, left = 0; i < c->g.n; i++) {
		left += c->id_word[i] != 0 && kv_st_claim_tag(c->id_word[i]) == c->id_tag;
		if (left > c->g.f)
			return pm_error_set(KV_E_UNAVAILABLE,
				"kv_close: client id %u still held on %u of %u nodes", c->cid, left,
				c->g.n);
	}
	return 0;
}
