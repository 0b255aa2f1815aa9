/* kv/spin/m12.pml -- M12: the rebuild of a lost node's VALUE words
   (kv_rebuild, kv/src/store/rebuild.c; kv/DESIGN.md "Store: durability",
   the node whose pool was LOST). M5 models the index's rebuild; this is
   the store's: SWARM's metadata slots (max registers), the first delete
   word and a timestamp-lock word, rebuilt on node T from the two others.

   The protocol (as specified for rebuild.c): node T = 2 loses its pool at
   any moment (every word 0, no superblock: not admitted, nobody posts to
   it or counts it; a batch posted to it before the loss landed before the
   loss, and is gone with the pool, or never lands). Clients go on with
   nodes 0 and 1 (every round then needs both). The rebuilder, started
   after the loss:
     1. waits the grace G (in C: lease + operation timeout), modelled as
        its condition: every operation in progress at the loss has ended
        (it counts no reply after its deadline); -DMUT_NOGRACE: no wait;
     2. reads nodes 0 and 1 (one atomic READ of the object's words per
        node, the two in either order, interleaved with the clients) and
        writes T: each slot word the MAX of the two (-DMUT_MIN: the min),
        the lock word the MAX (-DLKRULE=1: a READ and a WRITE word of one
        ts give a word that fails both modes, LBOTH, which C's encoding
        ts << 1 | mode cannot express), the first delete word the non-zero
        one if only one is non-zero, else by -DDLRULE: 0 node 0's (the
        lower member's, as specified), 1 node 1's, 2 a number no delete
        draws when the two differ ("poisoned");
     3. admits T: from then on clients count it (a round posts to any
        admitted node; -DMUT_EARLYADMIT: admitted right after the reads,
        before the copy is written).
   -DFIX (default 1) adds the condition the model needed (README, "Found
   by the models", m12_spec): FIX=1, the rebuilder admits T only once
   every operation in progress at its last read has ended (a second wait,
   one operation timeout after the reads); FIX=2, instead, an operation
   counts T only if T was admitted, in its current life, when the
   operation began; FIX=0, neither: the protocol as specified, which
   keeps P1 but breaks P2 and P3 (an operation begun after the loss and
   still running at the admission counts its own word that the rebuilder
   copied from a survivor, while another one decided before the loss with
   the lost node's old word; the survivors show the same in both orders,
   so no choice rule helps, DLRULE=1 fails too). DLRULE=2 keeps P2 and
   LKRULE=1 keeps P3 without FIX.

   C functions abstracted: kv_rebuild (rebuild.c: rb_run's grace, then
   rb_chunk's merge of each object, rb_max for metadata and lock words,
   rb_once for first delete words, and the superblock written last, which
   kv__st_admit waits for: C as built (ff3b312) is FIX=0, DLRULE=0);
   kv__sw_write's S6 CAS of its slot, sw_read with its write-back (of a
   tombstone: its first delete word first), kv__sw_delete's first delete
   CAS and tombstone, sw_trylock (swarm.c). Keep this list in step with
   the code.

   Models: one object, n = 3 nodes (f = 1). Per node: the slots of writers
   0 and 1 (sl[w*3+i]: 0, a key KEY(ts, w) = 2ts + w, ts 1 or 2, or w's
   tombstone KEY(3, w): the order (ts, writer); the VERIFIED flag adds
   nothing with one write per writer), the first delete word dl[i] (0 or
   the deleter's number j = w + 1, set once by CAS 0 -> j), and one
   timestamp-lock word lk[i] of one writer at one ts (0 bottom, 2 READ, 3
   WRITE: ts << 1 | mode). Clients 0 and 1: (-DWRITES=1) one write (ts 1
   or 2, chosen at invocation; a CAS up of its slot on f+1 nodes), then
   (-DDELS=1) one delete: CAS dl 0 -> j and (-DTOMB) its tombstone into
   its slot, node after node, until first on f+1 of its answers (won; its
   own number counts, as after a lost reply) or, with f+1 answered, until
   it gives up (its deadline). A reader: NRD reads, each the max over f+1
   nodes' slots, written back (CAS up of the top's slot) to nodes of its
   choice until f+1 hold it (the quorum's nodes that lack it, or others).
   -DLOCKS=1: a READ locker and a WRITE locker for the same ts (T3-T12):
   per node CAS bottom -> its word; its own word counts; the other mode
   fails the lock; decided with f+1 counted. The defaults (everything,
   NRD=1) are for bitstate; the exhaustive checks take one part each.
   Each step of a client is one post landing and answering on one
   admitted node not yet answered, chosen freely (a slow reply is a node
   not chosen yet; a round widens to any admitted node, T as soon as it
   is admitted), so every quorum order is covered; clients pause anywhere.
   -DLATE: one batch per run may be posted without its answer ever
   counting; it lands at any later time (after its operation ended too)
   or never, and one posted to T before the loss never lands after it.
   An operation that can no longer reach f+1 then gives up.
   Bound: 2 clients x (1 write + 1 delete), 1 reader x NRD reads, 2
   lockers at one ts, 1 loss of node 2 at any time, 1 rebuild (never
   itself lost or retried); at most one late batch; no lost replies or
   retries (M8), no crash with an intact pool (M7), no buffers or
   in-place copies (M9).

   Assertions: P1, a read returns a key at least as large as every write,
   completed delete (its tombstone on f+1) and read that completed before
   it began, and only a key someone posted; P2, two deletes never both
   won; P3, the READ and the WRITE lock of one ts never both decided. No
   process blocks for ever (invalid end states). The "M12" lines of a
   replay (spin -t -DFLAGS m12.pml | grep M12) narrate a trail.
   Planted bugs (must fail): MUT_NOGRACE (P1, P2, P3), MUT_EARLYADMIT
   (P1, P2, P3), MUT_MIN (P1). */
