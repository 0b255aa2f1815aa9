/* kv/spin/m14.pml -- M14: in-place compaction of an index bucket (a new
   epoch at the same address, entries kept at their slots).

   Models: one bucket of E = 2 slots on n = 3 members (f = 1), incarnation e
   (epoch 1, gen(e)) and its compaction into incarnation e+1 (epoch 2,
   gen(e+1)) at the same address. help_compact(B):
     (F) freeze every slot by per-slot consensus (FROZEN-x at the stage after
         the slot's decided value x), racing a remove at stage 2 (as M4);
     (D) once every slot is decided frozen, compact (the compact-vs-split
         choice is a deterministic function of the frozen content; only the
         compaction branch is modelled, as if it were always taken);
     (I) image of slot j: C(e+1, 1, LIVE(entry)) if slot j is decided
         FROZEN-LIVE(entry), else C(e+1, 0, EMPTY); a function of slot j's
         decided frozen value only;
     (C) conversion of member m: READ m, then per slot CAS(the word read ->
         image) (a word read as gen e+1 is left), then CAS(h0: live(e) ->
         live(e+1)) last (taken only when every slot word of m is gen e+1,
         see the README note on the batch); each CAS is one step, so a
         member may be seen mid-conversion (h0 at e, some words at e+1).
   Laggards: a member at e or mid-conversion, read next to a member live at
   e+1, is converted from that single member's words: per slot the decided
   value the word implies (a C word itself; an F word of stage s the
   decided value of stage s-1), CAS from the laggard's word as read when
   higher, h0 last.
   Readers: a read is one READ per member (h0 and both slot words in one
   step), of two members and, if they do not settle an epoch, the third.
   An epoch counts when f+1 members read are live at it; at e each slot also
   needs f+1 gen-e words among members live at e (a mid-conversion member
   gives no answer at e for its converted words). At e the slots' values
   are the e consensus objects' decided values, taken in the step of the
   last member read (the m4 abstraction); at e+1 each slot is the highest C
   word among the members live at e+1 that were read (an F word never
   forms a fast quorum in this bound, so rule 5: not chosen). No epoch:
   help (laggard conversion from a member live at e+1 if one was read,
   else help_compact) and read again.
   Clients: the compactor (stalls or crashes anywhere: a process that never
   runs again, which every interleaving contains); a remover of x (slot 0,
   LIVE(x) at the start): at e it races the freeze at stage 2, a loser (or
   a client that meets a frozen slot) runs help_compact and retries at e+1;
   an inserter of k (insert-if-absent, order(k) = slot 0 then slot 1, slot 1
   LIVE(k) at the start): at e the bucket has no EMPTY slot, so it either
   finds k (EXISTS) or compacts and retries; at e+1 it scans every slot
   (LIVE(k) anywhere: EXISTS; an F word with k's fingerprint: resolve it
   first), then proposes LIVE(k, own loc) at the first decided EMPTY slot;
   one lookup of x or of k (chosen at its start). Options: -DRMK a remover
   of k (its loc l0), -DINS2 a second inserter of k (another loc), -DLAG
   member 2 down from the start (misses the freeze and the conversion) and
   up at any time (converted later as a laggard), -DNSTRAY=n (default 1)
   e+1 fast-round CASes that land on one member only (an F word, never
   chosen) before the proposer goes on with its classic round, -DTMO=1 a
   helper may skip one member (a timeout).
   Consensus, as M4 (M1/M2 check it): e slots are atomic "first proposal
   wins" objects per (slot, stage), a proposal needing f+1 members live at e
   with a gen-e word of that slot (a late CAS of incarnation e on a converted
   member fails); e+1 slots are per-member words, a consensus step is one
   atomic step over a quorum Q of f+1 members live at e+1: Q's highest C
   word is learnt, or the proposal decided and C written on Q (the third
   member lags).

   C functions abstracted: kv/src/index/split.c ix_compacts, ix_compact,
   ix_converted (the compaction path); repair.c kv__ix_install (two rounds:
   words, then h0 where all are in place), kv__ix_repair and
   repair_word_single (laggards); index.c kv_index_insert (the full scan)
   and ix_locate; slot.c kv__ix_view_classify (the readers' epoch rule);
   keep this list in step with the code. Not modelled: the EMPTY's trace
   and an insert's outcome across the compaction (index.c
   ix_unsure_outcome), the read-back of the install's first round.

   Bound: E = 2, keys x and k, one compaction, one lookup.
   Asserts: (1) linearizability of the lookup, of the inserters' results
   (EXISTS only if k was present, OK only if absent: the decision asserts k
   absent) and of the remover's ENOENT (interval witness, as M2/M4): no
   acknowledged insert lost across the compaction, a removed key never back;
   (2) uniqueness: never two e+1 slots decided LIVE(k), never LIVE(k) in an
   unfrozen e slot and an e+1 slot; (3) every e+1 word installed by a
   conversion is the image of the decided frozen value, installed only
   after every slot is decided frozen; a laggard gets only decided values;
   (4) e+1 words on a member never move down, and an e+1 consensus quorum
   shows the slot's latest decided stage (agreement). -DNODIRECT drops
   (3)-(4), so a mutant must be caught by (1)-(2).
   Planted bugs (must fail): MUT_EARLYCONV (convert from the helper's own
   freeze proposals, before every slot is decided frozen), MUT_PLAINCONV
   (conversion by plain writes), MUT_ONEQUORUM (inserts and removes at e+1
   with a single member live at e+1), MUT_NOSCAN (the e+1 insert stops
   scanning at its target), MUT_COPYF (a laggard gets an F word's own
   value as decided; caught by (3) only, see README), MUT_MIXREAD (a
   reader counts members of different epochs in one quorum and answers
   from the e content).

   -DSETTLE: the settle of an insert that stopped (index.c
   kv_index_abandon: lookup; if the key does not map to L, freeze and
   compact the incarnation found; lookup again; "dead" lets the store
   reuse L). Slot 1 starts EMPTY at e and k absent; the inserter of k at L
   (EK1) is the victim: at e it proposes LIVE(k, L) at stage 1 of the
   first EMPTY slot; it stops at any step (the settler's first step sets
   vstop and the victim's body is left by `unless`), and its last post (an
   e proposal, an e+1 consensus step) lands at any later time. The Settler
   runs lookup, help_compact, lookup. Checks: "mapped" only while L is
   chosen; at "dead" L is not chosen and no e slot or e+1 word (C or F)
   carries LIVE(k, L); after "dead" no write brings LIVE(k, L) back
   (putw, ppropose, cstep); a lookup returns L only while it is chosen.
   A settle whose first lookup finds e+1 would move the bucket on to e+2,
   beyond the bound: no verdict (VOUT). That is exactly when the victim
   read e+1, so the victim stops at such a read (-DVICTIM_E1: it goes
   on). -DNOCOMPACTOR / -DNORMX drop the compactor / the remover of x.
   -DSETTLE_HELP: the settle goes on from e+1 with help_compact (a no-op)
   and the second lookup -- "help the compaction" instead of "move on the
   incarnation found" (README: a finding). Mutants: MUT_SKIPCONV ("dead"
   from the first lookup alone); MUT_EARLYCONV also breaks the settle.
   -DREACH=1..3: reachability asserts at the verdict. */
