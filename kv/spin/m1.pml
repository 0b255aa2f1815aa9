/* kv/spin/m1.pml -- M1: the per-stage consensus core of the FCP index
   (FCP design study, kv_index_design.md in the team notes, sections 4.3-4.5.1 and 6.1).

   Models: one index slot, one consensus stage (EMPTY -> value), n = 3 MNs
   (f = 1), one CAS acceptor word per MN; fast round (ballot 0, fast quorum
   3 of 3) + classic recovery with the Fast Paxos value rule (section 4.5.4),
   background commit, and a lookup applying rules i-iii of section 4.5.1 that
   resolves (helps with its own ballots) when undetermined.
   Faults: client crash at any point (CCRASH), one MN down and restarting
   intact (MNCRASH), timeouts on a live MN (TMO), a timed-out CAS that lands
   later (FLY).
   Bound: NC inserters (default 2), NLOOK lookups (default 1), MAXR classic
   rounds per proposer (default 2), at most one MN failure event, at most one
   timeout per process.
   Asserts (section 6.1 "Ghost monitor"; section 6.2 properties 1, 2, 4, 6):
   at most one value is chosen (agreement); an MN accepts at most one value
   per ballot; C words carry the chosen value; every insert returns the chosen
   value; a lookup returning EMPTY had nothing chosen at its invocation; a
   lookup returning v has v chosen. Deadlock freedom (invalid end states).
   Durability: every word is "visible = durable" (an MN restarts with its
   words intact), so durability rules 1-4 of section 4.4, including rule iii's
   PERSIST in the reader's READ batch, are not expressed here.
   Planted bugs (must fail): MUT_FQ2, MUT_NOFASTRULE, MUT_LOOKUP, MUT_BLIND.
   C functions abstracted (kv/src/index/): kv__ix_fast and kv__ix_resolve
   (slot.c; the commit is ix_commit there), kv__ix_analyse (analyse.c),
   kv__ix_choose (paxos.c); the lookup of kv_index_lookup (index.c). Keep
   this list in step with the code. */
#ifndef NC
#define NC   2          /* inserting clients                      */
#endif
#ifndef MAXR
#define MAXR 2          /* classic rounds per proposer (bound)     */
#endif
#ifndef NLOOK
#define NLOOK 1         /* lookups                                 */
#endif
#ifndef MNCRASH
#define MNCRASH 1       /* MN crash events (each followed by an optional restart) */
#endif
#define N    3
#define NP   (NC+1)     /* proposers: inserters 1..NC, lookup helper NC+1 */

/* word encoding: kind + 4*(val + 4*(bp + 16*baE))
   kind 0 = C0 (stage 0, committed EMPTY), 1 = C1(val), 2 = F(val), 3 = P(bp, ba, val)
   baE: 0 = nothing accepted, 1 = accepted in fast round, k+1 = accepted at classic ballot k */
#define W(k,v,bp,baE)  ((k) + 4*((v) + 4*((bp) + 16*(baE))))
#define KIND(w)  ((w) % 4)
#define VAL(w)   (((w)/4) % 4)
#define BP(w)    (((w)/16) % 16)
#define BAE(w)   ((w)/256)

short word[N];
bool up[N];
byte downs = 0;
byte crashes = 0;

/* ghost state for the monitor */
byte fastAcc[N];              /* value MN i accepted in the fast round, 0 = none */
byte clAcc[N*8];              /* clAcc[i*8+b] = value MN i accepted at classic ballot b */
byte chosenV = 0;             /* the chosen value, 0 = none yet */
bool crashed[NC+1];
byte tmo[8];                  /* timeouts used per process (bounded to 1) */
byte bb;

#ifndef TMO
#define TMO 1           /* voluntary timeouts per process on a live MN (models a slow MN) */
#endif
#define CANSKIP(i)  (!up[i] || tmo[_pid] < TMO)
#ifndef FLY
#define FLY 1           /* 1: a timed-out CAS may still land later (flying op); 0: never */
#endif
chan late = [1] of { byte, short, short };
#define FLYOK (FLY && nfull(late) && tmo[_pid] < 1)

inline chk2(x, y) {
  if
  :: (x != 0 && x == y) -> assert(chosenV == 0 || chosenV == x); chosenV = x
  :: else -> skip
  fi
}

