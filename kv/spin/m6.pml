/* kv/spin/m6.pml -- M6: durability of one consensus stage, with words that
   are visible before they are durable and an MN crash that reverts them
   (FCP design study, kv_index_design.md in the team notes, section 4.4
   durability rules 1, 3 and 4, and section 4.7 "MN crash, then restart from
   an intact pool").

   Models: one index slot, one consensus stage (EMPTY -> value), n = 3 MNs
   (f = 1). Each MN word has a visible value vis[i] (what CAS and READ see)
   and a durable value dur[i] (what survives a crash). Every batch is
   "CAS; PERSIST" to one MN: the CAS is one step on vis, the PERSIST a later
   step that copies vis to dur (whatever vis then holds: a flush persists the
   range), and the client counts the CAS only when the PERSIST completed
   (rule 1). An MN crash sets vis := dur and the MN is down until it restarts
   (with its durable pool: the study's "restart intact"); a verb to a down
   MN fails, and a batch whose PERSIST fails is not counted.
   Clients: inserter A (value 1) runs the fast round (CAS C0 -> F(1); PERSIST
   on each MN) and, if all three are counted, returns OK(1) and commits C(1);
   otherwise it stops (its client gives up; M1 checks recovery). Resolver B
   (value 2) runs one classic round (phase 1 promise CAS; PERSIST, phase 2
   accept CAS; PERSIST, value rule of Fast Paxos as in M1), returns its
   decision and commits it (rule 3: it counted the quorum itself). The
   lookup reads all three MNs; its READ batch to an MN may or may not carry
   a PERSIST after the READ (chosen per lookup); it applies rules i-iii of
   analyse (rule iii, "all n show F(v)", only with the PERSIST: rule 4) and
   gives up when undetermined (M1 checks the lookup that helps). In the
   code a lookup's first READ carries no PERSIST (view_read with quorum,
   slot.c), and it reads again with one before counting fast words
   (ix_widen, index.c): the choice made here per lookup.
   C functions abstracted: kv__ix_fast (the fast round), kv__ix_resolve (the
   classic round), ix_commit (slot.c); kv__ix_analyse (analyse.c, rules
   i-iii for one stage); kv__ix_choose (paxos.c, the value rule).
   Bound: one MN crash and restart (any MN, at any time), one round for B,
   one lookup; no client crash, timeouts or flying verbs (M1 has them).
   Records are abstracted as in M1 (acceptances inline in P words), so rule
   2 (record persisted before its P word) is not expressed.
   Ghost: acceptances are recorded when they become durable (a PERSIST that
   copies a word showing them); a value is chosen when a fast quorum (3) or
   a classic majority at one ballot has durably accepted it.
   Asserts: at most one value chosen (agreement); C words carry the chosen
   value; A's and B's results are the chosen value at return; a lookup
   returning v has v chosen at return, returning EMPTY had nothing chosen at
   invocation. Observable checks, kept with -DOBS alone: every value any
   client returns or commits is the same; a lookup that returns EMPTY was
   invoked before any operation returned a value.
   Planted bugs (must fail, also with -DOBS, i.e. through an observable
   contradiction): MUT_READNOPERSIST (rule iii applied to a READ batch
   without PERSIST), MUT_COUNTEARLY (a proposer counts a CAS before its
   PERSIST). */
#define N 3

/* word: kind + 4*(val + 4*(bp + 4*baE)); kind 0 C0, 1 C1(val), 2 F(val), 3 P(bp, baE, val)
   baE: 0 none accepted, 1 fast-accepted val, 2 accepted val at classic ballot 1 */
#define W(k,v,bp,baE)  ((k) + 4*((v) + 4*((bp) + 4*(baE))))
#define KIND(w)  ((w) % 4)
#define VAL(w)   (((w)/4) % 4)
#define BP(w)    (((w)/16) % 4)
#define BAE(w)   ((w)/64)
#define C0 W(0,0,0,0)

byte vis[N];
byte dur[N];
bool up[N];
byte inc[N];            /* MN incarnation: a crash ends every batch in progress on it */
byte crashes = 0;

/* ghost: durable acceptances */
byte dfast[N];          /* value durably fast-accepted by MN i (0 none) */
byte dcl[N];            /* value durably accepted at classic ballot 1 by MN i */
byte chosenV = 0;
byte learned = 0;       /* first value any client returned or committed */
byte retV = 0;          /* a value returned by a completed operation */

inline learn(v) {
  assert(learned == 0 || learned == v); learned = v
}

