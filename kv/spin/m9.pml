/* kv/spin/m9.pml -- M9: recycling a writer's out-of-place value buffers
   (issue 18) against late write-backs: per-reader hazard words on the
   memory nodes, a validating re-read before the write-back, and the
   writer's hazard scan before it reuses a buffer.

   C functions abstracted (kv/src/store/): the store's buffer recycling,
   recycle.c (kv__st_recycle_*; in the tree as this model was written:
   kv__st_reclaim with its hazard round, kv__rc_*, and the settling of the
   client's posted batches, kv__ix_settled: retiring a buffer once a later
   write of its writer completed, the drain, the hazard scan, reuse);
   swarm.c sw_write_back (hazard,
   validation: publish the hazard, re-read the metadata, write back, clear
   the hazard), with sw_install (the per-node batch WRITE buf; CAS meta, a
   CAS that meets a larger word counting as holding, M7's retry collapsed
   into "CAS up to") and sw_fetch (a buffer is taken only if its header
   names the exact write, I13/I15). kv/DESIGN.md, "Recycling (issue 18):
   what stands in the way", states the problem. Keep this list in step with
   the code.

   Models: one object, n = 3 memory nodes (f = 1, majority 2), one writer
   w (the only writer slot, so a word is just the write's number i, 0 =
   bottom, larger = newer) and its log of 2 buffer slots per node, the same
   slot on every node: write Wi uses slot ptr(Wi) = (i - 1) % 2. Per node
   c: meta[c] (meta[w] of the object), buf[c][s] (the write whose copy slot
   s holds: header and value bound together, 0 = never written) and
   hz[c][R] (reader R's hazard word: 0 or 1 + the slot it names; the writer
   is implied).
   Writer: W1, W2, ..., WK in sequence, one in flight. Before Wi (i > 2)
   reuses slot s = ptr(W(i-2)), a later write (W(i-1)) has completed
   (sequential writes: condition (a) holds when Wi starts) and a hazard
   scan done after that reads the hazard words of every reader on 2 nodes
   (any 2, any order, one atomic read per node, interleaving with
   everything). A scan that finds a hazard naming s waits until that word
   changes and scans again (a wait, not a spin, so that a hazard never
   cleared shows up as an invalid end state). With -DDRAIN it also waits,
   before the reuse, until every batch of W(i-2) has landed (in C: every
   batch of the slot's previous write completed, or failed with its queue
   flushed). Wi is then posted to every node: per node one ordered batch
   { buf[c][s] := Wi; CAS meta[c] up to Wi }, landing (Net) per node in
   posting order (one queue per client and node), nodes in any order; Wi
   completes when 2 nodes landed it (ghost lastc: the last completed
   write). The third batch may land arbitrarily late, after later writes
   were posted (still in order on its node), or never.
   Reader R (NR readers, NRD reads each): (1) read meta on 2 nodes (any 2,
   one atomic read per node); m = max; m == 0: return bottom. If m is on 2
   answered nodes: fetch and return. Else write back: (i) hz[c][R] := 1 +
   ptr(m) on 2 nodes (any 2, per node); (ii) validate: read meta again on
   2 nodes (any 2, per node); a word > m there: clear the hazard (v) and
   restart the read (a max below m, both nodes lacking m, goes on: no
   larger write completed before (i)); (iii) fetch m's copy: one atomic
   read of a node whose slot ptr(m) holds m (the header check; any node);
   none: clear the hazard and restart; (iv) on each node of (ii) that
   lacked m, one atomic step { buf[c][ptr(m)] := m (unconditional WRITE);
   CAS meta[c] up to m } (a larger word counts as holding), until 2 nodes
   hold m; (v) clear the hazard on the nodes of (i), per node CAS(1 +
   ptr(m) -> 0); return m. The fast path fetches too; a fetch that finds no
   intact copy restarts the read. A process may stop between any two steps
   for as long as it likes (interleaving).
   -DLATEWB: reader 0's write-back batch to one node (once per run) may
   time out, as kv__ix_round_run lets a batch do: it stays queued and lands
   later (Net) or never, and the reader widens to the third node (one
   step, as in (iv)) to reach 2 holders. Its hazard clear on that node
   stays behind it (one queue per client and node); on the other nodes it
   does not, unless -DDRAIN: then the reader clears its hazard only once
   its write-back batches landed.

   Bound: -DK=3 writes (default; slot 0 reused once) or -DK=4 (both slots
   reused once); -DNR=1 or 2 readers (default 1), -DNRD=1 or 2 reads each
   (default 2). Restarts are unbounded (a restarted read may pick lagging
   nodes again) unless -DMAXRS=N: past N restarts a read gives up (the
   reader stops). No node crash, no client crash beyond "stops forever"
   (every prefix is explored), no lost node: the lost node is the check's.

   Ghost and assertions:
   - Durability, DUR: let T be the last completed write (lastc; with
     -DRETDUR also every write a read returned). For each node x taken as
     lost, the two other nodes let a reader get T or later: their largest
     word M is >= T, and a node of the two holding M holds an intact copy
     of it (buf[ptr(M)] == M). Checked when the writer and every reader
     finished (pending batches may still land or never), and with -DALWAYS
     in every reachable state (a monitor process, enabled only in a state
     that breaks DUR). The assertion is "!(durlost)".
   - Reads: a read returns a write >= the last write completed when it
     began, and the value it fetched is the write it names (the header
     check makes this hold by construction; it guards the model).
   - No process blocks forever (Spin's invalid end states): a hazard left
     set would stop the writer.

   Switches: -DK, -DNR, -DNRD, -DMAXRS as above; -DALWAYS: DUR in every
   state; -DRETDUR: DUR also for the writes reads returned (a read that
   returned m made m durable by its write-back); -DDRAIN: the fix (the
   writer drains the batches of a slot's previous write before reusing it;
   with -DLATEWB the reader drains its write-backs before clearing its
   hazard); -DLATEWB: a timed-out write-back batch that lands late.

   Found (README, "Found by the models"): the protocol as first specified
   (without -DDRAIN) loses durability (m9_spec): the writer's own batch of
   W1 to a lagging node is still queued when W3 reuses W1's slot; a reader
   writes W3 back to that node (slot and word), then the queued W1 batch
   lands and overwrites the slot (its CAS fails on the larger word). The
   node shows W3 with W1's copy; with the one node that holds W3 intact
   lost, W3 is the largest word and has no copy, and the completed W2
   behind it cannot be read either. The hazard cannot stop it: the
   clobber is the writer's. It lasts until the queued W3 batch lands on
   that node, for ever if the queue is flushed in between.

   Planted bugs (must fail): MUT_NOHAZARD (no hazard: steps (i), (ii), (v)
   and the writer's scan skipped; the write-back goes to the nodes of (1)
   that lacked m), MUT_NOVALIDATE (the hazard is published, step (ii) is
   skipped: the hazard may land after the writer's scan; the write-back
   goes to the nodes of (1) that lacked m), MUT_NOWBDRAIN (with -DDRAIN
   -DLATEWB: the reader clears its hazard while its timed-out write-back is
   still queued). */

