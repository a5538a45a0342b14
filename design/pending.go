package design

// pending holds the timestamps a gateway admitted since its last sync.
// SyncPush hands out the ones present then; SyncPull drops exactly those, so
// that admits made while a sync is in flight are pushed at the next one.
type pending struct {
	stamps []int64
	pushed int
	acked  uint64 // admits the store has acknowledged, for Push.Seq
}

func (p *pending) add(now int64, n int) {
	for i := 0; i < n; i++ {
		p.stamps = append(p.stamps, now)
	}
}

// push returns the stamps to push and the sequence number of the first.
func (p *pending) push() ([]int64, uint64) {
	p.pushed = len(p.stamps)
	return p.stamps[:p.pushed], p.acked + 1
}

// settle drops the stamps the store acknowledged with the last pull.
func (p *pending) settle() {
	p.acked += uint64(p.pushed)
	n := copy(p.stamps, p.stamps[p.pushed:])
	p.stamps = p.stamps[:n]
	p.pushed = 0
}

// quietSyncs is QuietSyncs for a design whose syncs only push its admits
// (and refresh what it pulls): quiet forever while it has nothing to push.
func (p *pending) quietSyncs() int {
	if len(p.stamps) > 0 {
		return 0
	}
	return Forever
}
