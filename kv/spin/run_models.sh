#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# kv/spin/run_models.sh -- run the FCP index's, SWARM's and the store's Spin models (m1..m14.pml) as a
# table of named checks, each with an EXPECTED outcome, and say honestly what
# kind of evidence each run is.
#
#   pass     0 errors; for an exhaustive check also a complete search (not cut
#            by the time limit, -DMEMLIM or the depth bound).
#   fail     a planted bug: Spin must report a violation. For a randomized
#            check, at least one of its seeds must report it.
#   finding  a protocol variant the models showed to be unsafe (README, "Found
#            by the models"): Spin must keep reporting the violation, as for
#            fail; it is not a planted bug but the reason for a protocol rule.
#
# Search modes:
#   exh       exhaustive, hash-compact (-DHC4): complete unless reported otherwise
#   bit:W     bitstate (-DBITSTATE -wW): probabilistic coverage, never a proof
#   rand      randomized bitstate (-DT_RAND -DP_RAND), one run per seed:
#             partial search, evidence only
#
# Exit status: 0 every check met its expectation; 1 some check did not (or an
# exhaustive check did not complete); 2 usage error or missing tools.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MEMLIM=${SPIN_MEMLIM:-4000}          # MB per pan run (-DMEMLIM)
# gcc's optimisation of pan.c. -O0: most checks store a few million states
# or fewer, and gcc -O2 took 5-10 times as long to compile pan.c (about 65 s
# for m14) as pan then ran; -O0 compiles in about 7 s and runs about 1.35
# times slower. SPIN_OPT=-O2 for the long --full runs.
SPIN_OPT=${SPIN_OPT:--O0}