#ifndef K
#define K 3
#endif
#ifndef NR
#define NR 1
#endif
#ifndef NRD
#define NRD 2
#endif

/* restart the read; with -DMAXRS=N, past N restarts the reader stops
   (gives up; without it restarts are unbounded and not counted) */
#ifdef MAXRS
#define RESTART \
  if \
  :: rs < MAXRS -> rs++; goto again \
  :: else -> printf("T R%d gives up\n", r); goto quit \
  fi
#else
#define RESTART goto again
#endif

#define PTR(i) (((i) - 1) % 2)
#define CNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define HAS(m, c) ((((m) >> (c)) & 1) == 1)

byte meta[3];
byte buf[6];                       /* buf[2 * c + s] */
byte hz[3 * NR];                   /* hz[NR * c + r] */
#define BUF(c, s) buf[2 * (c) + (s)]
#define HZ(c, r) hz[NR * (c) + (r)]

byte cur = 0;                      /* writes posted */
byte dl[3];                        /* writes landed, per node (in order) */
byte lastc = 0;                    /* ghost: last completed write */
byte gret = 0;                     /* ghost: largest write a read returned */
byte ndone = 0;                    /* writer and readers finished */
bool durlost = false;
#ifdef LATEWB
byte lwc = 0;                      /* reader 0's late write-back: 1 + node, 0 = none */
byte lwm = 0;                      /* its write */
bool lused = false;                /* one per run */
#endif              /* ghost: DUR failed (named in the assertion) */