#define N 3
#define TN 2                       /* the node whose pool is lost */
#ifndef NRD
#define NRD 1
#endif
#ifndef FIX
#define FIX 1
#endif
#ifndef DLRULE
#define DLRULE 0
#endif
#ifndef WRITES
#define WRITES 1
#endif
#ifndef DELS
#define DELS 1
#endif
#ifndef LOCKS
#define LOCKS 1
#endif
#define POISON 3                   /* DLRULE=2: a first delete word no delete draws */

#define MX(a, b) ((a) > (b) -> (a) : (b))
#define MN(a, b) ((a) < (b) -> (a) : (b))
#define KEY(ts, w) ((ts) * 2 + (w))
#define TOMBTS 3                   /* a tombstone's ts: above every write's */
#define WR(k) ((k) % 2)
#define NB(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define LREAD 2
#define LWRITE 3
#define LBOTH 4                    /* LKRULE=1: a lock word failing both modes (not in C's encoding) */
#ifndef LKRULE
#define LKRULE 0
#endif

byte sl[6];                        /* sl[w*3+i]: writer w's slot on node i */
byte dl[N];                        /* first delete word */
byte lk[N];                        /* one writer's timestamp-lock word, one ts */
bool adm[N];                       /* counted by clients */
byte tinc = 0;                     /* T's life: 0 before the loss, 1 once re-admitted */
bool lost = false;

/* ghost */
byte opn = 0;                      /* bit p: an operation of process p is in progress */
byte pend = 0;                     /* ... and was at the loss (G1) */
byte pend2 = 0;                    /* ... and was at the rebuilder's last read (FIX=1) */
byte gmax = 0;                     /* largest key of a completed operation */
byte posted = 0;                   /* bit k: key k was posted by a client */
bool won[2];
bool dec[2];                       /* [0] READ lock decided, [1] WRITE lock */

/* T may be counted by an operation that began in T's life oi */
#if FIX == 2
#define TOK(oi) (adm[TN] && (oi) == tinc)
#else
#define TOK(oi) adm[TN]
#endif
/* the op's start: its view of T's life (255: T out) */
#define OPBEGIN(b, oi) opn = opn | (b); oi = (adm[TN] -> tinc : 255)
#define OPEND(b) opn = opn & ~(b); pend = pend & ~(b); pend2 = pend2 & ~(b)

/* some admitted node not in mask (a guard: pick below then never blocks) */
#define CANPICK(mask, oi) ((adm[0] && !((mask) & 1)) || (adm[1] && !((mask) & 2)) || (TOK(oi) && !((mask) & 4)))
/* one post landing on, and answering from, an admitted node not in mask */
inline pick(i, mask, oi) {
  if
  :: adm[0] && !((mask) & 1) -> i = 0
  :: adm[1] && !((mask) & 2) -> i = 1
  :: TOK(oi) && !((mask) & 4) -> i = 2
  fi
}

