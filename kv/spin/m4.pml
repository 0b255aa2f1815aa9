/* kv/spin/m4.pml -- M4: bucket split with deterministic child addresses
   (FCP design study, kv_index_design.md in the team notes, sections 4.5.6,
   4.7 "client crash mid-split" and Lemma 5; the protocol modelled is the one
   kv/src/index/split.c implements, which differs from the study's 4.5.6 in
   where the children live and how they are written).

   Models: one parent bucket B (bucket 1, depth 0) of E = 2 slots plus its
   forward word h1, replicated on n = 3 members (f = 1); its two children
   (buckets 2 and 3, depth 1) at fixed addresses, all-zero (invalid) until
   installed. help_split(B):
     (F) freeze every slot by per-slot consensus (FROZEN-x at the stage after
         the slot's decided value x), racing an insert at stage 1 and a
         remove at stage 2; a lost freeze is retried at the next stage;
     (B) once every slot is decided frozen, compute the children from the
         decided frozen content (FROZEN-LIVE entries routed by hash bit 0,
         DEAD/EMPTY dropped) and install them on every member: per word
         CAS(0 -> initial word), the child's h0 CASed last in the member's
         batch; a CAS that finds a nonzero word leaves it;
     (D) after the children are installed on >= f+1 members, CAS h1
         NONE -> FWD on every member (FWD is the only value ever proposed).
   Clients: the splitter (stalls or crashes at any point, leaving the rest to
   helpers), an inserter of key k (hash bit 0 = 1: child 3), a remover of key
   a (slot 0 starts LIVE(a); hash bit 0 = 0: child 2), one lookup of a or k
   (chosen at its start). Inserts and removes that meet a frozen slot run
   help_split and retry in the child; a client may also go straight to a
   child from a cached depth hint, which exists once FWD is on f+1 members
   (a directory entry is written after FWD; -DHINT_EARLY instead lets a hint
   be used as soon as the child is usable, i.e. f+1 valid h0). A bucket is
   usable only if >= f+1 members show a valid h0. A lookup on a frozen
   parent whose h1 replies show no FWD may answer from the frozen content
   (FROZEN-LIVE counts as present) or go to the child if usable; with a FWD
   reply it goes to the child.

   C functions abstracted: ix_freeze, ix_child_words, ix_install,
   kv__ix_forward_help and kv__ix_flip (kv/src/index/split.c), ix_locate
   (index.c). Per-slot consensus (kv__ix_fast,
   kv__ix_resolve, ix_commit in slot.c; kv__ix_analyse in analyse.c;
   kv__ix_choose in paxos.c) is abstracted, as M1/M2 check it:
   - parent slots: an atomic "first proposal wins" object per (slot, stage),
     as in M3; a client reads a slot's decided value in one step;
   - child slots: per-member words holding decided (C) words only, so that
     installs, overwrites and h0 validity are per member; a consensus step
     is one atomic step over a quorum Q of f+1 members with a valid h0
     (chosen nondeterministically): if Q shows the stage decided it is
     learnt, else the proposal is decided and C(stage, v) written on Q (the
     third member lags). Readers read f+1 valid members one verb at a time.
   - h1: per-member words NONE/FWD (one possible value, so no ballots).
   Bound: E = 2 (each child's slot 1 is EMPTY in every run and never
   proposed on, so only slot 0 of each child is represented; it is installed
   in the same step as slot 0), one split, keys a and k, one lookup; TMO
   (default 0) lets each helper skip one member's install/forward batch (a
   timeout). The per-member install batch is two steps: both children's slot
   words, then both h0 words (readers ignore a child on a member without
   h0, so the order among the slot words is invisible). Member batches of
   one helper are issued in the order 0, 1, 2 (members are symmetric).
   A crashed splitter is a splitter that never takes another step, which
   every interleaving already contains, so no crash process is needed.
   Durability, MN failures and the directory are not modelled (M1, M6).
   Asserts: (1) linearizability of the lookup against the abstract map
   (interval witness, as M2): an acknowledged insert is never lost, a
   returned remove stays removed; (2) uniqueness: never a LIVE(x) in the
   parent's unfrozen slots and in a child at once; (3) each installed child
   word equals the one computed from the decided frozen content, installed
   only after every slot is decided frozen; (4) child words never move down,
   and a consensus quorum of a child always shows its latest decided stage;
   (5) a FWD read implies a usable child. -DNODIRECT drops (3)-(4) so the
   mutants must be caught by their observable effect (1)-(2).
   Planted bugs (must fail): MUT_PLAIN (children installed with plain writes:
   a late helper overwrites a child that progressed), MUT_EARLY (children
   installed from the helper's own freeze proposals, before every freeze is
   decided), MUT_SKIPFROZEN (a lookup on a frozen parent without FWD ignores
   FROZEN-LIVE entries). The bug "a child is usable with one valid h0
   instead of f+1" is not a safety bug here: a member without a valid h0 has
   either zero (invalid) child words, which no quorum counts, or the
   installed creation words (h0 is last in its batch), which are decided and
   below every later word; so it is not planted.
   -DHINT_EARLY fails (README, "Found by the models"): a child must not be
   updated before FWD is on f+1 members of the parent. -DH1_ANALYSE fails
   too: with updates allowed once FWD is on f+1 members, a lookup must
   forward on any FWD word among its h1 replies; applying analyse's rule ii
   to h1 (one FWD word of f+1 replies = not chosen = NONE) loses updates. */
