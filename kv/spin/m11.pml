/* kv/spin/m11.pml -- M11: the repair of a dead writer's locked guess. A
   Safe-Guess writer w whose guess was stale (S9) takes its own timestamp
   lock in WRITE mode at ts(m) (S10) and dies before S11: a reader whose
   double read (R15) meets w's GUESSED tuple m fails its READ lock (T11:
   ts(m) held in WRITE mode). The repair checked here, run by such a reader
   (any reader, once per read) once w's life is over for good (M10's lease:
   it posts nothing more, every batch it posted landed or failed):
     1. read the metadata words of every member (all 2f+1 must answer;
        else no repair now);
     2. if the largest word over all members is m itself, write m back to
        f+1 members, CAS w's slot m -> m|VERIFIED (persisted) on every
        member that holds m -- the outcome S10 gives when a reader locked
        first -- and return m's value;
     3. otherwise: nothing special (-DREPAIR=1, as specified), or write the
        largest word back to f+1 members (-DREPAIR=2, the default: the fix).
   -DREPAIR=0: no repair. Derived from m7.pml (its words, batches, MAX,
   inner_write, TRYLOCK and App. C assertions; see m7's header).

   C functions abstracted (kv/src/store/swarm.c): kv__sw_write (S4-S11;
   the S9 path writes m back to f+1 before S10), sw_write_deleted (a
   tombstone read by S6; since c339ff0 written back before S10's lock,
   -DWBFIRST; before, the lock came first, -DTOMB's default), sw_read (a
   view is the max of its own round's replies, no cache across rounds,
   unlike App. A: -DAPPACACHE gives App. A's), sw_trylock, sw_write_back.
   C as built is REPAIR=0 (rows m11, m11_tomb_wbfirst): the repair was
   written (409f528: sw_orphan, sw_read_all; w's death =
   kv__st_claim_holder plus one lease, M10) and dropped (c339ff0) on the
   findings below.

   Findings (kv/spin/README.md, "Found by the models"):
   - Step 2 is never reached (-DNOVERIFY asserts that; rows m11_repair,
     m11_tomb_fix): w takes the WRITE lock at ts(m) only after its S6 read
     a word larger than m on some member, persisted in that batch, and
     words never decrease; so a read of every member finds a word above m,
     whether w is dead or not. On the S9 path that word is even on f+1
     members before S10, so a blocked reader sees it at its next
     iteration: no reader stays blocked, with or without the repair
     (m11: C's S9 path without repair is wait-free).
   - A key stays blocked for ever on the tombstone path: the deleter
     stopped with its tombstone on one member, w died after its lock, and
     the reader's rounds go to the other two (m11_tomb_block). The repair
     as specified reads the tombstone and leaves it there: still blocked
     (m11_tomb_spec). Fixes checked: step 3 writes the largest word back
     (REPAIR=2, m11_tomb_fix), or sw_write_deleted writes the tombstone
     back before its lock, as the S9 path does (-DWBFIRST,
     m11_tomb_wbfirst: no reader blocks even while w is alive, wait-free,
     no repair needed).

   Models: one key, n = 3 memory nodes (f = 1). Writer w (slot 0, one
   write) dies at any step (Killer sets the ghost wdead; w's `unless` then
   ends it: a batch cut midway failed). Slot 1 holds writer o (one write;
   it stops at its own S9 and skips S8: a bound), or with -DTOMB a deleter
   whose tombstone is a VERIFIED word of maximal ts in its slot (C's
   delete without M8's first-deleter words). o may stop at any step.
   Guessed clocks are 1 or 2 (-DGUESS1: w 1, o 2). NRP readers (default 1)
   x NRD reads (default 1), snapshot reads of a node's two slots. A
   client's batches go to one node after another in its rotation order
   and stop at f+1 (the third node only after a failure), so the rounds of
   one read go to one majority, as C's go to the majority starting at the
   primary. -DFIXORD: reader 0 reads {0, 1} first, o (the deleter) starts
   at node 2. -DNOS8: w skips S8 (its background VERIFY; the CI bound).
   Words visible + durable as in m7; -DCRASH: one node crash + restart.
   -DLOCKFIRST: the S9 path locks before writing the larger word back (not
   C's order: sw_write_deleted's order on the S9 path, where S11's tuple
   and the repair's verify can meet).

   Assertions: m7's (App. C real-time order on (ts, writer) keys, no value
   under two keys, validity, TSL exclusion, durable words never decrease);
   a write that failed on a tombstone (returned "deleted") never has its
   value returned; liveness as a bound: a read iteration begun after w's
   death is at most the MAXIT-th (-DWAITFREE: every iteration counts, m7's
   wait-freedom); -DNOVERIFY: step 2 is never reached; no wait blocks for
   ever (invalid end states).
   Planted bugs: MUT_MAJORITY (the repair reads a majority only; with
   -DNOVERIFY step 2 is then reached), MUT_ALIVE (the repair does not wait
   for w's death), both together caught as w's failed write returned
   (-DTOMB) or its value under two timestamps (-DLOCKFIRST); MUT_FRESH
   (step 2 re-writes w's value VERIFIED under a fresh ts instead of
   verifying m) and MUT_NOWB (step 2 verifies without writing m back
   first) are reachable only with MUT_MAJORITY and harmless there (w dead:
   README). */
