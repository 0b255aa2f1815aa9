/* kv/spin/m8.pml -- M8: the KV store's DELETE protocol for one key, through
   possibly stale cached locations, with a per-node write-once "first
   deleter" word beside the tombstones.

   C functions abstracted (kv/src/store/): kv_delete (store.c: the lookup,
   kv_index_lookup_known, with or without the cached location's key read
   skipped: the same answer), remove(A) through the index and the result
   rule; with a cached deleter,
   the late re-lookup of the code before 2026-11-29) and kv__sw_delete (swarm.c: the tomb rounds on the object's
   memory nodes and the first-deleter word), with the tombstone read and
   write-back of kv_get / kv_insert on a mapped object and the index's
   lookup / remove / insert reduced to one atomic register. Keep this list in
   step with the code.

   Models: one key k. The index is one register MAP in {NONE, A, B}: lookup()
   reads it, remove(A) = CAS(A -> NONE), the insert of the new incarnation =
   CAS(NONE -> B). Incarnation A is mapped and live on every node at the
   start; B's own deletion is atomic (BST: LIVE -> DEAD, else ENOENT). Memory
   nodes c = 0, 1, 2 (n = 3, f = 1, majority 2); per node, for A, the
   first-deleter word dw[c] (0 or a deleter id, set once) and tomb[c] (bit
   j-1: deleter j's tombstone is in its metadata slot). A batch on one node
   is one atomic step { old := dw[c]; dw[c] := j if old == 0; tomb[c] |=
   bit(j) }.
   Deleters D1, D2 (ids 1, 2; uncached by default, as built: kv_delete
   always looks the key up; -DC1=1 / -DC2=1 makes one cached, as deletes
   were before 2026-11-29). Uncached: lookup; NONE -> ENOENT; B -> delete
   B; A -> go on. Cached: start on A (stale: A may be dead and B mapped
   already). Tomb
   rounds: targets {0, 1}; after a lost reply or an unreachable node all
   reachable nodes ("widen"); a round posts one batch to each unanswered
   target (landing in any order) and rounds repeat until 2 nodes answered.
   won = first[c] == j on 2 answered nodes, lost = the other id on 2.
   Neither, and a reachable node unanswered: rounds on those nodes until
   each answered or proved unreachable (a lost reply is retried; the code
   also waits, up to the operation's deadline, for a node that is down
   or reconnecting), then won/lost again. Then removed := remove(A); resA
   := won -> OK : (lost -> ENOENT : OK); return resA if uncached, won or
   removed; else lookup: NONE or A -> resA; B -> delete B, its result.
   Get G: lookup; NONE -> ABSENT; B -> FOUND iff LIVE; A -> read tomb[c] on
   2 reachable nodes (one step each, any order); none -> FOUND; else x := the
   largest writer id seen, write back { dw[c] := x if 0; tomb[c] |= bit(x) }
   on 2 or 3 reachable nodes (one step each, any order), remove(A), ABSENT.
   Insert I: lookup; B -> EXISTS; NONE -> CAS(NONE -> B), OK (only I inserts,
   so the CAS cannot fail after the lookup: one step); A -> read as G; none
   -> EXISTS; else write back as G, remove(A) and look up again.

   Bound: one operation per process (D1, D2, G, I). -DLOSS=L: at most L lost
   replies per run (a deleter's batch ran, the client did not learn its
   result; the retry is the same batch). -DDOWN: one node unreachable from a
   nondeterministic point on, never back (-DDOWNNODE=c: only node c).
   -DCRASH=K: at most K deleters stop forever between any two of their steps
   (the operation stays pending). -DFINALGET: one more get, invoked after
   every other operation returned or crashed (an observer of the final
   state).

   Ghost and assertions: the history. An invocation is taken in the
   operation's first shared step (so a cached deleter that starts late, after
   A died and B was inserted, is invoked late) and a response in the step
   that decides the result: the tightest real-time order. Real-time order is
   kept as a relation rather than clock values (fewer states): prec[p] = the
   operations that had responded when p was invoked; a is before b iff a is
   in prec[b]. Check waits until every process returned or crashed, then
   enumerates every order of the operations (24, or 120 with FINALGET) and
   asserts that one respects real-time order and is legal for the sequential
   key: PRESENT / DELETED, initially PRESENT; delete OK (PRESENT -> DELETED;
   in DELETED accepted, state unchanged: two overlapping deletes may both
   return OK), delete ENOENT only in DELETED; get FOUND in PRESENT, ABSENT in
   DELETED; insert EXISTS in PRESENT, OK in DELETED -> PRESENT. A pending
   operation has no response: it takes the spec's transition wherever it is
   placed after its invocation, and placing it last is the same as leaving
   it out. -DCHECK_SELFTEST=1 runs only the checker on a hand-made illegal
   history (must fail), =2 on a legal one that needs a pending delete in the
   middle (must pass). No process may block (Spin's invalid end states); I
   asserts that it looks up at most twice. The "T" lines of a replay
   (spin -t -DFLAGS m8.pml | grep ' T ') narrate a trail; M8 lines print the
   history.

   Found (README, "Found by the models"): with one node down the protocol
   with cached deleters is not linearizable (m8_mut_cached_down, kept as a
   planted bug since deletes always look up: m8_down passes). A cached deleter that
   neither won nor lost and did not unmap A itself looks up again and
   deletes B, although A was unmapped on its behalf: it was first on a
   majority it could not read, or a get or insert wrote back its tombstone
   while the first-deleter words were split and the third node was down.
   With every node up it is (m8, m8_lost): the split round first ran once
   without retrying a lost reply, and then the same happened with one lost
   reply (MUT_SPLITONCE keeps that variant caught). With uncached deleters
   neither the split round's retry nor the write-back's dw word is needed
   for this property (MUT_SPLITONCE and MUT_WBNODW pass with C1 = C2 = 0);
   they make answers more precise (fewer overlapping deletes that both
   return OK), and their mutants run with cached deleters.

   Planted bugs (must fail): MUT_OLDRULE (the previous rule: no dw word; an
   answered batch reads the other writers' tombstones on its node; resA :=
   ENOENT iff such a tombstone on 2 answered nodes; a cached delete looks
   up again iff it saw any, no extra round, no `removed` shortcut),
   MUT_WBNODW (the write-back of G and I does not set dw), MUT_NOLATE (a
   cached delete never looks up again), MUT_SPLITONCE (the split round runs
   once: a lost reply in it is not retried); all four with cached
   deleters (-DC1=1 -DC2=1). */

