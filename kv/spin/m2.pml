/* kv/spin/m2.pml -- M2: one index slot across consensus stages, with lookups
   (FCP design study, kv_index_design.md in the team notes, sections 4.3, 4.5.1 and 6.1).

   Models: one slot, n = 3 MNs (f = 1); stage 0 EMPTY (initial, committed);
   stage 1 LIVE (inserter) vs FZE (freezer); stage 2, only after LIVE, DEAD
   (remover) vs FZL (freezer). Fast round + classic recovery + commit at every
   stage; lagging words are caught up to the implied C(s-1) before proposing;
   lookups apply analyse() with the max stage and the implied predecessor and
   resolve (help) when undetermined.
   Bound: one inserter, one remover (unless -DNOREM), one freezer, NLOOK
   lookups (default 1), MAXR = 1 classic round, one timeout per process, with
   -DFAULTS one MN crash and intact restart.
   Asserts (section 6.2 properties 1, 3, 4, 6): agreement per stage; stage s is
   chosen only after stage s-1; every CAS installs a higher word (monotone
   words); C words carry the chosen value; each lookup returns a value the
   slot held at some moment of its call (interval witness).
   The state space is too large for exhaustive search here: checked by
   randomized bitstate runs (-DT_RAND -DP_RAND, several seeds), which are
   partial. F words are "visible = durable".
   Planted bugs (must be caught by some seed): MUT_L2, MUT_MINSTAGE.
   C functions abstracted (kv/src/index/): kv_index_insert, kv_index_remove,
   kv_index_lookup (index.c), ix_freeze (split.c) as the freezer, over
   kv__ix_fast, kv__ix_resolve (slot.c) and kv__ix_analyse (analyse.c). Keep
   this list in step with the code. */
#define N 3
#ifndef MAXR
#define MAXR 1
#endif
#ifndef TMO
#define TMO 1
#endif
#ifndef NLOOK
#define NLOOK 1
#endif

/* values */
#define EMPTY 0
#define LIVE  1
#define FZE   2
#define DEAD  3
#define FZL   4

/* word = kind + 4*stage + 16*val + 128*bp + 1024*baE ; kind 0 C, 1 F, 2 P */
#define W(k,s,v,bp,baE) ((k) + 4*(s) + 16*(v) + 128*(bp) + 1024*(baE))
#define KIND(w)  ((w) % 4)
#define STG(w)   (((w)/4) % 4)
#define VAL(w)   (((w)/16) % 8)
#define BP(w)    (((w)/128) % 8)
#define BAE(w)   ((w)/1024)
#define KC 0
#define KF 1
#define KP 2

short word[N];
bool  up[N];
byte  tmo[8];

/* ghost */
byte fastAcc[N*3];          /* [i*3+s] value MN i fast-accepted at stage s (+1), 0 none */
byte clAcc[N*3*8];          /* [(i*3+s)*8+b] value accepted at stage s ballot b (+1) */
byte chosen[3];             /* chosen value (+1) per stage, 0 = none */
byte cur = EMPTY;           /* value of the highest chosen stage */
byte seenMask[4];           /* per lookup: bitmask of 'cur' values during the call */
bool lact[4];
byte gi; byte gs; byte gb;

inline noteChosen(s, v1) {   /* v1 = value+1 */
  assert(chosen[s] == 0 || chosen[s] == v1);
  if
  :: chosen[s] == 0 ->
     chosen[s] = v1;
     /* stage s can only be chosen after stage s-1 */
     assert(s == 0 || chosen[s-1] != 0);
     cur = v1 - 1;
     gi = 0;
     do :: gi < 4 -> if :: lact[gi] -> seenMask[gi] = seenMask[gi] | (1 << cur) :: else -> skip fi; gi++
        :: else -> break od
  :: else -> skip
  fi
}

inline checkChosen() {
  gs = 1;
  do
  :: gs < 3 ->
     if
     :: fastAcc[0*3+gs] != 0 && fastAcc[0*3+gs] == fastAcc[1*3+gs] && fastAcc[1*3+gs] == fastAcc[2*3+gs] ->
          noteChosen(gs, fastAcc[0*3+gs])
     :: else -> skip
     fi;
     gb = 1;
     do
     :: gb < 8 ->
        if
        :: clAcc[(0*3+gs)*8+gb] != 0 && clAcc[(0*3+gs)*8+gb] == clAcc[(1*3+gs)*8+gb] -> noteChosen(gs, clAcc[(0*3+gs)*8+gb])
        :: clAcc[(0*3+gs)*8+gb] != 0 && clAcc[(0*3+gs)*8+gb] == clAcc[(2*3+gs)*8+gb] -> noteChosen(gs, clAcc[(0*3+gs)*8+gb])
        :: clAcc[(1*3+gs)*8+gb] != 0 && clAcc[(1*3+gs)*8+gb] == clAcc[(2*3+gs)*8+gb] -> noteChosen(gs, clAcc[(1*3+gs)*8+gb])
        :: else -> skip
        fi;
        gb++
     :: else -> break
     od;
     gs++
  :: else -> gs = 0; gb = 0; gi = 0; break
  od
}