#define N   3
#define F1  2           /* f+1 */
#define E   2
#ifndef NSTRAY
#define NSTRAY 1
#endif
#ifndef TMO
#define TMO 0
#endif
#ifndef REACH
#define REACH 0
#endif

#define EP0 1           /* h0 = live(e) */
#define EP1 2           /* h0 = live(e+1) */

/* keys and entries (an entry is a key at a location) */
#define KX 1
#define KK 2
#define EX  1           /* x at its loc */
#define EK0 2           /* k at l0 (slot 1 at the start) */
#define EK1 3           /* k at l1 (inserter 1) */
#define EK2 4           /* k at l2 (inserter 2) */
#define KEYOF(ent) ((ent) == EX -> KX : KK)

/* e slot values (consensus objects): kind + FRZ flag + 8*entry (as m4) */
#define EMPTY 0
#define LIVE  1
#define DEAD  2
#define FRZ   4
#define PV(kind, frz, ent) ((kind) + (frz) + 8*(ent))
#define KIND(v)  ((v) % 4)
#define ISFRZ(v) (((v) / 4) % 2)
#define PENT(v)  ((v) / 8)

/* e+1 words: 0 = a gen-e word (no answer at e+1); else
   1 + isC + 2*stage + 8*entry; stage 0 EMPTY, 1 LIVE(entry), 2 DEAD(entry) */
#define W(c, s, ent) (1 + (c) + 2*(s) + 8*(ent))
#define RANK(x)  (((x) - 1) % 8)
#define ISC(x)   (RANK(x) % 2)
#define STG(x)   (RANK(x) / 2)
#define WENT(x)  (((x) - 1) / 8)
#define C0       W(1, 0, 0)
/* the decided value a word implies: a C word itself, F(s) the C of s-1 */
#define IMPL(x)  (ISC(x) -> (x) : (STG(x) == 1 -> C0 : W(1, STG(x) - 1, WENT(x))))
/* the image of a decided frozen value */
#define IMG(v)   ((KIND(v) == LIVE && ISFRZ(v)) -> W(1, 1, PENT(v)) : C0)
#define WLIVEK(x) ((x) != 0 && ISC(x) && STG(x) == 1 && KEYOF(WENT(x)) == KK)

byte pst[E];            /* decided stage of each e slot */
byte pval[E];           /* its decided value */
byte h0[N];             /* EP0 / EP1 */
byte w[N*E];            /* slot words per member */
bool up[N];
byte stray = 0;         /* F words landed alone so far */

/* ghosts: decided e+1 word per (slot, stage), latest decided e+1 word */
byte dec[E*3];
byte cdec[E];

/* ghost: abstract map, and the interval witnesses of 5 observers
   (0 lookup, 1 inserter 1, 2 inserter 2, 3 remover of x, 4 remover of k) */
