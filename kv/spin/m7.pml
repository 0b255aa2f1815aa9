/* kv/spin/m7.pml -- M7: SWARM value replication (Safe-Guess over a reliable
   max register of per-writer In-n-Out metadata words, plus one timestamp lock
   per writer), made durable on memory nodes that crash and restart from
   their persistent pools. Source: the SWARM paper ("SWARM: Replicating
   Shared Disaggregated-Memory Data in No Time", arXiv 2409.16258,
   sections 3-4 and appendices A-C)
   and its digest notes/swarm.md sections 2-4 (line labels S*, R*, T*, I*,
   M* are the digest's; App. C is the linearization).

   C functions abstracted (kv/src/store/swarm.c): the Safe-Guess
   write (S4-S11) and read (R11-R21), the reliable max register's M.WRITE
   (inner_write) and M.READ with write-back (App. A), MAX by CAS (M1-M7) on
   the writer's own metadata slot, TRYLOCK (T3-T12), and the per-node batches
   that carry them with their PERSISTs.

   Models: one register (one key), n = 3 memory nodes (f = 1), writers w in
   {0, 1}, one reader-only client. Per node c and writer slot s: the metadata
   word meta[c][s] (a tuple (ts, s, flag), GUESSED < VERIFIED, 0 = bottom;
   integer order = the lexicographic (ts, writer, flag) order) and the
   timestamp-lock word tsl[c][s] ((ts, mode), 0 = bottom). Every word has a
   visible value (mv, tv: what CAS and READ see) and a durable one (md, td:
   what survives a crash). A batch to a node runs its verbs in order, one
   Spin step each, and the client counts the reply only when the whole batch
   (its last verb a PERSIST) completed:
     write batch (S6)      CAS meta[c][w]; READ meta[c][other]; PERSIST meta[c][*]
                           (the CAS's old value is the read of the own slot)
     MAX retry / write-back / VERIFY (M5-M7, App. A inner_write)
                           CAS meta[c][s]; PERSIST meta[c][*]
     read batch (M.READ)   READ meta[c][0]; READ meta[c][1]; PERSIST meta[c][*]
                           (word by word; -DSNAP: both words in one step)
     TRYLOCK batch (T8)    CAS tsl[c][s]; PERSIST tsl[c][s]
   A node crash (Faults) sets every visible word to its durable value, makes
   the node unreachable and ends every batch in flight on it (an incarnation
   number: a verb of a batch posted before the crash fails), so any prefix of
   a batch may have executed. The restart makes it reachable with its durable
   words. The value buffer is bound to (w, ts) (it is written and persisted
   before the CAS in the same ordered batch, so a visible metadata word always
   names a persisted buffer); the model carries no buffer word.
   Client caches (App. A's cache[], also the MAX expected values) are per
   client, per node, per slot, kept across operations, updated only from
   completed replies.

   Bound: writer 0 does W0 writes, writer 1 W1 writes (default 1 each), NRP
   reader clients (default 2) NRD reads each (default 1; in sequence, the
   background VERIFY of a read between them). -DGUESS1: writer 1 always
   guesses last+1. A guessed clock is last+1 or last+2 (clock skew: stale
   guesses happen); ts' = max(m.clock, last) + 1. A client visits the nodes
   of each phase one batch at a time (batches of one client do not overlap),
   in the rotation order it picks per operation (-DFIXORD: reader 0's first
   read starts at node 0, nodes being symmetric), and moves on as soon as it
   has its majority: the third node is visited only if one failed, and a
   batch it did not send is dropped, not landed late. -DSNAP: a batch's
   reads of the two slots (and the writer's CAS with its read of the other
   slot) are one step, an atomic snapshot; otherwise word by word. At most one node
   crash and restart per run (-DNOCRASH: none). A client crash is a process
   that is never scheduled again: every prefix is explored, so it needs no
   step of its own, and no process ever waits for another client.

   Ghost and assertions: retkey[v] is the key (ts, writer) under which value
   v (one per write) took effect (its write's ts(W)) or was returned by a
   read; gmax is the largest key of a completed operation, copied at each
   invocation (inv). App. C's real-time conditions: a write completes with
   ts(W) > inv (W1 -> W2, R -> W), a read with ts(R) >= inv (W -> R, R1 ->
   R2, bottom only if inv is bottom); no value under two keys (no
   oscillation); validity (a returned value's write was invoked); TSL
   exclusion (READ and WRITE never both true for one (w, ts)); durable words
   never decrease (asserted at every PERSIST, vis >= dur); termination: a
   read returns within MAXIT iterations (Lemma C.5: 2 * writers + 1) and no
   wait blocks forever (Spin's invalid end states).
   Ghost rule check (off with -DOBS): every word of a read reply the reader
   counts is durable on that node when counted.
   Planted bugs (must fail): MUT_READNOPERSIST (the read batch has no
   PERSIST; caught by the ghost rule check: its observable effect, a second
   reader missing a value a first one returned after a node crash, needs two
   reader clients, beyond the exhaustive bound), MUT_LOSTJOIN (a node restarts with every word zeroed and counts
   at once), MUT_SINGLEREAD (a reader returns a GUESSED tuple seen once),
   MUT_NOLOCK (the slow-path rewrite without TRYLOCK). */