# ---- the table -------------------------------------------------------------
# set|name|model|-D flags|mode|seeds|time limit (s)|expect|pan options|bound
# set: ci (run by --ci and --full) or full (only --full).
# bound: what the bounded model contains (the flags say the rest); --list shows it.
# M1 flag defaults: NC=2 NLOOK=1 MAXR=2 MNCRASH=1 TMO=1 FLY=1 CCRASH=1.
CHECKS=(
# --- M1: per-stage consensus core
"ci|m1_crash|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=1 -DMNCRASH=0 -DTMO=0 -DFLY=0 -DCCRASH=1|exh||150|pass|-m400000 -w26|3 MNs, 2 inserters, 1 round, client crash"
"ci|m1_lookup|m1.pml|-DNC=1 -DNLOOK=1 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=0|exh||60|pass|-m400000 -w24|3 MNs, 1 inserter + helping lookup, timeouts"
"ci|m1_mut_fq2|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=0 -DMUT_FQ2|exh||60|fail|-m400000 -w24|mutant: majority as fast quorum"
"ci|m1_mut_nofastrule|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=0 -DMUT_NOFASTRULE|exh||60|fail|-m400000 -w24|mutant: no fast-value rule"
"ci|m1_mut_lookup|m1.pml|-DNC=1 -DNLOOK=1 -DMAXR=1 -DMNCRASH=0 -DTMO=0 -DFLY=0 -DCCRASH=0 -DMUT_LOOKUP|exh||60|fail|-m400000 -w24|mutant: lookup ignores F words"
"ci|m1_mut_blind|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=2 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=0 -DMUT_BLIND|exh||60|fail|-m400000 -w24|mutant: overwrite a higher promise"
"full|m1_maxr2|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=2 -DMNCRASH=0 -DTMO=0 -DFLY=0 -DCCRASH=0|exh||600|pass|-m400000 -w28|3 MNs, 2 inserters, 2 rounds"
"full|m1_lookup_crash|m1.pml|-DNC=1 -DNLOOK=1 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=1|exh||300|pass|-m400000 -w26|1 inserter + lookup, timeouts, client crash"
"full|m1_mndown|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=1 -DMNCRASH=1 -DTMO=0 -DFLY=0 -DCCRASH=0|bit:32||600|pass|-m400000|2 inserters, MN down/up"
"full|m1_tmo_fly|m1.pml|-DNC=2 -DNLOOK=0 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=1 -DCCRASH=0|bit:32||600|pass|-m400000|2 inserters, timeouts, flying CAS"
"full|m1_lookup_all|m1.pml|-DNC=1 -DNLOOK=1 -DMAXR=2 -DMNCRASH=1 -DTMO=1 -DFLY=1 -DCCRASH=1|bit:32||600|pass|-m400000|1 inserter + lookup, every fault"
"full|m1_lookup_tmo|m1.pml|-DNC=2 -DNLOOK=1 -DMAXR=1 -DMNCRASH=0 -DTMO=1 -DFLY=0 -DCCRASH=0|bit:32||600|pass|-m400000|2 inserters + lookup, timeouts"
# --- M3: bucket uniqueness
"ci|m3|m3.pml||exh||60|pass|-m200000 -w24|E=3, 2 inserters, 2 removers, re-inserter"
"ci|m3_mut_reuse|m3.pml|-DMUT_REUSE|exh||60|fail|-m200000 -w24|mutant: DEAD -> EMPTY reuse"
"full|m3_ins4|m3.pml|-DINS4|bit:33||900|pass|-m200000 -k3|as m3 + a competing key"
# --- M2: one slot across stages with lookups (randomized, partial)
# A seed's randomized search is deterministic: seed 15 catches MUT_L2 after
# about 15M states and MUT_MINSTAGE after about 18.5M (23-28 s with the load
# average at 3.5 on 2 cores, 55-60 s inside a loaded `bazel test //...`), so it
# runs first with a 120 s limit (used only if it does not catch); seeds 11 and
# 12 are the fallback (they do not catch either in 30 s). A slower machine
# needs a longer limit, not other seeds.
"full|m2_rand|m2.pml||rand|11|15|pass|-m3000 -w26|1 slot, stages 0-2, 3 proposers + lookup"
"ci|m2_rand_faults|m2.pml|-DFAULTS|rand|13|15|pass|-m3000 -w26|as m2_rand + MN crash/restart"
"ci|m2_mut_l2|m2.pml|-DMUT_L2|rand|15 11 12|120|fail|-m3000 -w26|mutant: lookup ignores P words"
"ci|m2_mut_minstage|m2.pml|-DMUT_MINSTAGE|rand|15 11 12|120|fail|-m3000 -w26|mutant: lookup trusts the lagging replica"
"full|m2_dfs|m2.pml||bit:33||600|pass|-m3000|as m2_rand"
"full|m2_rand_long|m2.pml||rand|11 12 13 14 15 16 17 18|45|pass|-m3000 -w26|as m2_rand"
"full|m2_rand_long_faults|m2.pml|-DFAULTS|rand|11 12 13 14 15 16 17 18|45|pass|-m3000 -w26|as m2_rand_faults"
# --- M4: split with deterministic child addresses (about 10.5 M states when complete)
"ci|m4|m4.pml||exh||120|pass|-m400000 -w24|E=2 parent + h1, 2 children x 3 MNs; splitter, inserter, remover, 1 lookup"
"ci|m4_mut_plain|m4.pml|-DMUT_PLAIN -DNODIRECT|exh||120|fail|-m400000 -w24|mutant: children by plain write (caught by the lookup)"
"ci|m4_mut_early|m4.pml|-DMUT_EARLY -DNODIRECT|exh||120|fail|-m400000 -w24|mutant: children before every freeze is decided (caught by the lookup)"
"ci|m4_mut_skipfrozen|m4.pml|-DMUT_SKIPFROZEN|exh||60|fail|-m400000 -w24|mutant: lookup skips frozen content before FWD"
"ci|m4_hint_early|m4.pml|-DHINT_EARLY|exh||120|finding|-m400000 -w24|as m4, but updates via a hint once the child is usable, before FWD"
"ci|m4_h1_analyse|m4.pml|-DH1_ANALYSE|exh||120|finding|-m400000 -w24|as m4, but lookups apply rule ii to h1 (one FWD word of f+1 = NONE)"
"full|m4_mut_plain_direct|m4.pml|-DMUT_PLAIN|exh||60|fail|-m400000 -w24|mutant MUT_PLAIN, ghost monotonicity assert"
"full|m4_mut_early_direct|m4.pml|-DMUT_EARLY|exh||60|fail|-m400000 -w24|mutant MUT_EARLY, ghost content assert"
"full|m4_tmo|m4.pml|-DTMO=1|bit:33||600|pass|-m400000|as m4 + one skipped member batch per helper (over 77 M states)"
# --- M5: lost-node rebuild (about 30 M states when complete)
"ci|m5_grace|m5.pml|-DGRACE|exh||150|pass|-m400000 -w24|3 MNs, 1 stage; fast inserter, classic resolver, lookup, 1 memory loss + rebuild"
"ci|m5_mut_earlymember|m5.pml|-DGRACE -DMUT_EARLYMEMBER|exh||60|fail|-m400000 -w24|mutant: lost node counted at once, as C0"
"ci|m5_mut_copy|m5.pml|-DGRACE -DMUT_COPY|exh||60|fail|-m400000 -w24|mutant: rebuilder copies F/P words"
"ci|m5_mut_noresolve|m5.pml|-DGRACE -DMUT_NORESOLVE|exh||60|fail|-m400000 -w24|mutant: rebuilder installs an undecided value"
"ci|m5_spec|m5.pml|-DNOLOOK|exh||60|finding|-m400000 -w24|rebuild without the grace period (no lookup)"
# --- M6: durability, visible vs durable words, one MN crash
"ci|m6_nocommit|m6.pml|-DNOCOMMIT|exh||120|pass|-m400000 -w24|3 MNs, 1 stage; fast inserter, classic resolver, lookup, 1 MN crash; no commits"
"ci|m6_mut_readnopersist|m6.pml|-DNOCOMMIT -DOBS -DMUT_READNOPERSIST|exh||60|fail|-m400000 -w24|mutant: rule iii without PERSIST (observable checks only)"
"ci|m6_mut_countearly|m6.pml|-DNOCOMMIT -DOBS -DMUT_COUNTEARLY|exh||60|fail|-m400000 -w24|mutant: CAS counted before its PERSIST (observable checks only)"
"full|m6|m6.pml||exh||300|pass|-m400000 -w27|as m6_nocommit + background commits (54 M states, 3.1 GB)"
# --- M7: SWARM values (Safe-Guess, max register, TRYLOCK) on durable MNs, one MN crash + restart
"ci|m7_1w|m7.pml|-DW1=0 -DNRP=1 -DNRD=2 -DFIXORD|exh||60|pass|-m400000 -w24|3 MNs; writer 0 (1 write, guess 1-2), 1 reader x 2 reads, 1 MN crash + restart, word-by-word reads"
"ci|m7_2w_bit|m7.pml|-DNRP=1 -DNRD=1 -DFIXORD -DSNAP -DGUESS1|bit:28||30|pass|-m400000|2 writers (stale guesses), 1 reader, 1 MN crash + restart, snapshot reads; cut at 30 s"
"ci|m7_mut_readnopersist|m7.pml|-DW1=0 -DNRP=1 -DNRD=2 -DFIXORD -DMUT_READNOPERSIST|exh||30|fail|-m400000 -w24|mutant: READ batch without PERSIST (ghost: counted reply durable)"
"ci|m7_mut_lostjoin|m7.pml|-DW1=0 -DNRP=1 -DNRD=2 -DFIXORD -DOBS -DMUT_LOSTJOIN|exh||30|fail|-m400000 -w24|mutant: MN restarts zeroed and counts at once (observable checks only)"
"ci|m7_mut_singleread|m7.pml|-DNRP=1 -DNRD=1 -DFIXORD -DSNAP -DGUESS1 -DMUT_SINGLEREAD|exh||30|fail|-m400000 -w24|mutant: reader returns a GUESSED tuple seen once"
"ci|m7_mut_nolock|m7.pml|-DNRP=1 -DNRD=1 -DFIXORD -DSNAP -DGUESS1 -DMUT_NOLOCK|exh||30|fail|-m400000 -w24|mutant: slow-path rewrite without TRYLOCK"
"full|m7_2w_nocrash|m7.pml|-DNOCRASH -DNRP=1 -DNRD=1 -DFIXORD -DSNAP -DGUESS1|exh||300|pass|-m400000 -w27|2 writers, 1 reader, no MN crash, snapshot reads"
"full|m7_2w_bit_long|m7.pml|-DNRP=1 -DNRD=1 -DFIXORD|bit:33||600|pass|-m400000|2 writers (both guesses free), 1 reader, 1 MN crash, word-by-word reads"
"full|m7_2r_bit|m7.pml|-DW1=0 -DNRP=2 -DNRD=1 -DFIXORD|bit:33||600|pass|-m400000|writer 0, 2 reader clients, 1 MN crash, word-by-word reads"
# --- M8: the store's DELETE through cached locations, first-deleter word (kv_delete, kv__sw_delete)
# M8 flag defaults: C1=1 C2=1 (both deleters cached), LOSS=0, CRASH=0, no node down, no final get.
"ci|m8_selftest_bad|m8.pml|-DCHECK_SELFTEST=1|exh||30|fail|-m400000 -w20|checker self-test: a hand-made illegal history"
"ci|m8_selftest_ok|m8.pml|-DCHECK_SELFTEST=2|exh||30|pass|-m400000 -w20|checker self-test: a legal history needing a pending delete in the middle"
"ci|m8|m8.pml|-DFINALGET|exh||60|pass|-m400000 -w24|3 MNs up; D1, D2 (uncached: every delete looks up, as built), G, I, final get"
"ci|m8_crash|m8.pml|-DFINALGET -DCRASH=2|exh||60|pass|-m400000 -w24|as m8 + either deleter may crash at any step"
"ci|m8_lost|m8.pml|-DFINALGET -DLOSS=1|exh||90|pass|-m400000 -w24|as m8 + 1 lost reply"
"ci|m8_down|m8.pml|-DFINALGET -DDOWN|exh||150|pass|-m400000 -w26|as m8 + one MN down (about 20 M states)"
"ci|m8_mut_cached_down|m8.pml|-DFINALGET -DDOWN -DC1=1 -DC2=1|exh||60|fail|-m400000 -w24|planted: deletes through cached locations, one MN down (the code before 2026-11-29): a deleter first on a majority it cannot read also deletes B"
"ci|m8_mut_splitonce|m8.pml|-DFINALGET -DLOSS=1 -DMUT_SPLITONCE -DC1=1 -DC2=1|exh||60|fail|-m400000 -w24|mutant, cached deleters: the split round runs once (a lost reply in it not retried)"
"ci|m8_mut_oldrule|m8.pml|-DMUT_OLDRULE -DLOSS=2 -DC1=1 -DC2=1|exh||60|fail|-m400000 -w24|mutant, cached deleters: the previous rule (others' tombstones, no dw word; 2 lost replies)"
"ci|m8_mut_wbnodw|m8.pml|-DMUT_WBNODW -DC1=1 -DC2=1|exh||60|fail|-m400000 -w24|mutant, cached deleters: the write-back of G and I does not set dw"
"ci|m8_mut_nolate|m8.pml|-DMUT_NOLATE -DC1=1 -DC2=1|exh||60|fail|-m400000 -w24|mutant, cached deleters: a cached delete never looks up again (stale cache)"
"full|m8_lost2|m8.pml|-DFINALGET -DLOSS=2|bit:32||600|pass|-m400000|as m8 + 2 lost replies"
"full|m8_lost_crash|m8.pml|-DFINALGET -DLOSS=1 -DCRASH=1|bit:32||600|pass|-m400000|as m8_lost + one deleter may crash"
"full|m8_down_crash|m8.pml|-DFINALGET -DDOWN -DCRASH=2|bit:32||600|pass|-m400000|as m8_down + either deleter may crash (beyond 61 M states exhaustively)"
"full|m8_down_lost|m8.pml|-DFINALGET -DDOWN -DLOSS=1|bit:32||600|pass|-m400000|as m8_down + 1 lost reply (beyond 61 M states exhaustively)"
# --- M9: buffer recycling (issue 18): hazard words, validation, drains (recycle.c, sw_write_back)
# M9 flag defaults: K=3 writes (slot 0 reused once), NR=1 reader, NRD=2 reads, restarts unbounded.
"ci|m9|m9.pml|-DALWAYS -DRETDUR -DDRAIN|exh||60|pass|-m400000 -w24|3 MNs, writer W1-W3 in 2 slots, 1 reader x 2 reads, late third batches; DUR in every state (4.5 M states)"
"ci|m9_k4|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DK=4 -DNRD=1|exh||60|pass|-m400000 -w24|W1-W4 (both slots reused), 1 reader x 1 read (3.8 M states)"
"ci|m9_latewb|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DLATEWB -DNRD=1|exh||60|pass|-m400000 -w24|as m9 + one timed-out write-back landing late, 1 read (2.0 M states)"
"ci|m9_spec|m9.pml|-DALWAYS|exh||60|finding|-m400000 -w24|as m9, no drain: the writer reuses a slot while its old batch is queued"
"ci|m9_mut_nohazard|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DMUT_NOHAZARD|exh||60|fail|-m400000 -w24|mutant: no hazard, no validation, no scan"
"ci|m9_mut_nohazard_end|m9.pml|-DDRAIN -DMUT_NOHAZARD|exh||60|fail|-m400000 -w24|mutant MUT_NOHAZARD, caught by the final check alone"
"ci|m9_mut_novalidate|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DMUT_NOVALIDATE|exh||60|fail|-m400000 -w24|mutant: hazard published, no validating re-read"
"ci|m9_mut_nowbdrain|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DLATEWB -DNRD=1 -DMUT_NOWBDRAIN|exh||60|fail|-m400000 -w24|mutant: hazard cleared with a write-back still queued"
"full|m9_k4_2rd|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DK=4|exh||300|pass|-m400000 -w26|W1-W4, 1 reader x 2 reads (14.4 M states)"
"full|m9_latewb_2rd|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DLATEWB|exh||300|pass|-m400000 -w25|as m9_latewb, 2 reads (7.9 M states)"
"full|m9_k4_latewb|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DLATEWB -DK=4|exh||600|pass|-m400000 -w27|W1-W4, 2 reads, a late write-back (25 M states)"
"full|m9_2r_bit|m9.pml|-DALWAYS -DRETDUR -DDRAIN -DNR=2 -DNRD=1|bit:33||600|pass|-m400000|2 readers x 1 read, W1-W3 (over 100 M states; cut at the time limit)"
# --- M10: client leases (lease.c): claim words with beats, renewal, fence, suspicion time D, takeover
# M10 flag defaults: LEASE=2 TIN=1 (the in-flight bound) DSUS=LEASE+TIN+1, MAXB=1 renewal, NOBS=1
# claimant claiming on f+1 zeros, NCL=1 attempt, LOSS=0, abstract observers (-DVIEWS: real ones).
# -DP_REVERSE only changes pan's search order (it finds that trail sooner). Two trails are found
# by randomized runs within seconds (seeds picked so; each seed's search is deterministic), where
# the exhaustive search needs 4.7 M states (m10_beatsucc_exh). Every row runs with the clear of a
# freed id's words (lease_repair, 5349339); -DNOCLEAR leaves it out.
"ci|m10|m10.pml||exh||60|pass|-m400000 -w24|3 MNs; A (claim on 2 or 3 nodes, 1 renewal, data), claimant B on f+1 zeros, abstract observers that zero, free and clear; P1, P2 in every state (3.0 M states)"
"ci|m10_2obs|m10.pml|-DVIEWS -DNOBS=2 -DMAXB=0|exh||120|pass|-m400000 -w24|two real observers (own reads, first_seen) zeroing, clearing and claiming concurrently; A never renews (11.0 M states)"
"ci|m10_live|m10.pml|-DLIVE -DLEASE=4 -DTIN=2 -DMAXB=2|exh||60|pass|-m400000 -w24|P3: A stops at any step, its id is taken over by D + 2T + 1 (L=4, T=2, 2 renewals; 5.5 M states)"
"ci|m10_mut_early|m10.pml|-DMUT_EARLY|exh||30|fail|-m400000 -w24|mutant: D = L (suspicion before the in-flight bound passed)"
"ci|m10_mut_nofence|m10.pml|-DMUT_NOFENCE|exh||30|fail|-m400000 -w24|mutant: data posted without the lease check"
"ci|m10_mut_reownlate|m10.pml|-DMUT_REOWNLATE -DP_REVERSE|exh||60|fail|-m400000 -w24|mutant: re-own after the lease ran out"
"ci|m10_mut_fromdone|m10.pml|-DMUT_FROMDONE|exh||30|fail|-m400000 -w24|mutant: from := the renewal's completion"
"ci|m10_mut_casany|m10.pml|-DMUT_CASANY|exh||60|fail|-m400000 -w24|mutant: a round CASes from another owner's word (lease.c at 2196717)"
"ci|m10_mut_clearany|m10.pml|-DVIEWS -DNOBS=2 -DMAXB=0 -DMUT_CLEARANY|exh||60|fail|-m400000 -w24|mutant: the clear of a freed id zeroes any word, a new owner's too (as m10_2obs; no tag check)"
"ci|m10_mut_seenpost|m10.pml|-DMUT_SEENPOST -DLEASE=4 -DTIN=2|rand|3 2 1|30|fail|-m400000 -w26|mutant: first_seen stamped at the READ's post (L=4, T=2, D=7)"
"ci|m10_beatsucc|m10.pml|-DBEATSUCC|rand|1 3 7|30|finding|-m400000 -w26|as m10, a renewal's beat = the last that held + 1 (lease.c at 2196717): a given-up renewal's beat is reused"
"full|m10_beatsucc_exh|m10.pml|-DBEATSUCC -DP_REVERSE|exh||120|finding|-m400000 -w24|m10_beatsucc, exhaustive search (about 4.7 M states before the trail)"
"full|m10_gap|m10.pml|-DGAP|exh||30|finding|-m400000 -w24|as m10, A may pause between its fence check and the post"
"full|m10_takeover|m10.pml|-DTAKEOVER|exh||30|fail|-m400000 -w24|reachability: a takeover happens (the bound is not vacuous)"
"full|m10_mut_claimsame|m10.pml|-DVIEWS -DNOBS=2 -DNCL=2 -DMAXB=0 -DMUT_CLAIMSAME|exh||120|fail|-m400000 -w24|mutant: a client claims again with its failed attempt's owner (ABA for an observer)"
"full|m10_anyclaim|m10.pml|-DANYCLAIM|exh||120|pass|-m400000 -w24|as m10, B claims at any time (8.9 M states)"
"full|m10_views|m10.pml|-DVIEWS|exh||60|pass|-m400000 -w24|as m10, B is a real observer too (0.7 M states)"
"full|m10_b2|m10.pml|-DMAXB=2|exh||300|pass|-m400000 -w26|as m10, 2 renewals (19.8 M states)"
"full|m10_loss|m10.pml|-DLOSS=1|exh||300|pass|-m400000 -w26|as m10 + 1 lost reply (16.0 M states)"
"full|m10_lt|m10.pml|-DLEASE=4 -DTIN=2|exh||300|pass|-m400000 -w26|as m10, L=4, T=2, D=7 (10.1 M states)"
"full|m10_dexact|m10.pml|-DLEASE=4 -DTIN=2 -DDSUS=6|exh||300|pass|-m400000 -w26|as m10_lt, D = L + T: no margin, the model's clocks are exact (8.9 M states)"
"full|m10_views_b2|m10.pml|-DVIEWS -DMAXB=2|exh||300|pass|-m400000 -w26|as m10_views, 2 renewals (7.5 M states)"
"full|m10_anyclaim_b2|m10.pml|-DANYCLAIM -DMAXB=2|exh||1200|pass|-m400000 -w26|as m10_anyclaim, 2 renewals (68 M states, about 3.1 GB)"
"full|m10_2c_bit|m10.pml|-DNOBS=2|bit:33||600|pass|-m400000|as m10, claimants B and C (64-155 M states; cut at the time limit)"
# --- M11: the repair of a dead writer's locked guess (S10 without S11; swarm.c sw_write_deleted, sw_read)
# M11 flag defaults: REPAIR=2 (step 3 writes the largest word back), NRP=1 reader x NRD=1 read, MAXIT=5, no node crash.
"ci|m11|m11.pml|-DFIXORD -DGUESS1 -DNOS8 -DREPAIR=0 -DWAITFREE|exh||60|pass|-m400000 -w25|C as built: S9 path (write-back, then S10), no repair; w dies at any step, o stops anywhere: every read within MAXIT iterations (6.4 M states)"
"ci|m11_repair|m11.pml|-DFIXORD -DGUESS1 -DNOS8 -DNOVERIFY|exh||60|pass|-m400000 -w25|as m11 + the repair (fixed): step 2 never reached, no read blocked after w's death (9.1 M states)"
"ci|m11_tomb_block|m11.pml|-DFIXORD -DTOMB -DREPAIR=0|exh||60|finding|-m400000 -w24|tombstone path locking before its write-back (before c339ff0), no repair: a read blocked for ever"
"ci|m11_tomb_spec|m11.pml|-DFIXORD -DTOMB -DREPAIR=1|exh||60|finding|-m400000 -w24|as m11_tomb_block + the repair as specified (step 3 does nothing): still blocked"
"ci|m11_tomb_fix|m11.pml|-DFIXORD -DTOMB -DNOVERIFY|exh||60|pass|-m400000 -w25|as m11_tomb_spec, step 3 writes the largest word back: no read blocked, step 2 never reached (10.9 M states)"
"ci|m11_tomb_wbfirst|m11.pml|-DFIXORD -DTOMB -DWBFIRST -DREPAIR=0 -DWAITFREE|exh||60|pass|-m400000 -w25|C as built (c339ff0): tombstone written back before the lock, no repair: every read within MAXIT iterations (7.7 M states)"
"ci|m11_mut_noguard|m11.pml|-DFIXORD -DTOMB -DMUT_MAJORITY -DMUT_ALIVE|exh||60|fail|-m400000 -w24|mutant: the repair reads a majority and does not wait for w's death (w's failed write returned)"
"ci|m11_mut_noguard_lf|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DMUT_MAJORITY -DMUT_ALIVE|exh||60|fail|-m400000 -w24|mutant as m11_mut_noguard, S9 locking first: w's value under two timestamps"
"ci|m11_mut_majority|m11.pml|-DFIXORD -DTOMB -DMUT_MAJORITY -DNOVERIFY|exh||60|fail|-m400000 -w24|mutant: the repair reads a majority (ghost: step 2 reached)"
"full|m11_guess|m11.pml|-DFIXORD -DNOVERIFY|exh||600|pass|-m400000 -w27|as m11_repair, both guesses free, w's S8 (56 M states)"
"full|m11_noguard|m11.pml|-DFIXORD -DGUESS1 -DMUT_MAJORITY -DMUT_ALIVE -DNOVERIFY|exh||300|pass|-m400000 -w26|C's S9 order, repair with neither guard: step 2 still never reached (16.8 M states)"
"full|m11_lf_spec|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DREPAIR=1|exh||120|finding|-m400000 -w24|S9 locking first, o stopped after node 2, w dead after its lock, the repair as specified: blocked"
"full|m11_lf_fix|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DNOVERIFY|exh||300|pass|-m400000 -w26|S9 locking first, the fixed repair (17.4 M states)"
"full|m11_lf_majority|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DMUT_MAJORITY|exh||300|pass|-m400000 -w26|MUT_MAJORITY alone, S9 locking first: step 2 reached, harmless (w dead)"
"full|m11_lf_fresh|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DMUT_MAJORITY -DMUT_FRESH|exh||300|pass|-m400000 -w26|MUT_FRESH (with MUT_MAJORITY, to reach step 2): harmless"
"full|m11_lf_nowb|m11.pml|-DFIXORD -DGUESS1 -DLOCKFIRST -DMUT_MAJORITY -DMUT_NOWB|exh||300|pass|-m400000 -w26|MUT_NOWB (with MUT_MAJORITY): harmless"
"full|m11_alive|m11.pml|-DFIXORD -DTOMB -DMUT_ALIVE -DNOVERIFY|exh||300|pass|-m400000 -w25|MUT_ALIVE alone: step 2 never reached"
"full|m11_crash_bit|m11.pml|-DFIXORD -DGUESS1 -DNOS8 -DREPAIR=0 -DWAITFREE -DCRASH|bit:33||600|pass|-m400000|as m11 (C as built) + one node crash and restart (78 M states, cut at the time limit)"
"full|m11_tomb_crash_bit|m11.pml|-DFIXORD -DTOMB -DWBFIRST -DREPAIR=0 -DWAITFREE -DCRASH|bit:33||600|pass|-m400000|as m11_tomb_wbfirst (C as built) + one node crash and restart (200 M states, cut at the time limit)"
"full|m11_tomb_2r_bit|m11.pml|-DFIXORD -DTOMB -DNOVERIFY -DNRP=2|bit:33||600|pass|-m400000|as m11_tomb_fix + a second reader (observer)"
# --- M12: the rebuild of a lost node's value words (rebuild.c kv_rebuild; swarm.c slots, first delete word, timestamp lock)
# M12 flag defaults: FIX=1 (T admitted once every operation in progress at the rebuilder's last read
# ended), DLRULE=0 (node 0's first delete word when both differ), LKRULE=0 (MAX), WRITES=DELS=LOCKS=1,
# NRD=1. Each exhaustive row takes one part: slots (P1), deletes (P2, and P1 on tombstones), locks (P3).
"ci|m12|m12.pml|-DDELS=0 -DLOCKS=0 -DNRD=2|exh||120|pass|-m400000 -w24|P1: 2 writers (ts 1 or 2), 1 reader x 2 reads writing back, n2 lost at any time, grace, MAX copy, admission (7.0 M states)"
"ci|m12_del|m12.pml|-DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=2|exh||120|pass|-m400000 -w24|P2 (and P1): 2 deletes (first delete word + tombstone), 1 reader x 2 reads writing tombstones back (4.4 M states)"
"ci|m12_lock|m12.pml|-DWRITES=0 -DDELS=0 -DNRD=0 -DLATE|exh||60|pass|-m400000 -w24|P3: a READ and a WRITE lock of one ts, one batch landing late (67 K states)"
"ci|m12_mut_nograce|m12.pml|-DMUT_NOGRACE -DDELS=0 -DLOCKS=0|exh||120|fail|-m400000 -w24|mutant: no grace wait (a write that counted n2 before the loss lands on n0 after the copy read it)"
"ci|m12_mut_earlyadmit|m12.pml|-DMUT_EARLYADMIT -DDELS=0 -DLOCKS=0|exh||120|fail|-m400000 -w24|mutant: n2 admitted before the copy is written"
"ci|m12_mut_min|m12.pml|-DMUT_MIN -DDELS=0 -DLOCKS=0|exh||60|fail|-m400000 -w24|mutant: slot words copied as the min of the two"
"ci|m12_spec|m12.pml|-DFIX=0 -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=0|exh||60|finding|-m400000 -w24|the rebuild as specified (admission right after the copy), node 0's first delete word: two deletes won"
"ci|m12_spec_dl1|m12.pml|-DFIX=0 -DDLRULE=1 -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=0|exh||60|finding|-m400000 -w24|as m12_spec with node 1's first delete word: two deletes won too"
"ci|m12_spec_lock|m12.pml|-DFIX=0 -DWRITES=0 -DDELS=0 -DNRD=0|exh||60|finding|-m400000 -w24|as specified, MAX lock word: a READ and a WRITE lock of one ts both decided"
"full|m12_spec_slots|m12.pml|-DFIX=0 -DDELS=0 -DLOCKS=0 -DNRD=2|exh||120|pass|-m400000 -w24|as specified, slot words only: P1 holds without the second wait (10.6 M states)"
"full|m12_poison|m12.pml|-DFIX=0 -DDLRULE=2 -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=2|exh||120|pass|-m400000 -w24|as specified but two different first delete words give a number no delete draws: P2 holds (7.6 M states)"
"full|m12_lkboth|m12.pml|-DFIX=0 -DLKRULE=1 -DWRITES=0 -DDELS=0 -DNRD=0 -DLATE|exh||60|pass|-m400000 -w24|as specified but READ vs WRITE at one ts gives a word failing both modes (not in C's encoding): P3 holds"
"full|m12_epoch_lock|m12.pml|-DFIX=2 -DWRITES=0 -DDELS=0 -DNRD=0 -DLATE|exh||60|pass|-m400000 -w24|FIX=2: an operation counts n2 only if n2 was admitted when it began (no second wait): P3 holds"
"full|m12_epoch_del|m12.pml|-DFIX=2 -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=1|exh||120|pass|-m400000 -w24|FIX=2 (as m12_epoch_lock), deletes and 1 read: P2, P1 hold"
"full|m12_epoch|m12.pml|-DFIX=2 -DDELS=0 -DLOCKS=0 -DNRD=2|exh||300|pass|-m400000 -w25|FIX=2, slot words, as m12 (11.1 M states)"
"full|m12_late|m12.pml|-DLATE -DDELS=0 -DLOCKS=0 -DNRD=2|exh||1200|pass|-m400000 -w26|as m12 + one batch landing late, after its operation gave up too (61.8 M states, 2.9 GB)"
"full|m12_del_late|m12.pml|-DLATE -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=2|exh||1200|pass|-m400000 -w26|as m12_del + one late batch (52.7 M states, 2.5 GB)"
"full|m12_spec_slots_late|m12.pml|-DFIX=0 -DLATE -DDELS=0 -DLOCKS=0 -DNRD=1|exh||600|pass|-m400000 -w25|as specified, slot words, 1 read, one late batch: P1 holds (34.0 M states)"
"full|m12_poison_late|m12.pml|-DFIX=0 -DDLRULE=2 -DLATE -DWRITES=0 -DTOMB -DLOCKS=0 -DNRD=1|exh||600|pass|-m400000 -w25|as m12_poison, 1 read, one late batch (30.3 M states)"
"full|m12_all_bit|m12.pml|-DTOMB -DLATE|bit:33||600|pass|-m400000|every part at once: 2 clients x (write, delete with tombstone), 1 read, 2 lockers, one late batch (203 M states, cut at the time limit)"
# --- M13: the reuse of a deleted key's object (issue 18; store.c obj_dead/obj_reclaim/locate)
# M13 flag defaults: TV=2 (T, a cached location's life) TAU=1 (operation timeout = in-flight bound)
# GR=TV+2*TAU+1, NATT=3 zero attempts, W (one write of k2), NRD=2 reads, RB=1 (the rebuilder reads
# after the grace), the creation's third batch landing late. -DCRASH: one node down and up again;
# -DWIPE: node 2's pool lost and rebuilt.
"ci|m13|m13.pml|-DCRASH|exh||60|pass|-m400000 -w24|3 MNs; stale S (lookup, 1 op, late batches), delete, grace G=5, 3 zero attempts (abandoned any time), settle, creation of k2, W, 1 reader x 2 reads, 1 node crash + restart; P1, DUR in every state (0.64 M states)"
"full|m13_t4|m13.pml|-DCRASH -DTV=4 -DTAU=2|exh||60|pass|-m400000 -w24|as m13 with T=4, TAU=2, G=9 (1.3 M states)"
"ci|m13_wipe|m13.pml|-DWIPE|exh||120|pass|-m400000 -w24|as m13, node 2 wiped at any time and rebuilt (grace before its reads, MAX copy, admission) instead of the crash (2.4 M states)"
"ci|m13_wipe_spec|m13.pml|-DWIPE -DRB=0 -DCHECKDUR=0 -DWK2=0 -DNRD=0 -DNATT=1|exh||60|finding|-m400000 -w24|the rebuild as specified (read, wait, write, wait, admit; no grace before the read): a zero attempt straddling the wipe, the copy brings incarnation 1 back (P1)"
"ci|m13_mut_nograce|m13.pml|-DCRASH -DMUT_NOGRACE|exh||60|fail|-m400000 -w24|mutant: G = 0 (S's late word lands after the zeroing)"
"ci|m13_mut_cacheforever|m13.pml|-DCRASH -DMUT_CACHEFOREVER|exh||60|fail|-m400000 -w24|mutant: S uses its cached location for ever"
"ci|m13_mut_g1|m13.pml|-DCRASH -DMUT_G1|exh||60|fail|-m400000 -w24|mutant: G = T + 2 TAU, one tick too small"
"ci|m13_mut_f1|m13.pml|-DCRASH -DMUT_F1|exh||60|fail|-m400000 -w24|mutant: the zero attempt goes to f+1 nodes only"
"ci|m13_mut_nosettle|m13.pml|-DCRASH -DMUT_NOSETTLE|exh||60|fail|-m400000 -w24|mutant: reuse without the settle wait (an abandoned zero batch erases m2: DUR)"
"ci|m13_mut_countnotadm|m13.pml|-DWIPE -DMUT_COUNTNOTADM|exh||60|fail|-m400000 -w24|mutant: the zero attempt counts a node that is not admitted (being rebuilt)"
"full|m13_wipe_t4|m13.pml|-DWIPE -DTV=4 -DTAU=2|exh||300|pass|-m400000 -w25|as m13_wipe with T=4, TAU=2, G=9 (5.8 M states)"
"full|m13_tau2|m13.pml|-DCRASH -DTV=2 -DTAU=2|exh||120|pass|-m400000 -w24|as m13 with TAU = T = 2, G=7 (1.3 M states)"
"full|m13_wipe_tau2|m13.pml|-DWIPE -DTV=2 -DTAU=2|exh||300|pass|-m400000 -w25|as m13_wipe with TAU = T = 2 (5.8 M states)"
"full|m13_mut_g1_tau2|m13.pml|-DCRASH -DTV=2 -DTAU=2 -DMUT_G1|exh||120|fail|-m400000 -w24|mutant MUT_G1 with TAU = T = 2 (G = 6)"
"full|m13_wipe_rb2_p1|m13.pml|-DWIPE -DRB=2 -DCHECKDUR=0|exh||300|pass|-m400000 -w25|the rebuilder waits only for the batches posted before the wipe: P1 holds (3.3 M states)"
"full|m13_wipe_rb2|m13.pml|-DWIPE -DRB=2|exh||300|finding|-m400000 -w24|as m13_wipe_rb2_p1 with DUR: the creation counts n2 before the wipe and is missed by the copy (m12's grace)"
"full|m13_wipe_spec_dur|m13.pml|-DWIPE -DRB=0|exh||300|finding|-m400000 -w24|the rebuild as specified, every check: fails (DUR or P1)"
"full|m13_reach_w2|m13.pml|-DCRASH -DREACH=1|exh||60|fail|-m400000 -w24|reachability: a read of k2 returns W's w2"
"full|m13_reach_rebuilt|m13.pml|-DWIPE -DREACH=2|exh||60|fail|-m400000 -w24|reachability: a read of k2 reads the rebuilt node"
"full|m13_reach_settle|m13.pml|-DCRASH -DREACH=3|exh||60|fail|-m400000 -w24|reachability: R waits at the settle with a zero batch in flight"
"full|m13_reach_tight|m13.pml|-DCRASH -DREACH=4|exh||60|fail|-m400000 -w24|reachability: S's word flies in the last tick of R's grace (G is tight)"
# --- M14: in-place compaction of a bucket (a new epoch at the same address; split.c ix_compact, repair.c kv__ix_install, index.c insert)
# M14 flag defaults: compactor, remover of x, inserter of k, 1 lookup (x or k), NSTRAY=1 (one e+1 fast CAS
# landing alone), TMO=0. -DNOINS / -DNOLOOK drop the inserter / the lookup (the full set is bitstate only);
# -DRMK a remover of k, -DINS2 a second inserter of k, -DLAG member 2 down until any time (a laggard).
"ci|m14|m14.pml|-DNOINS|exh||60|pass|-m400000 -w24|E=2 x 3 MNs, epochs e and e+1; compactor (stalls anywhere), remover of x, 1 lookup of x or k, 1 lone F word; linearizable lookup, images, monotone e+1 words (1.9 M states)"
"ci|m14_lag|m14.pml|-DNOINS -DLAG|exh||60|pass|-m400000 -w24|as m14, member 2 down until any time, converted as a laggard from one member live at e+1 (4.1 M states)"
"ci|m14_ins|m14.pml|-DNOLOOK|exh||60|pass|-m400000 -w24|compactor, remover of x, inserter of k at e / e+1 (full scan): uniqueness, EXISTS/OK results (0.28 M states)"
"full|m14_ins2|m14.pml|-DNOLOOK -DINS2|exh||120|pass|-m400000 -w25|as m14_ins + a second inserter of k (22.5 M states)"
"ci|m14_mut_earlyconv|m14.pml|-DNOINS -DNODIRECT -DMUT_EARLYCONV|exh||60|fail|-m400000 -w24|mutant: conversion from the helper's own freeze proposals (caught by the lookup)"
"ci|m14_mut_plainconv|m14.pml|-DNOINS -DNODIRECT -DMUT_PLAINCONV|exh||60|fail|-m400000 -w24|mutant: conversion by plain writes (caught by the lookup)"
"ci|m14_mut_onequorum|m14.pml|-DNOINS -DNODIRECT -DMUT_ONEQUORUM|exh||60|fail|-m400000 -w24|mutant: e+1 updates with one member live at e+1 (caught by the lookup)"
"ci|m14_mut_noscan|m14.pml|-DNOLOOK -DMUT_NOSCAN|exh||60|fail|-m400000 -w24|mutant: the e+1 insert stops scanning at its target (second LIVE(k))"
"ci|m14_mut_copyf|m14.pml|-DNOINS -DLAG -DNODIRECT -DMUT_COPYF|exh||60|fail|-m400000 -w24|mutant: a laggard gets an F word's own value as decided (caught by the lookup)"
"ci|m14_mut_mixread|m14.pml|-DNOINS -DNODIRECT -DMUT_MIXREAD|exh||60|fail|-m400000 -w24|mutant: a reader mixes members of e and e+1 in one quorum"
"full|m14_tmo|m14.pml|-DNOINS -DTMO=1|exh||120|pass|-m400000 -w25|as m14 + one skipped member per helper (7.9 M states)"
"full|m14_lag_tmo|m14.pml|-DNOINS -DLAG -DTMO=1|exh||300|pass|-m400000 -w26|as m14_lag + one skipped member per helper (27 M states)"
"full|m14_mut_copyf_direct|m14.pml|-DNOINS -DLAG -DMUT_COPYF|exh||60|fail|-m400000 -w24|mutant MUT_COPYF, ghost assert (a laggard's C word not decided)"
"full|m14_rmk_bit|m14.pml|-DNOLOOK -DRMK|bit:33||600|pass|-m400000|compactor, removers of x and k, inserter of k (over 43 M states)"
"full|m14_all_bit|m14.pml||bit:33||600|pass|-m400000|compactor, remover of x, inserter of k, 1 lookup (over 50 M states)"
# M14 -DSETTLE: the settle of a stopped insert (index.c kv_index_abandon): slot 1 EMPTY at e, k absent; the victim
# inserts k at L, stops at any step, its last post landing later or never; the settler (lookup, help_compact of the
# incarnation found, lookup) gives 'mapped' or 'dead'. -DNOCOMPACTOR / -DNORMX drop the compactor / the remover of x;
# a settle that finds e+1 at its first lookup is beyond the bound (no verdict); -DSETTLE_HELP goes on (help only).
"ci|m14_settle|m14.pml|-DSETTLE -DNOLOOK -DNORMX|exh||60|pass|-m400000 -w24|compactor, victim (k at L, stops anywhere, late landing), settler: 'dead' -> L never LIVE in any word after, 'mapped' -> L chosen (0.65 M states)"
"ci|m14_settle_rmx|m14.pml|-DSETTLE -DNOLOOK -DNOCOMPACTOR|exh||60|pass|-m400000 -w24|as m14_settle with the remover of x instead of the compactor (3.3 M states)"
"ci|m14_settle_mut_skipconv|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DMUT_SKIPCONV|exh||60|fail|-m400000 -w24|mutant: 'dead' from the first lookup alone (the victim's proposal lands after it)"
"ci|m14_settle_mut_earlyconv|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DNODIRECT -DMUT_EARLYCONV|exh||60|fail|-m400000 -w24|mutant: the settle's conversion from its own freeze proposals (L chosen, the image EMPTY)"
"ci|m14_settle_help|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DSETTLE_HELP|exh||60|finding|-m400000 -w24|the settle as 'help the compaction': a conversion completed before the victim's e+1 post does not stop it (L chosen after 'dead')"
"full|m14_settle_lag|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DLAG|exh||120|pass|-m400000 -w25|as m14_settle, member 2 down until any time, a laggard (2.2 M states)"
"full|m14_settle_tmo|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DTMO=1|exh||120|pass|-m400000 -w25|as m14_settle + one skipped member per helper (2.5 M states)"
"full|m14_settle_ins2|m14.pml|-DSETTLE -DNOLOOK -DNOCOMPACTOR -DNORMX -DINS2|exh||120|pass|-m400000 -w24|victim, a second inserter of k (another location), settler (0.70 M states)"
"full|m14_settle_look|m14.pml|-DSETTLE -DNOCOMPACTOR -DNORMX|exh||120|pass|-m400000 -w24|victim, 1 lookup of x or k, settler (0.74 M states)"
"full|m14_settle_e1|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DVICTIM_E1|exh||120|pass|-m400000 -w24|as m14_settle, the victim going on at e+1 (0.91 M states)"
"full|m14_settle_all_bit|m14.pml|-DSETTLE -DNOLOOK|bit:33||600|pass|-m400000|compactor, remover of x, victim, settler (122.5 M states; exhaustive by hand: 5.7 GB)"
"full|m14_settle_reach_late|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DREACH=1|exh||60|fail|-m400000 -w24|reachability: 'mapped' after the first lookup missed L (the victim's proposal landed in between)"
"full|m14_settle_reach_inflight|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DREACH=2|exh||60|fail|-m400000 -w24|reachability: 'dead' with the victim's e proposal still in flight"
"full|m14_settle_reach_e1|m14.pml|-DSETTLE -DNOLOOK -DNORMX -DVICTIM_E1 -DREACH=3|exh||60|pass|-m400000 -w24|never 'dead' with an e+1 step of the victim in flight (it read e+1, so the settle finds e+1: no verdict)"
)