#ifndef OBS
#define GA(x) assert(x)
#else
#define GA(x) skip
#endif
inline chkchosen() {
  if
  :: dfast[0] != 0 && dfast[0] == dfast[1] && dfast[1] == dfast[2] ->
     GA(chosenV == 0 || chosenV == dfast[0]); chosenV = dfast[0]
  :: else -> skip
  fi;
  if
  :: dcl[0] != 0 && dcl[0] == dcl[1] -> GA(chosenV == 0 || chosenV == dcl[0]); chosenV = dcl[0]
  :: dcl[0] != 0 && dcl[0] == dcl[2] -> GA(chosenV == 0 || chosenV == dcl[0]); chosenV = dcl[0]
  :: dcl[1] != 0 && dcl[1] == dcl[2] -> GA(chosenV == 0 || chosenV == dcl[1]); chosenV = dcl[1]
  :: else -> skip
  fi
}

/* CAS on the visible word; a C1 word must carry a durably chosen value */
inline CAS(i, exp, nw, ok) {
  atomic {
    if
    :: up[i] && vis[i] == exp ->
       vis[i] = nw; ok = true;
       if :: KIND(nw) == 1 -> learn(VAL(nw));
#ifndef OBS
             assert(VAL(nw) == chosenV)
#endif
          :: else -> skip fi
    :: else -> ok = false
    fi
  }
}

/* PERSIST, the verb after a READ or CAS of the same batch (posted when the
   MN had incarnation bi): vis -> dur; the acceptances the word shows become
   durable. A batch that straddles a crash of the MN fails. */
inline PERSIST(i, bi, ok) {
  atomic {
    if
    :: up[i] && inc[i] == bi ->
       dur[i] = vis[i]; ok = true;
       if
       :: KIND(dur[i]) == 2 || (KIND(dur[i]) == 3 && BAE(dur[i]) == 1) -> dfast[i] = VAL(dur[i])
       :: KIND(dur[i]) == 3 && BAE(dur[i]) == 2 -> dcl[i] = VAL(dur[i])
       :: else -> skip
       fi;
       chkchosen()
    :: else -> ok = false
    fi
  }
}

/* one batch "CAS; PERSIST" to MN i: cnt = counted */
/* (bi: the MN's incarnation when the CAS ran; a local of the caller) */
#ifndef MUT_COUNTEARLY
#define BATCH(i, exp, nw, ok, cnt) atomic { bi = inc[i]; CAS(i, exp, nw, ok) }; \
  if :: ok -> PERSIST(i, bi, cnt) :: else -> cnt = false fi; bi = 0
#else
#define BATCH(i, exp, nw, ok, cnt) atomic { bi = inc[i]; CAS(i, exp, nw, ok) }; cnt = ok; \
  if :: ok -> PERSIST(i, bi, ok) :: else -> skip fi; bi = 0     /* MUTANT: counted before the PERSIST */
#endif

/* background commit C1(v) on every MN that is up (rule 3: the caller knows
   v is durably chosen). One step per MN: CAS(current word -> C1(v)) with its
   PERSIST. Folding the read, CAS and PERSIST is safe to abstract: a C word
   carries a durably chosen value, so one reverted by a crash is the same as
   one that never landed (the MN lags), and a CAS that fails because the
   word moved is the same as an MN the commit skipped. */
#define COM_LOCALS byte j; bool ok3; bool ok4; byte bi
inline commit(v) {
#ifdef NOCOMMIT
  j = N;
#else
  j = 0;
#endif
  do
  :: j < N ->
     atomic {
       if
       :: up[j] && vis[j] != W(1, v, 0, 0) ->
          bi = inc[j]; CAS(j, vis[j], W(1, v, 0, 0), ok3); PERSIST(j, bi, ok4)
       :: else -> skip
       fi;
       j++; ok3 = false; ok4 = false; bi = 0
     }
  :: else -> break
  od
}

proctype InserterA() {
  byte i = 0; byte succ = 0; bool ok; bool cnt;
  COM_LOCALS;
  do
  :: i < N ->
     BATCH(i, C0, W(2, 1, 0, 0), ok, cnt);
     d_step { if :: cnt -> succ++ :: else -> skip fi; i++; ok = false; cnt = false }
  :: else -> break
  od;
  if
  :: succ == N ->
#ifndef OBS
     assert(chosenV == 1);
#endif
     atomic { learn(1); retV = 1 };
     commit(1)
  :: else -> skip                                  /* gives up (recovery is M1's) */
  fi
}

