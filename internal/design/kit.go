package design

import "github.com/fleetlimit/fleetlimit/store"

// The building blocks below are exported for the lab's models of other
// systems (sim/catalog), which are written on them as fleetlimit's own
// designs are; no driver needs them.

// Local is the record every design keeps of its own admits: what its next
// push carries, and the local quota that every design's Fallback applies.
type Local = local

// NewLocal makes the record for one gateway of a valid Config.
func NewLocal(c Config) Local { return newLocal(c) }

// Add records an admit of cost n at now.
func (l *local) Add(now int64, n int) { l.add(now, n) }

// Unadd forgets the last admit of cost n, as if never made.
func (l *local) Unadd(n int) { l.unadd(n) }

// Unadmit takes back an admit of cost n whose query was q (Gateway.Unadmit).
func (l *local) Unadmit(now int64, n int, q store.Query) { l.unadmit(now, n, q) }

// Push fills p's admits: those not yet pushed.
func (l *local) Push(p *store.Push) { l.push(p) }

// Pulled reads the store's answer to the last push; true when it says the
// store lost the key.
func (l *local) Pulled(now int64, p *store.Pull) bool { return l.pulled(now, p) }

// Settle ends a sync whose pull was read: what it pushed is acknowledged.
func (l *local) Settle() { l.settle() }

// QuietSyncs is how many of the next syncs would push nothing new.
func (l *local) QuietSyncs() int { return l.quietSyncs() }

// Abandon is Gateway.Abandon for a gateway g whose record is l.
func Abandon(g Gateway, l *Local, now int64, n int, q store.Query, fallback bool) Verdict {
	return abandon(g, l, now, n, q, fallback)
}

// Counter is shared-counter's gateway.
type Counter = counter

// NewSharedCounter builds shared-counter for one gateway of a valid Config.
func NewSharedCounter(c Config) *Counter { return newCounter(c, modeShared).(*counter) }

// Record is the counter's record of its own admits.
func (c *counter) Record() *Local { return &c.local }

// Limit is the counter's L.
func (c *counter) Limit() int { return c.cfg.Limit }

// CentralCounter is central-counter's gateway.
type CentralCounter = centralCounter

// NewCentralCounter builds central-counter for one gateway of a valid Config.
func NewCentralCounter(c Config) *CentralCounter { return newCentralCounter(c).(*centralCounter) }

// NewCentralLog builds central-log for one gateway of a valid Config.
func NewCentralLog(c Config) Gateway { return newCentralLog(c) }
