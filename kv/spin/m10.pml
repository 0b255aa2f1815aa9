/* kv/spin/m10.pml -- M10: client leases. A client owns its id through a
   claim word on every memory node, WORD(owner, beat); it renews its lease
   by CASing a new beat onto f+1 nodes, fences itself (posts nothing but
   renewals) once the lease ran out, and the other clients zero a word
   that stood still on a node for the suspicion time D, after which any
   client may claim the id; the client that freed it (f+1 zeros) also
   clears the dead life's words left on the other nodes.

   C functions abstracted (kv/src/store/lease.c: kv__st_lease_claim,
   kv__st_lease_keep, lease_observe, lease_take_over, and lease_repair's
   clear of the freed life's claim words (5349339; not its hazard words);
   kv/src/index/group.c: kv__ix_claim, kv__ix_unclaim, and the fence
   kv__ix_fence, checked at each post). The model follows the protocol as
   specified for that code (kv/spin/README.md, M10); where lease.c's first
   version (2196717) differed, a switch below says so (9acb0d8 follows the
   model; -DNOCLEAR is lease.c before 5349339). Keep this list in step
   with the code.

   Models: one client id, n = 3 memory nodes (f = 1, majority 2), each with
   the id's claim word w[i]: 0 = free, else WORD(owner, beat). Every CAS is
   persisted in its batch and no node crashes: a word is durable once
   visible. Clients: A (owner 1), the first owner, and NOBS other clients
   B (and C), each a claimant (and an observer with -DVIEWS). Every claim
   attempt takes a new owner (a new client life: lease.c draws a new tag
   per kv_open and tries an id once), so no word is ever written twice.

   Time: one global clock, kept as ages ("now - the time x happened",
   capped where comparisons stop changing), so states that differ by a
   shift of the clock are one state. The Ticker advances the clock by one.
   A batch lands within TIN (the in-flight bound T) of its post or never:
   the Ticker cannot pass post + TIN while a batch is in flight, Net must
   land it or drop it first. A client learns "no answer" (dropped, or with
   -DLOSS landed with its reply lost) only TIN after the post, as at its
   operation timeout; an answer arrives at the landing. A client may pause
   for any time between two of its steps (interleaving: the clock runs on
   without it); a client that stops for ever is one that takes no more
   steps.

   A, the first owner, owns the id at time 0 (its claim CAS 0 -> (1, 0)
   landed on all three nodes, or on two with the third still 0; from = 0).
   - Data: A may post a data batch at any instant at which it is between
     operations (not renewing), not fenced, and now < from + LEASE (the
     fence, checked at the post). Data batches are not modelled one by
     one: dpa = the age of the last such instant, and a batch posted then
     may land until dpa > TIN (P1 below).
   - Renewal, once now >= from + RENEW (L / 2), with a new beat B = the
     last beat posted + 1 (at most MAXB renewals), in rounds; a round posts
     in one step CAS known[i] -> (1, B) to each node still to do (the
     first round to all three; known = the claim word at the start), then
     waits for every answer or timeout. A node whose known word is 0 is
     asked (re-own, CAS 0 -> (1, B)) only if now < from + LEASE at that
     post, else it is not ours. The first round's post time is kept.
     Answers: old == known[i] or old == (1, B): holds; old = (1, b), b
     another beat: known[i] := old, ask again; old == 0: known[i] := 0, ask
     again (re-own, rule above); another owner: not ours (not asked again,
     known[i] unchanged); no answer: ask again. After a round: f+1 hold ->
     renewed, from := the first round's post; f+1 not ours (at the next
     post a 0 counts too once the lease ran out) -> fenced: A stops for
     good (in C it takes a new id). Otherwise, after any pause, another
     round, or A gives up (the operation's deadline) and goes back to its
     loop; the beat stays used.
   - Observers: by default one abstract observer stands for any number of
     them. wage[i] = the age of the word on node i (since it last
     changed); a word with wage[i] >= D may be zeroed (CAS word -> 0) at
     any time. This is exact: a real observer that saw the word at its
     landing or later and zeroes it D after that is a special case, and a
     word that stood still for D was seen unchanged that long by whoever
     read it at its landing, because no word leaves a node and comes back
     (fresh owners and beats). A CAS that lands after its post acts like
     the same CAS decided at its landing, for the same reason.
     With -DVIEWS each claimant is also a real observer: per node the word
     it last read and when (first_seen = the read, at the landing; C
     stamps the completion, which only delays), atomic reads of one node,
     and it zeroes a word it saw unchanged for >= D (a failed CAS shows it
     the new word).
   - Freeing and the clear (lease_take_over, lease_repair): an observer
     that zeroed a word of owner o (or found it 0 right after its zeroing
     CAS: zeroed by another) and then sees f+1 zeros has freed o's life:
     o's lease is not valid and cannot become valid again (an expired life
     re-owns no 0; renewing from its own words reaches at most f nodes).
     From then on it may clear o's words: CAS x -> 0 on any node, at any
     time, for x != 0 with OWN(x) == o (lease_repair CASes from the word
     it read, on the at most f nodes not yet 0; a CAS landing late acts as
     decided at its landing, as above). A new life's word has another
     owner and stays. Abstract observers: ghosts zown (owners some
     observer zeroed a word of) and fown (freed: zown as it stood in a
     state with f+1 zeros, the words as they are, one moment, as C's two
     reads establish). fown is updated at once in every such state: the
     clear is optional, so that allows exactly the clears of a freer that
     may look at any moment. With -DVIEWS each claimant does it from its
     own reads (zo, fo per claimant; f+1 zeros in its view, read at
     different times, weaker than C's two reads). Both are wider than C,
     which clears only the words with the tag of one zeroed word (the
     last member's), read after its second read. The clear runs in every
     configuration (C does it always); -DNOCLEAR leaves it out.
   - Claimant j (B = 0, C = 1), at most NCL attempts: once it sees f+1
     zeros (the words as they are; with -DVIEWS its own reads; with
     -DANYCLAIM at any time, as a new client in kv_open does not look),
     post CAS 0 -> (o, 0) to all three nodes, o new; its lease runs from
     that post. Won = f+1 answers with old 0: it owns the id and stops (it
     neither renews nor posts: a new owner that crashed at once). Else it
     undoes, CAS (o, 0) -> 0 on the nodes it won or got no answer from
     (kv__ix_unclaim), and goes on.

   Properties:
   P1 fencing: no data batch of A lands after another client's claim
     reached f+1 nodes (ghost gtaken, set by the landing that puts a
     claim's second word: stricter than "the claimant learnt it won").
     A monitor asserts !(gtaken && dpa <= TIN), enabled only in a state
     that breaks it.
   P2 exclusion: in no state do two clients both believe they own the id
     with a running lease: A not fenced with now < from + LEASE (from its
     claim or its last renewal that held f+1; A believes it while it
     renews), and a claimant whose claim counted f+1 answers with now < its
     claim's post + LEASE (or two such claimants). assert(excl).
   P3 takeover (-DLIVE): if A stops for ever (crash, at any step, or
     fenced), its id is taken over (a claim reaches f+1) by D + 2 TIN + 1
     after the stop: its last batches land within TIN, its words are
     zeroed D later, a claim lands within TIN. -DLIVE assumes diligent
     observers (a zero, and a claim of a client seeing f+1 zeros, happen
     before the clock moves on), no dropped batches, no lost replies, one
     claimant (two may split the nodes, both lose and undo: the id stays
     free, but neither took it). KLIVE = D + 2 TIN fails: the bound is
     tight.
   -DTAKEOVER: asserts that no takeover happens; must fail (the bound is
     not vacuous: suspicion, zeroing and a claim fit in it).
   The "T" lines of a replay (spin -t -DFLAGS m10.pml | grep ' T ') narrate
   a trail, one "T tick" per unit of time; words print as owner * 16 + beat.

   Bound: LEASE = 2, TIN = 1 (TIN <= LEASE / 2), D = DSUS = LEASE + TIN +
   1 (the 1 stands for the C code's margin for clock rates; the model's
   clocks are exact, and D = LEASE + TIN passes too); MAXB = 1 renewal
   (beats 1..MAXB), NOBS = 1 claimant with NCL = 1 attempt, no lost
   replies (LOSS = 0). Larger: -DLEASE=4 -DTIN=2, -DMAXB=2, -DNOBS=2,
   -DNCL=2, -DLOSS=1 (at most one lost reply per run).

   Switches: -DLEASE, -DTIN, -DDSUS, -DRENEW, -DMAXB, -DNOBS, -DNCL, -DLOSS,
   -DVIEWS, -DANYCLAIM, -DA3 (A's claim landed on all three nodes), -DLIVE
   (-DKLIVE), -DTAKEOVER, -DNOCLEAR as above; -DGAP: A may pause between
   the fence check and the post it guards (a batch may land any time after
   A once passed the check); -DBEATSUCC: a renewal's beat is the beat of
   the last renewal that held + 1, so a renewal that gave up leaves its
   beat to the next (lease.c before 9acb0d8: want = c->beat + 1, c->beat
   raised only when a renewal held).

   Found (README, "Found by the models"): -DBEATSUCC breaks P1 and P2
   (m10_beatsucc): a renewal that gave up left its beat on a node; the
   next renewal, with the same beat, counts that node as holding at once
   and takes its lease from its own first post, but observers have seen
   the word stand there since the earlier renewal and zero it early. -DGAP
   breaks P1 (m10_gap): a pause between the fence check and the post.

   Planted bugs (must fail): MUT_EARLY (D = LEASE: suspicion before the
   in-flight bound passed), MUT_NOFENCE (data posted without the lease
   check, until A finds itself fenced), MUT_REOWNLATE (re-own allowed after
   the lease ran out: a zombie A re-owns the nodes zeroed after a new
   owner's death), MUT_FROMDONE (from := the time the renewal completed,
   not the post of its first round), MUT_SEENPOST (an observer stamps
   first_seen with its READ's post, up to TIN before the word landed; it
   needs a margin D - LEASE - TIN < TIN, so its check uses LEASE = 4,
   TIN = 2), MUT_CASANY (a round CASes from whatever word a node answered,
   another owner's too, and asks every node not holding again:
   kv__st_lease_keep before 9acb0d8), MUT_CLAIMSAME (with -DVIEWS: a
   client claims again with the owner of its failed attempt; an observer
   that missed the undo takes the new claim word for the old one and
   zeroes it early), MUT_CLEARANY (the clear of a freed id zeroes any
   non-zero word, another owner's too, not only the freed life's: with
   two claimants the first's new claim is cleared and the second claims
   over it, P2). */

