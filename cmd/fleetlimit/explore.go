package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/explore"
)

func newExploreCmd() *cobra.Command {
	var addr string
	c := &cobra.Command{
		Use:   "explore",
		Short: "Serve the explorer: pick designs and a scenario in the browser, see their timelines and figures",
		Long: `explore serves a page on a local address where you pick designs, K, Δ, L, W,
the traffic and the store's faults, and see each design's timeline (the
fleet's admits in the window, × L, over the run) and its figures side by
side, simulated in this process as you change a value. The page and its
assets are in the binary; nothing is fetched from elsewhere.`,
		Example: `  fleetlimit explore                     # then open http://127.0.0.1:8089/
  fleetlimit explore --addr 127.0.0.1:9000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, _, err := net.SplitHostPort(addr); err != nil {
				return usagef("--addr %q: want host:port: %v", addr, err)
			}
			l, err := net.Listen("tcp", addr)
			if err != nil {
				return runError{err}
			}
			srv := &http.Server{Handler: explore.Handler(), ReadHeaderTimeout: 5 * time.Second}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				srv.Shutdown(shut)
			}()
			cmd.PrintErrf("fleetlimit explore: open http://%s/ (Ctrl-C to stop)\n", l.Addr())
			if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
				return runError{err}
			}
			return nil
		},
	}
	c.Flags().StringVar(&addr, "addr", "127.0.0.1:8089", "listen address (loopback by default: the page runs simulations for whoever reaches it)")
	return c
}