/* order on words for the monotonicity check: (stage, phase) with C(s) > P(s) > F(s) */
#define RANK(w) (STG(w)*4 + (KIND(w) == KC -> 3 : (KIND(w) == KP -> 2 : 1)))

inline CAS(i, exp, nw, ok) {
  atomic {
    if
    :: !up[i] -> ok = false
    :: up[i] && word[i] == exp ->
       assert(RANK(nw) > RANK(exp) || (KIND(nw) == KP && KIND(exp) == KP && STG(nw) == STG(exp)
                                       && BP(nw) >= BP(exp)));                  /* monotone */
       word[i] = nw; ok = true;
       if :: KIND(nw) == KC && STG(nw) > 0 -> assert(chosen[STG(nw)] == VAL(nw) + 1) :: else -> skip fi;
       if :: KIND(nw) == KF -> fastAcc[i*3+STG(nw)] = VAL(nw) + 1 :: else -> skip fi;
       if :: KIND(nw) == KP && BAE(nw) >= 2 && BP(nw) == BAE(nw) - 1 ->
               assert(clAcc[(i*3+STG(nw))*8+BP(nw)] == 0 || clAcc[(i*3+STG(nw))*8+BP(nw)] == VAL(nw) + 1);
               clAcc[(i*3+STG(nw))*8+BP(nw)] = VAL(nw) + 1
          :: else -> skip fi;
       checkChosen()
    :: up[i] && word[i] != exp -> ok = false
    fi
  }
}

inline READ(i, dst) { atomic { up[i]; dst = word[i] } }
#define CANSKIP(i) (!up[i] || tmo[_pid] < TMO)

/* predecessor value implied by a stage-s word */
#define PRED(s) ((s) == 2 -> LIVE : EMPTY)

/* ---- resolve(stage s, proposer c, default d) -> dec (value, 255 = gave up)
   Lagging words (older than stage s-1 committed) are first caught up to C(s-1, PRED(s)). */
#define RES_LOCALS byte r; byte b; byte prom; byte cl; byte clv; byte fv; bool fsame; byte nfast; \
  short pw[N]; bool pr[N]; byte ri; short rwd; short rnw; bool rok; byte rv; byte acks

inline resolve(s, c, d, dec) {
  r = 0; dec = 255;
  do
  :: r < MAXR && dec == 255 ->
     d_step { b = r*4 + c; prom = 0; cl = 0; clv = 0; fv = 255; fsame = true; nfast = 0; ri = 0;
              pr[0] = false; pr[1] = false; pr[2] = false; pw[0] = 0; pw[1] = 0; pw[2] = 0 }
     do
     :: ri < N ->
        if
        :: READ(ri, rwd);
           if
           :: STG(rwd) > s -> dec = 254                                   /* a later stage exists: stage s decided */
           :: STG(rwd) == s && KIND(rwd) == KC -> dec = VAL(rwd)          /* decided */
           :: STG(rwd) == s && KIND(rwd) == KP && BP(rwd) >= b -> skip
           :: else ->
              /* catch up a lagging word to C(s-1, PRED(s)) first */
              if
              :: STG(rwd) < s - 1 || (STG(rwd) == s - 1 && KIND(rwd) != KC) ->
                 CAS(ri, rwd, W(KC, s-1, PRED(s), 0, 0), rok);
                 if :: rok -> rwd = W(KC, s-1, PRED(s), 0, 0) :: else -> rwd = -1 fi
              :: else -> skip
              fi;
              if
              :: rwd == -1 -> skip
              :: else ->
                 d_step {
                   if
                   :: KIND(rwd) == KC -> rnw = W(KP, s, 0, b, 0)                 /* was C(s-1): nothing accepted */
                   :: KIND(rwd) == KF -> rnw = W(KP, s, VAL(rwd), b, 1)
                   :: KIND(rwd) == KP -> rnw = W(KP, s, VAL(rwd), b, BAE(rwd))
                   fi }
                 CAS(ri, rwd, rnw, rok);
                 d_step {
                   if
                   :: rok -> pr[ri] = true; pw[ri] = rnw; prom++;
                      if :: BAE(rnw) >= 2 && BAE(rnw) - 1 > cl -> cl = BAE(rnw) - 1; clv = VAL(rnw) :: else -> skip fi;
                      if :: BAE(rnw) == 1 -> nfast++;
                            if :: fv == 255 -> fv = VAL(rnw) :: fv != VAL(rnw) -> fsame = false :: else -> skip fi
                         :: else -> skip fi
                   :: else -> skip
                   fi }
              fi
           fi
        :: CANSKIP(ri) -> tmo[_pid]++
        fi;
        d_step { ri++; rwd = 0; rnw = 0; rok = false }
     :: else -> break
     od;
     if
     :: dec != 255 -> break
     :: dec == 255 && prom < 2 -> r++
     :: dec == 255 && prom >= 2 ->
        d_step {
          if
          :: cl > 0 -> rv = clv
          :: cl == 0 && nfast == prom && fsame && fv != 255 -> rv = fv
          :: else -> rv = d
          fi;
          acks = 0; ri = 0 }
        do
        :: ri < N ->
           if
           :: pr[ri] -> CAS(ri, pw[ri], W(KP, s, rv, b, b+1), rok); if :: rok -> acks++ :: else -> skip fi
           :: !pr[ri] -> skip
           fi;
           d_step { ri++; rok = false }
        :: else -> break
        od;
        if :: acks >= 2 -> dec = rv :: else -> r++ fi
     fi
  :: else -> break
  od;
  skip;
  d_step { ri = 0; prom = 0; cl = 0; clv = 0; fv = 0; nfast = 0; acks = 0; b = 0; rv = 0; fsame = false;
           pr[0] = false; pr[1] = false; pr[2] = false; pw[0] = 0; pw[1] = 0; pw[2] = 0; r = 0 }
}

