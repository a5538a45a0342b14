package rls

import (
	"bytes"
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"time"
)

// Load parses the configuration file at path.
func Load(path string) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &ConfigError{File: path, Msg: err.Error()}
	}
	return Parse(path, bytes.NewReader(src))
}

// Watch reloads path into s whenever its contents change, checking every
// interval until ctx ends. A file that no longer parses keeps the previous
// configuration in force, and says why. Changes to the fleetlimit section
// need a restart; the limits apply at once.
func Watch(ctx context.Context, path string, s *Service, log *slog.Logger, interval time.Duration) {
	var failed [32]byte // digest of the last file that did not parse
	every(ctx, interval, func() { reload(path, s, log, &failed) })
}

// reload puts path's configuration in force if it changed and parses;
// failed remembers the digest of the last file that did not.
func reload(path string, s *Service, log *slog.Logger, failed *[32]byte) {
	src, err := os.ReadFile(path)
	if err != nil {
		return
	}
	sum := sha256.Sum256(src)
	if sum == s.Config().digest || sum == *failed {
		return
	}
	cfg, err := Parse(path, bytes.NewReader(src))
	if err != nil {
		*failed = sum
		s.CountReload(false)
		log.Error("fleetlimit: config reload failed; keeping the previous config", "error", err)
		return
	}
	if cfg.FileSettings != s.Config().FileSettings {
		log.Warn("fleetlimit: the fleetlimit section changed; it takes effect at the next restart", "file", path)
	}
	cfg.Settings = s.Config().Settings
	s.SetConfig(cfg)
	s.CountReload(true)
	log.Info("fleetlimit: config reloaded", "file", path, "domains", len(cfg.Domains()))
}
