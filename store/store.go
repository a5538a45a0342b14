// Package store defines the messages a gateway exchanges with the central
// store for one key: the sync (push what I admitted, pull what the fleet has
// admitted, return and ask for lease slots), the central check, and the lease
// grant. The embedded store (memstore) and the Redis store speak exactly
// these messages, so a design never knows which one answers it.
//
// The package holds types only; it never reads a clock or does I/O.
package store

import (
	"context"
	"time"

	"github.com/fleetlimit/fleetlimit/window"
)

// Push is what a gateway sends the store at a sync. A push settles all the
// gateway's lease slots for the key: the used ones arrive as Admits, the
// rest go back to the fleet.
type Push struct {
	// Gateway is the index of the sending gateway, 0 <= Gateway < K.
	Gateway int
	// Admits are the timestamps this gateway admitted since its last sync,
	// in non-decreasing order. The store copies them; the slice stays the
	// gateway's.
	Admits []int64
	// Counts, when not nil, are the requests each admit stands for
	// (Counts[i] >= 1 for Admits[i]): a request of cost n is one admit of
	// count n, so it costs one entry whatever n. nil: each counts 1.
	Counts []int
	// Epoch names this life of the gateway's state for the key: a key
	// re-created at the same gateway (after a restart, an eviction or a
	// limit change) pushes with a larger epoch and numbers its admits
	// afresh. A store keeps the sequence numbers of the latest epoch; a
	// push of an earlier epoch is an old retry and changes nothing.
	Epoch uint64
	// Seq numbers Admits[0] among this epoch's admits of the gateway for the key,
	// from 1; the rest follow on. The store skips admits it has already
	// applied, so a retried push never counts an admit twice. 0 turns the
	// check off.
	Seq uint64
	// Ask is the number of slots asked for the next interval (leases).
	Ask int
	// Spare lets this sync's grant lend room beyond the limit: it may
	// bring the window's admits plus the slots outstanding fleet-wide to
	// L + Spare, unless a central check with a Spare was refused within
	// the last window because the window was full (the key is contended,
	// and spare slots would only feed a flood). 0: admits plus
	// outstanding stay within L. See Query.Spare for the central check's.
	Spare int
	// Rate ranks a spare ask (Spare > 0): the gateway's arrivals for the
	// key over the last window. A store keeps each gateway's last Rate
	// and Ask, and a spare grant leaves alone the slots that gateways of
	// a higher Rate asked for and do not hold, so that the spare room goes
	// where the next request is likeliest.
	Rate int
	// Refused, with a Spare, counts the requests this gateway refused
	// since its last sync without asking, its view of the window full (a
	// central check would have been refused for a full window): the store
	// counts them as such refusals, which mark the key contended.
	Refused int
	// Horizon is how far ahead, in nanoseconds, the gateway wants to know
	// which stamps leave the window (see Pull.Expiring); 0 asks for none.
	Horizon int64
	// WantOwn asks for Pull.Own, which may cost the store a scan of the
	// window; without it a store may leave Own at 0.
	WantOwn bool
	// Gone are gateways that have left the fleet (store.Membership): the
	// store settles the lease slots they hold on the key, which return to
	// the room. Read-only; it stays the gateway's.
	Gone []int
	// Repair, when not nil, mends what went wrong at the store: calls the
	// gateway abandoned, and admits the store forgot. Only a gateway ready
	// for a failing store sends one (design.Config.Mend). It stays the
	// gateway's.
	Repair *Repair
}

// Repair is what a push mends at the store.
type Repair struct {
	// Withdraw are central admits this gateway asked for (Call.ID) and
	// never heard the answer to: the store removes each one it logged,
	// and never logs one afterwards. Applied before the push's admits.
	Withdraw []Withdrawal
	// Reseed, when not empty, re-pushes admits this gateway made in the
	// window before the store forgot the key (Pull.Gen changed): stamps,
	// ascending, each standing for ReseedCounts[i] requests (nil: 1).
	// They are counted like admits, under ReseedID, which names this
	// re-seed among the gateway's re-seeds of the key in this epoch: a
	// retried re-seed counts once, and an older one, late, not at all
	// (0: always counted). A store that lost the key again has forgotten
	// which it applied, and counts the retry, as it must.
	Reseed       []int64
	ReseedCounts []int
	ReseedID     uint64
}

// Withdrawal names a central admit that a gateway asked the store for and
// whose answer never came back: the request was decided without it, so
// whatever the store logged for it must go.
type Withdrawal struct {
	ID uint64 // the Call.ID of the central check
	At int64  // the query's time: the admit's stamp
	N  int    // the requests it asked to admit
}

