/* kv/spin/m13.pml -- M13: the reuse of a deleted key's object (issue 18;
   kv/DESIGN.md, "Recycling of value buffers", "Client liveness",
   "Rebuilding a lost node"). A key incarnation lives in an object O at
   the same offset on every node; once the incarnation is dead its
   reclaimer zeroes O on every node and reuses it for another key.

   C functions abstracted: store.c obj_dead/obj_reclaim/locate (issue 18)
   -- as committed in 7dbcd7c: objects.c kv__st_obj_dead (R learns O dead
   and stamps t_d, after its own delete, get or insert unmapped O, or
   kv__st_obj_sweep found O's tombstone on f+1 and the key unmapped),
   obj_grace_ns (G = 3L + L/4), obj_zero (the zero attempt: per node one
   batch READ superblock, WRITE zeros over O, PERSIST, to all n, under
   the deadline of the insert it runs in; fails unless every node answers
   with its admitted superblock), kv__st_obj_take (the settle:
   kv__ix_posted, kv__ix_settled, o_sealed; then the reuse); store.c
   locate (a cached location is used only while now < until, until = the
   time taken before the index lookup, or before the own insert, + L) and
   do_insert with swarm.c kv__sw_create_start/_finish (the creation:
   header WRITE, CAS 0 -> m2 of the creator's own metadata slot, counted
   on f+1, "the rest land later"); rebuild.c rb_run (the grace of lease +
   timeout before its reads, the MAX copy, the superblock last). Keep
   this list in step with the code.

   The protocol (as specified for that code):
   1. Incarnation 1 of key k is in O, mapped by the index (one atomic
      map). A client S looks k up at t_v (the index read) and caches O
      until valid_until = t_v + T; it uses the cached location only for an
      operation that begins at or before valid_until; each batch of an
      operation is posted at or before its deadline (begin + TAU) and lands
      within TAU of its post, or never. So S may write incarnation-1 words
      (its CAS up to any word, a write-back of the tombstone) to any node
      within those bounds, also after the delete.
   2. The deleter puts its tombstone on f+1 nodes and removes the mapping;
      the one client R that reuses O (in C the holder of the id whose
      chunk O lies in) learns O dead at t_d, once both are done (modelled
      as the removal itself, the earliest t_d can be).
   3. R waits G after t_d (-DGR; default T + 2 TAU + 1, below).
   4. Zero attempt: R posts to every node a batch {READ superblock; WRITE
      zeros over O; PERSIST}. It succeeds only if every node answered and
      every answer showed an admitted node. R may abandon an attempt at
      any moment before it succeeded (a connection error, the deadline of
      the operation it runs in: obj_zero runs under c->deadline), its
      batches still flying; it retries later (at most NATT attempts).
   5. After a successful attempt R waits until every batch it posted has
      settled (landed, or never will: TAU after its post).
   6. R reuses O for k2: the creation lands (CAS 0 -> m2 in R's own slot)
      on admitted nodes until f+1 hold it; then k2 -> O is mapped (the
      index waits for the creation, st_publish). A writer W of k2 then puts
      w2 > m2 on f+1 admitted nodes; a reader of k2 reads f+1 admitted
      nodes and takes the largest word.
   -DWIPE: node 2 loses its pool at any moment (every word 0, not
   admitted; batches posted to it before never land after it: the daemon
   and its connections are new) and a rebuilder restores it:
     RB=0, as specified for this model: read nodes 0 and 1 (one atomic READ each, either
       order, interleaved with everything), per word the MAX; wait TAU;
       WRITE the merged image to node 2 (one batch, landing within TAU of
       its post); wait TAU after the post; admit node 2 (superblock).
     RB=1 (the default), the fix: as RB=0, but the reads come only after
       a grace: every operation in progress at the wipe has ended and
       every batch posted before it has landed or never will (rebuild.c's
       wait of lease + operation timeout before it reads, DESIGN
       "Rebuilding a lost node" step 2; m12's G1).
     RB=2: the grace covers only the batches posted before the wipe (not
       the operations in progress): enough for P1, not for DUR (below).
   -DCRASH (not with -DWIPE): one node goes down at any moment, its pool
   intact, and may restart later: nothing lands on it meanwhile (a batch
   still in flight lands after the restart within TAU of its post, or
   never), nobody picks it, R's attempt gets no answer from it. Every
   write is persisted in its batch, so a crash loses no word counted.
   A node that is not admitted counts towards nothing: R's attempt fails
   on its answer, creations, writes and reads pick admitted nodes only.

   Words (abstracted per node): old[i], some word of incarnation 1 (the
   tombstone, S's word, any word of k) is in O on node i; kv[i], the
   largest word of incarnation 2 there (0 none, 1 m2, 2 w2). Every
   incarnation-1 word is taken as ranking above every incarnation-2 word
   (a tombstone outranks everything; a stale client's clock may be ahead),
   so a reader that reads a node with old[i] sees incarnation 1. Initially
   old[i] on all three nodes (k was written everywhere). A zero landing
   clears old[i] and kv[i]; S's landing sets old[i]; the creation and W's
   CAS raise kv[i] and leave other slots (so old words) as they are: C's
   creation WRITEs [ohdr_off, tsl_off) and CASes only the creator's own
   metadata word. One stale client with one operation is enough: its landings only set
   old[i], and one late landing on one node is a violation; it may post
   again (one batch in flight at a time) while its operation allows.

   Time: one global clock kept as ages (now - when x happened, capped),
   advanced by the Ticker, as in m10. The Ticker cannot pass post + TAU
   while a batch is in flight: Net lands it (or drops it) first. Events
   between two ticks happen at one instant in any interleaving. Clocks
   are exact (one clock for every process; see README for rates). The
   conditions are closed (<=: S begins while now <= t_v + T, posts while
   now <= begin + TAU; R zeroes once now >= t_d + G), which admits the
   limit cases that C's strict checks (now < until) exclude: the model's
   bound G >= T + 2 TAU + 1 is one tick above the continuous one (G > T +
   2 TAU is what C needs, G = 3L + L/4 with T = L, TAU <= L). -DMUT_G1 (G =
   T + 2 TAU) fails. Defaults T = 2, TAU = 1, G = 5.

   Properties (monitors enabled only in a state that breaks them, as m10):
   P1: once R began the reuse (its first creation post), no admitted node
     holds an incarnation-1 word (any reader's f+1 may include it);
   DUR (-DCHECKDUR=1, default): every two admitted nodes hold, between
     them, an incarnation-2 word >= gmax, the largest completed one (m2
     once k2 is mapped, w2 once W completed): with any one node lost the
     others still give it;
   the reader of k2 (NRD reads, each of two admitted nodes one after the
     other, its top written back, CAS up, until f+1 hold it) asserts that
     it saw no incarnation-1 word and (CHECKDUR) returned at least gmax as
     it was when the read began.
   -DREACH=n (each must fail, so the bound is not vacuous): 1, a read
   returns w2; 2, a read returns after reading the rebuilt node (-DWIPE);
   3, R waits at the settle with a zero batch in flight; 4, S's word is in
   flight in the last tick of R's grace (the grace is tight).

   Bound: 3 nodes; S: one lookup, one operation, one batch in flight at a
   time (any number while the deadline allows); the delete as one step;
   R: NATT = 3 zero attempts, the creation (its third batch landing later
   or never, -DNOLATECREATE: never), W: one write, the reader: NRD = 2
   reads; -DCRASH one crash and restart, or -DWIPE one loss of node 2 and
   its rebuild (the rebuilder itself never fails). Each landing of the
   creation, W and the reader is one step on a node picked among those
   admitted and up (every quorum order; not timed: their late landings
   only raise words); R's zero batches, S's batch and the rebuilder's
   WRITE are timed batches. No lost replies apart from dropped batches,
   no second reclaimer (m12 P2: one delete wins), no index model beyond
   one atomic map. Switches: -DTV, -DTAU, -DGR, -DNATT, -DRB, -DWK2=0 (no
   W), -DNRD, -DCHECKDUR=0 (P1 only), -DCRASH, -DWIPE, -DNOLATECREATE,
   -DREACH.
   The "M13" lines of a replay (spin -t -DFLAGS m13.pml | grep M13)
   narrate a trail.

   Found (README, "Found by the models"): RB=0 breaks P1 (m13_wipe_spec):
   a zero attempt posted before the wipe answers "admitted" from node 2
   before the wipe and lands on node 1 after the rebuilder read it; the
   attempt succeeds, R reuses O, and the copy (the MAX of what it read)
   brings incarnation 1 back on node 2, admitted after O was reused. Fix: RB=1 (the grace before the reads; for P1 alone RB=2,
   every batch posted before the wipe settled, is enough: m13_wipe_rb2_p1).
   RB=2 breaks DUR (m13_wipe_rb2): the creation counts node 2's answer
   before the wipe and lands on node 1 after the rebuilder read it (m12's
   MUT_NOGRACE, for the new incarnation's first word).

   Planted bugs (must fail): MUT_NOGRACE (G = 0), MUT_CACHEFOREVER (S uses
   its cached location for ever), MUT_F1 (zero on f+1 nodes only),
   MUT_NOSETTLE (reuse without the settle wait: DUR), MUT_COUNTNOTADM (an
   answer from a node that is not admitted counts; with -DWIPE), MUT_G1
   (G one tick too small). */