inline checkChosen() {
#ifdef MUT_FQ2
  chk2(fastAcc[0], fastAcc[1]); chk2(fastAcc[0], fastAcc[2]); chk2(fastAcc[1], fastAcc[2]);
#else
  if
  :: (fastAcc[0] != 0 && fastAcc[0] == fastAcc[1] && fastAcc[1] == fastAcc[2]) ->
       assert(chosenV == 0 || chosenV == fastAcc[0]); chosenV = fastAcc[0]
  :: else -> skip
  fi;
#endif
  bb = 1;
  do
  :: bb < 8 ->
     chk2(clAcc[0*8+bb], clAcc[1*8+bb]);
     chk2(clAcc[0*8+bb], clAcc[2*8+bb]);
     chk2(clAcc[1*8+bb], clAcc[2*8+bb]);
     bb++
  :: else -> bb = 0; break
  od
}

inline CAS(i, exp, nw, ok) {
  atomic {
    if
    :: !up[i] -> ok = false                 /* MN down: the verb times out */
    :: up[i] && word[i] == exp ->
         word[i] = nw; ok = true;
         if :: KIND(nw) == 1 -> assert(chosenV != 0 && VAL(nw) == chosenV) :: else -> skip fi;
         if :: KIND(nw) == 2 -> fastAcc[i] = VAL(nw) :: else -> skip fi;
         if :: (KIND(nw) == 3 && BAE(nw) >= 2 && BP(nw) == BAE(nw) - 1) ->
                 assert(clAcc[i*8 + BP(nw)] == 0 || clAcc[i*8 + BP(nw)] == VAL(nw));
                 clAcc[i*8 + BP(nw)] = VAL(nw)
            :: else -> skip fi;
         checkChosen()
    :: up[i] && word[i] != exp -> ok = false
    fi
  }
}

inline FLYCAS(i, exp, nw) {
  atomic {
    if
    :: !up[i] -> skip                       /* lost with the MN */
    :: up[i] && word[i] == exp ->
         word[i] = nw;
         if :: KIND(nw) == 1 -> assert(chosenV != 0 && VAL(nw) == chosenV) :: else -> skip fi;
         if :: KIND(nw) == 2 -> fastAcc[i] = VAL(nw) :: else -> skip fi;
         if :: (KIND(nw) == 3 && BAE(nw) >= 2 && BP(nw) == BAE(nw) - 1) ->
                 assert(clAcc[i*8 + BP(nw)] == 0 || clAcc[i*8 + BP(nw)] == VAL(nw));
                 clAcc[i*8 + BP(nw)] = VAL(nw)
            :: else -> skip fi;
         checkChosen()
    :: up[i] && word[i] != exp -> skip
    fi
  }
}

proctype Network() {
  byte fi_; short fe; short fn;
end_net:
  do
  :: late?fi_,fe,fn -> FLYCAS(fi_, fe, fn); d_step { fi_ = 0; fe = 0; fn = 0 }
  od
}

inline READ(i, dst) { atomic { up[i]; dst = word[i] } }

#define RECOVER_LOCALS byte r; byte b; byte prom; byte cl; byte clv; byte fv0; bool fsame0; byte nfast; \
  short pw[N]; bool pr[N]; byte ri; short rwd; short rnw; bool rok; byte rv; byte acks

/* classic Paxos rounds with the Fast Paxos value-selection rule (fast quorum = N = 3).
   in: c (proposer id), dflt.  out: dec (0 = gave up after MAXR rounds) */