#define N   3
#define F1  2           /* f+1 */
#define E   2
#ifndef TMO
#define TMO 0           /* member batches a helper may skip (timeout) */
#endif

/* keys */
#define KA 1            /* in slot 0 at the start; hash bit 0 = 0 -> child 2 (X = 0) */
#define KK 2            /* inserted; hash bit 0 = 1 -> child 3 (X = 1) */

/* parent slot values: kind + FRZ flag + 8*key */
#define EMPTY 0
#define LIVE  1
#define DEAD  2
#define FRZ   4
#define PV(kind, frz, key) ((kind) + (frz) + 8*(key))
#define KIND(v) ((v) % 4)
#define ISFRZ(v) (((v) / 4) % 2)
#define KEY(v)  ((v) / 8)

byte pst[E];            /* decided stage of each parent slot */
byte pval[E];           /* decided value of that stage */
bool fwd[N];            /* parent h1 per member: false = C(0,NONE), true = F(1,FWD) */

/* child words, index X*N + m (X = 0: child 2, X = 1: child 3):
   0 = invalid (not installed), 1 = C(0,EMPTY), 2 = C(1,LIVE key), 3 = C(2,DEAD key) */
byte cw[2*N];
bool h0[2*N];
byte cdec[2];           /* ghost: highest decided child word (1 = initial EMPTY) */

/* ghost: abstract map and the lookup's interval witness */
byte abs[3];
byte seenMask = 0;
bool lact = false;
byte lkey = 0;

inline setabs(k, v) {
  abs[k] = v;
  if :: lact && lkey == k -> seenMask = seenMask | (1 << v) :: else -> skip fi
}

#define NFWD (fwd[0] + fwd[1] + fwd[2])
#define NH0(X) (h0[(X)*N] + h0[(X)*N+1] + h0[(X)*N+2])
#define ALLFRZ (ISFRZ(pval[0]) && ISFRZ(pval[1]))
/* initial word of child X's slot 0 computed from the decided frozen content:
   the FROZEN-LIVE entry routed to X (key a -> child 2 from slot 0, key k ->
   child 3 from slot 1, the only slots those keys can occupy) or EMPTY */
#define INITW(X, v0, v1) (((X) == 0 && (v0) == PV(LIVE, FRZ, KA)) || ((X) == 1 && (v1) == PV(LIVE, FRZ, KK)) -> 2 : 1)
/* a child's slot 0 holds LIVE(key) on some member */
#define CHLIVE(X) (cw[(X)*N] == 2 || cw[(X)*N+1] == 2 || cw[(X)*N+2] == 2)

/* uniqueness: never a LIVE(x) in an unfrozen parent slot and in its child at once */
inline chkuniq() {
  assert(!(pval[0] == PV(LIVE, 0, KA) && CHLIVE(0)));
  assert(!(pval[1] == PV(LIVE, 0, KK) && CHLIVE(1)))
}

/* parent per-(slot, stage) consensus: the first proposal at stage s wins.
   won = true if v was decided; the caller then reads the slot again. */
inline ppropose(j, s, v, won) {
  atomic {
    if
    :: pst[j] == (s) - 1 ->
       pst[j] = (s); pval[j] = (v); won = true;
       if :: (v) == PV(LIVE, 0, KK) -> setabs(KK, 1)
          :: (v) == PV(DEAD, 0, KA) -> setabs(KA, 0)
          :: else -> skip fi;
       chkuniq()
    :: else -> won = false
    fi
  }
}

/* child consensus step on child X slot 0: move it to word nw (stage nw-1).
   Q = f+1 members with a valid h0; blocks while fewer than f+1 are valid.
   res = the word the quorum shows after the step (nw if decided now or before). */