/* commit C(s, v) on every reachable replica (catching up laggards) */
#define COM_LOCALS byte j; short w2; bool ok3
inline commit(s, v) {
  j = 0;
  do
  :: j < N ->
     if
     :: READ(j, w2);
        if
        :: RANK(w2) >= RANK(W(KC, s, v, 0, 0)) -> skip
        :: else -> CAS(j, w2, W(KC, s, v, 0, 0), ok3)
        fi
     :: CANSKIP(j) -> tmo[_pid]++
     fi;
     d_step { j++; w2 = 0; ok3 = false }
  :: else -> break
  od
}

/* ---- proposer: propose value 'pv' at stage 's' (fast round, then resolve) */
#define PROP_LOCALS byte i; short tw; byte succ; bool okf; byte dec
inline propose(s, pv, c, out) {
  succ = 0; i = 0;
  do
  :: i < N ->
     if
     :: READ(i, tw);
        /* catch up lagging word, then fast CAS from C(s-1, PRED(s)) */
        if
        :: STG(tw) < s - 1 || (STG(tw) == s - 1 && KIND(tw) != KC) -> CAS(i, tw, W(KC, s-1, PRED(s), 0, 0), okf)
        :: else -> skip
        fi;
        CAS(i, W(KC, s-1, PRED(s), 0, 0), W(KF, s, pv, 0, 0), okf);
        if :: okf -> succ++ :: else -> skip fi
     :: CANSKIP(i) -> tmo[_pid]++
     fi;
     d_step { i++; tw = 0; okf = false }
  :: else -> break
  od;
  if
  :: succ == N -> out = pv
  :: else -> resolve(s, c, pv, out)
  fi
}