inline recover(c, dflt, dec) {
  r = 0; dec = 0;
  do
  :: r < MAXR && dec == 0 ->
     d_step { b = r*NP + c; prom = 0; cl = 0; clv = 0; fv0 = 0; fsame0 = true; nfast = 0; ri = 0;
              pr[0] = false; pr[1] = false; pr[2] = false; pw[0] = 0; pw[1] = 0; pw[2] = 0 }
     do
     :: ri < N ->
        if
        :: READ(ri, rwd);
           if
           :: KIND(rwd) == 1 -> dec = VAL(rwd)                  /* already committed: learn */
#ifndef MUT_BLIND
           :: KIND(rwd) == 3 && BP(rwd) >= b -> skip            /* higher promise: cannot use */
           :: else ->
#else
           :: else ->                                          /* MUTANT: overwrite even a higher promise */
#endif
              d_step {
                if
                :: KIND(rwd) == 0 -> rnw = W(3, 0, b, 0)
                :: KIND(rwd) == 2 -> rnw = W(3, VAL(rwd), b, 1)
                :: KIND(rwd) == 3 -> rnw = W(3, VAL(rwd), b, BAE(rwd))
                :: else -> skip
                fi }
              if
              :: CAS(ri, rwd, rnw, rok)
              :: FLYOK -> tmo[_pid]++; late!ri,rwd,rnw; rok = false
              fi;
              d_step {
                if
                :: rok -> pr[ri] = true; pw[ri] = rnw; prom++;
                   if :: BAE(rnw) >= 2 && BAE(rnw) - 1 > cl -> cl = BAE(rnw) - 1; clv = VAL(rnw) :: else -> skip fi;
                   if
                   :: BAE(rnw) == 1 -> nfast++;
                      if :: fv0 == 0 -> fv0 = VAL(rnw) :: fv0 != VAL(rnw) -> fsame0 = false :: else -> skip fi
                   :: else -> skip
                   fi
                :: else -> skip
                fi }
           fi
        :: CANSKIP(ri) -> tmo[_pid]++
        fi;
        d_step { ri++; rwd = 0; rnw = 0; rok = false }
     :: else -> break
     od;
     if
     :: dec != 0 -> break
     :: dec == 0 && prom < 2 -> r++
     :: dec == 0 && prom >= 2 ->
        d_step {
          if
          :: cl > 0 -> rv = clv                                           /* highest classic accepted */
#ifndef MUT_NOFASTRULE
          :: cl == 0 && nfast == prom && fsame0 && fv0 != 0 -> rv = fv0    /* possibly fast-chosen: QF-(N-|Q|) = |Q| */
#endif
          :: else -> rv = dflt
          fi;
          acks = 0; ri = 0 }
        do
        :: ri < N ->
           if
           :: pr[ri] -> CAS(ri, pw[ri], W(3, rv, b, b+1), rok); if :: rok -> acks++ :: else -> skip fi
           :: pr[ri] && CANSKIP(ri) -> tmo[_pid]++
           :: pr[ri] && FLYOK -> tmo[_pid]++; late!ri,pw[ri],W(3, rv, b, b+1)
           :: !pr[ri] -> skip
           fi;
           d_step { ri++; rok = false }
        :: else -> break
        od;
        if
        :: acks >= 2 -> dec = rv
        :: else -> r++
        fi
     fi
  :: else -> break
  od;
  skip;
  d_step { ri = 0; prom = 0; cl = 0; clv = 0; fv0 = 0; nfast = 0; acks = 0; b = 0; rv = 0; fsame0 = false;
           pr[0] = false; pr[1] = false; pr[2] = false; pw[0] = 0; pw[1] = 0; pw[2] = 0 }
}

#define COMMIT_LOCALS byte j; short w2; bool ok3

/* background commit: move every reachable replica to C1(dec) */
inline commit(dec) {
  j = 0;
  do
  :: j < N ->
     if
     :: READ(j, w2);
        if
        :: w2 == W(1, dec, 0, 0) -> skip
        :: else -> CAS(j, w2, W(1, dec, 0, 0), ok3)     /* one attempt is enough for the model */
        fi
     :: CANSKIP(j) -> tmo[_pid]++
     fi;
     d_step { j++; w2 = 0; ok3 = false }
  :: else -> break
  od
}

byte result[NC+1];   /* 1 = OK (own value chosen), 2 = EXISTS(other), 3 = gave up */

proctype Inserter(byte c) {
  byte myv = c;
  byte dec = 0;
  RECOVER_LOCALS;
  COMMIT_LOCALS;
  byte nr = 0; byte nC0 = 0; byte seenC1 = 0; byte i = 0; short tw;
  byte succ = 0; bool okf;
  {
    /* RTT1: read the slot on a majority (or all) */
    do
    :: i < N ->
       if
       :: READ(i, tw);
          d_step { nr++; if :: KIND(tw) == 0 -> nC0++ :: KIND(tw) == 1 -> seenC1 = VAL(tw) :: else -> skip fi; tw = 0 }
       :: CANSKIP(i) -> tmo[_pid]++
       fi;
       i++
    :: else -> break
    od;
    if
    :: nr < 2 -> goto gaveup
    :: else -> skip
    fi;
    if
    :: seenC1 != 0 -> dec = seenC1
    :: seenC1 == 0 && nC0 == nr ->
       /* RTT2: fast round, CAS C0 -> F(myv) on every MN */
       i = 0;
       do
       :: i < N ->
          if
          :: CAS(i, W(0,0,0,0), W(2, myv, 0, 0), okf); if :: okf -> succ++ :: else -> skip fi
          :: CANSKIP(i) -> tmo[_pid]++
          :: FLYOK -> tmo[_pid]++; late!i,W(0,0,0,0),W(2, myv, 0, 0)
          fi;
          d_step { i++; okf = false }
       :: else -> break
       od;
       if
#ifdef MUT_FQ2
       :: succ >= 2 -> dec = myv                 /* MUTANT: majority treated as fast quorum */
       :: succ < 2 -> recover(c, myv, dec)
#else
       :: succ == N -> dec = myv                 /* fast quorum (all 3): chosen */
#endif
       :: else -> recover(c, myv, dec)
       fi
    :: else -> recover(c, myv, dec)              /* in-progress state: help / compete */
    fi;
    if
    :: dec == 0 -> goto gaveup
    :: else -> skip
    fi;
    assert(chosenV == dec);                      /* returned value is the chosen one */
    if :: dec == myv -> result[c] = 1 :: else -> result[c] = 2 fi;
    commit(dec);
    goto fin;
gaveup:
    result[c] = 3;
fin:
    skip
  } unless { crashed[c] }
}

