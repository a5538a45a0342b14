package study

import (
	"context"
	"testing"
)

// BenchmarkGridSeed1 runs the full grid's first seed, about a quarter of the
// study's work. cmd/fleetlimit/default.pgo, the profile the compiler
// optimizes the study's hot paths by, is made from it:
//
//	go test ./study -run XXX -bench GridSeed1 -benchtime 1x -cpuprofile cmd/fleetlimit/default.pgo
func BenchmarkGridSeed1(b *testing.B) {
	f, err := ParseFilter("seed=1")
	if err != nil {
		b.Fatal(err)
	}
	runs := f.Select(Grid())
	for b.Loop() {
		if _, complete, err := Execute(context.Background(), runs, Options{}); err != nil || !complete {
			b.Fatalf("complete %v, err %v", complete, err)
		}
	}
}