#define N 3
#ifndef NRD
#define NRD 1
#endif
#ifndef NRP
#define NRP 1
#endif
#ifndef REPAIR
#define REPAIR 2
#endif
#ifndef MAXIT
#define MAXIT 5
#endif
#define NK 16                      /* keys (clock * 2 + writer) */
#define TC 6                       /* the tombstone's clock: above every other */

#define TUP(clk, w, f) ((clk) * 4 + (w) * 2 + (f))
#define KEY(t)  ((t) / 2)
#define CLK(t)  ((t) / 4)
#define WR(t)   (((t) / 2) % 2)
#define FLG(t)  ((t) % 2)
#define MX(a, b) ((a) > (b) -> (a) : (b))
#define LREAD 0
#define LWRITE 1
#define TOMBW TUP(TC, 1, 1)
#define DEL 4                      /* the tombstone's "value" */
#ifdef MUT_ALIVE
#define DEADOK true                /* MUTANT: repair while w may still post */
#else
#define DEADOK wdead
#endif

byte mv[6]; byte md[6];            /* meta[c][s] at c*2+s: visible, durable */
byte tv[6]; byte td[6];            /* tsl[c][s] */
bool up[N];
byte inc[N];

/* ghost */
byte gmax = 0;                     /* largest key of a completed operation */
byte valof[NK];                    /* key -> value written under it */
byte retkey[5];                    /* value -> key it took effect / was returned under */
bool wfail = false;                /* w's write returned "deleted": its value never took effect */
bool wdead = false;                /* w's life is over: it takes no more steps */
unsigned lkR : NK = 0;
unsigned lkW : NK = 0;

#define ALIVE(c) (up[c] && inc[c] == bi)
#define NC(c) MX(cache[(c) * 2], cache[(c) * 2 + 1])
#define GE(x) ((NC(0) >= (x)) + (NC(1) >= (x)) + (NC(2) >= (x)))
#define CNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define CMAX MX(MX(MX(cache[0], cache[1]), MX(cache[2], cache[3])), MX(cache[4], cache[5]))
#define ROT if :: c0 = 0 :: c0 = 1 :: c0 = 2 fi
#ifdef FIXORD
#define RROT if :: id == 0 && j == 1 -> c0 = 0 :: else -> ROT fi
#else
#define RROT ROT
#endif

inline PERSISTM(c) {
  assert(mv[(c) * 2] >= md[(c) * 2] && mv[(c) * 2 + 1] >= md[(c) * 2 + 1]);
  md[(c) * 2] = mv[(c) * 2]; md[(c) * 2 + 1] = mv[(c) * 2 + 1]
}