proctype ResolverB() {
  byte i; byte w; byte nw; bool ok; bool cnt; byte prom = 0; bool pr[N]; byte pw[N];
  byte nfast = 0; byte fv = 0; bool fsame = true; byte rv; byte acks = 0;
  COM_LOCALS;
  /* phase 1: promise ballot 1 on every MN that shows C0, F or nothing higher */
  i = 0;
  do
  :: i < N ->
     atomic { if :: up[i] -> w = vis[i] :: else -> w = 255 fi };
     if
     :: w == 255 -> skip
     :: KIND(w) == 1 -> rv = VAL(w); goto decided                /* committed: learn it */
     :: KIND(w) == 3 -> skip                                     /* its own promise only */
     :: else ->
        d_step { if :: KIND(w) == 0 -> nw = W(3, 0, 1, 0) :: else -> nw = W(3, VAL(w), 1, 1) fi }
        BATCH(i, w, nw, ok, cnt);
        d_step {
          if
          :: cnt -> pr[i] = true; pw[i] = nw; prom++;
             if
             :: BAE(nw) == 1 -> nfast++;
                if :: fv == 0 -> fv = VAL(nw) :: fv != VAL(nw) -> fsame = false :: else -> skip fi
             :: else -> skip
             fi
          :: else -> skip
          fi }
     fi;
     d_step { i++; w = 0; nw = 0; ok = false; cnt = false }
  :: else -> break
  od;
  if :: prom < 2 -> goto fin :: else -> skip fi;
  /* value rule: possibly fast-chosen (q_f - (n - |Q|) = |Q| members of Q) or own */
  d_step { if :: nfast == prom && fsame && fv != 0 -> rv = fv :: else -> rv = 2 fi; i = 0 }
  do
  :: i < N ->
     if
     :: pr[i] -> BATCH(i, pw[i], W(3, rv, 1, 2), ok, cnt); if :: cnt -> acks++ :: else -> skip fi
     :: else -> skip
     fi;
     d_step { i++; ok = false; cnt = false }
  :: else -> break
  od;
  if :: acks < 2 -> goto fin :: else -> skip fi;
decided:
#ifndef OBS
  assert(chosenV == rv);
#endif
  atomic { learn(rv); retV = rv };
  commit(rv);
fin:
  skip
}

proctype Lookup() {
  byte c0; byte r0; byte rw[N]; byte i = 0; byte nr = 0; bool per; bool ok; byte bi;
  byte cv = 0; byte nf = 0; byte fv = 0; bool fsame = true; bool cls = false; byte res;
  atomic {                                          /* invocation */
    c0 = chosenV; r0 = retV;
    if :: per = true :: per = false fi              /* does the READ batch carry a PERSIST? */
  };
  do
  :: i < N ->
     atomic { if :: up[i] -> rw[i] = vis[i]; bi = inc[i] :: else -> rw[i] = 255 fi };
     if
     :: rw[i] != 255 && per -> PERSIST(i, bi, ok); if :: !ok -> rw[i] = 255 :: else -> skip fi   /* batch failed */
     :: else -> skip
     fi;
     bi = 0;
     if :: rw[i] != 255 -> nr++ :: else -> skip fi;
     i++
  :: else -> break
  od;
  if :: nr < 2 -> goto lend :: else -> skip fi;
  d_step {
    i = 0;
    do
    :: i < N ->
       if
       :: rw[i] == 255 -> skip
       :: KIND(rw[i]) == 1 -> cv = VAL(rw[i])
       :: KIND(rw[i]) == 2 || (KIND(rw[i]) == 3 && BAE(rw[i]) == 1) ->
          nf++; if :: fv == 0 -> fv = VAL(rw[i]) :: fv != VAL(rw[i]) -> fsame = false :: else -> skip fi
       :: KIND(rw[i]) == 3 && BAE(rw[i]) == 2 -> cls = true
       :: else -> skip
       fi;
       i++
    :: else -> break
    od;
    if
    :: cv != 0 -> res = cv                                          /* rule i */
    :: cv == 0 && !cls && !(nf == nr && fsame) -> res = 0           /* rule ii: not chosen at invocation */
#ifndef MUT_READNOPERSIST
    :: cv == 0 && !cls && nf == nr && fsame && nr == N && per -> res = fv   /* rule iii, with the PERSIST */
#else
    :: cv == 0 && !cls && nf == nr && fsame && nr == N -> res = fv          /* MUTANT: without it */
#endif
    :: else -> res = 255                                            /* undetermined: give up */
    fi
  }
  if
  :: res == 255 -> goto lend
  :: res == 0 ->
#ifndef OBS
     assert(c0 == 0);
#endif
     assert(r0 == 0)                               /* nothing was returned before the invocation */
  :: else ->
#ifndef OBS
     assert(chosenV == res);
#endif
     atomic { learn(res); retV = res }
  fi;
lend:
  skip
}

proctype Faults() {
  byte i;
  if
  :: atomic { if :: i = 0 :: i = 1 :: i = 2 fi; up[i] = false; vis[i] = dur[i]; inc[i]++; crashes++ };
     atomic { up[i] = true }                       /* restart from the durable pool */
  :: skip
  fi
}

init {
  atomic {
    vis[0] = C0; vis[1] = C0; vis[2] = C0;
    dur[0] = C0; dur[1] = C0; dur[2] = C0;
    up[0] = true; up[1] = true; up[2] = true;
    run InserterA(); run ResolverB(); run Lookup(); run Faults()
  }
}
