package design

// pending holds the timestamps a gateway admitted since its last sync.
// SyncPush hands out the ones present then; SyncPull drops exactly those, so
// that admits made while a sync is in flight are pushed at the next one.
type pending struct {
	stamps []int64
	pushed int
}

func (p *pending) add(now int64, n int) {
	for i := 0; i < n; i++ {
		p.stamps = append(p.stamps, now)
	}
}

func (p *pending) push() []int64 {
	p.pushed = len(p.stamps)
	return p.stamps[:p.pushed]
}

func (p *pending) settle() {
	n := copy(p.stamps, p.stamps[p.pushed:])
	p.stamps = p.stamps[:n]
	p.pushed = 0
}
