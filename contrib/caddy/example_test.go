package fleetlimitcaddy_test

import (
	"encoding/json"
	"fmt"

	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"

	fleetlimitcaddy "github.com/fleetlimit/fleetlimit/contrib/caddy"
)

// The Caddyfile directive and the JSON it stands for: one zone of 100
// requests a minute per API key, on headroom, shared by three Caddy
// instances on Redis.
func ExampleHandler_UnmarshalCaddyfile() {
	d := caddyfile.NewTestDispenser(`fleetlimit {
		zone api {
			key    {http.request.header.X-API-Key}
			limit  100
			window 1m
		}
		redis 127.0.0.1:6379
		gateways 3
		gateway  1
	}`)
	var h fleetlimitcaddy.Handler
	if err := h.UnmarshalCaddyfile(d); err != nil {
		fmt.Println(err)
		return
	}
	b, _ := json.Marshal(h)
	fmt.Println(string(b))
	// Output:
	// {"zones":{"api":{"key":"{http.request.header.X-API-Key}","limit":100,"window":60000000000}},"redis":{"addresses":["127.0.0.1:6379"]},"gateways":3,"gateway":1}
}
