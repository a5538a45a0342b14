package catalog

import "github.com/fleetlimit/fleetlimit/internal/design"

var _ design.Gateway = (*gubernator)(nil)

func init() {
	register(Info{
		Name: "gubernator-global",
		Summary: "gubernator's GLOBAL behaviour: the key's owner decides on its count; the other peers answer from the owner's last broadcast " +
			"plus their own hits, which they forward every Δ (GlobalSyncWait)",
		FixedWindow: true,
		Peer:        true,
		New:         newGubernator,
	})
}

// newGubernator is gubernator's GLOBAL behaviour (docs/architecture.md,
// "Global Behavior"): a key is owned by one peer, chosen by consistent
// hashing (here gateway 0); a request that reaches another peer "will be
// answered from an internal cache", its hits "batched by the receiving peer
// and sent asynchronously to the owning peer where the hits will be totaled",
// and the owner updates every peer's cache with the key's status. The
// owner's own requests are decided on its count at once (here a central
// check, which in gubernator is the owner's memory, not a round trip); a
// peer's are shared-counter's rule on the owner's last word and its own
// hits since, the forwarding and the broadcast falling at its sync, every
// GlobalSyncWait (Δ; gubernator's default is 500 µs). gubernator's token
// bucket refills whole when its duration has passed since the key was made;
// here the windows are the store's fixed ones. A request over the limit
// takes nothing, as gubernator's OVER_LIMIT leaves the bucket as it was.
func newGubernator(c design.Config) design.Gateway {
	g := &gubernator{}
	if c.Gateway == 0 {
		g.Gateway = design.NewCentralLog(c)
	} else {
		g.Gateway = design.NewSharedCounter(c)
	}
	return g
}

// gubernator is one type for the owner and the other peers, so that a
// driver that tells designs apart by type (the simulator's lazy and
// skipping modes, which read the first gateway's) sees one design; it
// leaves those modes out (it is not Lazy), and every sync is performed.
type gubernator struct{ design.Gateway }
