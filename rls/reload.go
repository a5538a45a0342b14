package rls

import (
	"context"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"time"
)

// Source is where a configuration comes from: one file, or a directory of
// them as envoyproxy/ratelimit loads RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/
// RUNTIME_APPDIRECTORY.
type Source struct {
	// Path is a file, or a directory whose files (in subdirectories too,
	// in path order) are all configuration files. Directories named
	// "..something" are skipped: they are Kubernetes' ConfigMap
	// internals, whose files the mount's own names already show.
	Path string
	// Merge lets several files give one domain (MERGE_DOMAIN_CONFIG).
	Merge bool
	// IgnoreDotFiles skips files and directories whose names start with
	// a dot (RUNTIME_IGNOREDOTFILES).
	IgnoreDotFiles bool
}

// MaxConfigBytes bounds a configuration, all its files together: files
// past it are refused before they are read (parsing takes about thirty
// times their size in memory), and the configuration in force stays.
const MaxConfigBytes = 8 << 20

// Load parses the configuration file at path.
func Load(path string) (*Config, error) { return Source{Path: path}.Load() }

// Load reads and parses the source's files.
func (s Source) Load() (*Config, error) {
	files, err := s.read()
	if err != nil {
		return nil, err
	}
	return ParseFiles(files, s.Merge)
}

// read reads the source's files.
func (s Source) read() ([]File, error) {
	fi, err := os.Stat(s.Path)
	if err != nil {
		return nil, &ConfigError{File: s.Path, Msg: err.Error()}
	}
	if !fi.IsDir() {
		if err := sized(s.Path, fi.Size(), 0); err != nil {
			return nil, err
		}
		src, err := os.ReadFile(s.Path)
		if err != nil {
			return nil, &ConfigError{File: s.Path, Msg: err.Error()}
		}
		return []File{{Name: s.Path, Src: src}}, nil
	}
	var files []File
	var total int64
	if err := s.walk(s.Path, &files, &total, 0); err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, &ConfigError{File: s.Path, Msg: "no configuration files in the directory"}
	}
	return files, nil
}

// sized refuses a file of size bytes when the files read before it hold
// before: together they would pass MaxConfigBytes.
func sized(path string, size, before int64) error {
	if before+size > MaxConfigBytes {
		return &ConfigError{File: path, Msg: fmt.Sprintf("the configuration would hold %d bytes with this file: at most %d (MaxConfigBytes); nothing was read",
			before+size, MaxConfigBytes)}
	}
	return nil
}

// walk appends the files under dir, following symbolic links (a runtime
// root is often one), to a bounded depth and MaxConfigBytes in all (total).
func (s Source) walk(dir string, files *[]File, total *int64, depth int) error {
	if depth > 16 {
		return &ConfigError{File: dir, Msg: "directories nested more than 16 deep (a symbolic link loop?)"}
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return &ConfigError{File: dir, Msg: err.Error()}
	}
	sort.Slice(ents, func(i, j int) bool { return ents[i].Name() < ents[j].Name() })
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, "..") || (s.IgnoreDotFiles && strings.HasPrefix(name, ".")) {
			continue
		}
		path := filepath.Join(dir, name)
		fi, err := os.Stat(path) // follows links
		if err != nil {
			return &ConfigError{File: path, Msg: err.Error()}
		}
		switch {
		case fi.IsDir():
			if err := s.walk(path, files, total, depth+1); err != nil {
				return err
			}
		case fi.Mode().IsRegular():
			if err := sized(path, fi.Size(), *total); err != nil {
				return err
			}
			*total += fi.Size()
			src, err := os.ReadFile(path)
			if err != nil {
				return &ConfigError{File: path, Msg: err.Error()}
			}
			*files = append(*files, File{Name: path, Src: src})
		}
	}
	return nil
}

// Watch reloads src into s whenever its files change, checking every
// interval until ctx ends. A configuration that no longer parses keeps the
// previous one in force, and says why. Changes to the fleetlimit section
// need a restart; the limits apply at once.
func Watch(ctx context.Context, src Source, s *Service, log *slog.Logger, interval time.Duration) {
	var failed [32]byte // digest of the last files that did not parse
	every(ctx, interval, func() { reload(src, s, log, &failed) })
}

// reload puts src's configuration in force if it changed and parses;
// failed remembers the digest of the last files that did not.
func reload(src Source, s *Service, log *slog.Logger, failed *[32]byte) {
	files, err := src.read()
	if err != nil {
		sum := sha256.Sum256([]byte(err.Error()))
		if sum != *failed {
			*failed = sum
			s.CountReload(false)
			log.Error("fleetlimit: config reload failed; keeping the previous config", "error", err)
		}
		return
	}
	sum := digest(files)
	if sum == s.Config().digest || sum == *failed {
		return
	}
	cfg, err := ParseFiles(files, src.Merge)
	if err != nil {
		*failed = sum
		s.CountReload(false)
		debug.FreeOSMemory() // what the parse took goes back now, not at the next GC's leisure
		log.Error("fleetlimit: config reload failed; keeping the previous config", "error", err)
		return
	}
	if cfg.FileSettings != s.Config().FileSettings {
		log.Warn("fleetlimit: the fleetlimit section changed; it takes effect at the next restart", "source", src.Path)
	}
	cfg.Settings = s.Config().Settings
	if err := cfg.Enforceable(cfg.Settings); err != nil {
		*failed = sum
		s.CountReload(false)
		log.Error("fleetlimit: config reload failed; keeping the previous config", "error", err)
		return
	}
	s.SetConfig(cfg)
	s.CountReload(true)
	log.Info("fleetlimit: config reloaded", "source", src.Path, "files", len(files), "domains", len(cfg.Domains()))
}

// digest is the fingerprint of a set of files, names and contents.
func digest(files []File) (sum [32]byte) {
	h := sha256.New()
	for _, f := range files {
		fmt.Fprintf(h, "%d:%s:%d:", len(f.Name), f.Name, len(f.Src))
		h.Write(f.Src)
	}
	h.Sum(sum[:0])
	return sum
}