/* MAX(c, s, nv), M1-M7 (m7) */
inline MAXN(c, s, nv) {
  do
  :: cache[(c) * 2 + (s)] < nv ->
     atomic {
       if
       :: up[c] -> bi = inc[c]; old = mv[(c) * 2 + (s)];
          if :: old == cache[(c) * 2 + (s)] -> mv[(c) * 2 + (s)] = nv :: else -> skip fi;
          ok = true
       :: else -> ok = false
       fi
     };
     if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
     if
     :: ok -> d_step {
          if :: old == cache[(c) * 2 + (s)] -> cache[(c) * 2 + (s)] = nv
             :: else -> cache[(c) * 2 + (s)] = old fi;
          old = 0; bi = 0; ok = false }
     :: else -> d_step { old = 0; bi = 0 }; break
     fi
  :: else -> break
  od
}

/* inner_write(x) (App. A, m7) */
inline INNERW(x) {
  k = 0;
  do
  :: k < N && GE(x) >= 2 -> break
  :: k < N && GE(x) < 2 ->
     c = (c0 + k) % N;
     if :: NC(c) < (x) -> MAXN(c, WR(x), x) :: else -> skip fi;
     k++
  :: else -> break
  od;
  GE(x) >= 2;
  d_step { k = 0; c = 0 }
}

/* TRYLOCK(ts, mode) on tsl[*][s], T3-T12 (m7); result in res; oth: T11
   (some member showed ts in the other mode) */
inline TRYLOCK(s, ts, mode) {
  k = 0; emask = 0;
  do
  :: k < N && CNT(emask) >= 2 -> break
  :: k < N && CNT(emask) < 2 ->
     c = (c0 + k) % N;
     do
     :: rd[c] == 0 || rd[c] / 2 < (ts) ->
        atomic {
          if
          :: up[c] -> bi = inc[c]; old = tv[c * 2 + (s)];
             if :: old == rd[c] -> tv[c * 2 + (s)] = (ts) * 2 + (mode) :: else -> skip fi;
             ok = true
          :: else -> ok = false
          fi
        };
        if
        :: ok -> atomic {
             if
             :: ALIVE(c) -> assert(tv[c * 2 + (s)] >= td[c * 2 + (s)]); td[c * 2 + (s)] = tv[c * 2 + (s)]
             :: else -> ok = false
             fi }
        :: else -> skip
        fi;
        if
        :: ok -> d_step {
             if :: old == rd[c] -> rd[c] = (ts) * 2 + (mode) :: else -> rd[c] = old fi;
             old = 0; bi = 0; ok = false }
        :: else -> d_step { old = 0; bi = 0 }; break
        fi
     :: else -> emask = emask | (1 << c); break
     od;
     k++
  :: else -> break
  od;
  CNT(emask) >= 2;
  d_step {
    res = true; oth = false; k = 0;
    do
    :: k < N ->
       if
       :: rd[k] != 0 && rd[k] / 2 > (ts) -> res = false
       :: rd[k] == (ts) * 2 + 1 - (mode) -> res = false; oth = true
       :: else -> skip
       fi;
       k++
    :: else -> break
    od;
    if
    :: res && (mode) == LREAD -> lkR = lkR | (1 << ((ts) * 2 + (s))); assert((lkW & (1 << ((ts) * 2 + (s)))) == 0)
    :: res && (mode) == LWRITE -> lkW = lkW | (1 << ((ts) * 2 + (s))); assert((lkR & (1 << ((ts) * 2 + (s)))) == 0)
    :: else -> skip
    fi;
    rd[0] = 0; rd[1] = 0; rd[2] = 0; emask = 0; k = 0; c = 0
  }
}

inline WDONE(v, key) {
  atomic {
    assert(key > inv);
    assert(retkey[v] == 0 || retkey[v] == key);
    retkey[v] = key; gmax = MX(gmax, key); inv = 0
  }
}