#ifndef LEASE
#define LEASE 2
#endif
#ifndef TIN
#define TIN 1
#endif
#ifndef DSUS
#ifdef MUT_EARLY
#define DSUS LEASE
#else
#define DSUS (LEASE + TIN + 1)
#endif
#endif
#ifndef RENEW
#define RENEW (LEASE / 2)
#endif
#ifndef MAXB
#define MAXB 1
#endif
#ifndef NOBS
#define NOBS 1
#endif
#ifndef NCL
#define NCL 1
#endif
#ifndef LOSS
#define LOSS 0
#endif

/* the age at which a word may be zeroed: an observer that stamps the post
   of its READ (MUT_SEENPOST) saw the word up to TIN before it landed */
#ifdef MUT_SEENPOST
#define ZAGE (DSUS - TIN)
#else
#define ZAGE DSUS
#endif

#define WORD(o, b) ((o) * 16 + (b))
#define OWN(x) ((x) >> 4)
#define BIT(i) (1 << (i))
#define HAS(m, i) ((((m) >> (i)) & 1) == 1)
#define CNT(m) (((m) & 1) + (((m) >> 1) & 1) + (((m) >> 2) & 1))
#define INC(x, c) if :: (x) < (c) -> x++ :: else -> skip fi

/* claimant j's claim attempt k: a new owner (a new client life) */
#ifdef MUT_CLAIMSAME
#define OWNER(j, k) (2 + (j) * NCL)
#else
#define OWNER(j, k) (2 + (j) * NCL + (k))
#endif