#define N 3
#ifndef W0
#define W0 1
#endif
#ifndef W1
#define W1 1
#endif
#ifndef NRD
#define NRD 1
#endif
#ifndef NRP
#define NRP 2
#endif
#define MAXIT 5
#define NK 16                      /* keys (clock * 2 + writer) */

#define TUP(clk, w, f) ((clk) * 4 + (w) * 2 + (f))
#define KEY(t)  ((t) / 2)
#define CLK(t)  ((t) / 4)
#define WR(t)   (((t) / 2) % 2)
#define FLG(t)  ((t) % 2)
#define MX(a, b) ((a) > (b) -> (a) : (b))
#define LREAD 0
#define LWRITE 1

byte mv[6]; byte md[6];            /* meta[c][s] at c*2+s: visible, durable */
byte tv[6]; byte td[6];            /* tsl[c][s] */
bool up[N];
byte inc[N];                       /* incarnation: a crash ends the batches in flight */

/* ghost */
byte gmax = 0;                     /* largest key of a completed operation */
byte valof[NK];                    /* key -> value written under it (0: never invoked) */
byte retkey[5];                    /* value -> key it took effect / was returned under */
unsigned lkR : NK = 0;             /* TRYLOCK(ts, READ) returned true, per key */
unsigned lkW : NK = 0;

#define ALIVE(c) (up[c] && inc[c] == bi)
#define NC(c) MX(cache[(c) * 2], cache[(c) * 2 + 1])
#define GE(x) ((NC(0) >= (x)) + (NC(1) >= (x)) + (NC(2) >= (x)))
#define CNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define CMAX MX(MX(MX(cache[0], cache[1]), MX(cache[2], cache[3])), MX(cache[4], cache[5]))
#define ROT if :: c0 = 0 :: c0 = 1 :: c0 = 2 fi
#ifdef FIXORD                      /* the first read starts at node 0 (nodes are symmetric) */
#define RROT if :: id == 0 && j == 1 -> c0 = 0 :: else -> ROT fi
#else
#define RROT ROT
#endif

/* PERSIST meta[c][*]: durable words never decrease */
inline PERSISTM(c) {
  assert(mv[(c) * 2] >= md[(c) * 2] && mv[(c) * 2 + 1] >= md[(c) * 2 + 1]);
  md[(c) * 2] = mv[(c) * 2]; md[(c) * 2 + 1] = mv[(c) * 2 + 1]
}

/* MAX(c, s, nv), M1-M7: CAS from the cached slot value; on failure retry
   with the old value while it is below nv. One batch {CAS; PERSIST} each. */
