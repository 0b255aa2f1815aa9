/* kv/spin/m5.pml -- M5: lost-node rebuild of one index slot
   (FCP design study, kv_index_design.md in the team notes, section 4.7 "MN
   whose memory was lost", its three counterexamples and rebuild steps 1-4).

   Models: one slot, one consensus stage (EMPTY -> value), n = 3 MNs
   (f = 1), one word per MN as in M1 (visible = durable; M6 checks
   durability). One MN, chosen at any time, loses its memory: its word
   becomes all-zero (invalid) and it is a non-member, so every verb to it
   is "no answer" to the clients. The rebuilder (kv_index_rebuild in
   kv/src/index/repair.c) reads the other two members; if one shows the
   latest stage decided (a C word: C1(v), or C0 on both = stage 0 decided
   with no stage-1 word) it installs CAS(0 -> that C word); otherwise it
   resolves stage 1 with a classic round among the other two only (promise
   both at its own ballot, the Fast Paxos value rule, accept both; default
   an accepted value it saw, else FROZEN-EMPTY, the value a freezer would
   propose), then installs CAS(0 -> C1(result)). Only then is the node a
   member again and counted in quorums.
   Clients: inserter A (value 1) runs the fast round (CAS C0 -> F(1) on every
   member; all three counted -> OK(1), commit); otherwise it gives up (M1
   checks recovery). Resolver B (value 2) runs one classic round at ballot 1
   (as a degraded-mode insert or a freezer would), returns and commits its
   decision. A lookup reads the members (>= f+1 replies), applies rules i-iii
   of analyse and gives up when undetermined.
   C functions abstracted: kv_index_rebuild and kv__ix_repair (repair.c); kv__ix_fast,
   kv__ix_resolve, ix_commit (slot.c), kv__ix_analyse (analyse.c),
   kv__ix_choose (paxos.c) as in M1/M6.
   -DGRACE: the rebuilder reads the other members only after every client
   round (a fast round, a classic round, a lookup's read) that was in
   progress when the memory was lost has ended (counted or timed out), i.e.
   it waits one client timeout after the loss. Without it the model fails
   (see README: a fast round that counted the lost node's acceptance before
   the loss completes on the others after the rebuilder read them, and the
   rebuilt node then fast-accepts another value).
   Bound: one memory loss (any MN, any time), one rebuild attempt, one
   round for B, one lookup; no MN crash with intact restart, no timeouts,
   client crash or flying verbs (M1 has them).
   Ghost: every acceptance ever made (a lost node's included: clients may
   have counted it); a value is chosen when all three have fast-accepted it
   or two accepted it at one classic ballot.
   Asserts: at most one value chosen; C words carry the chosen value; A's, B's
   and the rebuilder's results are the chosen value; a lookup returning v has
   v chosen, returning EMPTY had nothing chosen at invocation; observable:
   every value a client returns or commits is the same, and a lookup that
   returns EMPTY was invoked before any operation returned a value.
   Planted bugs (must fail): MUT_EARLYMEMBER (the lost node counts at once,
   its re-initialised word read as C0: counterexamples 1 and 2 of section
   4.7), MUT_COPY (the rebuilder copies the other members' word, F or P
   included, instead of only decided C words), MUT_NORESOLVE (it installs
   C1(v) from an F or P word without resolving the stage). */
#define N 3
#define INV 255         /* all-zero memory: invalid, never equal to a valid word */

/* word: kind + 4*(val + 4*(bp + 4*baE)); kind 0 C0, 1 C1(val), 2 F(val), 3 P(bp, baE, val)
   baE: 0 none, 1 fast-accepted val, b+1 accepted val at classic ballot b (1 = B, 2 = rebuilder) */
#define W(k,v,bp,baE)  ((k) + 4*((v) + 4*((bp) + 4*(baE))))
#define KIND(w)  ((w) % 4)
#define VAL(w)   (((w)/4) % 4)
#define BP(w)    (((w)/16) % 4)
#define BAE(w)   ((w)/64)
#define C0 W(0,0,0,0)
#define FZE 3           /* FROZEN-EMPTY: the rebuilder's default value */

byte word[N];
bool member[N];
byte lost = 255;        /* the MN whose memory was lost (255: none yet) */
bool rebuilt = false;