/* ---- lookup: read >= 2 replicas, apply the rule, resolve if undetermined */
proctype Lookup(byte id) {
  short rw[N]; byte nr = 0; byte i = 0; byte res = 255;
  byte smax = 0; byte cv = 255; bool anyP = false; byte lfv = 255; bool lfs = true; byte nf = 0; byte d2; byte dflt;
  RES_LOCALS;
  atomic { lact[id] = true; seenMask[id] = (1 << cur) }        /* invocation */
  do
  :: i < N -> if :: READ(i, rw[i]); nr++ :: CANSKIP(i) -> tmo[_pid]++; rw[i] = -1 fi; i++
  :: else -> break
  od;
  if :: nr < 2 -> goto lend :: else -> skip fi;
  d_step {
    i = 0;
#ifndef MUT_MINSTAGE
    do :: i < N -> if :: rw[i] != -1 && STG(rw[i]) > smax -> smax = STG(rw[i]) :: else -> skip fi; i++
       :: else -> break od;
#else
    smax = 3;                                                      /* MUTANT: trust the most lagging replica */
    do :: i < N -> if :: rw[i] != -1 && STG(rw[i]) < smax -> smax = STG(rw[i]) :: else -> skip fi; i++
       :: else -> break od;
#endif
    i = 0;
    do
    :: i < N ->
       if
       :: rw[i] == -1 || STG(rw[i]) != smax -> skip
       :: KIND(rw[i]) == KC -> cv = VAL(rw[i])
       :: KIND(rw[i]) == KF -> nf++; if :: lfv == 255 -> lfv = VAL(rw[i]) :: lfv != VAL(rw[i]) -> lfs = false :: else -> skip fi
#ifndef MUT_L2
       :: KIND(rw[i]) == KP -> anyP = true
#else
       :: KIND(rw[i]) == KP -> skip                                 /* MUTANT: ignore classic-round words */
#endif
       fi;
       i++
    :: else -> break
    od;
    /* count only words at smax: words below smax count as "not accepted at smax" */
    if
    :: smax == 0 -> res = EMPTY                                     /* all committed EMPTY */
    :: cv != 255 -> res = cv                                        /* rule (i) */
    :: cv == 255 && anyP -> res = 254                               /* need records: treat as undetermined */
    :: cv == 255 && !anyP && !(nf == nr && lfs) -> res = PRED(smax)   /* rule (ii) */
    :: cv == 255 && !anyP && nf == nr && lfs && nr == N -> res = lfv   /* rule (iii) */
    :: else -> res = 254
    fi
  }
  if
  :: res == 254 ->
     if :: lfv != 255 -> dflt = lfv :: else -> dflt = PRED(smax) fi;
     resolve(smax, 4 + id, dflt, d2);   /* help: default = an observed proposal */
     if :: d2 == 255 || d2 == 254 -> goto lend :: else -> res = d2 fi
  :: else -> skip
  fi;
  assert((seenMask[id] >> res) & 1);                                /* linearizable: res was current during the call */
lend:
  lact[id] = false
}

/* inserter: stage 1 LIVE */
proctype Inserter() {
  PROP_LOCALS; RES_LOCALS; COM_LOCALS;
  propose(1, LIVE, 1, dec);
  if :: dec < 254 -> assert(chosen[1] == dec + 1); commit(1, dec) :: else -> skip fi
}

/* remover: waits until it can see LIVE decided (as after a SWARM delete), proposes DEAD at stage 2 */
proctype Remover() {
  PROP_LOCALS; RES_LOCALS; COM_LOCALS; byte k = 0; short x;
  /* it must know LIVE is decided: observe a C(1, LIVE) word */
  do
  :: k < N -> if :: READ(k, x); if :: STG(x) >= 1 && !(STG(x) == 1 && KIND(x) != KC) && !(STG(x)==1 && VAL(x)==FZE) -> break :: else -> k++ fi
               :: k++ fi
  :: k >= N -> goto rend
  od;
  propose(2, DEAD, 2, dec);
  if :: dec < 254 -> assert(chosen[2] == dec + 1); commit(2, dec) :: else -> skip fi;
rend:
  skip
}

/* freezer: freezes whatever is decided */
proctype Freezer() {
  PROP_LOCALS; RES_LOCALS; COM_LOCALS; byte k = 0; short x; byte seenS = 0; byte seenV = EMPTY;
  /* learn the latest decided state from a committed word (or assume stage 0) */
  do
  :: k < N -> if :: READ(k, x); if :: KIND(x) == KC && STG(x) >= seenS -> seenS = STG(x); seenV = VAL(x) :: else -> skip fi :: skip fi; k++
  :: else -> break
  od;
  if
  :: seenS == 0 -> propose(1, FZE, 3, dec); if :: dec < 254 -> assert(chosen[1] == dec + 1); commit(1, dec) :: else -> skip fi
  :: seenS == 1 && seenV == LIVE -> propose(2, FZL, 3, dec); if :: dec < 254 -> assert(chosen[2] == dec + 1); commit(2, dec) :: else -> skip fi
  :: else -> skip
  fi
}

proctype Faults() {
  if
  :: atomic { up[0] = false }; atomic { up[0] = true }
  :: skip
  fi
}

init {
  atomic {
    word[0] = W(KC,0,EMPTY,0,0); word[1] = W(KC,0,EMPTY,0,0); word[2] = W(KC,0,EMPTY,0,0);
    up[0] = true; up[1] = true; up[2] = true;
    chosen[0] = EMPTY + 1; cur = EMPTY;
    run Inserter(); run Freezer();
#ifndef NOREM
    run Remover();
#endif
    byte q = 0;
    do :: q < NLOOK -> run Lookup(q); q++ :: else -> break od;
#ifdef FAULTS
    run Faults();
#endif
  }
}