inline MAXN(c, s, nv) {
  do
  :: cache[(c) * 2 + (s)] < nv ->
     atomic {
       if
       :: up[c] -> bi = inc[c]; old = mv[(c) * 2 + (s)];
          if :: old == cache[(c) * 2 + (s)] -> mv[(c) * 2 + (s)] = nv :: else -> skip fi;   /* M5 */
          ok = true
       :: else -> ok = false
       fi
     };
     if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
     if
     :: ok -> d_step {                                      /* M6, M7 */
          if :: old == cache[(c) * 2 + (s)] -> cache[(c) * 2 + (s)] = nv
             :: else -> cache[(c) * 2 + (s)] = old fi;
          old = 0; bi = 0; ok = false }
     :: else -> d_step { old = 0; bi = 0 }; break           /* batch lost */
     fi
  :: else -> break                                          /* M4 */
  od
}

/* inner_write(x) (App. A): MAX into the slot of x's writer on every node
   whose cache is below x; wait until a majority holds >= x. */
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
  GE(x) >= 2;                                               /* inner-write-wait */
  d_step { k = 0; c = 0 }
}

/* TRYLOCK(ts, md) on tsl[*][s], T3-T12; result in res */
inline TRYLOCK(s, ts, mode) {
  k = 0; emask = 0;
  do
  :: k < N && CNT(emask) >= 2 -> break
  :: k < N && CNT(emask) < 2 ->
     c = (c0 + k) % N;
     do
     :: rd[c] == 0 || rd[c] / 2 < (ts) ->                   /* T6 */
        atomic {
          if
          :: up[c] -> bi = inc[c]; old = tv[c * 2 + (s)];
             if :: old == rd[c] -> tv[c * 2 + (s)] = (ts) * 2 + (mode) :: else -> skip fi;   /* T8 */
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
        :: else -> d_step { old = 0; bi = 0 }; break        /* batch lost: this loop never exits */
        fi
     :: else -> emask = emask | (1 << c); break
     od;
     k++
  :: else -> break
  od;
  CNT(emask) >= 2;                                          /* T9 */
  d_step {
    res = true; k = 0;
    do
    :: k < N ->
       if
       :: rd[k] != 0 && rd[k] / 2 > (ts) -> res = false     /* T10 */
       :: rd[k] == (ts) * 2 + 1 - (mode) -> res = false     /* T11 */
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

/* a write of value v completes with ts(W) = key */
inline WDONE(v, key) {
  atomic {
    assert(key > inv);                                      /* W1 -> W2, R -> W */
    assert(retkey[v] == 0 || retkey[v] == key);             /* no oscillation */
    retkey[v] = key; gmax = MX(gmax, key); inv = 0
  }
}

proctype Writer(byte w) {
  byte cache[6]; byte rd[3];
  byte c; byte c0; byte k; byte bi; byte old; bool ok; byte r1;
  byte x; byte m; byte g; byte last = 0; byte rmask; byte emask; bool res;
  byte inv; byte v; byte j = 0; byte o = 1 - w;
  do
  :: (w == 0 && j < W0) || (w == 1 && j < W1) ->
     atomic {                                               /* S4, S5: invocation */
       j++; v = w * 2 + j; inv = gmax;
#ifdef GUESS1
       if :: w == 1 -> g = last + 1 :: else -> if :: g = last + 1 :: g = last + 2 fi fi;
#else
       if :: g = last + 1 :: g = last + 2 fi;                /* guessTs(), maybe stale */
#endif
       last = g; x = TUP(g, w, 0); valof[KEY(x)] = v
     };
     ROT;                                                   /* this operation's node order */
     /* S6: M.WRITE(x) and M.READ in one batch per node */
     k = 0; rmask = 0;
     do
     :: k < N && CNT(rmask) >= 2 && GE(x) >= 2 -> break
     :: k < N && !(CNT(rmask) >= 2 && GE(x) >= 2) ->
        c = (c0 + k) % N;
        atomic {
          if
          :: up[c] -> bi = inc[c]; old = mv[c * 2 + w];
             if :: old == cache[c * 2 + w] -> mv[c * 2 + w] = x :: else -> skip fi;   /* I6 = M5 */
#ifdef SNAP
             r1 = mv[c * 2 + o];
#endif
             ok = true
          :: else -> ok = false
          fi
        };
#ifndef SNAP
        if :: ok -> atomic { if :: ALIVE(c) -> r1 = mv[c * 2 + o] :: else -> ok = false fi } :: else -> skip fi;
#endif
        if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
        if
        :: ok -> d_step {
             if :: old == cache[c * 2 + w] -> cache[c * 2 + w] = x :: else -> cache[c * 2 + w] = old fi;
             cache[c * 2 + o] = MX(cache[c * 2 + o], r1); rmask = rmask | (1 << c);
             old = 0; r1 = 0; bi = 0; ok = false };
           MAXN(c, w, x)                                    /* M7 retries */
        :: else -> d_step { old = 0; r1 = 0; bi = 0 }
        fi;
        k++
     :: else -> break
     od;
     CNT(rmask) >= 2 && GE(x) >= 2;                         /* read-wait, inner-write-wait */
     d_step { m = CMAX; rmask = 0; k = 0; c = 0 };          /* cache-max */
     INNERW(m);                                             /* M.READ's write-back */
     if
     :: m <= x + 1 ->                                       /* S7: m <= (ts, w, VERIFIED) */
        WDONE(v, KEY(x));
        INNERW(x + 1)                                       /* S8: background VERIFY */
     :: else ->                                             /* S9 */
#ifndef MUT_NOLOCK
        TRYLOCK(w, g, LWRITE);                              /* S10 */
#else
        res = true;                                         /* MUTANT: no TRYLOCK */
#endif
        if
        :: res ->                                           /* S11: ts' > m.ts, > every earlier ts */
           d_step { g = MX(CLK(m), last) + 1; last = g; x = TUP(g, w, 1); valof[KEY(x)] = v };
           INNERW(x);
           WDONE(v, KEY(x))
        :: else -> WDONE(v, KEY(x))                         /* a reader locked w.ts: w stands */
        fi
     fi;
     d_step { x = 0; m = 0; g = 0; res = false; v = 0; c0 = 0 }
  :: else -> break
  od
}

proctype Reader(byte id) {
  byte cache[6]; byte rd[3]; byte seen[2];
  byte c; byte c0; byte k; byte bi; byte old; bool ok; byte r0; byte r1;
  byte m; byte mask; byte emask; bool res; byte inv; byte j = 0; byte it;
  byte rk; byte rv; byte bg;
  do
  :: j < NRD ->
     atomic { j++; inv = gmax; seen[0] = 0; seen[1] = 0; it = 0 };   /* R11 */
     RROT;
     do                                                     /* R12 */
     :: true ->
        it++; assert(it <= MAXIT);                          /* Lemma C.5 bound */
        /* R13: m := M.READ() */
        k = 0; mask = 0;
        do
        :: k < N && CNT(mask) >= 2 -> break
        :: k < N && CNT(mask) < 2 ->
           c = (c0 + k) % N;
#ifndef SNAP
           atomic { if :: up[c] -> bi = inc[c]; r0 = mv[c * 2]; ok = true :: else -> ok = false fi };
           if :: ok -> atomic { if :: ALIVE(c) -> r1 = mv[c * 2 + 1] :: else -> ok = false fi } :: else -> skip fi;
#else
           atomic { if :: up[c] -> bi = inc[c]; r0 = mv[c * 2]; r1 = mv[c * 2 + 1]; ok = true :: else -> ok = false fi };
#endif
#ifndef MUT_READNOPERSIST
           if :: ok -> atomic { if :: ALIVE(c) -> PERSISTM(c) :: else -> ok = false fi } :: else -> skip fi;
#endif
           d_step {                                         /* update-cache-r */
             if
             :: ok ->
#ifndef OBS
                assert(md[c * 2] >= r0 && md[c * 2 + 1] >= r1);   /* ghost: a counted reply is durable */
#endif
                cache[c * 2] = MX(cache[c * 2], r0); cache[c * 2 + 1] = MX(cache[c * 2 + 1], r1);
                mask = mask | (1 << c)
             :: else -> skip
             fi;
             r0 = 0; r1 = 0; ok = false; bi = 0 };
           k++
        :: else -> break
        od;
        CNT(mask) >= 2;                                     /* read-wait */
        d_step { m = CMAX; mask = 0; k = 0; c = 0 };
        if :: m != 0 -> INNERW(m) :: else -> skip fi;       /* write-back */
        if
        :: m == 0 -> rk = 0; rv = 0; break                  /* R14: bottom */
        :: m != 0 && FLG(m) == 1 -> rk = KEY(m); rv = valof[KEY(m)]; break   /* R14: VERIFIED */
#ifdef MUT_SINGLEREAD
        :: m != 0 && FLG(m) == 0 -> rk = KEY(m); rv = valof[KEY(m)]; break   /* MUTANT: GUESSED seen once */
#endif
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] == m ->     /* R15 */
           TRYLOCK(WR(m), CLK(m), LREAD);                   /* R16 */
           if
           :: res -> rk = KEY(m); rv = valof[KEY(m)]; bg = m + 1; break   /* R17, R18 */
           :: else -> seen[WR(m)] = m                       /* R21 */
           fi
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] != m && seen[WR(m)] != 0 ->   /* R19 */
           rv = valof[KEY(seen[WR(m)])]; rk = retkey[rv];   /* R20: that write completed */
           assert(rk != 0); break
        :: m != 0 && FLG(m) == 0 && seen[WR(m)] == 0 -> seen[WR(m)] = m      /* R21 */
        fi;
        m = 0
     od;
     atomic {                                               /* the read returns */
       assert(rk >= inv);                                   /* W -> R, R1 -> R2 */
       if
       :: rv != 0 ->
          assert(retkey[rv] == 0 || retkey[rv] == rk);      /* no oscillation */
          retkey[rv] = rk
       :: else -> assert(rk == 0)                           /* validity */
       fi;
       gmax = MX(gmax, rk); inv = 0; rk = 0; rv = 0; m = 0; it = 0; seen[0] = 0; seen[1] = 0
     };
     if :: bg != 0 -> INNERW(bg); bg = 0 :: else -> skip fi;  /* R17: background VERIFY */
     c0 = 0
  :: else -> break
  od
}

proctype Faults() {
  byte c;
#ifndef NOCRASH
  if
  :: atomic {
       if :: c = 0 :: c = 1 :: c = 2 fi;
       up[c] = false; inc[c]++;
       mv[c * 2] = md[c * 2]; mv[c * 2 + 1] = md[c * 2 + 1];
       tv[c * 2] = td[c * 2]; tv[c * 2 + 1] = td[c * 2 + 1]
     };
     atomic {                                               /* restart from the durable pool */
#ifdef MUT_LOSTJOIN
       mv[c * 2] = 0; mv[c * 2 + 1] = 0; md[c * 2] = 0; md[c * 2 + 1] = 0;   /* MUTANT: pool lost, */
       tv[c * 2] = 0; tv[c * 2 + 1] = 0; td[c * 2] = 0; td[c * 2 + 1] = 0;   /* counted at once */
#endif
       up[c] = true
     }
  :: skip
  fi
#endif
}

init {
  atomic {
    up[0] = true; up[1] = true; up[2] = true;
    run Writer(0); run Writer(1); run Reader(0);
#if NRP > 1
    run Reader(1);
#endif
    run Faults()
  }
}