byte abs[3];
bool oact[5];
byte okey[5];
byte omask[5];

#ifdef SETTLE
/* the settle of a stopped insert (-DSETTLE): the victim inserts k at L =
   EK1 and stops at any step (vstop, set by the settler as its first step:
   the settle begins once the insert stopped); its last posted proposal
   (vpk 1: e stage-1 proposal, 2: e+1 consensus step; slot vpt, stage vps,
   value vpw) may land after the stop, at any time, or never. lch: L is
   chosen (LIVE(k, L) decided in some slot; no remover of L, so it stays
   mapped once chosen). verd: the settler's verdict. */
#define LENT EK1
#define VMAPPED 1
#define VDEAD 2
#define VOUT 3          /* the bucket was at e+1 at the settler's lookup: beyond the bound */
byte vpid = 255;
bool vstop;
byte vpk; byte vpt; byte vps; byte vpw;
bool lch;
bool lpend1;            /* lookup 1 found L unmapped */
byte verd;
#define WLIVEL(x) ((x) != 0 && STG(x) == 1 && WENT(x) == LENT)
#endif

inline obsupd(i, k) {
  if :: oact[i] && okey[i] == k -> omask[i] = omask[i] | (1 << abs[k]) :: else -> skip fi
}
inline setabs(k, v) {
  abs[k] = v;
  obsupd(0, k); obsupd(1, k); obsupd(2, k); obsupd(3, k); obsupd(4, k)
}
inline obsbegin(i, k) {
  atomic { okey[i] = k; oact[i] = true; omask[i] = (1 << abs[k]) }
}
/* the result "present = p" was true at some point since the invocation */
#define WITNESS(i, p) ((omask[i] >> (p)) & 1)

#define ALLFRZ (ISFRZ(pval[0]) && ISFRZ(pval[1]))
#define EPLIVEK(v) (KIND(v) == LIVE && !ISFRZ(v) && KEYOF(PENT(v)) == KK)

/* uniqueness in the current incarnation */
inline chkuniq() {
  assert(!(WLIVEK(cdec[0]) && WLIVEK(cdec[1])));
  assert(!((WLIVEK(cdec[0]) || WLIVEK(cdec[1])) && (EPLIVEK(pval[0]) || EPLIVEK(pval[1]))))
}

/* an e+1 word nw goes onto member m, slot j (every writer's last check) */
inline putw(m, j, nw) {
#ifndef NODIRECT
  assert(w[(m)*E+(j)] == 0 || w[(m)*E+(j)] == (nw) || RANK(nw) > RANK(w[(m)*E+(j)]));  /* never down */
  assert(!ISC(nw) || dec[(j)*3+STG(nw)] == (nw));                                       /* C = decided */
#endif
#ifdef SETTLE
  assert(!(verd == VDEAD && WLIVEL(nw)));        /* after "dead", no word of the bucket carries LIVE(k, L) */
#endif
  w[(m)*E+(j)] = nw
}

/* e consensus per (slot, stage): the first proposal wins; it needs f+1
   members live at e with a gen-e word of slot j (else the CASes fail) */
#define EQ(j) ((h0[0] == EP0 && w[j] == 0 && up[0]) + (h0[1] == EP0 && w[E+(j)] == 0 && up[1]) + \
               (h0[2] == EP0 && w[2*E+(j)] == 0 && up[2]))
inline ppropose(j, s, v, won) {
  atomic {
    if
    :: pst[j] == (s) - 1 && EQ(j) >= F1 ->
       pst[j] = (s); pval[j] = (v); won = true;
       if :: KIND(v) == DEAD && !ISFRZ(v) -> setabs(KEYOF(PENT(v)), 0)
#ifdef SETTLE
          :: KIND(v) == LIVE && !ISFRZ(v) -> assert(abs[KEYOF(PENT(v))] == 0);   /* OK only when absent */
             setabs(KEYOF(PENT(v)), 1)
#endif
          :: else -> skip fi;
#ifdef SETTLE
       if :: KIND(v) == LIVE && PENT(v) == LENT -> assert(verd != VDEAD); lch = true :: else -> skip fi;
#endif
       chkuniq()
    :: else -> won = false
    fi
  }
}

/* e+1 consensus step on slot j, stage s, value nw = C(s, ...): Q = f+1
   members live at e+1 (MUT_ONEQUORUM: one may do); res = Q's highest C word
   after the step (nw if decided now), 0 if no quorum */