#ifndef TV
#define TV 2                       /* T: how long a looked-up location is used (= L in C) */
#endif
#ifndef TAU
#define TAU 1                      /* the operation timeout = the in-flight bound */
#endif
#ifndef GR
#if defined(MUT_NOGRACE)
#define GR 0
#elif defined(MUT_G1)
#define GR (TV + 2 * TAU)
#else
#define GR (TV + 2 * TAU + 1)
#endif
#endif
#ifndef NATT
#define NATT 3                     /* zero attempts */
#endif
#if NATT > 3
#error "NATT <= 3 (pwz has 9 bits)"
#endif
#ifndef RB
#define RB 1
#endif
#ifndef WK2
#define WK2 1                      /* the writer W of k2 */
#endif
#ifndef NRD
#define NRD 2                      /* reads of k2 */
#endif
#ifndef CHECKDUR
#define CHECKDUR 1
#endif

#define INC(x, c) if :: (x) < (c) -> x++ :: else -> skip fi
#define MX(a, b) ((a) > (b) -> (a) : (b))
#define BIT(i) (1 << (i))
#define HAS(m, i) ((((m) >> (i)) & 1) == 1)

/* ops in progress (bits of opn, pend) */
#define OP_RZ 1                    /* R's zero attempt */
#define OP_RI 2                    /* R's creation of k2 */
#define OP_W 4                     /* W's write */
#define OP_RD 8                    /* the reader */