byte w[3];                          /* the claim words */
#ifndef VIEWS
byte wage[3];                       /* now - the last change of w[i], capped at ZAGE */
#ifndef NOCLEAR
byte zown = 0;                      /* bit o: some observer zeroed a word of o */
byte fown = 0;                      /* bit o: o's life freed (f+1 zeros since) */
#endif
#endif

/* batches: slot s = 3 * c + i, client c (0 = A, 1 + j = claimant j), node i */
#define NSL (3 * (NOBS + 1))
byte st[NSL];                       /* 0 free, 1 in flight, 2 answered, 3 no answer */
byte pe[NSL];                       /* CAS expected */
byte pn[NSL];                       /* CAS new */
byte pa[NSL];                       /* age: now - post, capped at TIN */
byte ro[NSL];                       /* the old word answered */

/* A */
byte la = 0;                        /* now - from, capped at LEASE */
byte ra = 0;                        /* now - post of the renewal's first round, capped at LEASE */
bool arenew = false;                /* a renewal is running (ra ticks) */
bool afenced = false;
byte dpa = 0;                       /* now - the last time A could post data, capped at TIN + 1 */

/* claimants (observers with -DVIEWS) */
#ifdef VIEWS
byte ow[3 * NOBS];                  /* ow[3 * j + i]: the word j saw on node i */
byte oa[3 * NOBS];                  /* now - first_seen, capped at DSUS */
#endif
byte ncl[NOBS];                     /* claim attempts made */
bool ocl[NOBS];                     /* claiming or owning (lb ticks) */
bool bown[NOBS];                    /* its claim counted f+1 */
byte lb[NOBS];                      /* now - post of its claim, capped at LEASE */