#ifndef C1
#define C1 0
#endif
#ifndef C2
#define C2 0
#endif
#ifndef LOSS
#define LOSS 0
#endif
#ifndef CRASH
#define CRASH 0
#endif

#define INONE 0                    /* MAP values */
#define IA 1
#define IB 2
#define BLIVE 1                    /* BST values (0: B never inserted) */
#define BDEAD 2
#define ROK 1                      /* results (0: pending) */
#define RENOENT 2
#define RFOUND 3
#define RABSENT 4
#define REXISTS 5
#define OD1 0                      /* operations */
#define OD2 1
#define OG 2
#define OI 3
#define OF 4
#ifdef FINALGET
#define NOP 5
#define NPERM 120
#else
#define NOP 4
#define NPERM 24
#endif
#define PRES 0                     /* abstract states */
#define DEL 1

#define BIT(j) (1 << ((j) - 1))
#define CNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define HAS(m, c) ((((m) >> (c)) & 1) == 1)

byte MAP = IA;
byte BST = 0;
byte dw[3];
byte tomb[3];
bool up[3];
byte nlost = 0;
byte ncrash = 0;

/* ghost: the history. Real-time order is kept as a relation, not as clock
   values (fewer states): prec[p] = the operations that had responded when p
   was invoked. */
byte ivk = 0;                      /* invoked operations (bit p) */
byte rsp = 0;                      /* responded operations */
byte dn = 0;                       /* responded or crashed */
byte prec[NOP];
byte rv[NOP];