usage() {
	cat <<EOF
usage: kv/spin/run_models.sh [--ci | --full | --list | --help] [--model FILE] [NAME...]

Runs the FCP index's, SWARM's and the store's Spin models (m1..m14) as named checks with expected outcomes and
prints one line per check: name, search mode, states stored, seconds, result,
verdict. Exits 1 if any check's outcome differs from its expectation or an
exhaustive check did not complete; 2 on usage errors or missing tools.

  --ci     the checks that fit CI (about 10 minutes on one core here; each
           exhaustive run under 1.5 GB); the default
  --full   the --ci checks and the design study's larger runs (tens of minutes,
           several GB; run on request)
  --list   print the table and exit
  --model FILE
           only the checks of model FILE (m1.pml ... m14.pml) in the chosen
           set; //kv/spin runs --ci one model per test target
  --help   this text
  NAME...  run only the named checks (from the --full table)

Environment: SPIN_MEMLIM (MB per run, default 4000), SPIN_OPT (gcc's
optimisation of pan.c, default -O0; -O2 for long runs), SPIN_KEEP=1 keeps the
work directories (trails) of every check, not only of mismatching ones.
EOF
}

mode_label() {
	case "$1" in
	exh) echo "exhaustive" ;;
	bit:*) echo "bitstate (probabilistic)" ;;
	rand) echo "randomized partial" ;;
	esac
}