#if LOSS > 0
byte nloss = 0;                     /* lost replies so far */
#endif
bool gtaken = false;                /* ghost: another claim reached f+1 nodes */
bool excl = true;                   /* ghost: P2 holds */
#ifdef LIVE
bool astop = false;                 /* A stopped for ever (crashed, or fenced) */
byte ca = 0;                        /* now - the time it stopped, capped at KLIVE */
#ifndef KLIVE
#define KLIVE (DSUS + 2 * TIN + 1)
#endif
#endif

/* ---- the network: batches land within TIN of their post, or never ---- */

/* after word x landed: does its owner (not A) now hold f+1 nodes? */
inline TAKEN(x) {
  if
  :: x != 0 && OWN(x) != 1 &&
     (OWN(w[0]) == OWN(x)) + (OWN(w[1]) == OWN(x)) + (OWN(w[2]) == OWN(x)) >= 2 ->
     if :: !gtaken -> printf("T owner %d's claim holds f+1 nodes: A's id taken over\n", OWN(x))
        :: else -> skip fi;
     gtaken = true
  :: else -> skip
  fi
}

#define NZEROS ((w[0] == 0) + (w[1] == 0) + (w[2] == 0))

/* the clear of a freed id (lease_repair): a CAS x -> 0 from a word x of
   the life whose word the freer zeroed (its tag), or with MUT_CLEARANY
   from any word once the freer freed an id */
#ifdef MUT_CLEARANY
#define CLEAROK(f, x) ((f) != 0)
#else
#define CLEAROK(f, x) HAS(f, OWN(x))
#endif

#ifndef VIEWS
#ifdef NOCLEAR
#define ZREC(x) skip
#define GIVEUP() skip
#else
#define ZREC(x) zown = zown | BIT(OWN(x))
/* an observer that zeroed words of the owners in zown sees f+1 zeros at
   one moment (lease_take_over's two reads): their lives are over, and
   their remaining words may be cleared from then on. Done at once in
   every state with f+1 zeros (after every step that zeroes a word): the
   clear is optional, so this allows exactly the clears of a freer that
   may look at any moment, in fewer states. */
#define GIVEUP() if :: NZEROS >= 2 -> fown = fown | zown :: else -> skip fi
#endif
#endif

#ifdef VIEWS
#define CHANGED(i) skip
#else
#define CHANGED(i) wage[i] = 0; GIVEUP()
#endif

inline LAND(s) {
  atomic {
    st[s] == 1 ->
    ro[s] = w[(s) % 3];
    if
    :: w[(s) % 3] == pe[s] && pn[s] != pe[s] -> w[(s) % 3] = pn[s]; CHANGED((s) % 3); TAKEN(pn[s])
    :: else -> skip
    fi;
    printf("T %c's CAS %d -> %d lands on node %d: old %d\n", 65 + (s) / 3, pe[s], pn[s], (s) % 3, ro[s]);
    if
    :: st[s] = 2; pa[s] = 0
#if LOSS > 0
    :: nloss < LOSS -> nloss++; st[s] = 3; printf("T   (its reply is lost)\n")
#endif
    fi
  }
}

inline DROP(s) {
  atomic {
    st[s] == 1 && pa[s] >= TIN -> st[s] = 3;
    printf("T %c's CAS to node %d never lands\n", 65 + (s) / 3, (s) % 3)
  }
}

#ifndef VIEWS
/* some observer zeroes a word that stood still on node i for D */
inline ZERO(i) {
  atomic {
    w[i] != 0 && wage[i] >= ZAGE ->
    printf("T an observer zeroes %d on node %d\n", w[i], i);
    ZREC(w[i]); w[i] = 0; wage[i] = 0; GIVEUP()
  }
}

#ifndef NOCLEAR
/* some observer that freed an id clears a word of the freed life on node
   i (lease_repair: CAS from the word read, which lands as if decided at
   its landing, as any CAS here) */
inline CLEAR(i) {
  atomic {
    w[i] != 0 && CLEAROK(fown, w[i]) ->
    printf("T an observer clears %d on node %d (owners %d (bits) freed)\n", w[i], i, fown);
    w[i] = 0; wage[i] = 0; GIVEUP()
  }
}
#endif
#endif