#define INVOKED(p) HAS(ivk, p)
#define DONE(p) HAS(dn, p)

inline INVOKE(p) {
  if
  :: !INVOKED(p) -> ivk = ivk | (1 << (p)); prec[p] = rsp;
     printf("T op %d (0 D1, 1 D2, 2 G, 3 I) invoked, after ops %d returned\n", p, rsp)
  :: else -> skip
  fi
}

inline RESPOND(p, r) {
  rsp = rsp | (1 << (p)); dn = dn | (1 << (p)); rv[p] = r;
  printf("T op %d returns %d (1 OK 2 ENOENT 3 FOUND 4 ABSENT 5 EXISTS)\n", p, r)
}

inline DELB(r) {
  if :: BST == BLIVE -> BST = BDEAD; r = ROK :: else -> r = RENOENT fi
}

/* a deleter stops forever here (at most CRASH deleters per run) */
#if CRASH > 0
#define CRASHPT \
  if \
  :: atomic { ncrash < CRASH -> ncrash++; dn = dn | (1 << p); DCLEAR(); \
              printf("T D%d crashes\n", j) }; goto out \
  :: true -> skip \
  fi
#else
#define CRASHPT skip
#endif

/* a deleter returns r; its locals are cleared in the same step */
inline DRET(r) {
  RESPOND(p, r); DCLEAR(); goto out
}

inline DCLEAR() {
  ans = 0; unr = 0; todo = 0; wide = false; fst[0] = 0; fst[1] = 0; fst[2] = 0;
  won = false; lst = false; removed = false; resA = 0; l = 0; r = 0; seen = 0
}

#define NFIRST(x) ((HAS(ans, 0) && fst[0] == (x) -> 1 : 0) + \
                   (HAS(ans, 1) && fst[1] == (x) -> 1 : 0) + \
                   (HAS(ans, 2) && fst[2] == (x) -> 1 : 0))

/* one tomb batch of deleter j on node c (kv__sw_delete); won and lost are
   recomputed from the answered batches in the same step */
inline BATCH(c) {
  atomic {
    INVOKE(p);
    if
    :: !up[c] -> unr = unr | (1 << c); wide = true;         /* unreachable */
       printf("T D%d batch on node %d: unreachable\n", j, c)
    :: else ->
#ifndef MUT_OLDRULE
       old = dw[c];
       if :: old == 0 -> dw[c] = j :: else -> skip fi;
#else
       old = tomb[c] & ~BIT(j);                              /* MUTANT: others' tombstones */
#endif
       tomb[c] = tomb[c] | BIT(j);
       printf("T D%d batch on node %d: read %d, now dw %d tomb %d\n", j, c, old, dw[c], tomb[c]);
       if
       :: true ->                                            /* answered */
          ans = ans | (1 << c);
#ifndef MUT_OLDRULE
          if :: old == 0 -> fst[c] = j :: else -> fst[c] = old fi;
          won = (NFIRST(j) >= 2); lst = (NFIRST(3 - j) >= 2);
          printf("T D%d   answered: first[%d] = %d; won %d lost %d\n", j, c, fst[c], won, lst)
#else
          if :: old != 0 -> seen = seen | (1 << c) :: else -> skip fi;
          printf("T D%d   answered: other tombstones on nodes %d\n", j, seen)
#endif
       :: nlost < LOSS -> nlost++; wide = true;              /* reply lost */
          printf("T D%d   reply LOST\n", j)
       fi
    fi;
    old = 0
  }
}

/* one round: a batch to every node of todo, landing in any order */
inline ROUND() {
  do
  :: todo == 0 -> break
  :: HAS(todo, 0) -> todo = todo & 6; CRASHPT; BATCH(0)
  :: HAS(todo, 1) -> todo = todo & 5; CRASHPT; BATCH(1)
  :: HAS(todo, 2) -> todo = todo & 3; CRASHPT; BATCH(2)
  od
}

