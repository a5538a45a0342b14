package main

import (
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/fleetlimit/fleetlimit/rls"
)

func newValidateCmd() *cobra.Command {
	var src rls.Source
	c := &cobra.Command{
		Use:   "validate FILE|DIR...",
		Short: "Check configuration files as serve would load them",
		Long: `validate loads each envoyproxy/ratelimit YAML file exactly as serve does and
prints what serve would enforce (every domain, limit and fleetlimit setting),
or each error with its file and line. A directory is loaded as one
configuration, as serve loads it. It exits 0 when every one is valid, 1 when
one is not.`,
		Example: `  fleetlimit validate examples/ratelimit.yaml
  fleetlimit validate config/*.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			bad := 0
			for _, path := range args {
				src.Path = path
				cfg, err := src.Load()
				if err != nil {
					fmt.Fprintln(cmd.ErrOrStderr(), err)
					bad++
					continue
				}
				describe(cmd, path, cfg)
			}
			if bad > 0 {
				return runError{fmt.Errorf("%d of %d invalid", bad, len(args))}
			}
			return nil
		},
	}
	c.Flags().BoolVar(&src.Merge, "merge-domains", false, "let several files give one domain (MERGE_DOMAIN_CONFIG)")
	c.Flags().BoolVar(&src.IgnoreDotFiles, "ignore-dotfiles", false, "skip files and directories whose names start with a dot")
	return c
}

// describe prints what serve would enforce from cfg.
func describe(cmd *cobra.Command, path string, cfg *rls.Config) {
	w := cmd.OutOrStdout()
	domains := cfg.Domains()
	sort.Strings(domains)
	fmt.Fprintf(w, "%s: valid: %d domain(s): %v\n", path, len(domains), domains)
	several := false
	for _, l := range cfg.Limits() {
		fmt.Fprintf(w, "  %s: %v\n", l.FullKey, l)
		several = several || len(l.Also) > 0
	}
	if several {
		fmt.Fprintln(w, "  (rate_limits, a fleetlimit extension envoyproxy/ratelimit does not read: a request is admitted only if every limit of the list admits it, and counted against them all only then)")
	}
	s := cfg.Settings
	fleet := fmt.Sprintf("gateway %d of %d", s.Gateway, s.Gateways)
	if s.Membership {
		fleet = "gateways and index from Redis (membership)"
	}
	counting := "exact log"
	if s.WindowBuckets > 0 {
		counting = fmt.Sprintf("%d counters", s.WindowBuckets)
	}
	fmt.Fprintf(w, "  fleetlimit: design %s, window %v (%s), sync %v, %s, timeout %v, fail closed %v, response headers %v\n",
		s.Design, s.WindowKind, counting, s.Sync, fleet, s.Timeout, s.FailClosed, s.ResponseHeaders)
}