/* the target of DUR */
#ifdef RETDUR
#define TGT (lastc > gret -> lastc : gret)
#else
#define TGT lastc
#endif

/* node x lost; a, b the others */
#define MX(a, b) (meta[a] > meta[b] -> meta[a] : meta[b])
#define INTACT(c, M) (meta[c] == (M) && BUF(c, PTR(M)) == (M))
#define DUR2(a, b) \
  (TGT == 0 || (MX(a, b) >= TGT && (INTACT(a, MX(a, b)) || INTACT(b, MX(a, b)))))
#define DUR (DUR2(1, 2) && DUR2(0, 2) && DUR2(0, 1))

/* ---- the writer's batches land per node, in posting order ---- */
inline LAND(c) {
  atomic {
    dl[c] < cur ->
    dl[c]++;
    BUF(c, PTR(dl[c])) = dl[c];
    if :: meta[c] < dl[c] -> meta[c] = dl[c] :: else -> skip fi;
    printf("T W%d lands on node %d\n", dl[c], c)
  }
}

proctype Net() {
end:
  do
  :: LAND(0)
  :: LAND(1)
  :: LAND(2)
#ifdef LATEWB
  :: atomic {                     /* reader 0's timed-out write-back lands */
       lwc != 0 ->
       BUF(lwc - 1, PTR(lwm)) = lwm;
       if :: meta[lwc - 1] < lwm -> meta[lwc - 1] = lwm :: else -> skip fi;
       printf("T R0's late write-back of W%d lands on node %d\n", lwm, lwc - 1);
       lwc = 0; lwm = 0
     }
#endif
  od
}

/* the hazard words of every reader on node c name slot s */
#if NR == 1
#define HZON(c, s) (HZ(c, 0) == (s) + 1)
#else
#define HZON(c, s) (HZ(c, 0) == (s) + 1 || HZ(c, 1) == (s) + 1)
#endif

/* one node's read of the hazard scan */
inline SCAN1(c) {
  atomic {
    !HAS(sc, c) -> sc = sc | (1 << c);
    found = HZON(c, s);
    printf("T scan node %d: hazard on slot %d: %d\n", c, s, found)
  };
  if
  :: found -> !HZON(c, s); sc = 0; found = false         /* wait, then scan again */
  :: else -> skip
  fi
}

proctype Writer() {
  byte i = 1; byte s; byte sc; bool found;
  do
  :: i > K -> break
  :: i <= K ->
     s = PTR(i);
#ifndef MUT_NOHAZARD
     if
     :: i > 2 ->                  /* reuse: W(i-1) completed; scan */
        sc = 0;
        do
        :: CNT(sc) >= 2 -> break
        :: else ->
           if
           :: SCAN1(0)
           :: SCAN1(1)
           :: SCAN1(2)
           fi
        od;
        sc = 0
     :: else -> skip
     fi;
#endif
#ifdef DRAIN
     /* reuse: every batch of W(i-2), the slot's previous write, has landed */
     (i <= 2 || (dl[0] >= i - 2 && dl[1] >= i - 2 && dl[2] >= i - 2));
#endif
     atomic { cur = i; printf("T W%d posted (slot %d)\n", i, s) };
     atomic {
       (dl[0] >= i) + (dl[1] >= i) + (dl[2] >= i) >= 2 ->
       lastc = i; printf("T W%d completed\n", i)
     };
     i++
  od;
  atomic { s = 0; ndone++ }
}

/* ---- readers ---- */

/* one atomic read of meta on node c into v[o + c] (mask rd) */
inline RMETA(rd, o, c) {
  atomic {
    !HAS(rd, c) -> rd = rd | (1 << c); v[o + c] = meta[c];
    printf("T R%d reads meta on node %d: W%d\n", r, c, v[o + c])
  }
}