bool old[3];                       /* an incarnation-1 word in O on node i */
byte kv[3];                        /* the largest incarnation-2 word there: 0, 1 (m2), 2 (w2) */
bool adm[3];                       /* admitted (store superblock present) */
bool up[3];                        /* the node's daemon runs (-DCRASH: one down for a while) */
bool mapped = true;                /* the index maps k -> O */
bool dead = false;                 /* R learnt O dead (t_d) */
bool reuse = false;                /* R began the reuse (P1 from then on) */
bool k2map = false;                /* the index maps k2 -> O */
byte gmax = 0;                     /* largest completed incarnation-2 word */

/* S, the stale client */
byte sS = 0;                       /* 0 no lookup yet, 1 cached, 2 operation running, 3 done */
byte va = 0;                       /* now - t_v (while cached) */
byte ob = 0;                       /* now - begin (while running) */
bool sfly = false;                 /* its batch in flight */
byte snode = 0;
byte spa = 0;                      /* now - its post */

/* R */
bool rgrace = false;               /* da ticks */
byte da = 0;                       /* now - t_d, capped at GR */
byte zs[3 * NATT];                 /* zero batch of attempt a to node i: 0 free, 1 in flight,
                                      2 answered admitted, 3 answered not admitted, 4 no answer */
byte zpa[NATT];                    /* now - attempt a's post (all its batches posted at once) */
byte zcur = 255;                   /* the attempt whose answers count */

