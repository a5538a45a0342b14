// Command httpserver is a small API behind fleetlimit's middleware: each
// X-API-Key value may make -limit requests per -window. Run several with
// -redis and distinct -gateway indexes to share the limit as a fleet.
//
//	go run ./examples/httpserver -addr 127.0.0.1:8090
//	curl -i -H 'X-API-Key: alice' http://127.0.0.1:8090/
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/fleetlimit/fleetlimit/httpmw"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/store/redisstore"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address")
	designName := flag.String("design", limiter.DefaultDesign, "coordination design")
	limit := flag.Int("limit", 100, "requests per window per API key")
	window := flag.Duration("window", time.Minute, "window")
	sync := flag.Duration("sync", time.Second, "sync interval")
	redisAddr := flag.String("redis", "", "Redis address (empty: the embedded store)")
	gateways := flag.Int("gateways", 1, "gateways in the fleet")
	gateway := flag.Int("gateway", 0, "this gateway's index")
	flag.Parse()

	var st store.Backend
	if *redisAddr != "" {
		rs, err := redisstore.New(context.Background(), redisstore.Options{Addrs: []string{*redisAddr}})
		if err != nil {
			log.Fatal(err)
		}
		defer rs.Close()
		st = rs
	}
	l, err := limiter.New(limiter.Config{Design: *designName, Limit: *limit, Window: *window, Sync: *sync,
		Gateways: *gateways, Gateway: *gateway, Store: st})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "hello") })
	mw, err := httpmw.New(l, httpmw.Options{Key: httpmw.Header("X-API-Key")})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	srv := &http.Server{Addr: *addr, Handler: mw(api)}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(shut)
	}()
	log.Printf("listening on %s (%s, %d per %v per X-API-Key)", *addr, *designName, *limit, *window)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
	if err := l.Close(); err != nil {
		log.Printf("final sync: %v", err)
	}
}