/* a write's or write-back's CAS up of v's slot on node i; the write-back
   of a tombstone claims the first delete word for its deleter first */
inline WBLAND(i, v) {
  if :: v / 2 == TOMBTS && dl[i] == 0 -> dl[i] = WR(v) + 1 :: else -> skip fi;
  sl[WR(v)*3+i] = MX(sl[WR(v)*3+i], v)
}

#ifdef LATE
/* one batch per run may be posted without its answer ever counting: it
   lands later (Net, at any time, after its operation ended too) or never;
   one posted to T before the loss never lands after it */
byte lt_i = 255;                   /* its node; 255 none yet, 254 landed or dropped */
byte lt_k;                         /* 0 CAS up of a slot, 1 a delete's batch, 2 a lock CAS */
byte lt_v;
bool lt_lost;
#define CANLATE(mask, oi) (lt_i == 255 && CANPICK(mask, oi))
inline latepost(i, mask, oi, kind, v) {
  pick(i, mask, oi); lt_i = i; lt_k = kind; lt_v = v; lt_lost = lost;
  printf("M12 a batch (kind %d, %d) to n%d is slow: its answer will not count\n", kind, v, i)
}
#endif

proctype Client(byte w) {
  byte k; byte ans = 0; byte na = 0; byte i; byte oi; byte tr = 0;
#if DELS
  byte nf = 0;
#endif
#if WRITES
  /* write: CAS its slot up to k on f+1 nodes */
  atomic {
    if :: k = KEY(1, w) :: k = KEY(2, w) fi;
    posted = posted | (1 << k);
    OPBEGIN(1 << w, oi)
  };
  do
  :: atomic {
       na < 2 && CANPICK(ans | tr, oi) ->
       pick(i, ans | tr, oi); sl[w*3+i] = MX(sl[w*3+i], k); ans = ans | (1 << i); na++;
       printf("M12 c%d write k%d lands on n%d\n", w, k, i)
     }
#ifdef LATE
  :: atomic { na < 2 && CANLATE(ans | tr, oi) -> latepost(i, ans | tr, oi, 0, k); tr = tr | (1 << i) }
  :: na < 2 && !CANPICK(ans | tr, oi) -> break        /* gives up at its deadline */
#endif
  :: na >= 2 -> break
  od;
  atomic {
    if :: na >= 2 -> gmax = MX(gmax, k); printf("M12 c%d write k%d done\n", w, k) :: else -> skip fi;
    OPEND(1 << w); ans = 0; na = 0; i = 0; tr = 0
  };
#endif
#if DELS
  /* delete: CAS dl 0 -> j (and the tombstone) node by node */
  atomic {
#ifdef TOMB
    posted = posted | (1 << KEY(TOMBTS, w));
#endif
    OPBEGIN(1 << w, oi)
  };
  do
  :: nf >= 2 -> break
  :: na >= 2 && nf < 2 -> break                       /* lost or split: gives up at its deadline */
  :: atomic {
       nf < 2 && CANPICK(ans | tr, oi) ->
       pick(i, ans | tr, oi);
       if
       :: dl[i] == 0 -> dl[i] = w + 1; nf++
       :: dl[i] == w + 1 -> nf++
       :: else -> skip
       fi;
#ifdef TOMB
       sl[w*3+i] = MX(sl[w*3+i], KEY(TOMBTS, w));
#endif
       printf("M12 c%d delete d%d lands on n%d: dl = %d, first on %d\n", w, w + 1, i, dl[i], nf);
       if :: nf >= 2 -> printf("M12 c%d delete WON\n", w); assert(!won[1-w]); won[w] = true :: else -> skip fi;   /* P2 */
       ans = ans | (1 << i); na++
     }
#ifdef LATE
  :: atomic { nf < 2 && CANLATE(ans | tr, oi) -> latepost(i, ans | tr, oi, 1, w + 1); tr = tr | (1 << i) }
  :: nf < 2 && !CANPICK(ans | tr, oi) -> break
#endif
  od;
  atomic {
#ifdef TOMB
    if :: na >= 2 -> gmax = MX(gmax, KEY(TOMBTS, w)) :: else -> skip fi;   /* its tombstone is on f+1 */
#endif
    printf("M12 c%d delete ends\n", w);
    OPEND(1 << w); ans = 0; na = 0; nf = 0; i = 0; tr = 0
  }
#endif
}