/* wipe and rebuild */
bool wiped = false;
byte opn = 0;                      /* ops in progress */
byte pend = 0;                     /* ... and in progress at the wipe */
short pwz = 0;                     /* zero batches in flight at the wipe (bit 3a + i) */
bool pws = false;                  /* S's batch in flight at the wipe */
byte rbph = 0;                     /* rebuilder: 1 read both (rba ticks), 2 write posted (rwa ticks) */
byte rba = 0;
byte rwa = 0;
bool rbw = false;                  /* its write in flight */
bool cpold = false;                /* the merged image */
byte cpkv = 0;

/* ghosts for -DREACH (reachability checks, which must fail) */
#ifdef REACH
#define GH(x) x
#else
#define GH(x) skip
#endif
byte lastret = 0;                  /* the value the reader's last read returned */
bool rdrebuilt = false;            /* a read of k2 read the rebuilt node 2 */
bool settled = false;              /* R waited at the settle with a zero batch in flight */

#define ZFLY(a) (zs[3 * (a)] == 1 || zs[3 * (a) + 1] == 1 || zs[3 * (a) + 2] == 1)
#define OPEND(b) opn = opn & ~(b); pend = pend & ~(b)
#if defined(CRASH) && defined(WIPE)
#error "-DCRASH and -DWIPE: one node failure per run"
#endif

/* ---- the network ---- */

inline ZDONE(s) {
  pwz = pwz & ~BIT(s);
  if :: !ZFLY((s) / 3) -> zpa[(s) / 3] = 0 :: else -> skip fi
}

/* a zero batch lands: READ the superblock, WRITE zeros over O, PERSIST */
inline ZLAND(s) {
  atomic {
    zs[s] == 1 && up[(s) % 3] ->
    old[(s) % 3] = false; kv[(s) % 3] = 0;
    printf("M13 R's zero (attempt %d) lands on n%d, admitted %d\n", (s) / 3, (s) % 3, adm[(s) % 3]);
    if
    :: (s) / 3 == zcur -> zs[s] = (adm[(s) % 3] -> 2 : 3)
    :: else -> zs[s] = 0
    fi;
    ZDONE(s)
  }
}

inline ZDROP(s) {
  atomic {
    zs[s] == 1 ->
    printf("M13 R's zero (attempt %d) to n%d never lands\n", (s) / 3, (s) % 3);
    zs[s] = ((s) / 3 == zcur -> 4 : 0);
    ZDONE(s)
  }
}

proctype Net() {
end:
  do
  :: atomic {
       sfly && up[snode] -> old[snode] = true;
       printf("M13 S's incarnation-1 word lands on n%d (posted %d ago)\n", snode, spa);
       sfly = false; spa = 0; snode = 0; pws = false
     }
#ifdef CRASH
  :: atomic { sfly -> printf("M13 S's word to n%d never lands\n", snode); sfly = false; spa = 0; snode = 0 }
#endif
  :: ZLAND(0) :: ZLAND(1) :: ZLAND(2)
  :: ZDROP(0) :: ZDROP(1) :: ZDROP(2)
#if NATT > 1
  :: ZLAND(3) :: ZLAND(4) :: ZLAND(5)
  :: ZDROP(3) :: ZDROP(4) :: ZDROP(5)
#endif
#if NATT > 2
  :: ZLAND(6) :: ZLAND(7) :: ZLAND(8)
  :: ZDROP(6) :: ZDROP(7) :: ZDROP(8)
#endif
#ifdef WIPE
  :: atomic {
       rbw -> old[2] = cpold; kv[2] = cpkv; rbw = false;
       printf("M13 the rebuilder's image lands on n2: old %d, k2 word %d\n", cpold, cpkv)
     }
#endif
  od
}