/* ghost */
byte fastMask[N];       /* bit v: MN i fast-accepted v (ever, across the loss) */
byte clAcc[N*3];        /* [i*3+b]: value MN i accepted at classic ballot b */
byte chosenV = 0;
byte learned = 0;
byte retV = 0;
byte opn = 0;           /* bit p: process p is inside a counted round */
byte pend = 0;          /* rounds in progress at the loss, not yet ended */

inline learn(v) { assert(learned == 0 || learned == (v)); learned = (v) }

byte gb;
#define checkc(nw) if :: KIND(nw) == 1 -> learn(VAL(nw)); assert(VAL(nw) == chosenV) :: else -> skip fi

inline chkchosen() {
  if
  :: (fastMask[0] & fastMask[1] & fastMask[2]) != 0 ->
     if
     :: (fastMask[0] & fastMask[1] & fastMask[2]) == 2 -> assert(chosenV == 0 || chosenV == 1); chosenV = 1
     :: (fastMask[0] & fastMask[1] & fastMask[2]) == 4 -> assert(chosenV == 0 || chosenV == 2); chosenV = 2
     :: (fastMask[0] & fastMask[1] & fastMask[2]) == 8 -> assert(chosenV == 0 || chosenV == 3); chosenV = 3
     :: else -> assert(false)                                 /* two values fast-chosen */
     fi
  :: else -> skip
  fi;
  gb = 1;
  do
  :: gb < 3 ->
     if
     :: clAcc[0*3+gb] != 0 && clAcc[0*3+gb] == clAcc[1*3+gb] -> assert(chosenV == 0 || chosenV == clAcc[gb]); chosenV = clAcc[gb]
     :: clAcc[0*3+gb] != 0 && clAcc[0*3+gb] == clAcc[2*3+gb] -> assert(chosenV == 0 || chosenV == clAcc[gb]); chosenV = clAcc[gb]
     :: clAcc[1*3+gb] != 0 && clAcc[1*3+gb] == clAcc[2*3+gb] -> assert(chosenV == 0 || chosenV == clAcc[3+gb]); chosenV = clAcc[3+gb]
     :: else -> skip
     fi;
     gb++
  :: else -> gb = 0; break
  od
}

/* record the acceptances a newly installed word shows; C words must carry the chosen value */
inline ghostw(i, nw) {
  if
  :: KIND(nw) == 2 -> fastMask[i] = fastMask[i] | (1 << VAL(nw))
  :: KIND(nw) == 3 && BAE(nw) >= 2 && BP(nw) == BAE(nw) - 1 ->
     assert(clAcc[i*3+BP(nw)] == 0 || clAcc[i*3+BP(nw)] == VAL(nw)); clAcc[i*3+BP(nw)] = VAL(nw)
  :: else -> skip
  fi;
  checkc(nw);
  chkchosen()
}

/* a client's CAS: only a member answers */
inline CAS(i, exp, nw, ok) {
  atomic {
    if
    :: member[i] && word[i] == (exp) -> word[i] = (nw); ok = true; ghostw(i, nw)
    :: else -> ok = false
    fi
  }
}
/* a client's READ: a non-member's reply is no answer (INV) */
#define READ(i, dst) atomic { if :: member[i] -> dst = word[i] :: else -> dst = INV fi }

inline openr(p) { opn = opn | (1 << (p)) }
inline closer(p) { atomic { opn = opn & ~(1 << (p)); pend = pend & ~(1 << (p)) } }

#define COM_LOCALS byte j; bool ok3
inline commit(v) {
  j = 0;
  do
  :: j < N ->
     atomic { if :: member[j] && word[j] != W(1, v, 0, 0) -> CAS(j, word[j], W(1, v, 0, 0), ok3) :: else -> skip fi; j++; ok3 = false }
  :: else -> break
  od
}

proctype InserterA() {
  byte i = 0; byte succ = 0; bool ok;
  COM_LOCALS;
  openr(0);
  do
  :: i < N -> CAS(i, C0, W(2, 1, 0, 0), ok); d_step { if :: ok -> succ++ :: else -> skip fi; i++; ok = false }
  :: else -> break
  od;
  closer(0);
  if
  :: succ == N -> assert(chosenV == 1); atomic { learn(1); retV = 1 }; commit(1)
  :: else -> skip
  fi
}

/* one classic round at ballot b by process p over the MNs in mask qm (bit i),
   value rule with default dflt; dec = decided value, 0 if the round failed.
   Used by B (all members) and by the rebuilder (the two others only). */