/* read meta on 2 nodes, any 2, any order, into v[o..o+2]; mx := the max */
inline READ2(rd, o, mx) {
  do
  :: CNT(rd) >= 2 -> break
  :: else ->
     if
     :: RMETA(rd, o, 0)
     :: RMETA(rd, o, 1)
     :: RMETA(rd, o, 2)
     fi
  od;
  mx = (HAS(rd, 0) && v[o] > mx -> v[o] : mx);
  mx = (HAS(rd, 1) && v[o + 1] > mx -> v[o + 1] : mx);
  mx = (HAS(rd, 2) && v[o + 2] > mx -> v[o + 2] : mx)
}

#define NHOLD(rd, x) ((HAS(rd, 0) && v[0] == (x)) + (HAS(rd, 1) && v[1] == (x)) + \
                      (HAS(rd, 2) && v[2] == (x)))

/* fetch m's copy from a node whose slot holds it; got := m, else 0 */
inline FETCH() {
  atomic {
    if
    :: BUF(0, PTR(m)) == m -> got = BUF(0, PTR(m))
    :: BUF(1, PTR(m)) == m -> got = BUF(1, PTR(m))
    :: BUF(2, PTR(m)) == m -> got = BUF(2, PTR(m))
    :: else -> got = 0
    fi;
    printf("T R%d fetches W%d: %d\n", r, m, got)
  }
}

/* clear the hazard on the nodes of (i), per node CAS(1 + ptr(m) -> 0);
   on its node it runs after a late write-back of the same reader (one
   queue per client and node) */
#ifdef LATEWB
#define NOLATE(c) (r != 0 || lwc != (c) + 1)
#else
#define NOLATE(c) true
#endif
inline CLR1(c) {
  atomic {
    HAS(hp, c) && NOLATE(c) -> hp = hp & ~(1 << (c));
    if :: HZ(c, r) == PTR(m) + 1 -> HZ(c, r) = 0 :: else -> skip fi;
    printf("T R%d clears its hazard on node %d\n", r, c)
  }
}
inline CLEAR() {
  do
  :: hp == 0 -> break
  :: CLR1(0)
  :: CLR1(1)
  :: CLR1(2)
  od
}

inline PUB1(c) {
  atomic {
    !HAS(hp, c) -> hp = hp | (1 << c); HZ(c, r) = PTR(m) + 1;
    printf("T R%d publishes hazard (slot %d) on node %d\n", r, PTR(m), c)
  }
}

/* the write-back on node c: WRITE buf; CAS meta up to m (counted: hold) */
inline WB1(c) {
  atomic {
    HAS(wb, c) -> wb = wb & ~(1 << c); hold = hold | (1 << c);
    BUF(c, PTR(m)) = m;
    if :: meta[c] < m -> meta[c] = m :: else -> skip fi;
    printf("T R%d writes back W%d on node %d (slot %d): meta now W%d\n", r, m, c, PTR(m), meta[c])
  }
}

#ifdef LATEWB
/* reader 0's write-back batch to node c times out: it stays queued and
   lands later (Net), or never; the reader goes on without it */
inline WBLATE(c) {
  atomic {
    r == 0 && !lused && HAS(wb, c) -> wb = wb & ~(1 << c); lused = true;
    lwc = c + 1; lwm = m; lat = 1 << c;
    printf("T R%d's write-back of W%d to node %d times out (in flight)\n", r, m, c)
  }
}
#endif

