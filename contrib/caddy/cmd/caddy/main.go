// Command caddy is Caddy with its standard modules and fleetlimit's
// handler, as `xcaddy build --with github.com/fleetlimit/fleetlimit/contrib/caddy`
// would build it:
//
//	go build -o caddy ./cmd/caddy
//	./caddy run --config Caddyfile
package main

import (
	caddycmd "github.com/caddyserver/caddy/v2/cmd"

	_ "github.com/caddyserver/caddy/v2/modules/standard"

	_ "github.com/fleetlimit/fleetlimit/contrib/caddy"
)

func main() {
	caddycmd.Main()
}
