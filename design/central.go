package design

import "github.com/fleetlimit/fleetlimit/store"

func init() {
	register(Info{
		Name:       "central-log",
		Summary:    "every request asks the store; exact; one round trip per request",
		RoundTrips: true,
		NoSync:     true,
		New:        func(Config) Gateway { return centralLog{} },
	})
}

// centralLog keeps no state: the store decides every request.
type centralLog struct{}

func (centralLog) Decide(now int64, n int) (Decision, Query) {
	return Ask, Query{Kind: QueryCentral, N: n}
}

func (centralLog) Resume(now int64, n int, q Query, a Answer) Decision {
	if a.Admit {
		return Admit
	}
	return Reject
}

func (centralLog) SyncPush(now int64) store.Push    { return store.Push{} }
func (centralLog) SyncPull(now int64, p store.Pull) {}
func (centralLog) Held() int                        { return 0 }
