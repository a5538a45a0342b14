package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/rls"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate CONFIG...",
		Short: "Check configuration files as serve would load them",
		Long: `validate loads each envoyproxy/ratelimit YAML file exactly as serve does and
prints what serve would enforce (every domain, limit and fleetlimit setting),
or each error with its file and line. It exits 0 when every file is valid,
1 when one is not.`,
		Example: `  fleetlimit validate examples/ratelimit.yaml
  fleetlimit validate config/*.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				cfg, err := rls.Load(path)
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				describe(cmd, path, cfg)
			}
			if bad > 0 {
				return runError{fmt.Errorf("%d of %d files invalid", bad, len(args))}
			}
			return nil
		},
	}
}

// describe prints what serve would enforce from cfg.
func describe(cmd *cobra.Command, path string, cfg *rls.Config) {
	w := cmd.OutOrStdout()
	domains := cfg.Domains()
	sort.Strings(domains)
	fmt.Fprintf(w, "%s: valid: %d domain(s): %v\n", path, len(domains), domains)
	for _, l := range cfg.Limits() {
		fmt.Fprintf(w, "  %s: %v\n", l.FullKey, l)
	}
	s := cfg.Settings
	fmt.Fprintf(w, "  fleetlimit: design %s, window %v, sync %v, gateway %d of %d, timeout %v, fail closed %v, response headers %v\n",
		s.Design, s.WindowKind, s.Sync, s.Gateway, s.Gateways, s.Timeout, s.FailClosed, s.ResponseHeaders)
}