proctype Reader() {
  byte r = 0; byte r0; byte top; byte hold; byte ans; byte na; byte i; byte v; byte oi; byte tr = 0;
  do
  :: r < NRD ->
     atomic { r0 = gmax; top = 0; hold = 0; ans = 0; na = 0; OPBEGIN(4, oi); printf("M12 read %d begins (completed max k%d)\n", r, r0) };
     do
     :: atomic {
          na < 2 && CANPICK(ans, oi) ->
          pick(i, ans, oi);
          v = MX(sl[i], sl[3+i]);
          printf("M12 read %d: n%d shows k%d\n", r, i, v);
          if
          :: v > top -> top = v; hold = 1 << i
          :: v == top -> hold = hold | (1 << i)
          :: else -> skip
          fi;
          ans = ans | (1 << i); na++; v = 0
        }
     :: na >= 2 -> break
     od;
     /* write-back until f+1 nodes hold top */
     do
     :: atomic {
          NB(hold) < 2 && CANPICK(hold | tr, oi) ->
          pick(i, hold | tr, oi); WBLAND(i, top); hold = hold | (1 << i);
          printf("M12 read %d writes k%d back on n%d\n", r, top, i)
        }
#ifdef LATE
     :: atomic { NB(hold) < 2 && CANLATE(hold | tr, oi) -> latepost(i, hold | tr, oi, 0, top); tr = tr | (1 << i) }
     :: NB(hold) < 2 && !CANPICK(hold | tr, oi) -> break   /* gives up: no return */
#endif
     :: NB(hold) >= 2 -> break
     od;
     atomic {
       if
       :: NB(hold) >= 2 ->
          printf("M12 read %d returns k%d\n", r, top);
          assert(top >= r0);                          /* P1: not older than a completed op */
          assert(top == 0 || ((posted >> top) & 1));  /* P1: a key someone posted */
          gmax = MX(gmax, top)
       :: else -> skip
       fi;
       OPEND(4);
       r++; r0 = 0; top = 0; hold = 0; ans = 0; na = 0; i = 0; tr = 0
     }
  :: else -> break
  od
}

#if LOCKS
/* m = 0 READ, 1 WRITE: CAS bottom -> LREAD + m per node; the other mode fails it */
proctype Locker(byte m) {
  byte ans = 0; byte nok = 0; bool bad = false; byte i; byte oi; byte tr = 0;
  atomic { OPBEGIN(8 << m, oi) };
  do
  :: nok >= 2 || bad -> break
  :: atomic {
       nok < 2 && !bad && CANPICK(ans | tr, oi) ->
       pick(i, ans | tr, oi);
       if
       :: lk[i] == 0 -> lk[i] = LREAD + m; nok++
       :: lk[i] == LREAD + m -> nok++
       :: else -> bad = true
       fi;
       printf("M12 lock mode %d (0 READ, 1 WRITE) on n%d: lk = %d, bad %d\n", m, i, lk[i], bad);
       if :: nok >= 2 -> printf("M12 lock mode %d DECIDED\n", m); assert(!dec[1-m]); dec[m] = true :: else -> skip fi;   /* P3 */
       ans = ans | (1 << i)
     }
#ifdef LATE
  :: atomic { nok < 2 && !bad && CANLATE(ans | tr, oi) -> latepost(i, ans | tr, oi, 2, LREAD + m); tr = tr | (1 << i) }
  :: nok < 2 && !bad && !CANPICK(ans | tr, oi) -> break
#endif
  od;
  atomic { OPEND(8 << m); ans = 0; nok = 0; bad = false; i = 0; tr = 0 }
}
#endif