#define CR_LOCALS byte i; byte w; byte nw; bool ok; byte prom; bool pr[N]; byte pw[N]; \
  byte nfast; byte fv; bool fsame; byte cl; byte clv; byte rv; byte acks
inline classic(p, b, qm, dflt, dec) {
  prom = 0; nfast = 0; fv = 0; fsame = true; cl = 0; clv = 0; acks = 0; dec = 0; i = 0;
  do
  :: i < N ->
     if
     :: ((qm) >> i) & 1 ->
        if
        :: p == 1 -> READ(i, w)
        :: else -> atomic { w = word[i] }                           /* the rebuilder reads the survivors */
        fi;
        if
        :: w == INV -> skip
        :: KIND(w) == 1 -> dec = VAL(w); goto cdone                  /* committed: learn it */
        :: KIND(w) == 3 && BP(w) >= b -> skip                        /* a higher promise */
        :: else ->
           d_step {
             if
             :: KIND(w) == 0 -> nw = W(3, 0, b, 0)
             :: KIND(w) == 2 -> nw = W(3, VAL(w), b, 1)
             :: else -> nw = W(3, VAL(w), b, BAE(w))
             fi }
           if
           :: p == 1 -> CAS(i, w, nw, ok)
           :: else -> atomic { if :: word[i] == w -> word[i] = nw; ok = true; ghostw(i, nw) :: else -> ok = false fi }
           fi;
           d_step {
             if
             :: ok -> pr[i] = true; pw[i] = nw; prom++;
                if :: BAE(nw) >= 2 && BAE(nw) - 1 > cl -> cl = BAE(nw) - 1; clv = VAL(nw) :: else -> skip fi;
                if
                :: BAE(nw) == 1 -> nfast++;
                   if :: fv == 0 -> fv = VAL(nw) :: fv != VAL(nw) -> fsame = false :: else -> skip fi
                :: else -> skip
                fi
             :: else -> skip
             fi }
        fi
     :: else -> skip
     fi;
     d_step { i++; w = 0; nw = 0; ok = false }
  :: else -> break
  od;
  if :: prom < 2 -> goto cdone :: else -> skip fi;
  /* value rule: highest classic; else possibly fast-chosen (all of Q when |Q| = 2 or 3); else dflt */
  d_step {
    if
    :: cl > 0 -> rv = clv
    :: cl == 0 && nfast == prom && fsame && fv != 0 -> rv = fv
    :: else -> rv = dflt
    fi;
    i = 0 }
  do
  :: i < N ->
     if
     :: pr[i] && p == 1 -> CAS(i, pw[i], W(3, rv, b, b+1), ok)
     :: pr[i] && p != 1 -> atomic { if :: word[i] == pw[i] -> word[i] = W(3, rv, b, b+1); ok = true; ghostw(i, word[i]) :: else -> ok = false fi }
     :: else -> ok = false
     fi;
     d_step { if :: ok -> acks++ :: else -> skip fi; i++; ok = false }
  :: else -> break
  od;
  if :: acks >= 2 -> dec = rv :: else -> skip fi;
cdone:
  skip;
  d_step { i = 0; prom = 0; nfast = 0; fv = 0; fsame = false; cl = 0; clv = 0; acks = 0; rv = 0;
           pr[0] = false; pr[1] = false; pr[2] = false; pw[0] = 0; pw[1] = 0; pw[2] = 0 }
}

proctype ResolverB() {
  CR_LOCALS; COM_LOCALS; byte dec;
  openr(1);
  classic(1, 1, 7, 2, dec);
  closer(1);
  if
  :: dec != 0 -> assert(chosenV == dec); atomic { learn(dec); retV = dec }; commit(dec)
  :: else -> skip
  fi
}