proctype Reader(byte r) {
  byte k = 0; byte inv; byte rd; byte v[6]; byte m; byte rd2; byte mx2;  /* v[0..2]: (1), v[3..5]: (ii) */
  byte hp; byte wb; byte got; byte hold; byte lat; byte rs;
  do
  :: k >= NRD -> break
  :: k < NRD ->
     atomic { inv = lastc; printf("T R%d read %d begins, last completed W%d\n", r, k, inv) };
again:
     rd = 0; v[0] = 0; v[1] = 0; v[2] = 0; m = 0;   /* m is cleared after CLEAR() used it */
     READ2(rd, 0, m);                                          /* (1) */
     if
     :: m == 0 -> got = 0; goto ret
     :: m != 0 && NHOLD(rd, m) >= 2 ->
        FETCH();
        if :: got == 0 -> RESTART :: else -> goto ret fi
     :: else -> skip
     fi;
#if !defined(MUT_NOHAZARD)
     hp = 0;                                                   /* (i) */
     do
     :: CNT(hp) >= 2 -> break
     :: else ->
        if
        :: PUB1(0)
        :: PUB1(1)
        :: PUB1(2)
        fi
     od;
#endif
#if !defined(MUT_NOHAZARD) && !defined(MUT_NOVALIDATE)
     rd2 = 0; mx2 = 0;                                         /* (ii) */
     READ2(rd2, 3, mx2);
     if
     :: mx2 > m ->
        printf("T R%d validation sees W%d, not W%d: restart\n", r, mx2, m);
        rd2 = 0; v[3] = 0; v[4] = 0; v[5] = 0; mx2 = 0;
        CLEAR(); RESTART
     :: else -> skip
     fi;
     wb = (HAS(rd2, 0) && v[3] < m -> 1 : 0) |
          (HAS(rd2, 1) && v[4] < m -> 2 : 0) |
          (HAS(rd2, 2) && v[5] < m -> 4 : 0);
     hold = rd2 & ~wb;
     rd2 = 0; v[3] = 0; v[4] = 0; v[5] = 0; mx2 = 0;
#else
     wb = (HAS(rd, 0) && v[0] < m -> 1 : 0) |                  /* MUTANT: no (ii) */
          (HAS(rd, 1) && v[1] < m -> 2 : 0) |
          (HAS(rd, 2) && v[2] < m -> 4 : 0);
     hold = rd & ~wb;
#endif
     FETCH();                                                  /* (iii) */
     if
     :: got == 0 -> wb = 0; CLEAR(); RESTART
     :: else -> skip
     fi;
     do                                                        /* (iv) */
     :: wb == 0 && CNT(hold) >= 2 -> break
     :: wb == 0 && CNT(hold) < 2 -> wb = 7 & ~(hold | lat)    /* widen: the third node */
     :: WB1(0)
     :: WB1(1)
     :: WB1(2)
#ifdef LATEWB
     :: WBLATE(0)
     :: WBLATE(1)
     :: WBLATE(2)
#endif
     od;
#if !defined(MUT_NOHAZARD)
#if defined(LATEWB) && defined(DRAIN) && !defined(MUT_NOWBDRAIN)
     (r != 0 || lwc == 0);                                     /* its write-backs landed */
#endif
     CLEAR();                                                  /* (v) */
#endif
ret:
     atomic {
       printf("T R%d returns W%d (value of W%d)\n", r, m, got);
       assert(m >= inv);                                       /* not older than a completed write */
       assert(got == m);                                       /* the value of the write it names */
       if :: m > gret -> gret = m :: else -> skip fi;
       rd = 0; v[0] = 0; v[1] = 0; v[2] = 0; m = 0; got = 0; inv = 0; hp = 0; wb = 0;
       hold = 0; lat = 0; rs = 0;
       k++
     }
  od;
quit:
  atomic { k = 0; rs = 0; ndone++ }
}

#ifdef ALWAYS
/* enabled only in a state that breaks DUR, so it adds no states */
proctype Mon() {
end:
  atomic { !(DUR) -> durlost = true; printf("M9 DUR broken\n"); assert(!durlost) }
}
#endif

proctype Check() {
  atomic {
    ndone == NR + 1 ->
    printf("M9 end: lastc W%d, returned up to W%d; meta %d %d %d; slot0 %d %d %d; slot1 %d %d %d\n",
           lastc, gret, meta[0], meta[1], meta[2], BUF(0, 0), BUF(1, 0), BUF(2, 0),
           BUF(0, 1), BUF(1, 1), BUF(2, 1));
    durlost = !(DUR);
    assert(!durlost)
  }
}

init {
  atomic {
    run Net(); run Writer();
    run Reader(0);
#if NR > 1
    run Reader(1);
#endif
#ifdef ALWAYS
    run Mon();
#endif
    run Check()
  }
}
