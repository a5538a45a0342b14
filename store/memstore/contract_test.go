package memstore_test

import (
	"testing"

	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/memstore"
	"github.com/fleetlimit/fleetlimit/store/storetest"
)

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Backend { return memstore.New() })
}