sel=ci
names=()
only_model=
while [ $# -gt 0 ]; do
	case "$1" in
	--ci) sel=ci ;;
	--full) sel=full ;;
	--list) sel=list ;;
	--model)
		[ $# -ge 2 ] || { echo "run_models: --model needs a file name" >&2; exit 2; }
		only_model=$2
		shift
		;;
	--help | -h) usage; exit 0 ;;
	-*) echo "run_models: unknown option $1" >&2; usage >&2; exit 2 ;;
	*) names+=("$1") ;;
	esac
	shift
done

if [ "$sel" = list ]; then
	printf '%-5s %-22s %-7s %-8s %-5s %-7s %s\n' set name model mode tl expect "bound; flags [seeds]"
	for row in "${CHECKS[@]}"; do
		IFS='|' read -r set name model defs mode seeds tl expect popts bound <<<"$row"
		printf '%-5s %-22s %-7s %-8s %-5s %-7s %s\n' "$set" "$name" "$model" "$mode" "$tl" "$expect" \
			"${bound:+$bound; }${defs:--}${seeds:+ [seeds $seeds]}"
	done
	echo "mode: exh = exhaustive (hash-compact), bit:W = bitstate (probabilistic), rand = randomized partial"
	exit 0
fi

for tool in spin gcc timeout; do
	if ! command -v "$tool" >/dev/null; then
		echo "run_models: '$tool' not found on PATH ($PATH)." >&2
		echo "run_models: install the project's packages with tools/setup.sh (Debian package 'spin')." >&2
		exit 2
	fi