proctype Net() {
end:
  do
  :: LAND(0) :: LAND(1) :: LAND(2) :: LAND(3) :: LAND(4) :: LAND(5)
#ifndef LIVE
  :: DROP(0) :: DROP(1) :: DROP(2) :: DROP(3) :: DROP(4) :: DROP(5)
#endif
#if NOBS > 1
  :: LAND(6) :: LAND(7) :: LAND(8)
#ifndef LIVE
  :: DROP(6) :: DROP(7) :: DROP(8)
#endif
#endif
#ifndef VIEWS
  :: ZERO(0) :: ZERO(1) :: ZERO(2)
#ifndef NOCLEAR
  :: CLEAR(0) :: CLEAR(1) :: CLEAR(2)
#endif
#endif
  od
}

/* the fence: A may post a data batch when it is between operations (not
   renewing), not fenced, and its lease runs. Data batches are not modelled
   one by one: dpa is the age of the last instant at which A could post
   one, so a batch of A may still land while dpa <= TIN (posted then,
   landing within TIN). With -DGAP the post may follow the check after any
   pause: a batch may land at any time after A once passed the check. */
#ifdef MUT_NOFENCE
#define FENCE (!arenew && !afenced)
#else
#define FENCE (!arenew && !afenced && la < LEASE)
#endif
#ifdef GAP
#define DATA() if :: FENCE -> dpa = 0 :: else -> skip fi
#else
#define DATA() if :: FENCE -> dpa = 0 :: else -> INC(dpa, TIN + 1) fi
#endif

/* ---- time ---- */

#define HOLDS(s) (st[s] == 1 && pa[s] >= TIN)
#if NOBS > 1
#define HOLDO (HOLDS(6) || HOLDS(7) || HOLDS(8))
#else
#define HOLDO false
#endif
#ifdef LIVE
/* diligent observers: a word is zeroed, and a client that sees f+1 zeros
   claims, before the clock moves on */
#define ZEROS NZEROS
#define CANZ(i) (w[i] != 0 && wage[i] >= ZAGE)
#define CANC(j) (ncl[j] < NCL && !ocl[j] && ZEROS >= 2)
#if defined(VIEWS) || LOSS > 0 || defined(ANYCLAIM)
#error "-DLIVE models diligent observers (no -DVIEWS), no lost replies, claims on f+1 zeros"
#endif
#if NOBS > 1
#define CANC2 CANC(1)
#else
#define CANC2 false
#endif
#define DUE (CANZ(0) || CANZ(1) || CANZ(2) || CANC(0) || CANC2)
#else
#define DUE false
#endif
#define HOLDT (HOLDS(0) || HOLDS(1) || HOLDS(2) || HOLDS(3) || HOLDS(4) || HOLDS(5) || HOLDO || DUE)

inline AGE(s) {
  if :: st[s] == 1 || st[s] == 3 -> INC(pa[s], TIN) :: else -> skip fi
}
#ifdef VIEWS
inline WAGE(k) {
  if :: ow[k] != 0 -> INC(oa[k], DSUS) :: else -> skip fi
}
#else
inline WAGE(k) {
  if :: w[k] != 0 -> INC(wage[k], ZAGE) :: else -> skip fi
}
#endif

proctype Ticker() {
end:
  do
  :: d_step {
       !HOLDT ->
       printf("T tick\n");
       INC(la, LEASE);
       if :: arenew -> INC(ra, LEASE) :: else -> skip fi;
       AGE(0); AGE(1); AGE(2); AGE(3); AGE(4); AGE(5);
       DATA();
       WAGE(0); WAGE(1); WAGE(2);
       if :: ocl[0] -> INC(lb[0], LEASE) :: else -> skip fi;
#ifdef LIVE
       if :: astop -> INC(ca, KLIVE) :: else -> skip fi;
#endif
#if NOBS > 1
       AGE(6); AGE(7); AGE(8);
       if :: ocl[1] -> INC(lb[1], LEASE) :: else -> skip fi;
#ifdef VIEWS
       WAGE(3); WAGE(4); WAGE(5);
#endif
#endif
       skip
     }
  od
}

/* ---- A, the first owner ---- */

/* a node that answered 0 is asked (re-own) only while the lease runs */
#ifdef MUT_REOWNLATE
#define REOWN true
#else
#define REOWN (la < LEASE)
#endif
inline REOWNCHK(i) {
  if
  :: HAS(todo, i) && kn[i] == 0 && !REOWN ->
     todo = todo & ~BIT(i); nours = nours | BIT(i)
  :: else -> skip
  fi
}

inline APOST(i) {
  if
  :: HAS(todo, i) -> st[i] = 1; pe[i] = kn[i]; pn[i] = want; pa[i] = 0
  :: else -> skip
  fi
}