#ifdef LATE
proctype Net() {
end:
  atomic {
    lt_i < 254 ->
    if
    :: lt_i == TN && lost && !lt_lost ->
       printf("M12 the slow batch to n2 is dropped (posted before the loss)\n")
    :: else ->
       printf("M12 the slow batch lands on n%d\n", lt_i);
       if
       :: lt_k == 0 -> WBLAND(lt_i, lt_v)
       :: lt_k == 1 ->
          if :: dl[lt_i] == 0 -> dl[lt_i] = lt_v :: else -> skip fi;
#ifdef TOMB
          sl[(lt_v-1)*3+lt_i] = MX(sl[(lt_v-1)*3+lt_i], KEY(TOMBTS, lt_v-1));
#endif
          skip
       :: lt_k == 2 -> if :: lk[lt_i] == 0 -> lk[lt_i] = lt_v :: else -> skip fi
       fi
    fi;
    lt_i = 254; lt_k = 0; lt_v = 0; lt_lost = false
  }
}
#endif

proctype Loss() {
  atomic {
    sl[TN] = 0; sl[3+TN] = 0; dl[TN] = 0; lk[TN] = 0;
    adm[TN] = false; lost = true; pend = opn;
    printf("M12 LOSS of n2\n")
  }
}

proctype Rebuilder() {
  byte a0; byte a1; byte ad; byte al; byte b0; byte b1; byte bd; byte bl; byte rd = 0;
  byte v0; byte v1; byte vd; byte vl;
  lost;
#ifndef MUT_NOGRACE
  pend == 0;                                          /* G: every op begun before the loss ended */
#endif
  do
  :: atomic {
       !(rd & 1) -> a0 = sl[0]; a1 = sl[3]; ad = dl[0]; al = lk[0]; rd = rd | 1; if :: rd == 3 -> pend2 = opn :: else -> skip fi;
       printf("M12 rebuilder reads n0: slots k%d k%d, dl %d, lk %d\n", a0, a1, ad, al)
     }
  :: atomic {
       !(rd & 2) -> b0 = sl[1]; b1 = sl[4]; bd = dl[1]; bl = lk[1]; rd = rd | 2; if :: rd == 3 -> pend2 = opn :: else -> skip fi;
       printf("M12 rebuilder reads n1: slots k%d k%d, dl %d, lk %d\n", b0, b1, bd, bl)
     }
  :: rd == 3 -> break
  od;
  skip;                                               /* (no jump into the d_step) */
#ifdef MUT_EARLYADMIT
  atomic { adm[TN] = true; tinc = 1; printf("M12 n2 admitted (before the copy)\n") };   /* MUTANT */
#endif
  d_step {
#ifdef MUT_MIN
    v0 = MN(a0, b0); v1 = MN(a1, b1);                 /* MUTANT */
#else
    v0 = MX(a0, b0); v1 = MX(a1, b1);
#endif
    vl = MX(al, bl);
#if LKRULE == 1
    if :: al + bl == LREAD + LWRITE && al != 0 && bl != 0 -> vl = LBOTH :: else -> skip fi;
#endif
    if
    :: ad == 0 -> vd = bd
    :: ad != 0 && bd == 0 -> vd = ad
    :: ad != 0 && bd != 0 ->
#if DLRULE == 0
       vd = ad
#elif DLRULE == 1
       vd = bd
#else
       if :: ad == bd -> vd = ad :: else -> vd = POISON fi
#endif
    fi
  };
  atomic {                                            /* the copy: CAS up, CAS 0 -> vd */
    sl[TN] = MX(sl[TN], v0); sl[3+TN] = MX(sl[3+TN], v1);
    if :: dl[TN] == 0 -> dl[TN] = vd :: else -> skip fi;
    lk[TN] = MX(lk[TN], vl);
    printf("M12 rebuilder writes n2: slots k%d k%d, dl %d, lk %d\n", sl[TN], sl[3+TN], dl[TN], lk[TN])
  };
#if FIX == 1 && !defined(MUT_EARLYADMIT)
  pend2 == 0;                                         /* every op begun before the last read ended */
#endif
#ifndef MUT_EARLYADMIT
  atomic { adm[TN] = true; tinc = 1; printf("M12 n2 admitted\n") }
#endif
}

init {
  atomic {
    adm[0] = true; adm[1] = true; adm[2] = true;
    run Client(0); run Client(1);
#if NRD > 0
    run Reader();
#endif
#if LOCKS
    run Locker(0); run Locker(1);
#endif
#ifdef LATE
    run Net();
#endif
    run Loss(); run Rebuilder()
  }
}