/* ---- time ---- */

#define ZH(a) (zpa[a] >= TAU && ZFLY(a))
#if NATT > 1
#define ZH2 ZH(1)
#else
#define ZH2 false
#endif
#if NATT > 2
#define ZH3 ZH(2)
#else
#define ZH3 false
#endif
#define HOLD ((sfly && spa >= TAU) || ZH(0) || ZH2 || ZH3 || (rbw && rwa >= TAU))

inline ZAGE(a) {
  if :: ZFLY(a) -> zpa[a]++ :: else -> skip fi
}

proctype Ticker() {
end:
  do
  :: d_step {
       !HOLD ->
       printf("M13 tick\n");
#ifndef MUT_CACHEFOREVER
       if
       :: sS == 1 && va >= TV -> sS = 3; va = 0     /* cache expired: S looks up again (absent) */
       :: sS == 1 && va < TV -> va++
       :: else -> skip
       fi;
#endif
       if
       :: sS == 2 && ob >= TAU -> sS = 3; ob = 0    /* past its deadline: S posts nothing more */
       :: sS == 2 && ob < TAU -> ob++
       :: else -> skip
       fi;
       if :: sfly -> spa++ :: else -> skip fi;
       if :: rgrace -> INC(da, GR) :: else -> skip fi;
       ZAGE(0);
#if NATT > 1
       ZAGE(1);
#endif
#if NATT > 2
       ZAGE(2);
#endif
       if :: rbph == 1 -> INC(rba, TAU) :: else -> skip fi;
       if :: rbph == 2 -> INC(rwa, TAU) :: else -> skip fi
     }
  od
}

/* ---- S: a client with k's location cached ---- */

#ifdef MUT_CACHEFOREVER
#define VALID true
#else
#define VALID (va <= TV)
#endif

proctype S() {
end:
  do
  :: atomic { sS == 0 && mapped -> sS = 1; va = 0; printf("M13 S looks k up: O, cached\n") }
  :: atomic { sS == 1 && VALID -> sS = 2; va = 0; ob = 0; printf("M13 S begins an operation on k with the cached O\n") }
  :: atomic {
       sS == 2 && ob <= TAU && !sfly ->
       if :: snode = 0 :: snode = 1 :: snode = 2 fi;
       sfly = true; spa = 0;
       printf("M13 S posts an incarnation-1 word to n%d\n", snode)
     }
  od
}

/* ---- the deleter: tombstone on f+1 done, then the index remove (t_d) ---- */

proctype Del() {
  atomic { mapped = false; dead = true; rgrace = true; da = 0; printf("M13 k deleted and unmapped: R learns O dead (t_d)\n") }
}

/* ---- R, the reclaimer ---- */

#ifdef MUT_COUNTNOTADM
#define ZOK(s) (zs[s] == 2 || zs[s] == 3)
#else
#define ZOK(s) (zs[s] == 2)
#endif
#define SUCC(k) ((!HAS(zm, 0) || ZOK(3 * (k))) && (!HAS(zm, 1) || ZOK(3 * (k) + 1)) && (!HAS(zm, 2) || ZOK(3 * (k) + 2)))
#define ANYFLY (ZFLY(0) || ZH2p || ZH3p)
#if NATT > 1
#define ZH2p ZFLY(1)
#else
#define ZH2p false
#endif
#if NATT > 2
#define ZH3p ZFLY(2)
#else
#define ZH3p false
#endif

inline ZPOST(k, i) {
  if :: HAS(zm, i) -> zs[3 * (k) + (i)] = 1 :: else -> skip fi
}
/* the attempt is over: its answered slots are freed, its flying ones fly on */
inline ZEND(k, i) {
  if :: zs[3 * (k) + (i)] != 1 -> zs[3 * (k) + (i)] = 0 :: else -> skip fi
}