#ifdef MUT_NOLATE
#define STAND true                                           /* MUTANT: never step 6 */
#elif defined(MUT_OLDRULE)
#define STAND (!cached || seen == 0)                         /* MUTANT: the old rule */
#else
#define STAND (!cached || won || removed)
#endif

proctype D(byte j; bool cached) {
  byte p = j - 1;
  byte ans; byte unr; byte todo; bool wide; byte fst[3]; byte old;
  bool won; bool lst; bool removed; byte resA; byte l; byte r; byte seen;
  if
  :: !cached ->                                              /* 1. uncached: lookup */
     atomic {
       INVOKE(p); l = MAP;
       if :: l == INONE -> DRET(RENOENT) :: else -> skip fi
     };
     if
     :: l == IB -> CRASHPT; atomic { DELB(r); DRET(r) }
     :: l == IA -> skip
     fi
  :: else -> skip                                            /* cached: on A */
  fi;
  do                                                         /* 2. tomb rounds */
  :: CNT(ans) >= 2 -> break
  :: else ->
     if
     :: wide -> todo = 7 & ~(ans | unr)
     :: else -> todo = 3 & ~(ans | unr)
     fi;
     ROUND()
  od;
#ifndef MUT_OLDRULE
#ifndef MUT_SPLITONCE
  do                                                         /* split: ask the others */
  :: !won && !lst && (7 & ~(ans | unr)) != 0 ->             /* until answered or unreachable */
     todo = 7 & ~(ans | unr); ROUND()
  :: else -> break
  od;
#else
  if                                                         /* MUTANT: one round, no retry */
  :: !won && !lst && (7 & ~(ans | unr)) != 0 ->
     todo = 7 & ~(ans | unr); ROUND()
  :: else -> skip
  fi;
#endif
#endif
  CRASHPT;
  atomic {                                                   /* 3. remove(A), 4., 5. */
    if :: MAP == IA -> MAP = INONE; removed = true :: else -> removed = false fi;
    printf("T D%d remove(A): %d\n", j, removed);
#ifndef MUT_OLDRULE
    resA = (won -> ROK : (lst -> RENOENT : ROK));
#else
    resA = (CNT(seen & ans) >= 2 -> RENOENT : ROK);          /* MUTANT: gone */
#endif
    if :: STAND -> DRET(resA) :: else -> skip fi
  };
  CRASHPT;
  atomic {                                                   /* 6. late lookup */
    l = MAP;
    printf("T D%d late lookup: %d (0 NONE 1 A 2 B)\n", j, l);
    if :: l != IB -> DRET(resA) :: else -> skip fi
  };
  CRASHPT;
  atomic { DELB(r); printf("T D%d deletes B\n", j); DRET(r) };
out:
  skip
}

/* G's and I's read of tomb[c] on 2 reachable nodes, any order; tb := the
   tombstones seen; none seen: respond nr (FOUND / EXISTS) in that step,
   else x := the largest writer id seen */
inline READ2(op, nr) {
  do
  :: n >= 2 -> break
  :: n < 2 && rd != 7 ->                                     /* (blocks if no 2 reachable) */
     atomic {
       if
       :: !HAS(rd, 0) -> c = 0
       :: !HAS(rd, 1) -> c = 1
       :: !HAS(rd, 2) -> c = 2
       fi;
       rd = rd | (1 << c);
       if :: up[c] -> tb = tb | tomb[c]; n++ :: else -> skip fi;
       printf("T op %d reads node %d: up %d tomb %d\n", op, c, up[c], tomb[c]);
       if
       :: n >= 2 && tb == 0 -> RESPOND(op, nr); rd = 0; n = 0; c = 0; l = 0; goto out
       :: n >= 2 && tb != 0 -> x = (((tb) & BIT(2)) != 0 -> 2 : 1); rd = 0; c = 0; tb = 0
       :: else -> skip
       fi
     }
  od
}

/* write-back of writer x's tombstone (and first-deleter word) on 2 or 3
   reachable nodes, one step each, any order */