proctype Lookup() {
  byte c0;                                       /* ghost: chosen value at invocation */
  short rw[N]; byte nr = 0; byte i = 0;
  byte res = 0;                                  /* 0 = EMPTY, v = value, 255 = must resolve */
  byte cv = 0; bool classic = false; byte fv = 0; bool fsame = true; byte nf = 0;
  byte d2; byte dflt;
  RECOVER_LOCALS;
  c0 = chosenV;                                  /* invocation (may happen at any time) */
  do
  :: i < N ->
     if :: READ(i, rw[i]); nr++ :: CANSKIP(i) -> tmo[_pid]++; rw[i] = -1 fi;
     i++
  :: else -> break
  od;
  if
  :: nr < 2 -> goto lend
  :: else -> skip
  fi;
  d_step {
    i = 0;
    do
    :: i < N ->
       if
       :: rw[i] == -1 -> skip
       :: KIND(rw[i]) == 1 -> cv = VAL(rw[i])
       :: KIND(rw[i]) == 2 || (KIND(rw[i]) == 3 && BAE(rw[i]) == 1) ->
            nf++; if :: fv == 0 -> fv = VAL(rw[i]) :: fv != VAL(rw[i]) -> fsame = false :: else -> skip fi
       :: KIND(rw[i]) == 3 && BAE(rw[i]) >= 2 -> classic = true
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    if
    :: cv != 0 -> res = cv                                          /* a commit word: decided */
#ifdef MUT_LOOKUP
    :: cv == 0 && !classic -> res = 0                               /* MUTANT: ignore fast words */
#else
    :: cv == 0 && !classic && !(nf == nr && fsame) -> res = 0       /* stage 1 not chosen before invocation */
#endif
    :: cv == 0 && !classic && nf == nr && fsame && nr == N -> res = fv   /* all 3 fast-accepted fv: chosen */
    :: else -> res = 255
    fi
  }
  if
  :: res == 255 ->
     dflt = fv; if :: dflt == 0 -> dflt = 1 :: else -> skip fi;
     recover(NP, dflt, d2);                      /* the reader helps with its own ballots */
     if :: d2 == 0 -> goto lend :: else -> res = d2 fi
  :: else -> skip
  fi;
  if
  :: res == 0 -> assert(c0 == 0)                 /* EMPTY: must have been empty at invocation */
  :: else -> assert(chosenV == res)              /* value: must be the chosen one (chosen is stable) */
  fi;
lend:
  skip
}

proctype Faults() {
  do
  :: crashes < MNCRASH && downs == 0 ->
     atomic { if :: up[0] = false :: up[1] = false :: up[2] = false fi; downs = 1; crashes++ }
  :: downs == 1 ->
     atomic { up[0] = true; up[1] = true; up[2] = true; downs = 0 }
  :: break
  od
}

#ifndef CCRASH
#define CCRASH 1
#endif
proctype ClientCrash() {
  if
  :: CCRASH -> crashed[1] = true
  :: CCRASH && NC >= 2 -> crashed[NC] = true
  :: skip
  fi
}

init {
  atomic {
    word[0] = W(0,0,0,0); word[1] = W(0,0,0,0); word[2] = W(0,0,0,0);
    up[0] = true; up[1] = true; up[2] = true;
    byte k = 1;
    do :: k <= NC -> run Inserter(k); k++ :: else -> break od;
    k = 0;
    do :: k < NLOOK -> run Lookup(); k++ :: else -> break od;
    run Faults(); run ClientCrash(); run Network()
  }
}