/* The Safe-Guess write (m7's, with C's tombstone path). */
inline WRITE(w) {
  byte cache[6]; byte rd[3];
  byte c; byte c0; byte k; byte bi; byte old; bool ok; byte r1;
  byte x; byte m; byte g; byte rmask; byte emask; bool res; bool oth;
  byte inv; byte v; byte o = 1 - w;
  atomic {                                                  /* S4, S5 */
    v = w * 2 + 1; inv = gmax;
#ifdef GUESS1
    if :: w == 0 -> g = 1 :: else -> g = 2 fi;              /* w below o */
#else
    if :: g = 1 :: g = 2 fi;                                /* guessTs(), maybe stale */
#endif
    x = TUP(g, w, 0); valof[KEY(x)] = v
  };
#ifdef FIXORD
  if :: w == 1 -> c0 = 2 :: else -> ROT fi;                 /* o starts outside reader 0's majority */
#else
  ROT;
#endif
  /* S6: M.WRITE(x) and M.READ in one batch per node */
  k = 0; rmask = 0;
  do
  :: k < N && CNT(rmask) >= 2 && GE(x) >= 2 -> break
  :: k < N && !(CNT(rmask) >= 2 && GE(x) >= 2) ->
     c = (c0 + k) % N;
     atomic {
       if
       :: up[c] -> bi = inc[c]; old = mv[c * 2 + w];
          if :: old == cache[c * 2 + w] -> mv[c * 2 + w] = x :: else -> skip fi;
          r1 = mv[c * 2 + o];
          ok = true
       :: else -> ok = false
       fi
     };
     if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
     if
     :: ok -> d_step {
          if :: old == cache[c * 2 + w] -> cache[c * 2 + w] = x :: else -> cache[c * 2 + w] = old fi;
          cache[c * 2 + o] = MX(cache[c * 2 + o], r1); rmask = rmask | (1 << c);
          old = 0; r1 = 0; bi = 0; ok = false };
        MAXN(c, w, x)
     :: else -> d_step { old = 0; r1 = 0; bi = 0 }
     fi;
     k++
  :: else -> break
  od;
  CNT(rmask) >= 2 && GE(x) >= 2;
  d_step { m = CMAX; rmask = 0; k = 0; c = 0 };
  if
  :: m == TOMBW ->                                          /* sw_write_deleted */
#ifdef WBFIRST
     INNERW(m);                                             /* fix: the tombstone to f+1 first */
#endif
     TRYLOCK(w, g, LWRITE);
     if
     :: res ->
#ifndef WBFIRST
        INNERW(m);                                          /* C: write-back after the lock */
#endif
        atomic { assert(retkey[v] == 0); wfail = true; inv = 0 }   /* returns "deleted" */
     :: else -> WDONE(v, KEY(x))                            /* a reader locked ts: the write stands */
     fi
  :: m != TOMBW && m <= x + 1 ->                            /* S7 */
     INNERW(m);                                             /* (m7's M.READ write-back) */
     WDONE(v, KEY(x));
#ifndef NOS8
     if :: w == 0 -> INNERW(x + 1) :: else -> skip fi       /* S8 (o stops here) */
#endif
  :: m != TOMBW && m > x + 1 && w == 1 -> skip              /* o stops at S9 (bound) */
  :: m != TOMBW && m > x + 1 && w == 0 ->                   /* S9 */
#ifndef LOCKFIRST
     INNERW(m);                                             /* C: m to f+1, then S10 */
#endif
     TRYLOCK(w, g, LWRITE);                                 /* S10 */
#ifdef LOCKFIRST
     INNERW(m);
#endif
     if
     :: res ->                                              /* S11 */
        d_step { g = MX(CLK(m), g) + 1; x = TUP(g, w, 1); valof[KEY(x)] = v };
        INNERW(x);
        WDONE(v, KEY(x))
     :: else -> WDONE(v, KEY(x))
     fi
  fi;
  d_step {                                                  /* dead locals */
    cache[0] = 0; cache[1] = 0; cache[2] = 0; cache[3] = 0; cache[4] = 0; cache[5] = 0;
    x = 0; m = 0; g = 0; res = false; oth = false; v = 0; c0 = 0; inv = 0
  }
}

proctype WriterW() {
  { WRITE(0) } unless { wdead }                             /* w dies between any two steps */
}