inline cstep(X, nw, res) {
  atomic {
    if
    :: h0[X*N+0] && h0[X*N+1] -> q1 = 0; q2 = 1
    :: h0[X*N+0] && h0[X*N+2] -> q1 = 0; q2 = 2
    :: h0[X*N+1] && h0[X*N+2] -> q1 = 1; q2 = 2
    fi;
    res = cw[X*N+q1]; if :: cw[X*N+q2] > res -> res = cw[X*N+q2] :: else -> skip fi;
#ifndef NODIRECT
    assert(res >= cdec[X]);          /* a quorum shows the latest decided stage */
#endif
    if
    :: res == nw - 1 ->
       cw[X*N+q1] = nw; cw[X*N+q2] = nw; res = nw;
       if :: nw > cdec[X] -> cdec[X] = nw :: else -> skip fi;
       if :: X == 1 && nw == 2 -> setabs(KK, 1)
          :: X == 0 && nw == 3 -> setabs(KA, 0)
          :: else -> skip fi;
       chkuniq()
    :: else -> skip
    fi;
    q1 = 0; q2 = 0
  }
}

/* install the initial words w0 (child 2) and w1 (child 3) on member m, and
   check them against the decided frozen content */
inline chkinit(X, w) {
#ifndef NODIRECT
  assert(ALLFRZ && w == INITW(X, pval[0], pval[1]))
#else
  skip
#endif
}
inline putword(X, m, w) {
#ifndef MUT_PLAIN
  if :: cw[X*N+m] == 0 -> cw[X*N+m] = w :: else -> skip fi     /* CAS(0 -> w) */
#else
#ifndef NODIRECT
  assert(cw[X*N+m] <= w);                                        /* child words never move down */
#endif
  cw[X*N+m] = w                                                  /* MUTANT: plain write */
#endif
}

#define HS_LOCALS byte j; byte s; byte x; bool won; byte m; byte w0; byte w1; byte inst; byte nf; \
  byte q1; byte q2; byte vw[E]; byte tmo = 0

/* help_split(B): anyone may run or resume it; it returns with FWD on >= f+1 members */
inline help_split() {
  /* (F) freeze every slot: propose FROZEN-x at the stage after the decided x */
  j = 0;
  do
  :: j < E ->
     do
     :: atomic { s = pst[j]; x = pval[j] };
        if
        :: ISFRZ(x) -> vw[j] = x; break
        :: else ->
           ppropose(j, s + 1, (x | FRZ), won);
#ifdef MUT_EARLY
           vw[j] = x | FRZ; break             /* MUTANT: take its own proposal as the content */
#endif
           skip                               /* won or lost: read the decided value again */
        fi
     od;
     j++
  :: else -> break
  od;
  /* (B) the children, a function of the decided frozen content */
  skip;
  d_step { w0 = INITW(0, vw[0], vw[1]); w1 = INITW(1, vw[0], vw[1]); j = 0; s = 0; x = 0; won = false }
  m = 0; inst = 0;
  do
  :: m < N ->
     if
     :: atomic { chkinit(0, w0); chkinit(1, w1); putword(0, m, w0); putword(1, m, w1); chkuniq() };
        atomic { h0[0*N+m] = true; h0[1*N+m] = true; inst++ }     /* h0 last: CAS(0 -> h0) */
     :: tmo < TMO -> tmo++                                       /* batch timed out */
     fi;
     m++
  :: else -> break
  od;
  assert(inst >= F1);
  /* (D) forward: FWD on every member */
  m = 0; nf = 0;
  do
  :: m < N ->
     if
     :: atomic { fwd[m] = true; nf++ }        /* CAS(NONE -> FWD) or already FWD */
     :: tmo < TMO -> tmo++
     fi;
     m++
  :: else -> break
  od;
  assert(nf >= F1);
  skip;
  d_step { m = 0; inst = 0; nf = 0; w0 = 0; w1 = 0; vw[0] = 0; vw[1] = 0 }
}

/* a cached depth hint to the child X may be used */
#ifdef HINT_EARLY
#define HINTOK(X) (NH0(X) >= F1)
#else
#define HINTOK(X) (NFWD >= F1)
#endif

proctype Splitter() {
  HS_LOCALS;
  help_split()
}

proctype Inserter() {
  HS_LOCALS; byte jj; byte v; byte r;
  if
  :: atomic { HINTOK(1) -> skip }; goto child       /* straight to the child from a hint */
  :: skip
  fi;
  /* RTT1: scan order(k) = (0, 1) in the parent */
  jj = 0;
  do
  :: jj < E ->
     atomic { v = pval[jj] };
     if
     :: ISFRZ(v) -> goto helpc
     :: v == PV(EMPTY, 0, 0) ->
        ppropose(jj, 1, PV(LIVE, 0, KK), won);
        if :: won -> goto done :: else -> goto helpc fi   /* lost only to a freeze */
     :: else -> jj++                                        /* LIVE(a) or DEAD(a): pass */
     fi
  :: else -> goto helpc                                     /* full: split */
  od;
helpc:
  skip;
  d_step { jj = 0; v = 0; won = false }
  help_split();
child:
  cstep(1, 2, r);
  assert(r == 2);                                           /* inserted (or k already there) */
done:
  skip
}

