package limiter

import (
	"fmt"
	"sync"

	"github.com/fleetlimit/fleetlimit/internal/design"
)

// testDesigns are the variants the tests run by name (a watched headroom):
// lookup finds them first.
var testDesigns sync.Map

// registerTest adds a variant for the tests to run by name.
func registerTest(i design.Info) error {
	if _, taken := testDesigns.LoadOrStore(i.Name, i); taken {
		return fmt.Errorf("test design %q: the name is taken", i.Name)
	}
	return nil
}

func init() {
	base := lookup
	lookup = func(name string) (design.Info, error) {
		if i, ok := testDesigns.Load(name); ok {
			return i.(design.Info), nil
		}
		return base(name)
	}
}

// mustAllow is the decision of an Allow, which these tests ask of an open
// Limiter (the only error of a valid request is ErrClosed).
func mustAllow(d Decision, err error) Decision {
	if err != nil {
		panic(err)
	}
	return d
}
