package catalog_test

import (
	"fmt"

	"github.com/fleetlimit/fleetlimit/internal/design"
	"github.com/fleetlimit/fleetlimit/sim/catalog"
)

// A headroom gateway at another tolerance, registered under a name of its
// own so that the simulator, the study's beyond part and advise know it.
func ExampleRegister() {
	err := catalog.Register(catalog.Info{
		Name:    "headroom-strict",
		Summary: "headroom that never lets a quiet gateway admit beyond its share",
		New:     func(c design.Config) design.Gateway { return design.NewHeadroom(c, 0) },
	})
	fmt.Println(err)
	fmt.Println(catalog.Register(catalog.Info{Name: "headroom-strict", New: func(c design.Config) design.Gateway { return nil }}))
	// Output:
	// <nil>
	// catalog: register "headroom-strict": the name is taken
}