proctype Remover() {
  HS_LOCALS; byte v; byte r;
  if
  :: atomic { HINTOK(0) -> skip }; goto child
  :: skip
  fi;
  atomic { v = pval[0] };
  if
  :: v == PV(LIVE, 0, KA) ->
     ppropose(0, 2, PV(DEAD, 0, KA), won);
     if :: won -> goto done :: else -> skip fi             /* lost only to FROZEN-LIVE(a) */
  :: else -> skip                                          /* frozen */
  fi;
  d_step { v = 0; won = false }
  help_split();
child:
  cstep(0, 3, r);
  assert(r == 3);
done:
  skip
}

/* read child X from f+1 members with a valid h0, one verb per member; ok =
   false if fewer than f+1 members are valid; res = present (LIVE) or not */
#define RC_LOCALS byte ra; byte rb; byte rc; byte nv; byte mx; byte cwv; bool hv
inline readchild(X, ok, pres) {
  nv = 0; mx = 0;
  if :: ra = 0; rb = 1; rc = 2 :: ra = 0; rb = 2; rc = 1 :: ra = 1; rb = 2; rc = 0 fi;
  atomic { hv = h0[X*N+ra]; cwv = cw[X*N+ra] };
  if :: hv -> nv++; if :: cwv > mx -> mx = cwv :: else -> skip fi :: else -> skip fi;
  atomic { hv = h0[X*N+rb]; cwv = cw[X*N+rb] };
  if :: hv -> nv++; if :: cwv > mx -> mx = cwv :: else -> skip fi :: else -> skip fi;
  if
  :: nv < F1 ->                                             /* a member without h0: read the third */
     atomic { hv = h0[X*N+rc]; cwv = cw[X*N+rc] };
     if :: hv -> nv++; if :: cwv > mx -> mx = cwv :: else -> skip fi :: else -> skip fi
  :: else -> skip
  fi;
  ok = (nv >= F1); pres = (mx == 2);
  d_step { ra = 0; rb = 0; rc = 0; nv = 0; mx = 0; cwv = 0; hv = false }
}

proctype Lookup() {
  RC_LOCALS; byte X; byte k; bool ok; bool pres; bool sawf; byte p; byte q; byte v0;
  atomic {                                                   /* invocation */
    if :: k = KA; X = 0 :: k = KK; X = 1 fi;
    lkey = k; lact = true; seenMask = (1 << abs[k])
  };
  if
  :: goto viachild                                           /* a cached depth hint (usable child only) */
  :: skip
  fi;
parent:
  /* h1 from f+1 members (any pair), one verb each */
  if :: p = 0; q = 1 :: p = 0; q = 2 :: p = 1; q = 2 fi;
  atomic { sawf = fwd[p] };
#ifndef H1_ANALYSE
  atomic { sawf = sawf || fwd[q] };                          /* any FWD word: forward */
#else
  atomic { sawf = sawf && fwd[q] };    /* analyse on h1: one F(FWD) of 2 replies = rule ii, NONE */
#endif
  if
  :: sawf ->
     readchild(X, ok, pres);
     assert(ok);                                             /* FWD implies f+1 installed */
     goto ret
  :: else -> skip
  fi;
  d_step { p = 0; q = 0; sawf = false }
  /* the key's slot (the other slot never holds it in this bound): its decided value */
  atomic { v0 = pval[X] };
  if
  :: ISFRZ(v0) -> readchild(X, ok, pres); if :: ok -> goto ret :: else -> skip fi   /* child, if usable */
  :: skip
  fi;
#ifndef MUT_SKIPFROZEN
  pres = (v0 == PV(LIVE, 0, k) || v0 == PV(LIVE, FRZ, k));
#else
  pres = (v0 == PV(LIVE, 0, k));                              /* MUTANT: frozen content skipped */
#endif
  goto ret;
viachild:
  readchild(X, ok, pres);
  if :: !ok -> goto parent :: else -> skip fi;
ret:
  assert((seenMask >> pres) & 1);                            /* linearizable: held during the call */
  lact = false
}

init {
  atomic {
    pst[0] = 1; pval[0] = PV(LIVE, 0, KA);                   /* slot 0: LIVE(a), decided */
    pst[1] = 0; pval[1] = PV(EMPTY, 0, 0);                   /* slot 1: EMPTY */
    abs[KA] = 1; abs[KK] = 0;
    cdec[0] = 0; cdec[1] = 0;
    run Splitter(); run Inserter(); run Remover(); run Lookup()
  }
}
