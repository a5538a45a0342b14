package accesslog

import (
	"io"
	"os"
)

// TempRuns keeps the sorted runs of an ordered replay (replay.RunStore) as
// files in a temporary directory, made at the first run and removed by
// Close.
type TempRuns struct {
	dir string // "": the system's temporary directory
	tmp string // the directory made
}

// NewTempRuns keeps runs under dir ("": the system's temporary directory).
func NewTempRuns(dir string) *TempRuns { return &TempRuns{dir: dir} }

// Create starts a run in a file of its own.
func (t *TempRuns) Create() (io.WriteCloser, func() (io.ReadCloser, error), error) {
	if t.tmp == "" {
		d, err := os.MkdirTemp(t.dir, "fleetlimit-replay-")
		if err != nil {
			return nil, nil, err
		}
		t.tmp = d
	}
	f, err := os.CreateTemp(t.tmp, "run-")
	if err != nil {
		return nil, nil, err
	}
	name := f.Name()
	return f, func() (io.ReadCloser, error) { return os.Open(name) }, nil
}

// Close removes every run.
func (t *TempRuns) Close() error {
	if t.tmp == "" {
		return nil
	}
	err := os.RemoveAll(t.tmp)
	t.tmp = ""
	return err
}