#ifndef TOMB
proctype WriterO() {
  WRITE(1)
}
#else
/* the deleter: its tombstone (ts maximal, VERIFIED) into its slot on f+1 */
proctype Deleter() {
  byte cache[6]; byte c; byte c0; byte k; byte bi; byte old; bool ok; byte inv;
  atomic { inv = gmax; valof[KEY(TOMBW)] = DEL };
#ifdef FIXORD
  c0 = 2;                                                   /* starts outside reader 0's majority */
#else
  ROT;
#endif
  INNERW(TOMBW);
  WDONE(DEL, KEY(TOMBW))
}
#endif

proctype Killer() {
  wdead = true                                              /* w's life is over */
}

proctype Reader(byte id) {
  byte cache[6]; byte rd[3]; byte seen[2];
  byte c; byte c0; byte k; byte bi; byte old; bool ok; byte r0; byte r1;
  byte m; byte mask; byte emask; bool res; bool oth; byte inv; byte j = 0; byte it;
  byte rk; byte rv; byte bg; bool rep; bool done; byte top;
  do
  :: j < NRD ->
     atomic { j++; inv = gmax; seen[0] = 0; seen[1] = 0; it = 0; rep = false };
     RROT;
     do                                                     /* R12 */
     :: true ->
#ifdef WAITFREE
        it++;
#else
        if :: wdead -> it++ :: else -> skip fi;             /* iterations begun after w's death */
#endif
        assert(it <= MAXIT);
        /* R13: m := M.READ(), snapshot reads of both slots per node */
        k = 0; mask = 0;
        do
        :: k < N && CNT(mask) >= 2 -> break
        :: k < N && CNT(mask) < 2 ->
           c = (c0 + k) % N;
           atomic { if :: up[c] -> bi = inc[c]; r0 = mv[c * 2]; r1 = mv[c * 2 + 1]; ok = true :: else -> ok = false fi };
           if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
           d_step {
             if
             :: ok -> cache[c * 2] = MX(cache[c * 2], r0); cache[c * 2 + 1] = MX(cache[c * 2 + 1], r1);
                m = MX(m, MX(r0, r1)); mask = mask | (1 << c)
             :: else -> skip
             fi;
             r0 = 0; r1 = 0; ok = false; bi = 0 };
           k++
        :: else -> break
        od;
        CNT(mask) >= 2;
#ifdef APPACACHE
        d_step { m = CMAX; mask = 0; k = 0; c = 0 };        /* App. A: max over the whole cache */
#else
        d_step { mask = 0; k = 0; c = 0 };                  /* C: max of this round's replies */
#endif
        if :: m != 0 -> INNERW(m) :: else -> skip fi;       /* write-back */
        if
        :: m == 0 -> rk = 0; rv = 0; break                  /* R14: bottom */
        :: m != 0 && FLG(m) == 1 -> rk = KEY(m); rv = valof[KEY(m)]; break   /* R14 (a tombstone too) */
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] == m ->     /* R15 */
           TRYLOCK(WR(m), CLK(m), LREAD);                   /* R16 */
           if
           :: res -> rk = KEY(m); rv = valof[KEY(m)]; bg = m + 1; break   /* R17, R18 */
           :: else ->
#if REPAIR > 0
              if
              :: oth && WR(m) == 0 && !rep && DEADOK ->
                 /* the repair, step 1: read every member (snapshot, persisted) */
                 k = 0; mask = 0;
                 do
#ifdef MUT_MAJORITY
                 :: k < N && CNT(mask) >= 2 -> break         /* MUTANT: a majority only */
                 :: k < N && CNT(mask) < 2 ->
#else
                 :: k < N ->
#endif
                    c = (c0 + k) % N;
                    atomic { if :: up[c] -> bi = inc[c]; r0 = mv[c * 2]; r1 = mv[c * 2 + 1]; ok = true :: else -> ok = false fi };
                    if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
                    d_step {
                      if
                      :: ok -> cache[c * 2] = MX(cache[c * 2], r0); cache[c * 2 + 1] = MX(cache[c * 2 + 1], r1);
                         top = MX(top, MX(r0, r1)); mask = mask | (1 << c)
                      :: else -> skip
                      fi;
                      r0 = 0; r1 = 0; ok = false; bi = 0 };
                    k++
                 :: else -> break
                 od;
                 if