/* some admitted node not in mask; one landing on it */
#define CANP(i, mask) (adm[i] && up[i] && !HAS(mask, i))
#define CANPICK(mask) (CANP(0, mask) || CANP(1, mask) || CANP(2, mask))
inline pick(i, mask) {
  if
  :: CANP(0, mask) -> i = 0
  :: CANP(1, mask) -> i = 1
  :: CANP(2, mask) -> i = 2
  fi
}

proctype R() {
  byte k = 0; byte zm = 0; byte i; byte held = 0; byte nh = 0;
end_wait:
  dead && da >= GR;
  atomic { rgrace = false; da = 0; printf("M13 R's grace is over\n") };
  do
  :: k >= NATT -> goto stop
  :: k < NATT ->
     atomic {
#ifdef MUT_F1
       if :: zm = 3 :: zm = 5 :: zm = 6 fi;        /* MUTANT: f+1 nodes only */
#else
       zm = 7;
#endif
       zcur = k; zpa[k] = 0; opn = opn | OP_RZ;
       ZPOST(k, 0); ZPOST(k, 1); ZPOST(k, 2);
       printf("M13 R's zero attempt %d posted to nodes %d (bits)\n", k, zm)
     };
     if
     :: atomic {
          SUCC(k) ->
          printf("M13 R's zero attempt %d succeeded\n", k);
          zs[3 * k] = 0; zs[3 * k + 1] = 0; zs[3 * k + 2] = 0; zpa[k] = 0;
          zcur = 255; zm = 0; OPEND(OP_RZ)
        };
        break
     :: atomic {
          !SUCC(k) ->
          printf("M13 R abandons zero attempt %d (answers %d %d %d)\n", k, zs[3 * k], zs[3 * k + 1], zs[3 * k + 2]);
          ZEND(k, 0); ZEND(k, 1); ZEND(k, 2);
          if :: !ZFLY(k) -> zpa[k] = 0 :: else -> skip fi;
          zcur = 255; zm = 0; OPEND(OP_RZ); k++
        }
     fi
  od;
#ifndef MUT_NOSETTLE
#ifdef REACH
  if :: ANYFLY -> settled = true :: else -> skip fi;
#endif
end_settle:
  !ANYFLY;                                       /* every batch R posted has settled */
#endif
  atomic { reuse = true; opn = opn | OP_RI; k = 0; printf("M13 R reuses O for k2: creation\n") };
end_create:
  do
  :: atomic {
       nh < 2 && CANPICK(held) ->
       pick(i, held); kv[i] = MX(kv[i], 1); held = held | BIT(i); nh++;
       printf("M13 R's creation (m2) lands on n%d\n", i); i = 0
     }
  :: nh >= 2 -> break
  od;
  atomic {
    k2map = true; gmax = MX(gmax, 1); OPEND(OP_RI); nh = 0;
    printf("M13 k2 -> O mapped\n")
  };
#ifndef NOLATECREATE
  /* the creation's third batch lands later, or never (kv__sw_create_finish:
     "the rest land later") */
end_late:
  atomic { CANPICK(held) -> pick(i, held); kv[i] = MX(kv[i], 1); printf("M13 R's creation lands late on n%d\n", i); i = 0 };
#endif
  held = 0;
stop:
end_stop:
  skip
}

#if WK2
/* W writes w2 to f+1 admitted nodes (each step: one landing, every order) */
proctype W() {
  byte ans = 0; byte na = 0; byte i;
end_wait:
  k2map;
  atomic { opn = opn | OP_W; printf("M13 W writes w2 on k2\n") };
end_run:
  do
  :: atomic {
       na < 2 && CANPICK(ans) ->
       pick(i, ans); kv[i] = 2; ans = ans | BIT(i); na++;
       printf("M13 W's w2 lands on n%d\n", i); i = 0
     }
  :: na >= 2 -> break
  od;
  atomic { gmax = 2; OPEND(OP_W); ans = 0; na = 0; printf("M13 W's write of w2 completed\n") }
}
#endif