inline WB() {
  do
  :: w >= 2 -> break
  :: rd != 7 ->
     atomic {
       if
       :: !HAS(rd, 0) -> c = 0
       :: !HAS(rd, 1) -> c = 1
       :: !HAS(rd, 2) -> c = 2
       fi;
       rd = rd | (1 << c);
       if
       :: up[c] ->
#ifndef MUT_WBNODW
          if :: dw[c] == 0 -> dw[c] = x :: else -> skip fi;
#endif
          tomb[c] = tomb[c] | BIT(x); w++;
          printf("T write-back of %d on node %d: dw %d tomb %d\n", x, c, dw[c], tomb[c])
       :: else -> skip
       fi
     }
  od
}

proctype Get() {
  byte l; byte rd; byte n; byte w; byte c; byte tb; byte x;
  atomic {
    INVOKE(OG); l = MAP;
    if
    :: l == INONE -> RESPOND(OG, RABSENT); l = 0; goto out
    :: l == IB -> RESPOND(OG, (BST == BLIVE -> RFOUND : RABSENT)); l = 0; goto out
    :: l == IA -> l = 0
    fi
  };
  READ2(OG, RFOUND);
  WB();
  atomic {                                                   /* remove(A) */
    printf("T G remove(A): %d\n", MAP == IA);
    if :: MAP == IA -> MAP = INONE :: else -> skip fi;
    RESPOND(OG, RABSENT); rd = 0; n = 0; w = 0; c = 0; x = 0
  };
out:
  skip
}

proctype Ins() {
  byte l; byte rd; byte n; byte w; byte c; byte tb; byte x; byte it;
  do
  :: atomic {
       INVOKE(OI); l = MAP;
       if
       :: l == IB -> RESPOND(OI, REXISTS); l = 0; it = 0; goto out
       :: l == INONE -> MAP = IB; BST = BLIVE; printf("T I inserts B\n"); RESPOND(OI, ROK); l = 0; it = 0; goto out
       :: l == IA -> l = 0
       fi
     };
     READ2(OI, REXISTS);
     WB();
     atomic {                                                /* remove(A), look up again */
       printf("T I remove(A): %d\n", MAP == IA);
       if :: MAP == IA -> MAP = INONE :: else -> skip fi;
       rd = 0; n = 0; w = 0; c = 0; x = 0;
       it++; assert(it <= 1)                                 /* A is gone: one retry */
     }
  od;
out:
  skip
}

#ifdef DOWN
proctype Faults() {
#ifdef DOWNNODE
  atomic { up[DOWNNODE] = false; printf("T node %d down\n", DOWNNODE) }
#else
  atomic {
    if :: up[0] = false :: up[1] = false :: up[2] = false fi;
    printf("T node %d down\n", (up[0] -> (up[1] -> 2 : 1) : 0))
  }
#endif
}
#endif

#define SPEC(q)                                                       \
  if                                                                  \
  :: q == OD1 || q == OD2 ->                                          \
     if                                                               \
     :: rv[q] == RENOENT && st != DEL -> legal = false                \
     :: rv[q] == RENOENT && st == DEL -> skip                         \
     :: rv[q] != RENOENT -> st = DEL        /* OK or pending */       \
     fi                                                               \
  :: q == OG || q == OF ->                                            \
     if                                                               \
     :: rv[q] == RFOUND && st != PRES -> legal = false                \
     :: rv[q] == RABSENT && st != DEL -> legal = false                \
     :: else -> skip                                                  \
     fi                                                               \
  :: q == OI ->                                                       \
     if                                                               \
     :: rv[q] == ROK && st != DEL -> legal = false                    \
     :: rv[q] == REXISTS && st != PRES -> legal = false               \
     :: else -> st = PRES          /* OK in DELETED, EXISTS, pending */ \
     fi                                                               \
  fi