proctype Lookup() {
  byte c0; byte r0; byte w; byte i = 0; byte nr = 0;
  byte cv = 0; byte nf = 0; byte fv = 0; bool fsame = true; bool cls = false; byte res;
  atomic { c0 = chosenV; r0 = retV; openr(2) };                 /* invocation */
  /* each reply is folded into the counts as it arrives (same verdict as analysing R at the end) */
  do
  :: i < N ->
     READ(i, w);
     d_step {
       if
       :: w == INV -> skip
       :: KIND(w) == 1 -> nr++; cv = VAL(w)
       :: KIND(w) == 2 || (KIND(w) == 3 && BAE(w) == 1) ->
          nr++; nf++; if :: fv == 0 -> fv = VAL(w) :: fv != VAL(w) -> fsame = false :: else -> skip fi
       :: KIND(w) == 3 && BAE(w) >= 2 -> nr++; cls = true
       :: else -> nr++
       fi;
       i++; w = 0 }
  :: else -> break
  od;
  closer(2);
  d_step {
    if
    :: nr < 2 -> res = 255                                           /* too few members answered */
    :: nr >= 2 && cv != 0 -> res = cv                                /* rule i */
    :: nr >= 2 && cv == 0 && !cls && !(nf == nr && fsame) -> res = 0 /* rule ii */
    :: nr >= 2 && cv == 0 && !cls && nf == nr && fsame && nr == N -> res = fv   /* rule iii (durable here) */
    :: else -> res = 255
    fi;
    i = 0; nr = 0; cv = 0; nf = 0; fv = 0; fsame = false; cls = false
  }
  if
  :: res == 255 -> skip
  :: res == 0 -> assert(c0 == 0); assert(r0 == 0)
  :: else -> assert(chosenV == res); atomic { learn(res); retV = res }
  fi
}

/* memory loss of one MN, at any time */
proctype Loss() {
  atomic {
    if :: lost = 0 :: lost = 1 :: lost = 2 fi;
#ifndef MUT_EARLYMEMBER
    word[lost] = INV; member[lost] = false;
#else
    word[lost] = C0;                         /* MUTANT: re-initialised and counted at once */
#endif
    pend = opn
  }
}

proctype Rebuilder() {
  CR_LOCALS; byte a; byte c; byte wa; byte wc; byte v; byte dec;
  atomic { lost != 255 -> if :: lost == 0 -> a = 1; c = 2 :: lost == 1 -> a = 0; c = 2 :: lost == 2 -> a = 0; c = 1 fi };
#ifdef GRACE
  pend == 0;                                 /* rounds in progress at the loss have ended */
#endif
  atomic { wa = word[a] };
  atomic { wc = word[c] };
#if defined(MUT_COPY)
  d_step { if :: wa >= wc -> v = wa :: else -> v = wc fi }    /* MUTANT: copy the newer word as is */
  goto install;
#elif defined(MUT_NORESOLVE)
  d_step {
    if
    :: KIND(wa) == 1 -> v = wa
    :: KIND(wc) == 1 -> v = wc
    :: KIND(wa) == 0 && KIND(wc) == 0 -> v = C0
    :: VAL(wa) != 0 -> v = W(1, VAL(wa), 0, 0)                /* MUTANT: an undecided value as decided */
    :: else -> v = W(1, VAL(wc), 0, 0)
    fi }
  goto install;
#endif
  if
  :: KIND(wa) == 1 -> v = wa
  :: KIND(wc) == 1 -> v = wc
  :: KIND(wa) == 0 && KIND(wc) == 0 -> v = C0                     /* stage 0 decided, stage 1 not started */
  :: else ->
     /* stage 1 in progress: resolve it among the two others; default an accepted value seen */
     d_step {
       if
       :: KIND(wa) == 2 || (KIND(wa) == 3 && BAE(wa) > 0) -> v = VAL(wa)
       :: KIND(wc) == 2 || (KIND(wc) == 3 && BAE(wc) > 0) -> v = VAL(wc)
       :: else -> v = FZE
       fi }
     classic(3, 2, (1 << a) | (1 << c), v, dec);
     if
     :: dec == 0 -> goto rend                                      /* failed: the node stays out */
     :: else -> assert(chosenV == dec); v = W(1, dec, 0, 0)
     fi
  fi;
install:
  atomic {
    if
    :: word[lost] == INV -> word[lost] = v; ghostw(lost, v)        /* CAS(0 -> decided word) */
    :: else -> skip
    fi;
    member[lost] = true; rebuilt = true                            /* counted from now on */
  };
rend:
  skip
}

init {
  atomic {
    word[0] = C0; word[1] = C0; word[2] = C0;
    member[0] = true; member[1] = true; member[2] = true;
    run InserterA(); run ResolverB(); run Loss(); run Rebuilder();
#ifndef NOLOOK
    run Lookup()
#endif
  }
}