#define ARES(i) (!HAS(todo, i) || st[i] == 2 || (st[i] == 3 && pa[i] >= TIN))

/* A takes node i's answer of the round */
inline ATAKE(i) {
  if
  :: HAS(todo, i) && st[i] == 2 ->
     if
     :: ro[i] == pe[i] || ro[i] == want -> hold = hold | BIT(i); kn[i] = want;
        nours = nours & ~BIT(i)
     :: else ->
        if
        :: ro[i] == 0 || OWN(ro[i]) == 1 ->                             /* ask again */
           kn[i] = ro[i]; nours = nours & ~BIT(i)
        :: else ->                                                      /* not ours */
#ifdef MUT_CASANY
           kn[i] = ro[i];
#endif
           nours = nours | BIT(i)
        fi
     fi
  :: else -> skip                                                       /* no answer: ask again */
  fi;
  if
  :: HAS(todo, i) -> st[i] = 0; pe[i] = 0; pn[i] = 0; pa[i] = 0; ro[i] = 0
  :: else -> skip
  fi
}

/* the beat a renewal starts from: the last posted (every renewal a new
   beat), or with -DBEATSUCC the last that held (lease.c: c->beat + 1) */
#ifdef BEATSUCC
#define LASTB sb
#else
#define LASTB b
#endif

#ifdef MUT_CASANY
#define NEXT (7 & ~hold)
#else
#define NEXT (7 & ~(hold | nours))
#endif

proctype A() {
  byte kn[3];                        /* the word A last knew on each node */
  byte b = 0;                        /* the last beat posted */
  byte sb = 0;                       /* the beat of the last renewal that held */
  byte want, hold, nours, todo;
  kn[0] = WORD(1, 0); kn[1] = WORD(1, 0); kn[2] = WORD(1, 0);
end_idle:
  do
#ifdef LIVE
  :: goto crash
#endif
  :: atomic {
       la >= RENEW && LASTB < MAXB ->
       b = LASTB + 1; want = WORD(1, b); ra = 0; arenew = true; hold = 0; nours = 0; todo = 7;
       printf("T A renews with beat %d\n", b)
     };
round:
#ifdef LIVE
     if :: goto crash :: skip fi;
#endif
     atomic {
       REOWNCHK(0); REOWNCHK(1); REOWNCHK(2);
       if
       :: CNT(nours) >= 2 -> goto fenced
       :: else -> skip
       fi;
       printf("T A posts renewal CASes (beat %d) to nodes %d (bits), lease age %d\n", b, todo, la);
       APOST(0); APOST(1); APOST(2)
     };
#ifdef LIVE
     if :: goto crash :: skip fi;       /* with its round in flight */
#endif
     atomic {
       ARES(0) && ARES(1) && ARES(2) ->
       ATAKE(0); ATAKE(1); ATAKE(2);
       printf("T A's round: hold %d, not ours %d (bits)\n", hold, nours);
       todo = NEXT;
       if
       :: CNT(hold) >= 2 ->
#ifdef MUT_FROMDONE
          la = 0;
#else
          la = ra;
#endif
          sb = b; arenew = false; ra = 0; hold = 0; nours = 0; todo = 0; want = 0;
          if :: FENCE -> dpa = 0 :: else -> skip fi;
          printf("T A renewed (beat %d), lease age %d\n", b, la)
       :: CNT(hold) < 2 && CNT(nours) >= 2 -> goto fenced
       :: else -> skip
       fi
     };
     if
     :: todo != 0 -> goto round
     :: todo != 0 ->                 /* gives up (deadline): back to the loop */
        atomic {
          arenew = false; ra = 0; hold = 0; nours = 0; todo = 0; want = 0;
          if :: FENCE -> dpa = 0 :: else -> skip fi;
          printf("T A gives up renewing\n")
        }
     :: todo == 0 -> skip
     fi
  od;
fenced:
  atomic {
    afenced = true; la = LEASE; arenew = false; ra = 0; hold = 0; nours = 0; todo = 0; want = 0;
    printf("T A is fenced\n")
#ifdef LIVE
    ; astop = true
#endif
  };
  goto stop;
crash:
  atomic {
    la = LEASE; arenew = false; ra = 0; hold = 0; nours = 0; todo = 0; want = 0;
    printf("T A stops for ever\n")
#ifdef LIVE
    ; astop = true
#endif
  };
stop:
  skip
}

/* ---- the other clients: claimants (and observers with -DVIEWS) ---- */