#define L1(m) (up[m] && h0[m] == EP1)
inline cstep(j, s, nw, res) {
  atomic {
    if
    :: L1(0) && L1(1) -> q1 = 0; q2 = 1
    :: L1(0) && L1(2) -> q1 = 0; q2 = 2
    :: L1(1) && L1(2) -> q1 = 1; q2 = 2
#ifdef MUT_ONEQUORUM
    :: L1(0) -> q1 = 0; q2 = 0
    :: L1(1) -> q1 = 1; q2 = 1
    :: L1(2) -> q1 = 2; q2 = 2
#endif
    :: else -> q1 = 9
    fi;
    if
    :: q1 == 9 -> res = 0
    :: else ->
       res = IMPL(w[q1*E+(j)]);
       if :: RANK(IMPL(w[q2*E+(j)])) > RANK(res) -> res = IMPL(w[q2*E+(j)]) :: else -> skip fi;
#ifndef NODIRECT
       assert(RANK(res) >= RANK(cdec[j]));            /* Q shows the latest decision */
#endif
       if
       :: STG(res) == (s) - 1 ->
#ifndef NODIRECT
          assert(dec[(j)*3+(s)] == 0);                 /* agreement */
#endif
          dec[(j)*3+(s)] = nw; cdec[j] = nw;
          putw(q1, j, nw); putw(q2, j, nw); res = nw;
#ifdef SETTLE
          if :: (s) == 1 && WENT(nw) == LENT -> lch = true :: else -> skip fi;
#endif
          if
          :: (s) == 1 -> assert(abs[KEYOF(WENT(nw))] == 0);   /* OK only when absent */
             setabs(KEYOF(WENT(nw)), 1)
          :: else -> setabs(KEYOF(WENT(nw)), 0)
          fi;
          chkuniq()
       :: else -> skip
       fi
    fi;
    q1 = 0; q2 = 0
  }
}

/* a fast-round CAS of an e+1 proposer that lands on one member only */
inline strayf(j, exp, fw) {
  if
  :: atomic { stray < NSTRAY && up[0] && w[j] == (exp) -> stray++; putw(0, j, fw) }
  :: atomic { stray < NSTRAY && up[1] && w[E+(j)] == (exp) -> stray++; putw(1, j, fw) }
  :: atomic { stray < NSTRAY && up[2] && w[2*E+(j)] == (exp) -> stray++; putw(2, j, fw) }
  :: skip
  fi
}

/* ---- conversion ---- */
inline chkimg(j, iw) {
#ifndef NODIRECT
  assert(ALLFRZ && (iw) == IMG(pval[j]))
#else
  skip
#endif
}
/* install image word iw on member m slot j, the helper having read rw */
inline putimg(m, j, rw, iw) {
  atomic {
    chkimg(j, iw);
    if :: dec[(j)*3+STG(iw)] == 0 -> dec[(j)*3+STG(iw)] = iw; cdec[j] = iw :: else -> skip fi;
#ifndef MUT_PLAINCONV
    if :: w[(m)*E+(j)] == (rw) -> putw(m, j, iw) :: else -> skip fi     /* CAS(rw -> iw) */
#else
    putw(m, j, iw)                                                      /* MUTANT: plain write */
#endif
  }
}
inline flip(m) {
  atomic {
#ifndef MUT_PLAINCONV
    if :: h0[m] == EP0 && w[(m)*E] != 0 && w[(m)*E+1] != 0 -> h0[m] = EP1 :: else -> skip fi
#else
    h0[m] = EP1
#endif
  }
}

/* image conversion of member m with images i0, i1 (one READ, 2 CAS, h0) */
inline convm(m) {
  atomic { if :: up[m] -> cr = h0[m]; c0 = w[(m)*E]; c1 = w[(m)*E+1] :: else -> cr = 9 fi };
  if
  :: cr == EP0 ->
     atomic {                                   /* the slot CASes of the batch */
       if :: c0 == 0 -> putimg(m, 0, c0, i0) :: else -> skip fi;
       if :: c1 == 0 -> putimg(m, 1, c1, i1) :: else -> skip fi
     };
     flip(m)
  :: else -> skip
  fi;
  skip;
  d_step { cr = 0; c0 = 0; c1 = 0 }
}

/* laggard conversion of member m from src's words s0, s1 (read), m's words
   as read r0, r1: install the implied decided values where higher */
inline lagw(m, j, rw, sw) {
#ifndef MUT_COPYF
  c0 = IMPL(sw);
#else
  c0 = W(1, STG(sw), WENT(sw));        /* MUTANT: F's own value as decided */
#endif
  atomic {
    if :: (rw == 0 || RANK(c0) > RANK(rw)) && w[(m)*E+(j)] == (rw) -> putw(m, j, c0)
       :: else -> skip fi
  };
  c0 = 0
}
inline lagconv(m, s0, s1, r0, r1) {
  atomic { lagw(m, 0, r0, s0); lagw(m, 1, r1, s1) };
  flip(m)
}

#define HC_LOCALS byte j; byte s; byte x; bool won; byte vw[E]; byte i0; byte i1; \
  byte cr; byte c0; byte c1; byte mm; byte tmo = 0; byte q1; byte q2

/* help_compact: freeze every slot, then convert every member by the image */
inline help_compact() {
  j = 0;
  do
  :: j < E ->
     do
     :: atomic { s = pst[j]; x = pval[j] };
        if
        :: ISFRZ(x) -> vw[j] = x; break
        :: else ->
           ppropose(j, s + 1, (x | FRZ), won);
#ifdef MUT_EARLYCONV
           vw[j] = x | FRZ; break             /* MUTANT: own proposal as the content */
#endif
           skip
        fi
     od;
     j++
  :: else -> break
  od;
  skip;
  d_step { i0 = IMG(vw[0]); i1 = IMG(vw[1]); j = 0; s = 0; x = 0; won = false; vw[0] = 0; vw[1] = 0 }
  mm = 0;
  do
  :: mm < N ->
     if
     :: convm(mm)
     :: tmo < TMO -> tmo++
     fi;
     mm++
  :: else -> break
  od;
  skip;
  d_step { mm = 0; i0 = 0; i1 = 0 }
}