done

work=$(mktemp -d "${TEST_TMPDIR:-${TMPDIR:-/tmp}}/spin_models.XXXXXX")
[ "${SPIN_KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT

# build <dir> <model> <defs> <pan -D flags>: spin -a and gcc into <dir>/pan
build() {
	local d=$1 model=$2 defs=$3 cc=$4
	mkdir -p "$d" && cp "$here/$model" "$d/" || return 1
	# shellcheck disable=SC2086
	(cd "$d" && spin -a $defs "$model" >spin.out 2>&1 &&
		gcc $SPIN_OPT -w -DSAFETY $cc -DMEMLIM="$MEMLIM" $defs -o pan pan.c >gcc.out 2>&1)
}

# runpan <dir> <time limit> <pan options...>: run pan, output in <dir>/out.txt.
# SIGINT makes pan print its statistics ("Interrupted") before it exits.
runpan() {
	local d=$1 tl=$2
	shift 2
	(cd "$d" && timeout -s INT -k 10 "$tl" ./pan -n "$@" >out.txt 2>&1)
}

# Facts from one pan output: errors, states, and why the search stopped early.
p_errors() { sed -n 's/.*errors: \([0-9]*\).*/\1/p' "$1" | tail -1; }
p_states() { awk '/states, stored/ { s = $1 } END { print s + 0 }' "$1"; }
p_incomplete() {
	local f=$1 why=()
	grep -q '^Interrupted' "$f" && why+=("time limit")
	grep -q 'reached -DMEMLIM' "$f" && why+=("-DMEMLIM bound")
	grep -q 'out of memory' "$f" && why+=("out of memory")
	grep -q 'max search depth too small' "$f" && why+=("depth limit")
	[ -s "$f" ] && grep -q 'errors:' "$f" || why+=("no statistics")
	local IFS=,
	echo "${why[*]}"
}
p_violation() {
	grep -m1 -oE 'assertion violated.*|invalid end state.*|acceptance cycle.*' "$1" | cut -c1-60
}

fails=0
nrun=0
t_all=$(date +%s.%N)
printf '%-22s %-26s %12s %7s  %s\n' check mode states seconds verdict
for row in "${CHECKS[@]}"; do
	IFS='|' read -r set name model defs mode seeds tl expect popts bound <<<"$row"
	if [ ${#names[@]} -gt 0 ]; then
		match=0
		for n in "${names[@]}"; do [ "$n" = "$name" ] && match=1; done
		[ $match = 1 ] || continue
	elif [ "$sel" = ci ] && [ "$set" != ci ]; then
		continue
	fi
	[ -z "$only_model" ] || [ "$model" = "$only_model" ] || continue
	nrun=$((nrun + 1))
	d="$work/$name"
	t0=$(date +%s.%N)
	case "$mode" in
	exh) cc="-DHC4"; popts_all="$popts" ;;
	bit:*) cc="-DBITSTATE"; popts_all="$popts -w${mode#bit:}" ;;
	rand) cc="-DBITSTATE -DT_RAND -DP_RAND"; popts_all="$popts" ;;
	*) echo "run_models: bad mode '$mode' in check $name" >&2; exit 2 ;;
	esac
	label=$(mode_label "$mode")
	states=0 errs=0 why="" viol="" detail=""
	if ! build "$d" "$model" "$defs" "$cc"; then
		verdict="MISMATCH: model did not build (see $d/spin.out, gcc.out)"
		ok=0
	else
		if [ "$mode" = rand ]; then
			# One run per seed; a fail expectation stops at the first seed that
			# catches the bug. Each seed's run is cut at the time limit.
			caught="" nseeds=0
			for s in $seeds; do
				nseeds=$((nseeds + 1))
				# shellcheck disable=SC2086
				runpan "$d" "$tl" $popts_all -RS"$s"
				cp "$d/out.txt" "$d/out.seed$s.txt"
				e=$(p_errors "$d/out.txt")
				states=$((states + $(p_states "$d/out.txt")))
				if [ "${e:-0}" -gt 0 ]; then
					errs=$((errs + e))
					caught="$caught $s"
					viol=$(p_violation "$d/out.txt")
					[ "$expect" != pass ] && break
				fi
			done
			label="$label ($nseeds seed(s) x ${tl}s)"
		else
			# shellcheck disable=SC2086
			runpan "$d" "$tl" $popts_all
			errs=$(p_errors "$d/out.txt")
			errs=${errs:-0}
			states=$(p_states "$d/out.txt")
			why=$(p_incomplete "$d/out.txt")
			viol=$(p_violation "$d/out.txt")
		fi
		ok=0
		if [ "$expect" = fail ] || [ "$expect" = finding ]; then
			if [ "$errs" -gt 0 ]; then
				ok=1
				verdict="ok: planted bug caught: $viol"
				[ "$expect" = finding ] && verdict="ok: known protocol flaw reproduced (README): $viol"
				[ "$mode" = rand ] && verdict="$verdict (seed$caught)"
			else
				verdict="MISMATCH: planted bug NOT caught"
				[ "$expect" = finding ] && verdict="MISMATCH: the known protocol flaw was NOT reproduced"
				[ -n "$why" ] && verdict="$verdict (search stopped: $why)"
			fi
		else
			if [ "$errs" -gt 0 ]; then
				verdict="MISMATCH: $errs error(s): $viol; trail in $d"
			elif [ "$mode" = exh ] && [ -n "$why" ]; then
				verdict="MISMATCH: exhaustive search INCOMPLETE ($why), 0 errors so far"
			elif [ "$mode" = exh ]; then
				ok=1
				verdict="ok: 0 errors, complete"
			elif [ "$mode" = rand ]; then
				ok=1
				verdict="ok: 0 errors in every seed (partial search, not a proof)"
			else
				ok=1
				verdict="ok: 0 errors${why:+, incomplete ($why)} (probabilistic coverage)"
			fi
		fi
	fi
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	printf '%-22s %-26s %12s %7s  %s\n' "$name" "$label" "$states" "$secs" "$verdict"
	if [ $ok = 0 ]; then
		fails=$((fails + 1))
		# Keep the evidence of a mismatch: its work directory with pan's output
		# and any trail (replay: cd DIR && spin -t -DFLAGS MODEL).
		keep="${TEST_UNDECLARED_OUTPUTS_DIR:-${TMPDIR:-/tmp}}/spin_$name.$$"
		cp -r "$d" "$keep" 2>/dev/null && echo "    kept $keep (replay: cd $keep && spin -t $defs $model)"
	fi
done

if [ $nrun = 0 ]; then
	echo "run_models: no $sel check matched ${names[*]}${only_model:+ in $only_model}" >&2
	exit 2
fi
total=$(awk -v a="$t_all" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }')
if [ $fails -gt 0 ]; then
	echo "run_models: $fails of $nrun checks did NOT meet their expectation (${total}s)"
	exit 1
fi
echo "run_models: all $nrun checks met their expectation (${total}s); exhaustive = complete search of the bounded model, bitstate = probabilistic, randomized = partial"
exit 0