#ifdef VIEWS
/* a word of owner o that observer j saw stand still for D and finds 0
   after its zeroing CAS (zeroed by it or by another) puts o in zo
   (lease_take_over: took, tag). Once its own reads show f+1 zeros, the
   lives in zo are over (lease_take_over's two reads): fo := fo | zo, done
   at once, as GIVEUP */
#ifdef NOCLEAR
#define OZREC(i) skip
#define OGIVEUP() skip
#else
#define OZREC(i) if :: w[i] == 0 -> zo = zo | BIT(OWN(ow[3 * j + i])) :: else -> skip fi
#define OVIEWZ ((ow[3 * j] == 0) + (ow[3 * j + 1] == 0) + (ow[3 * j + 2] == 0) >= 2)
#define OGIVEUP() if :: OVIEWZ -> fo = fo | zo :: else -> skip fi
#endif

/* observer j reads node i: a word it did not see there before gets
   first_seen = now (MUT_SEENPOST: the post of the READ, up to TIN before) */
#ifdef MUT_SEENPOST
#define STAMP(k) if :: oa[k] = 0 :: oa[k] = TIN fi
#else
#define STAMP(k) oa[k] = 0
#endif
inline OREAD(i) {
  atomic {
    w[i] != ow[3 * j + i] -> ow[3 * j + i] = w[i]; STAMP(3 * j + i); OGIVEUP();
    printf("T %c sees %d on node %d\n", 66 + j, w[i], i)
  }
}

/* observer j zeroes a word it saw unchanged on node i for D */
inline OZERO(i) {
  atomic {
    ow[3 * j + i] != 0 && oa[3 * j + i] >= DSUS ->
    if
    :: w[i] == ow[3 * j + i] -> w[i] = 0;
       printf("T %c zeroes %d on node %d\n", 66 + j, ow[3 * j + i], i)
    :: else -> printf("T %c fails to zero %d on node %d: %d\n", 66 + j, ow[3 * j + i], i, w[i])
    fi;
    OZREC(i);
    ow[3 * j + i] = w[i]; oa[3 * j + i] = 0; OGIVEUP()
  }
}

#ifndef NOCLEAR
/* observer j, having freed the lives in fo, clears the word it read on
   node i if it is such a life's (lease_repair: CAS from the word read; a
   failed CAS shows the new word) */
inline OCLEAR(i) {
  atomic {
    ow[3 * j + i] != 0 && CLEAROK(fo, ow[3 * j + i]) ->
    if
    :: w[i] == ow[3 * j + i] -> w[i] = 0;
       printf("T %c clears %d on node %d (owners %d (bits) freed)\n", 66 + j, ow[3 * j + i], i, fo)
    :: else -> printf("T %c fails to clear %d on node %d: %d\n", 66 + j, ow[3 * j + i], i, w[i])
    fi;
    ow[3 * j + i] = w[i]; oa[3 * j + i] = 0; OGIVEUP()
  }
}
#endif
#endif

/* when a client claims: once it sees f+1 zeros (its own reads with
   -DVIEWS, else the words as they are), or -DANYCLAIM at any time (a new
   client, as kv_open, does not look first) */
#if defined(ANYCLAIM)
#define CGUARD
#elif defined(VIEWS)
#define CGUARD && (ow[3 * j] == 0) + (ow[3 * j + 1] == 0) + (ow[3 * j + 2] == 0) >= 2
#else
#define CGUARD && (w[0] == 0) + (w[1] == 0) + (w[2] == 0) >= 2
#endif
#define OS(i) (3 * (j + 1) + (i))
inline OPOST(i, e, x) {
  st[OS(i)] = 1; pe[OS(i)] = e; pn[OS(i)] = x; pa[OS(i)] = 0
}
#define ORES(m, i) (!HAS(m, i) || st[OS(i)] == 2 || (st[OS(i)] == 3 && pa[OS(i)] >= TIN))
inline OFREE(i) {
  st[OS(i)] = 0; pe[OS(i)] = 0; pn[OS(i)] = 0; pa[OS(i)] = 0; ro[OS(i)] = 0
}
/* claim answers: won (old 0), or no answer (the claim may have landed) */
inline OTAKE(i) {
  if
  :: st[OS(i)] == 2 && ro[OS(i)] == 0 -> wins = wins | BIT(i)
  :: st[OS(i)] == 3 -> und = und | BIT(i)
  :: else -> skip
  fi;
  OFREE(i)
}
inline OUNDO(i) {
  if :: HAS(und, i) -> OPOST(i, WORD(o, 0), 0) :: else -> skip fi
}
inline OUFREE(i) {
  if :: HAS(und, i) -> OFREE(i) :: else -> skip fi
}