/* ---- the quorum read ---- */
#define RD_LOCALS byte ra; byte rb; byte rc; byte eh[N]; byte ew[N*E]; byte ep; \
  byte hc[E]; byte fw[E]; byte pv[E]; byte src; byte n1; byte n0a; byte n0b; byte nl

inline rdm(m) {
  if :: up[m] -> eh[m] = h0[m]; ew[(m)*E] = w[(m)*E]; ew[(m)*E+1] = w[(m)*E+1] :: else -> eh[m] = 0 fi
}
/* best C word and best F word above it of slot jj among members live at e+1 read */
inline hcof(jj) {
  hc[jj] = 0; fw[jj] = 0;
  if :: eh[0] == EP1 -> if :: RANK(IMPL(ew[jj])) > RANK(hc[jj]) || hc[jj] == 0 -> hc[jj] = IMPL(ew[jj]) :: else -> skip fi :: else -> skip fi;
  if :: eh[1] == EP1 -> if :: RANK(IMPL(ew[E+jj])) > RANK(hc[jj]) || hc[jj] == 0 -> hc[jj] = IMPL(ew[E+jj]) :: else -> skip fi :: else -> skip fi;
  if :: eh[2] == EP1 -> if :: RANK(IMPL(ew[2*E+jj])) > RANK(hc[jj]) || hc[jj] == 0 -> hc[jj] = IMPL(ew[2*E+jj]) :: else -> skip fi :: else -> skip fi;
  if :: eh[0] == EP1 && !ISC(ew[jj]) && RANK(ew[jj]) > RANK(hc[jj]) -> fw[jj] = ew[jj] :: else -> skip fi;
  if :: eh[1] == EP1 && !ISC(ew[E+jj]) && RANK(ew[E+jj]) > RANK(hc[jj]) -> fw[jj] = ew[E+jj] :: else -> skip fi;
  if :: eh[2] == EP1 && !ISC(ew[2*E+jj]) && RANK(ew[2*E+jj]) > RANK(hc[jj]) -> fw[jj] = ew[2*E+jj] :: else -> skip fi
}
/* the epoch the answers settle (in the step of the last READ); oneq: an
   update under MUT_ONEQUORUM (one member live at e+1 will do) */
inline decide(oneq) {
  n1 = (eh[0] == EP1) + (eh[1] == EP1) + (eh[2] == EP1);
  n0a = (eh[0] == EP0 && ew[0] == 0) + (eh[1] == EP0 && ew[E] == 0) + (eh[2] == EP0 && ew[2*E] == 0);
  n0b = (eh[0] == EP0 && ew[1] == 0) + (eh[1] == EP0 && ew[E+1] == 0) + (eh[2] == EP0 && ew[2*E+1] == 0);
  nl = (eh[0] != 0) + (eh[1] != 0) + (eh[2] != 0);
  src = (eh[0] == EP1 -> 0 : (eh[1] == EP1 -> 1 : (eh[2] == EP1 -> 2 : 9)));
  if
  :: n1 >= F1 -> ep = EP1; hcof(0); hcof(1)
#ifdef MUT_ONEQUORUM
  :: n1 == 1 && oneq -> ep = EP1; hcof(0); hcof(1)              /* MUTANT */
#endif
  :: else ->
     if
     :: n0a >= F1 && n0b >= F1 -> ep = EP0; pv[0] = pval[0]; pv[1] = pval[1]
#ifdef MUT_MIXREAD
     :: else -> if :: nl >= F1 && n0a >= 1 && n0b >= 1 -> ep = EP0; pv[0] = pval[0]; pv[1] = pval[1]   /* MUTANT */
                   :: else -> ep = 0 fi
#else
     :: else -> ep = 0
#endif
     fi
  fi
}
/* the lookup's read: one step per member */
inline qread(oneq) {
  if :: ra = 0; rb = 1; rc = 2 :: ra = 0; rb = 2; rc = 1 :: ra = 1; rb = 2; rc = 0 fi;
  atomic { rdm(ra) };
  atomic { rdm(rb); decide(oneq) };
  if
  :: ep == 0 -> atomic { rdm(rc); decide(oneq) }
  :: else -> skip
  fi
}
/* an update's read: its READs as one step (-DSLOWUPD: one step per member,
   as the lookup's); the update acts on it later, by CAS */
