/* kv/spin/m3.pml -- M3: bucket-level key uniqueness under the no-skip rule
   (FCP design study, kv_index_design.md in the team notes, sections 4.5.3 and 6.1).

   Models: one bucket of E = 3 slots with the monotone lifecycle EMPTY ->
   LIVE -> DEAD; per-(slot, stage) consensus abstracted as an atomic "first
   proposal wins" object (justified by M1). Inserts read the slots one at a
   time (stale views), scan the key's rotated order, and pass only slots whose
   decided value is non-EMPTY and not the key. Slot 0 starts LIVE with
   another key.
   Bound: two concurrent inserters of key 1, a remover of the other key, a
   remover of key 1 and a later re-inserter of key 1; with -DINS4 also a
   competing inserter of key 2 whose order starts at slot 1 (too large for
   exhaustive search in 4 GB: bitstate).
   Asserts (section 6.2 property 5, uniqueness U): never two LIVE(k) at once.
   Planted bug (must fail): MUT_REUSE (DEAD -> EMPTY without a rebuild).
   C functions abstracted (kv/src/index/index.c): the scan of order(k) in
   kv_index_insert (the no-skip rule), kv_index_remove. Keep this list in
   step with the code. */
#define E 3
byte stage[E];          /* 0 EMPTY, 1 LIVE, 2 DEAD */
byte skey[E];           /* key of the LIVE/DEAD entry */
byte sinc[E];           /* incarnation (unique per insert attempt) of the entry */
byte nextinc = 1;

inline liveCount(k, cnt) {
  cnt = 0;
  byte q = 0;
  do :: q < E -> if :: stage[q] == 1 && skey[q] == k -> cnt++ :: else -> skip fi; q++
     :: else -> break od
}

/* abstract consensus on (slot s, stage 1): first proposal wins; returns decided entry */
inline proposeLive(s, k, inc, dk, dinc) {
  atomic {
    if
    :: stage[s] == 0 -> stage[s] = 1; skey[s] = k; sinc[s] = inc;
       byte cnt; liveCount(k, cnt); assert(cnt <= 1)        /* UNIQUENESS */
    :: else -> skip
    fi;
    dk = skey[s]; dinc = sinc[s]            /* (stage >= 1 here) */
  }
}

inline proposeDead(s, k, inc) {
  atomic {
    if
    :: stage[s] == 1 && skey[s] == k && sinc[s] == inc -> stage[s] = 2
    :: else -> skip
    fi
  }
}

#ifdef MUT_REUSE
/* mutant: a DEAD slot may be recycled to EMPTY without a bucket rebuild */
proctype Recycler() {
  byte s = 0;
  do
  :: s < E -> atomic { if :: stage[s] == 2 -> stage[s] = 0; skey[s] = 0; sinc[s] = 0 :: else -> skip fi }; s++
  :: s < E -> s++
  :: else -> break
  od
}
#endif

byte res[6];   /* per inserter: 1 OK, 2 EXISTS, 3 FULL */

proctype Inserter(byte id; byte k; byte start) {
  byte vst[E]; byte vk[E]; byte vinc[E];
  byte inc; byte j; byte s; byte dk; byte dinc; byte n;
  atomic { inc = nextinc; nextinc++ }
  /* RTT1: read the bucket, one slot per step (non-atomic scan) */
  j = 0;
  do :: j < E -> atomic { vst[j] = stage[j]; vk[j] = skey[j]; vinc[j] = sinc[j] }; j++
     :: else -> break od;
  /* scan the key's order */
  n = 0;
  do
  :: n < E ->
     s = (start + n) % E;
     if
     :: vst[s] == 1 && vk[s] == k -> res[id] = 2; goto done          /* key present */
     :: vst[s] == 0 ->
        proposeLive(s, k, inc, dk, dinc);
        if
        :: dk == k && dinc == inc -> res[id] = 1; goto done         /* our insert decided */
        :: dk == k && dinc != inc -> res[id] = 2; goto done         /* someone inserted k */
        :: else -> vst[s] = 1; vk[s] = dk; vinc[s] = dinc; n++      /* other key: pass */
        fi
     :: else -> n++                                                  /* decided non-EMPTY, not k */
     fi
  :: else -> break
  od;
  res[id] = 3;
done:
  skip
}

proctype Remover(byte k) {
  /* find a LIVE entry of k (reading slot by slot) and unmap it */
  byte j = 0; byte st; byte kk; byte ii;
  do
  :: j < E ->
     atomic { st = stage[j]; kk = skey[j]; ii = sinc[j] };
     if :: st == 1 && kk == k -> proposeDead(j, k, ii); break :: else -> j++ fi
  :: else -> break
  od
}

init {
  atomic {
    /* slot 0 pre-filled with another key, so the K1 order (0,1,2) must pass it */
    stage[0] = 1; skey[0] = 9; sinc[0] = 99;
    run Inserter(1, 1, 0); run Inserter(2, 1, 0);
#ifdef INS4
    run Inserter(3, 2, 1);      /* competing inserter of key 2 */
#endif
    run Remover(9); run Remover(1); run Inserter(4, 1, 0);
#ifdef MUT_REUSE
    run Recycler();
#endif
  }
}
