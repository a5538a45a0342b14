// Command fleetlimit measures and enforces per-key rate limits across a fleet
// of gateways: it simulates the coordination designs of the study and runs
// them for real.
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// usageError is bad input: exit status 2.
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

func usagef(format string, a ...any) error { return usageError{fmt.Errorf(format, a...)} }

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:   "fleetlimit",
		Short: "Measure and enforce per-key rate limits across a fleet of gateways",
		Long: `fleetlimit measures what each way of sharing one rate limit across K gateways
costs (what it admits past the limit, what honest traffic it rejects, how
often it waits on the store) and enforces the chosen design for real.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       version(),
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(newSimCmd(), newStudyCmd(), newAdviseCmd(), newReplayCmd(), newExploreCmd(), newServeCmd(), newLoadgenCmd(), newValidateCmd(), newNemesisCmd())
	return root
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command line args and returns the exit status: 0, 1 when
// valid work failed, 2 on bad input.
func run(args []string, stdout, stderr io.Writer) int {
	root := newRoot()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.Execute()
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "fleetlimit:", err)
	var ue usageError
	var re runError
	switch {
	case errors.As(err, &ue):
		return 2
	case errors.As(err, &re):
		return 1
	}
	// Errors cobra raises itself (unknown command, bad arguments) are usage.
	return 2
}

// runError is a failure while doing valid work: exit status 1.
type runError struct{ err error }

func (r runError) Error() string { return r.err.Error() }
func (r runError) Unwrap() error { return r.err }