inline uread() {
#ifdef SLOWUPD
  qread(true)
#else
  atomic {
    if :: ra = 0; rb = 1; rc = 2 :: ra = 0; rb = 2; rc = 1 :: ra = 1; rb = 2; rc = 0 fi;
    rdm(ra); rdm(rb); decide(true);
    if :: ep == 0 -> rdm(rc); decide(true) :: else -> skip fi
  }
#endif
}
inline rdclear() {
  d_step { ra = 0; rb = 0; rc = 0; eh[0] = 0; eh[1] = 0; eh[2] = 0;
           ew[0] = 0; ew[1] = 0; ew[2] = 0; ew[3] = 0; ew[4] = 0; ew[5] = 0;
           ep = 0; hc[0] = 0; hc[1] = 0; fw[0] = 0; fw[1] = 0; pv[0] = 0; pv[1] = 0;
           src = 0; n1 = 0; n0a = 0; n0b = 0; nl = 0 }
}
/* no epoch settled: convert the laggards read from a member live at e+1
   read, else help the compaction */
inline help() {
  if
  :: src != 9 ->
     if :: eh[0] == EP0 -> lagconv(0, ew[src*E], ew[src*E+1], ew[0], ew[1]) :: else -> skip fi;
     if :: eh[1] == EP0 -> lagconv(1, ew[src*E], ew[src*E+1], ew[E], ew[E+1]) :: else -> skip fi;
     if :: eh[2] == EP0 -> lagconv(2, ew[src*E], ew[src*E+1], ew[2*E], ew[2*E+1]) :: else -> skip fi
  :: else -> rdclear(); help_compact()
  fi;
  skip;
  rdclear()
}

proctype Compactor() {
  HC_LOCALS;
  help_compact()
}

/* remover of entry ent (key KEYOF(ent)) in slot js (its slot at e and at e+1) */
proctype Remover(byte ent; byte js; byte oi) {
  HC_LOCALS; RD_LOCALS; byte r;
  obsbegin(oi, KEYOF(ent));
again:
  uread();
  if
  :: ep == 0 -> help(); goto again
  :: ep == EP0 ->
     if
     :: pv[js] == PV(LIVE, 0, ent) ->
        rdclear();
        ppropose(js, 2, PV(DEAD, 0, ent), won);
        if :: won -> goto done :: else -> won = false; goto again fi
     :: KIND(pv[js]) == LIVE -> rdclear(); help_compact(); goto again    /* FROZEN-LIVE */
     :: else -> assert(WITNESS(oi, 0)); goto done                        /* ENOENT */
     fi
  :: ep == EP1 ->
     if
     :: hc[js] == W(1, 1, ent) ->
        strayf(js, W(1, 1, ent), W(0, 2, ent));
        rdclear();
        cstep(js, 2, W(1, 2, ent), r);
        if :: r == W(1, 2, ent) -> goto done :: else -> r = 0; goto again fi
     :: else -> assert(WITNESS(oi, 0)); goto done                        /* ENOENT */
     fi
  fi;
done:
  oact[oi] = false
}

#ifdef SETTLE
/* the victim's post: what may land after it stopped (one at a time) */
inline vpost(k, pt, ps, pw) {
  if :: _pid == vpid -> atomic { vpk = k; vpt = pt; vps = ps; vpw = pw } :: else -> skip fi
}
inline vclr() {
  if :: _pid == vpid -> vpk = 0; vpt = 0; vps = 0; vpw = 0 :: else -> skip fi
}
#endif

/* inserter of k at its own location ent (order(k) = slot 0, slot 1);
   -DSETTLE: the one run with pid vpid is the victim (stops at any step) */