#if NRD > 0
/* a reader of k2, NRD reads: the largest word of two admitted nodes, read
   one by one, written back (CAS up) until f+1 nodes hold it */
proctype Reader() {
  byte r = 0; byte r0 = 0; byte top = 0; bool sawold = false; byte ans = 0; byte hold = 0; byte na = 0; byte i = 0;
end_wait:
  k2map;
end_run:
  do
  :: r < NRD ->
     atomic { r0 = gmax; opn = opn | OP_RD; printf("M13 read %d of k2 begins (completed %d)\n", r, r0) };
     do
     :: atomic {
          na < 2 && CANPICK(ans) ->
          pick(i, ans);
          sawold = sawold || old[i];
          if
          :: kv[i] > top -> top = kv[i]; hold = BIT(i)
          :: kv[i] == top -> hold = hold | BIT(i)
          :: else -> skip
          fi;
          printf("M13 read %d: n%d shows old %d, k2 word %d\n", r, i, old[i], kv[i]);
          if :: i == 2 && wiped -> GH(rdrebuilt = true) :: else -> skip fi;
          ans = ans | BIT(i); na++; i = 0
        }
     :: na >= 2 -> break
     od;
     atomic {
       printf("M13 read %d sees %d (incarnation 1 seen %d)\n", r, top, sawold);
       assert(!sawold)                   /* P1 */
#if CHECKDUR
       ; assert(top >= r0)               /* DUR */
#endif
     };
     do
     :: atomic {
          top > 0 && (hold & 1) + ((hold >> 1) & 1) + ((hold >> 2) & 1) < 2 && CANPICK(hold) ->
          pick(i, hold); kv[i] = MX(kv[i], top); hold = hold | BIT(i);
          printf("M13 read %d writes %d back on n%d\n", r, top, i); i = 0
        }
     :: top == 0 || (hold & 1) + ((hold >> 1) & 1) + ((hold >> 2) & 1) >= 2 -> break
     od;
     atomic {
       gmax = MX(gmax, top); OPEND(OP_RD); printf("M13 read %d returns %d\n", r, top); GH(lastret = top);
       r++; r0 = 0; top = 0; sawold = false; ans = 0; hold = 0; na = 0
     }
  :: r >= NRD -> break
  od
}
#endif

#ifdef CRASH
/* one node goes down (its pool intact, every word persisted) and restarts */
proctype Crash() {
  byte c;
  atomic { if :: c = 0 :: c = 1 :: c = 2 fi; up[c] = false; printf("M13 n%d down\n", c) };
  atomic { up[c] = true; printf("M13 n%d up again\n", c); c = 0 }
}
#endif

#ifdef WIPE
/* node 2 loses its pool */
proctype Wipe() {
  byte s = 0;
  atomic {
    old[2] = false; kv[2] = 0; adm[2] = false; wiped = true; pend = opn;
    /* batches posted to node 2 before never land after it */
    if :: sfly && snode == 2 -> sfly = false; spa = 0; snode = 0 :: else -> skip fi;
    pws = sfly;
    do
    :: s < 3 * NATT ->
       if
       :: zs[s] == 1 && s % 3 == 2 -> zs[s] = (s / 3 == zcur -> 4 : 0); ZDONE(s)
       :: zs[s] == 1 && s % 3 != 2 -> pwz = pwz | BIT(s)
       :: else -> skip
       fi;
       s++
    :: else -> break
    od;
    s = 0;
    printf("M13 WIPE of n2 (ops in progress %d, zero batches in flight %d)\n", pend, pwz)
  }
}