#ifdef MUT_MAJORITY
                 :: CNT(mask) >= 2 ->
#else
                 :: CNT(mask) == N ->                       /* all answered */
#endif
                    d_step { mask = 0; k = 0; c = 0 };
                    if
                    :: top == m ->                          /* step 2: m is the largest word */
#ifdef NOVERIFY
                       assert(false);                       /* ghost: step 2 is never reached */
#endif
#ifndef MUT_NOWB
                       INNERW(m);                           /* m on f+1 */
#endif
#ifndef MUT_FRESH
                       k = 0;                               /* m -> m|VERIFIED where m stands */
                       do
                       :: k < N ->
                          c = k;
                          if :: cache[c * 2] == m -> MAXN(c, 0, m + 1) :: else -> skip fi;
                          k++
                       :: else -> break
                       od;
                       k = 0;
                       d_step { c = 0; rk = KEY(m); rv = valof[KEY(m)]; done = true }
#else
                       /* MUTANT: w's value again under a fresh ts, VERIFIED */
                       d_step { top = TUP(CLK(top) + 1, 0, 1); valof[KEY(top)] = valof[KEY(m)] };
                       INNERW(top);
                       d_step { rk = KEY(top); rv = valof[KEY(top)]; done = true }
#endif
                    :: top != m ->                          /* step 3: a larger word exists */
#if REPAIR == 2
                       INNERW(top)                          /* fix: write it back to f+1 */
#else
                       skip                                 /* as specified: nothing */
#endif
                    fi;
                    d_step { rep = true; top = 0 }
                 :: else -> d_step { mask = 0; k = 0; c = 0; top = 0 }   /* a member did not answer: not now */
                 fi
              :: else -> skip
              fi;
              if :: done -> break :: else -> skip fi;
#endif
              seen[WR(m)] = m                               /* R21 */
           fi
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] != m && seen[WR(m)] != 0 ->   /* R19 */
           rv = valof[KEY(seen[WR(m)])]; rk = retkey[rv];   /* R20 */
           assert(rk != 0); break
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] == 0 -> seen[WR(m)] = m      /* R21 */
        fi;
        m = 0
     od;
     atomic {                                               /* the read returns */
       assert(rk >= inv);
       if
       :: rv != 0 ->
          assert(retkey[rv] == 0 || retkey[rv] == rk);
          assert(!(rv == 1 && wfail));                      /* w's failed write never returned */
          retkey[rv] = rk
       :: else -> assert(rk == 0)
       fi;
       gmax = MX(gmax, rk); inv = 0; rk = 0; rv = 0; m = 0; it = 0; seen[0] = 0; seen[1] = 0;
       done = false; top = 0
     };
     if :: bg != 0 -> INNERW(bg); bg = 0 :: else -> skip fi;
     c0 = 0
  :: else -> break
  od;
  atomic {                                                  /* dead locals */
    cache[0] = 0; cache[1] = 0; cache[2] = 0; cache[3] = 0; cache[4] = 0; cache[5] = 0; j = 0
  }
}

proctype Faults() {
  byte c;
  if
  :: atomic {
       if :: c = 0 :: c = 1 :: c = 2 fi;
       up[c] = false; inc[c]++;
       mv[c * 2] = md[c * 2]; mv[c * 2 + 1] = md[c * 2 + 1];
       tv[c * 2] = td[c * 2]; tv[c * 2 + 1] = td[c * 2 + 1]
     };
     up[c] = true
  :: skip
  fi
}

init {
  atomic {
    up[0] = true; up[1] = true; up[2] = true;
    run WriterW();
#ifndef TOMB
    run WriterO();
#else
    run Deleter();
#endif
#ifndef NOKILL
    run Killer();
#endif
    run Reader(0);
#if NRP > 1
    run Reader(1);
#endif
#ifdef CRASH
    run Faults()
#endif
  }
}