proctype Inserter(byte ent; byte oi) {
  HC_LOCALS; RD_LOCALS; byte r; byte t; byte u; byte r2;
  obsbegin(oi, KK);
#ifdef SETTLE
again: {                       /* the victim's body, left at any step (unless) */
#else
again:
#endif
  uread();
  if
  :: ep == 0 -> help(); goto again
  :: ep == EP0 ->
     if
     :: KIND(pv[0]) == LIVE && KEYOF(PENT(pv[0])) == KK || KIND(pv[1]) == LIVE && KEYOF(PENT(pv[1])) == KK ->
        assert(WITNESS(oi, 1)); goto done                                /* EXISTS */
#ifdef SETTLE
     /* the bucket has an EMPTY slot at e (no slot frozen): propose LIVE(k,
        ent) at stage 1 of the first one in order(k) (slot 0 is never EMPTY
        at e here, so the slots before it are decided) */
     :: !ISFRZ(pv[0]) && !ISFRZ(pv[1]) && (KIND(pv[0]) == EMPTY || KIND(pv[1]) == EMPTY) ->
        t = (KIND(pv[0]) == EMPTY -> 0 : 1);
        rdclear();
        vpost(1, t, 1, PV(LIVE, 0, ent));
        atomic { ppropose(t, 1, PV(LIVE, 0, ent), won); vclr() };
        t = 0;
        if :: won -> won = false; goto done :: else -> goto again fi   /* OK (asserted absent) / rescan */
#endif
     :: else -> rdclear(); help_compact(); goto again                   /* full (or frozen): compact */
     fi
  :: ep == EP1 ->
#if defined(SETTLE) && !defined(SETTLE_HELP) && !defined(VICTIM_E1)
     /* a victim that read e+1 stops here: a settle after it finds e+1 and
        is beyond the bound (VOUT) whatever it does next (-DVICTIM_E1: it
        goes on) */
     if :: _pid == vpid -> rdclear(); goto done :: else -> skip fi;
#endif
     /* the target: first decided EMPTY in order(k) */
     t = (STG(hc[0]) == 0 -> 0 : (STG(hc[1]) == 0 -> 1 : 9));
#ifndef MUT_NOSCAN
     if
     :: fw[0] != 0 && KEYOF(WENT(fw[0])) == KK -> t = 10 + 0            /* resolve first */
     :: fw[1] != 0 && KEYOF(WENT(fw[1])) == KK -> t = 10 + 1
     :: WLIVEK(hc[0]) || WLIVEK(hc[1]) -> assert(WITNESS(oi, 1)); goto done   /* EXISTS */
     :: else -> skip
     fi;
#else
     /* MUTANT: the slots up to the target only */
     if
     :: WLIVEK(hc[0]) -> assert(WITNESS(oi, 1)); goto done
     :: t != 0 && WLIVEK(hc[1]) -> assert(WITNESS(oi, 1)); goto done
     :: else -> skip
     fi;
#endif
     if
     :: t >= 10 ->
        t = t - 10; u = STG(fw[t]); r = W(1, u, WENT(fw[t])); rdclear();
#ifdef SETTLE
        vpost(2, t, u, r);
        atomic { cstep(t, u, r, r2); vclr() };        /* complete the stage in progress */
#else
        cstep(t, u, r, r2);                           /* complete the stage in progress */
#endif
        r = 0; r2 = 0; u = 0; t = 0; goto again
     :: t == 9 -> goto done                                              /* FULL (no 2nd compaction) */
     :: else ->
        strayf(t, C0, W(0, 1, ent));
        rdclear();
#ifdef SETTLE
        vpost(2, t, 1, W(1, 1, ent));
        atomic { cstep(t, 1, W(1, 1, ent), r); vclr() };
#else
        cstep(t, 1, W(1, 1, ent), r);
#endif
        if
        :: r == W(1, 1, ent) -> goto done                                /* OK (asserted absent) */
        :: r != 0 && WLIVEK(r) -> assert(WITNESS(oi, 1)); goto done      /* k inserted by another */
        :: else -> r = 0; t = 0; goto again
        fi
     fi
  fi;
done:
  oact[oi] = false
#ifdef SETTLE
  } unless {
    /* the victim stopped: it takes no step of its own any more; its last
       post lands at any later time, or never */
    atomic {
      _pid == vpid && vstop;
      rdclear();
      d_step { j = 0; s = 0; x = 0; won = false; vw[0] = 0; vw[1] = 0; i0 = 0; i1 = 0;
               cr = 0; c0 = 0; c1 = 0; mm = 0; tmo = 0; q1 = 0; q2 = 0; r = 0; t = 0; u = 0; r2 = 0 }
    };
    /* (a landing after every other step stands for "never": no check
       depends on the end) */
    if
    :: vpk == 1 -> ppropose(vpt, 1, vpw, won)
    :: vpk == 2 -> cstep(vpt, vps, vpw, r)
    :: vpk == 0 -> skip
    fi;
    d_step { vpk = 0; vpt = 0; vps = 0; vpw = 0; won = false; r = 0 }
  }
#endif
}

proctype Lookup() {
  HC_LOCALS; RD_LOCALS; byte k; bool pres;
  if :: k = KX :: k = KK fi;
  obsbegin(0, k);
again:
  qread(false);
  if
  :: ep == 0 -> help(); goto again
  :: ep == EP0 ->                                  /* frozen content counts */
     pres = (KIND(pv[0]) == LIVE && KEYOF(PENT(pv[0])) == k) || (KIND(pv[1]) == LIVE && KEYOF(PENT(pv[1])) == k)
  :: ep == EP1 ->
     pres = (hc[0] != 0 && ISC(hc[0]) && STG(hc[0]) == 1 && KEYOF(WENT(hc[0])) == k) ||
            (hc[1] != 0 && ISC(hc[1]) && STG(hc[1]) == 1 && KEYOF(WENT(hc[1])) == k)
  fi;
  assert(WITNESS(0, pres));                         /* linearizable */
#ifdef SETTLE
  /* a lookup returns L only while L is chosen (never after "dead") */
  assert(!(pres && k == KK &&
           (ep == EP0 && (KIND(pv[0]) == LIVE && PENT(pv[0]) == LENT || KIND(pv[1]) == LIVE && PENT(pv[1]) == LENT) ||
            ep == EP1 && (ISC(hc[0]) && WLIVEL(hc[0]) || ISC(hc[1]) && WLIVEL(hc[1]))) &&
           (!lch || verd == VDEAD)));
#endif
  oact[0] = false
}