proctype Obs(byte j) {
  byte o = 0, wins = 0, und = 0;
#if defined(VIEWS) && !defined(NOCLEAR)
  byte zo = 0, fo = 0;               /* owners whose words it zeroed; freed */
#endif
end:
  do
#ifdef VIEWS
  :: OREAD(0)
  :: OREAD(1)
  :: OREAD(2)
  :: OZERO(0)
  :: OZERO(1)
  :: OZERO(2)
#ifndef NOCLEAR
  :: OCLEAR(0)
  :: OCLEAR(1)
  :: OCLEAR(2)
#endif
#else
  :: ncl[j] >= NCL -> break
#endif
  :: atomic {
       ncl[j] < NCL CGUARD -> o = OWNER(j, ncl[j]); ncl[j]++; ocl[j] = true; lb[j] = 0;
       printf("T %c claims as owner %d\n", 66 + j, o);
       OPOST(0, 0, WORD(o, 0)); OPOST(1, 0, WORD(o, 0)); OPOST(2, 0, WORD(o, 0))
     };
     atomic {
       ORES(7, 0) && ORES(7, 1) && ORES(7, 2) ->
       wins = 0; und = 0;
       OTAKE(0); OTAKE(1); OTAKE(2);
       if
       :: CNT(wins) >= 2 ->
          bown[j] = true; printf("T %c owns the id (owner %d)\n", 66 + j, o);
          goto owner
       :: else ->
          ocl[j] = false; lb[j] = 0; und = und | wins; wins = 0;
          printf("T %c lost its claim, undoes on nodes %d (bits)\n", 66 + j, und);
          OUNDO(0); OUNDO(1); OUNDO(2)
       fi
     };
     atomic {
       ORES(und, 0) && ORES(und, 1) && ORES(und, 2) ->
       OUFREE(0); OUFREE(1); OUFREE(2); und = 0; o = 0
     }
  od;
owner:
end_owner:
  skip
}

/* ---- P1, P2 ---- */

/* P1: a data batch of A may land after the takeover (enabled only in a
   state that breaks P1, so it adds no states) */
proctype Fence() {
end:
  atomic {
    gtaken && dpa <= TIN ->
    printf("M10 A's data batch lands after the takeover (posted %d ago)\n", dpa);
    assert(!gtaken || dpa > TIN)
  }
}

#define AOWNS (!afenced && la < LEASE)
#define BOWNS(k) (bown[k] && lb[k] < LEASE)
#if NOBS > 1
#define TWO ((AOWNS && (BOWNS(0) || BOWNS(1))) || (BOWNS(0) && BOWNS(1)))
#else
#define TWO (AOWNS && BOWNS(0))
#endif

/* enabled only in a state that breaks P2, so it adds no states */
proctype Mon() {
end:
  atomic {
    TWO -> excl = false;
    printf("M10 two owners: A fenced %d, lease age %d\n", afenced, la);
    assert(excl)
  }
}

#ifdef LIVE
/* a claim reached f+1 nodes (without lost replies its client learns it won) */
#define OWNED gtaken
/* P3: the id of a client that stopped for ever is taken over within
   KLIVE: its last batches land within TIN, its words are zeroed D later,
   a claim lands within TIN (enabled only in a state that breaks it) */
proctype Live() {
end:
  atomic {
    astop && ca >= KLIVE && !OWNED ->
    printf("M10 A stopped %d ago and its id is not taken over\n", ca);
    assert(!astop || ca < KLIVE || OWNED)
  }
}
#endif

#ifdef TAKEOVER
/* P3 reachability: a takeover happens in some run (must fail) */
proctype Reach() {
end:
  atomic { gtaken -> printf("M10 takeover reached\n"); assert(!gtaken) }
}
#endif

init {
  atomic {
    w[0] = WORD(1, 0); w[1] = WORD(1, 0);
#ifdef A3
    w[2] = WORD(1, 0);
#else
    if
    :: w[2] = WORD(1, 0)
    :: w[2] = 0; printf("T A's claim reached nodes 0 and 1 only\n")
    fi;
#endif
#ifdef VIEWS
    ow[0] = w[0]; ow[1] = w[1]; ow[2] = w[2];
#if NOBS > 1
    ow[3] = w[0]; ow[4] = w[1]; ow[5] = w[2];
#endif
#endif
    run Net(); run Ticker(); run A(); run Mon(); run Fence();
    run Obs(0);
#if NOBS > 1
    run Obs(1);
#endif
#ifdef LIVE
    run Live();
#endif
#ifdef TAKEOVER
    run Reach();
#endif
  }
}