proctype Rebuilder() {
  byte rd = 0; bool o0 = false; bool o1 = false; byte k0 = 0; byte k1 = 0;
end_wait:
  wiped;
#if RB == 1
  pend == 0 && pwz == 0 && !pws;         /* the grace (rebuild.c: lease + timeout) */
  printf("M13 rebuilder's grace is over\n");
#elif RB == 2
  pwz == 0 && !pws;                      /* only the batches posted before the wipe */
  printf("M13 rebuilder's grace (batches only) is over\n");
#endif
end_read:
  do
  :: atomic { !HAS(rd, 0) -> o0 = old[0]; k0 = kv[0]; rd = rd | 1; rba = 0; printf("M13 rebuilder reads n0: old %d, k2 word %d\n", o0, k0) }
  :: atomic { !HAS(rd, 1) -> o1 = old[1]; k1 = kv[1]; rd = rd | 2; rba = 0; printf("M13 rebuilder reads n1: old %d, k2 word %d\n", o1, k1) }
  :: rd == 3 -> break
  od;
  atomic { cpold = o0 || o1; cpkv = MX(k0, k1); rbph = 1; rba = 0; rd = 0; o0 = false; o1 = false; k0 = 0; k1 = 0 };
end_w1:
  rba >= TAU;                            /* waits TAU */
  atomic { rbph = 2; rba = 0; rwa = 0; rbw = true; printf("M13 rebuilder posts its image to n2\n") };
end_w2:
  !rbw && rwa >= TAU;                    /* waits TAU again */
  atomic { adm[2] = true; rbph = 0; rwa = 0; printf("M13 n2 admitted\n") }
}
#endif

/* ---- monitors (enabled only in a state that breaks them) ---- */

#define P1BAD (reuse && ((adm[0] && old[0]) || (adm[1] && old[1]) || (adm[2] && old[2])))
proctype MonP1() {
end:
  atomic {
    P1BAD ->
    printf("M13 P1 broken: an incarnation-1 word on an admitted node after the reuse began (old %d %d %d, admitted %d %d %d)\n",
      old[0], old[1], old[2], adm[0], adm[1], adm[2]);
    assert(!P1BAD)
  }
}

#if CHECKDUR
#define PAIRBAD(a, b) (adm[a] && adm[b] && MX(kv[a], kv[b]) < gmax)
#define DURBAD (PAIRBAD(0, 1) || PAIRBAD(0, 2) || PAIRBAD(1, 2))
proctype MonDur() {
end:
  atomic {
    DURBAD ->
    printf("M13 DUR broken: completed %d, k2 words %d %d %d, admitted %d %d %d\n",
      gmax, kv[0], kv[1], kv[2], adm[0], adm[1], adm[2]);
    assert(!DURBAD)
  }
}
#endif

#ifdef REACH
/* REACH=1: a read returns w2; 2: a read of k2 returns after reading the
   rebuilt node (-DWIPE); 3: R waits at the settle with a batch in flight;
   4: S's word flies in the last tick of R's grace (the bound is tight) */
#if REACH == 1
#define REACHED (lastret == 2)
#elif REACH == 2
#define REACHED (rdrebuilt && lastret > 0)
#elif REACH == 3
#define REACHED settled
#else
#define REACHED (sfly && dead && rgrace && da + 1 >= GR)
#endif
proctype Reach() {
end:
  atomic { REACHED -> printf("M13 REACH %d reached\n", REACH); assert(!REACHED) }
}
#endif

init {
  atomic {
    old[0] = true; old[1] = true; old[2] = true;
    adm[0] = true; adm[1] = true; adm[2] = true;
    up[0] = true; up[1] = true; up[2] = true;
    run Net(); run Ticker(); run S(); run Del(); run R();
#if WK2
    run W();
#endif
#if NRD > 0
    run Reader();
#endif
#ifdef WIPE
    run Wipe(); run Rebuilder();
#endif
#ifdef CRASH
    run Crash();
#endif
#ifdef REACH
    run Reach();
#endif
    run MonP1();
#if CHECKDUR
    run MonDur();
#endif
  }
}