// Pull is the store's answer to a Push.
type Pull struct {
	// Count is the number of admitted requests inside the window at the
	// sync, including the ones just pushed (each admit counting its count).
	Count int
	// Own is how many of Count were admitted by the pushing gateway
	// (when the push set WantOwn).
	Own int
	// Expiring are the stamps counted in Count that leave the window
	// before now+Horizon, ascending. It is read-only and valid only until
	// the next call on the same key: a gateway that keeps it copies it.
	Expiring []int64
	// ExpiringCounts, when not nil, are the counts of Expiring's admits;
	// nil: each counts 1. Read-only like Expiring.
	ExpiringCounts []int
	// Granted is the number of lease slots granted until the next sync.
	Granted int
	// Outstanding is the lease slots granted and not yet settled,
	// fleet-wide, after this sync (Granted included).
	Outstanding int
	// Gen names the store's life of the key: it changes only when the
	// store has lost the key's data (a restart without persistence,
	// FLUSHALL, an eviction) and made it anew, and never while anything
	// of the key can still count. 0: the store never forgets (memstore).
	Gen uint64
}

// QueryKind says which store operation a Query needs.
type QueryKind uint8

const (
	// QueryCentral is the central check: admit and log N requests if the
	// window then holds at most the limit.
	QueryCentral QueryKind = iota + 1
	// QueryGrant asks for N more lease slots.
	QueryGrant
	// QueryCounter adds N to the key's counter for the fixed window that
	// holds the query's time (N = 0 only reads it) and returns the count
	// afterwards. Every request counts, within the limit or not, and
	// nothing else reads or writes the counter: it is envoyproxy/ratelimit's
	// algorithm, and on Redis its key layout (see redisstore).
	QueryCounter
)

// String returns "central", "grant" or "counter".
func (k QueryKind) String() string {
	switch k {
	case QueryCentral:
		return "central check"
	case QueryGrant:
		return "grant"
	case QueryCounter:
		return "counter"
	}
	return "query"
}

// Query is a store operation a decision waits on: a design returns it when
// it cannot decide alone, the driver sends it with Backend.Ask (or
// memstore.Key.Answer) and hands the Answer back to the design.
type Query struct {
	Kind QueryKind
	// TopUp, for a central check, asks that an admit also grant up to
	// TopUp lease slots within the limit (as a QueryGrant without a
	// Spare), in Answer.Granted: a hot gateway whose slots ran out gets
	// more with the one round trip. With a Spare, none while the key is
	// contended: slots that fill L would let the central checks spend the
	// spare, refused for the slots and not for a full window. Not with window buckets on Redis, and
	// not for the queries of several limits answered as one (MultiAsker),
	// which grant nothing. (An int16 beside Kind and Spare.)
	TopUp int16
	// Spare, for a central check, is the room beyond the limit that the
	// outstanding lease slots may take: it admits if the window's admits
	// and N make at most L and, with the slots outstanding, at most
	// L + Spare; a refusal because the window itself was full marks the
	// key contended for a window (Push.Spare). For a grant it is
	// Push.Spare. 0: every slot counts against L, as without it. (An
	// int32 beside Kind, so that a Query stays four words.)
	Spare int32
	N     int // requests to admit (central) or slots to ask for (grant)
	// Carry, when not nil, is a push of the asking gateway's admits that
	// the store applies first, exactly as at a sync (idempotent, their own
	// stamps; it asks for nothing and, like any push, settles the lease
	// slots the gateway holds, so a design that holds some never carries),
	// so that the answer counts them. It stays the design's.
	Carry *Push
	// Call, when not nil, says how the store books a central admit: in
	// the gateway's Pull.Own, and under a name for a later withdrawal. A
	// gateway sends one only when it needs either (a design that reads
	// Own; design.Config.Mend), so that the simulator's queries stay four
	// words, which the compiler keeps in registers. It stays the design's.
	Call *Call
}

// Call is how the store books a query's central admit.
type Call struct {
	// Own asks that a central admit count in the gateway's Pull.Own, as
	// its pushed admits do when it pushes with WantOwn: a design that
	// reads Own sets both. A store may count them either way without it.
	Own bool
	// ID, when not 0, names a central admit among the asking gateway's in
	// this Epoch, so that a later withdrawal can take it back; larger for
	// every query.
	ID    uint64
	Epoch uint64
	// Withdraw are withdrawals (Repair.Withdraw) of the asking gateway's
	// earlier queries of this Epoch, applied first: a gateway that sends
	// every pending one with each query leaves the store at most one of
	// its central admits to take back, the last.
	Withdraw []Withdrawal
}