proctype Check() {
  byte pi; byte r; byte used; byte i; byte i2; byte k; byte q; byte st;
  byte ord[NOP]; bool legal; bool okany;
#ifdef FINALGET
  byte a; byte b; byte tb;
#endif
  (dn & 15) == 15;                                           /* all returned or crashed */
#ifdef FINALGET
  atomic {                                                   /* the observer */
    INVOKE(OF);
    if
    :: MAP == INONE -> RESPOND(OF, RABSENT)
    :: MAP == IB -> RESPOND(OF, (BST == BLIVE -> RFOUND : RABSENT))
    :: MAP == IA ->
       if                                                    /* 2 reachable nodes */
       :: up[0] && up[1] -> a = 0; b = 1
       :: up[0] && up[2] -> a = 0; b = 2
       :: up[1] && up[2] -> a = 1; b = 2
       fi;
       tb = tomb[a] | tomb[b];
       RESPOND(OF, (tb == 0 -> RFOUND : RABSENT))
    fi;
    a = 0; b = 0; tb = 0
  };
#endif
  d_step {
    printf("M8 history: invoked %d, responded %d (bit p; ops 0 D1, 1 D2, 2 G, 3 I, 4 F)\n", ivk, rsp);
    i = 0;
    do
    :: i < NOP -> printf("M8   op %d: result %d (1 OK 2 ENOENT 3 FOUND 4 ABSENT 5 EXISTS 0 pending), after ops %d\n", i, rv[i], prec[i]); i++
    :: else -> break
    od;
    okany = false; pi = 0;
    do
    :: pi < NPERM && !okany ->
       r = pi; used = 0; i = 0;                              /* permutation number pi */
       do
       :: i < NOP ->
          k = r % (NOP - i); r = r / (NOP - i); q = 0;
          do
          :: HAS(used, q) -> q++
          :: else ->
             if :: k == 0 -> break :: else -> k--; q++ fi
          od;
          ord[i] = q; used = used | (1 << q); i++
       :: else -> break
       od;
       legal = true; st = PRES; i = 0;                       /* replay it */
       do
       :: i < NOP && legal ->
          q = ord[i];
          if
          :: INVOKED(q) ->
             i2 = i + 1;
             do                                              /* real-time order */
             :: i2 < NOP ->
                if
                :: HAS(prec[q], ord[i2]) -> legal = false      /* ord[i2] returned before q began */
                :: else -> skip
                fi;
                i2++
             :: else -> break
             od;
             SPEC(q)
          :: else -> skip                                    /* never invoked */
          fi;
          i++
       :: else -> break
       od;
       okany = legal;
       pi++
    :: else -> break
    od;
    if :: okany -> printf("M8 linearizable\n") :: else -> printf("M8 NOT linearizable\n") fi;
    assert(okany)                                            /* linearizable */
  }
}

init {
  atomic {
    up[0] = true; up[1] = true; up[2] = true;
#ifndef CHECK_SELFTEST
    run D(1, C1); run D(2, C2); run Get(); run Ins();
#ifdef DOWN
    run Faults();
#endif
#else
#if CHECK_SELFTEST == 1
    /* illegal: D1 OK [1,2] < I OK [3,4] < G ABSENT [5,6]; D2 pending,
       invoked at 7, after G returned */
    rv[OD1] = ROK; prec[OD1] = 0;
    rv[OI] = ROK; prec[OI] = 1 << OD1;
    rv[OG] = RABSENT; prec[OG] = (1 << OD1) | (1 << OI);
    prec[OD2] = (1 << OD1) | (1 << OI) | (1 << OG);
    ivk = 15; rsp = 13;
#else
    /* legal only as D1, I, D2 (pending), G: D1 OK [1,2] < I OK [3,5];
       D2 pending, invoked at 4; G ABSENT [6,7] */
    rv[OD1] = ROK; prec[OD1] = 0;
    rv[OI] = ROK; prec[OI] = 1 << OD1;
    prec[OD2] = 1 << OD1;
    rv[OG] = RABSENT; prec[OG] = (1 << OD1) | (1 << OI);
    ivk = 15; rsp = 13;
#endif
    dn = 15;
#endif
    run Check()
  }
}