#ifdef SETTLE
/* L mapped by the settler's last read */
inline lmapped() {
  if
  :: ep == EP0 -> pres = (KIND(pv[0]) == LIVE && PENT(pv[0]) == LENT) || (KIND(pv[1]) == LIVE && PENT(pv[1]) == LENT)
  :: else -> pres = (ISC(hc[0]) && WLIVEL(hc[0])) || (ISC(hc[1]) && WLIVEL(hc[1]))
  fi
}
/* the verdict "dead": L is not chosen and no word of the bucket carries
   LIVE(k, L) (at e: no slot decided LIVE or FROZEN-LIVE(k, L); at e+1: no
   C or F word of it on any member); every later write asserts the same */
inline chkdead() {
  assert(!lch);
  assert(!(KIND(pval[0]) == LIVE && PENT(pval[0]) == LENT) && !(KIND(pval[1]) == LIVE && PENT(pval[1]) == LENT));
#ifndef SETTLE_HELP
  assert(!WLIVEL(w[0]) && !WLIVEL(w[1]) && !WLIVEL(w[2]) && !WLIVEL(w[3]) && !WLIVEL(w[4]) && !WLIVEL(w[5]))
#else
  /* C words only: the trail then goes on to a choice of L */
  assert(!(ISC(w[0]) && WLIVEL(w[0])) && !(ISC(w[1]) && WLIVEL(w[1])) && !(ISC(w[2]) && WLIVEL(w[2])) &&
         !(ISC(w[3]) && WLIVEL(w[3])) && !(ISC(w[4]) && WLIVEL(w[4])) && !(ISC(w[5]) && WLIVEL(w[5])))
#endif
}

/* the settle of the victim's insert of k at L, run once it stopped:
   (1) lookup k: L -> "mapped"; (2) else freeze every slot and compact the
   incarnation found (help_compact); (3) lookup again: L -> "mapped", else
   "dead". The model has one compaction (e -> e+1): a settle whose lookup
   (1) finds e+1 would move the bucket on to e+2, beyond the bound; it
   ends there without a verdict (VOUT). -DSETTLE_HELP: it goes on with
   help_compact (a no-op, e is over) and the second lookup, the settle as
   "help the compaction" rather than "move the incarnation found on". */
proctype Settler() {
  HC_LOCALS; RD_LOCALS; bool pres;
  vstop = true;                                    /* the insert has stopped */
s1:
  qread(false);
  if :: ep == 0 -> help(); goto s1 :: else -> skip fi;
  lmapped();
  if
  :: pres -> atomic { assert(lch); verd = VMAPPED }; goto sdone
  :: else -> lpend1 = true
  fi;
#ifndef SETTLE_HELP
  if :: ep == EP1 -> verd = VOUT; goto sdone :: else -> skip fi;
#endif
  rdclear();
#ifndef MUT_SKIPCONV
  help_compact();
#if TMO == 0
  assert((h0[0] == EP1) + (h0[1] == EP1) + (h0[2] == EP1) >= F1);   /* the conversion completed */
#endif
s2:
  qread(false);
  if :: ep == 0 -> help(); goto s2 :: else -> skip fi;
  lmapped();
#endif
  atomic {
    if
    :: pres -> assert(lch); verd = VMAPPED
    :: else -> chkdead(); verd = VDEAD
    fi;
#if REACH == 1
    assert(!(verd == VMAPPED && lpend1));          /* reach: L chosen after lookup 1 missed it */
#elif REACH == 2
    assert(!(verd == VDEAD && vpk == 1));          /* reach: "dead" with the victim's e proposal still in flight */
#elif REACH == 3
    assert(!(verd == VDEAD && vpk == 2));          /* reach: "dead" with an e+1 step of the victim in flight */
#endif
    skip
  };
sdone:
  rdclear();
  pres = false
}
#endif

#ifdef LAG
proctype Up() {
  up[2] = true
}
#endif

init {
  atomic {
    pst[0] = 1; pval[0] = PV(LIVE, 0, EX);       /* slot 0: LIVE(x) */
#ifndef SETTLE
    pst[1] = 1; pval[1] = PV(LIVE, 0, EK0);      /* slot 1: LIVE(k) */
#else
    pst[1] = 0; pval[1] = PV(EMPTY, 0, 0);       /* slot 1: EMPTY (k absent) */
#endif
    h0[0] = EP0; h0[1] = EP0; h0[2] = EP0;
    up[0] = true; up[1] = true;
#ifndef LAG
    up[2] = true;
#else
    run Up();
#endif
#ifndef SETTLE
    abs[KX] = 1; abs[KK] = 1;
    run Compactor(); run Remover(EX, 0, 3);
#ifndef NOINS
    run Inserter(EK1, 1);
#endif
#else
    abs[KX] = 1; abs[KK] = 0;
#ifndef NOCOMPACTOR
    run Compactor();
#endif
#ifndef NORMX
    run Remover(EX, 0, 3);
#endif
    vpid = run Inserter(EK1, 1);                 /* the victim: k at L */
    run Settler();
#endif
#ifndef NOLOOK
    run Lookup();
#endif
#ifdef RMK
    run Remover(EK0, 1, 4);
#endif
#ifdef INS2
    run Inserter(EK2, 2);
#endif
  }
}