// Answer is the store's reply to a Query.
type Answer struct {
	Admit   bool   // QueryCentral: the store admitted and logged the requests
	Count   int    // QueryCentral, QueryCounter: the store's count in the window afterwards
	Granted int    // QueryGrant: slots granted
	Gen     uint64 // QueryCentral, QueryGrant: the key's life at the store, as Pull.Gen
}

// CountAt returns the count of admit i of stamps whose counts are counts
// (nil: every admit counts 1).
func CountAt(counts []int, i int) int {
	if counts == nil {
		return 1
	}
	return counts[i]
}

// Key names a rate-limited key and its limit: everything a store needs to
// know about it.
type Key struct {
	Name   string
	Limit  int
	Window window.Spec
	// Part numbers the limits of a key with several (1, 2, ...): each
	// counts apart, and a store keeps a key's parts together (on Redis,
	// under one hash tag) so that one call can answer them all
	// (MultiAsker). 0 for a key with one limit.
	Part int
}

// SyncItem is one key's part of a batched sync: the gateway fills Key and
// Push, the store fills Pull (whose Expiring then belongs to the caller).
type SyncItem struct {
	Key  Key
	Push Push
	Pull Pull
}

// Backend is a central store for many keys: the embedded memstore or Redis.
// Times are the gateway's nanoseconds. A Backend is safe for concurrent use.
type Backend interface {
	// Sync applies every item's Push and fills its Pull, as one batch.
	Sync(ctx context.Context, now int64, items []SyncItem) error
	// Ask answers a query of gateway gw that a decision waits on, after
	// applying the push it carries (see Query.Carry), in one round trip. The
	// central check admits and logs q.N requests if the window then holds
	// at most the limit (outstanding lease slots counting as used) and
	// returns the count afterwards; a grant gives up to q.N more lease
	// slots, as many as the limit allows; a counter query adds q.N to the
	// key's fixed-window counter and returns it.
	Ask(ctx context.Context, now int64, key Key, gw int, q Query) (Answer, error)
}

// AskItem is one limit's part of a decision on a key with several limits:
// the caller fills Key and Query, the store fills Answer.
type AskItem struct {
	Key    Key
	Query  Query
	Answer Answer
}

// MultiAsker is a Backend that answers the queries of one decision on a key
// with several limits (design.Multi) together, in one round trip.
type MultiAsker interface {
	// AskAll answers every item as Ask would, but as one: the central
	// checks admit all their requests or none (when one would pass its
	// limit, none logs anything, and each answers its count), and a
	// counter query adds its requests only when every counter takes them
	// within its limit, or when its own limit is passed (a refused
	// request counts, as upstream's counter counts it, on the limits it
	// passed and no other). Grants are answered each alone. The items
	// must share one Name and have distinct Parts.
	AskAll(ctx context.Context, now int64, gw int, items []AskItem) error
}

// Pinger is a Backend that can tell whether it is reachable without a key:
// a driver with nothing to sync pings it, so that an idle gateway still
// knows that its store is down.
type Pinger interface {
	Ping(ctx context.Context) error
}

// Membership is a Backend shared by processes (Redis) on which gateways
// join a fleet and learn it: who is live, so K, and each its own index.
type Membership interface {
	// Heartbeat joins fleet as member id, or renews its membership, for
	// ttl on the store's clock. A member keeps its index while it renews
	// within ttl; a new one (or one whose membership lapsed) takes the
	// lowest index no live member holds. It returns the member's index and
	// every live member's index, ascending.
	Heartbeat(ctx context.Context, fleet, id string, ttl time.Duration) (index int, live []int, err error)
	// Leave ends id's membership of fleet at once.
	Leave(ctx context.Context, fleet, id string) error
}

// Claimer is a Backend shared by processes (Redis) on which a gateway
// claims its index, so that two live processes never act as one gateway:
// two of them would each admit that gateway's share, and the fleet more
// than its limit. A claim lasts ttl unless renewed.
type Claimer interface {
	// Claim takes or renews index gw of fleet for the claimant id for
	// ttl. When another claimant holds it, ok is false and holder names it.
	Claim(ctx context.Context, fleet string, gw int, id string, ttl time.Duration) (holder string, ok bool, err error)
	// Release gives index gw of fleet up, if id holds it.
	Release(ctx context.Context, fleet string, gw int, id string) error
}
