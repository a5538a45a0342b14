// Package rls is an Envoy-compatible rate limit service on top of the
// fleetlimit limiter: the envoy.service.ratelimit.v3 gRPC API, the JSON API
// of envoyproxy/ratelimit, and its YAML configuration format, unchanged.
//
// It must never accept a configuration it cannot apply exactly as
// envoyproxy/ratelimit documents it, and never drop requests on a reload.
package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"

	"github.com/fleetlimit/fleetlimit/design"
	"github.com/fleetlimit/fleetlimit/limiter"
	"github.com/fleetlimit/fleetlimit/store"
	"github.com/fleetlimit/fleetlimit/window"
)

// Unit is a rate limit unit, numbered as in envoy.service.ratelimit.v3.
type Unit int32

// The units of envoyproxy/ratelimit.
const (
	Second Unit = 1
	Minute Unit = 2
	Hour   Unit = 3
	Day    Unit = 4
	Month  Unit = 5
	Year   Unit = 6
	Week   Unit = 7
)

var unitNames = map[string]Unit{"SECOND": Second, "MINUTE": Minute, "HOUR": Hour, "DAY": Day, "WEEK": Week, "MONTH": Month, "YEAR": Year}

// Duration is the unit's length: a month is 30 days and a year 365, as in
// envoyproxy/ratelimit.
func (u Unit) Duration() time.Duration {
	switch u {
	case Second:
		return time.Second
	case Minute:
		return time.Minute
	case Hour:
		return time.Hour
	case Day:
		return 24 * time.Hour
	case Week:
		return 7 * 24 * time.Hour
	case Month:
		return 30 * 24 * time.Hour
	case Year:
		return 365 * 24 * time.Hour
	}
	return 0
}

// String returns the unit's name, e.g. "MINUTE".
func (u Unit) String() string {
	if u >= Second && u <= Week {
		return [...]string{"SECOND", "MINUTE", "HOUR", "DAY", "MONTH", "YEAR", "WEEK"}[u-Second]
	}
	return "UNKNOWN"
}

// RateLimit is a configured limit.
type RateLimit struct {
	RequestsPerUnit uint32
	Unit            Unit
	Unlimited       bool
	Name            string
	Replaces        []string
	ShadowMode      bool
	DetailedMetric  bool
	// QuotaMode makes the limit a quota: over it, the request is over the
	// limit only when every quota limit of the request is.
	QuotaMode bool
	// Metadata is the descriptor's metadata, returned in the response's
	// dynamic metadata when the request passes it (RESPONSE_DYNAMIC_METADATA).
	Metadata *structpb.Struct
	// FullKey names the limit in metrics: domain.key_value.key...
	FullKey string
}

// node is one level of a domain's descriptor tree.
type node struct {
	children  map[string]*node // by "key" or "key_value"
	wildcards []wildcard       // children keys holding '*', in file order
	limit     *RateLimit
	// valueToMetric puts the request's value into the metric name.
	valueToMetric bool
	// shareThreshold: every value matching this wildcard child shares one
	// counter, named by the pattern.
	shareThreshold bool
}

// wildcard is a child key with '*' in its value, split at each '*': each
// '*' matches any run of characters, the empty one included.
type wildcard struct {
	key   string
	parts []string
}

// matches reports whether kv ("key_value") matches the pattern.
func (w wildcard) matches(kv string) bool {
	p := w.parts
	first, last := p[0], p[len(p)-1]
	if len(kv) < len(first)+len(last) || !strings.HasPrefix(kv, first) || !strings.HasSuffix(kv, last) {
		return false
	}
	mid := kv[len(first) : len(kv)-len(last)]
	for _, part := range p[1 : len(p)-1] {
		i := strings.Index(mid, part)
		if i < 0 {
			return false
		}
		mid = mid[i+len(part):]
	}
	return true
}

// Settings are fleetlimit's own settings, from the optional top-level
// "fleetlimit" section (envoyproxy/ratelimit files work without it), which
// flags and environment variables override (see cmd/fleetlimit serve).
type Settings struct {
	Design     string      `yaml:"design"`      // default shared-counter
	WindowKind window.Kind `yaml:"window_kind"` // fixed (default), as envoyproxy/ratelimit, or sliding
	// WindowBuckets, when > 0, counts every limit's window in that many
	// counters instead of the exact log (limiter.Config.WindowBuckets): a
	// sliding window in B buckets of unit/B, a fixed one (B = 1) in one.
	WindowBuckets int           `yaml:"window_buckets"`
	Sync          time.Duration `yaml:"sync"`     // default 1s
	Gateways      int           `yaml:"gateways"` // K, default 1
	Gateway       int           `yaml:"gateway"`  // this process's index
	// Membership learns K and this process's index from Redis instead of
	// gateways and gateway (limiter.Config.Membership).
	Membership bool          `yaml:"membership"`
	Timeout    time.Duration `yaml:"timeout"` // store timeout, default 50ms
	FailClosed bool          `yaml:"fail_closed"`
	// ResponseHeaders adds rate limit headers to responses
	// (LIMIT_RESPONSE_HEADERS_ENABLED), in the Headers style.
	ResponseHeaders bool        `yaml:"response_headers"`
	Headers         HeaderStyle `yaml:"headers"` // draft (default) or legacy
	// The legacy style's header names (LIMIT_LIMIT_HEADER,
	// LIMIT_REMAINING_HEADER, LIMIT_RESET_HEADER); default
	// RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset.
	LimitHeader     string  `yaml:"limit_header"`
	RemainingHeader string  `yaml:"remaining_header"`
	ResetHeader     string  `yaml:"reset_header"`
	NearRatio       float64 `yaml:"near_ratio"` // "near" metric threshold, default 0.8 (NEAR_LIMIT_RATIO)
	// ShadowMode answers OK to every request, counting as usual
	// (SHADOW_MODE).
	ShadowMode bool `yaml:"shadow_mode"`
	// QuotaMode makes every limit a quota (QUOTA_MODE).
	QuotaMode bool `yaml:"quota_mode"`
	// DynamicMetadata returns the request and the passed limits' metadata
	// in the response's dynamic metadata (RESPONSE_DYNAMIC_METADATA).
	DynamicMetadata bool `yaml:"response_dynamic_metadata"`
	// StopIncrement, with central-counter, does not count a request
	// against its other limits when one of them would go over
	// (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT).
	StopIncrement bool `yaml:"stop_increment_over_limit"`
	// CacheKeyPrefix starts central-counter's Redis keys, as
	// envoyproxy/ratelimit's CACHE_KEY_PREFIX.
	CacheKeyPrefix string `yaml:"cache_key_prefix"`
	// Fleet names the fleet whose gateway indexes this process claims on
	// Redis; default "default". Fleets sharing one Redis need their own.
	Fleet string `yaml:"fleet"`
	// ClaimTTL is how long a claim of a gateway index lasts unless
	// renewed; default 10s.
	ClaimTTL time.Duration `yaml:"claim_ttl"`
	// MaxKeys bounds the keys this process holds; default 100,000 (see
	// limiter.Config.MaxKeys for the eviction rule).
	MaxKeys int `yaml:"max_keys"`
	// MaxKeyBytes bounds the bytes of their names together; default 64
	// MiB (limiter.Config.MaxKeyBytes).
	MaxKeyBytes int `yaml:"max_key_bytes"`
	// FailAfter is how many store calls on the request path must fail in
	// a row before every request falls back at once; default 3
	// (limiter.Config.FailAfter).
	FailAfter int `yaml:"fail_after"`
}

// HeaderStyle is the form of the rate limit response headers.
type HeaderStyle string

// The header styles.
const (
	// HeadersDraft: RateLimit-Policy and RateLimit, as structured fields of
	// the IETF httpapi draft (-07 onwards), e.g. `"name";q=100;w=60` and
	// `"name";r=50;t=30`.
	HeadersDraft HeaderStyle = "draft"
	// HeadersLegacy: the trio RateLimit-Limit, RateLimit-Remaining and
	// RateLimit-Reset (draft -06 and envoyproxy/ratelimit), names settable.
	HeadersLegacy HeaderStyle = "legacy"
)

// Limiter is the limiter configuration these settings ask for, on store st
// (nil: the embedded store): the one place the service's settings become
// the limiter's.
func (s Settings) Limiter(st store.Backend, log *slog.Logger) limiter.Config {
	return limiter.Config{Design: s.Design, WindowKind: s.WindowKind, WindowBuckets: s.WindowBuckets, Sync: s.Sync, Gateways: s.Gateways,
		Gateway: s.Gateway, Membership: s.Membership, Store: st, Timeout: s.Timeout, FailClosed: s.FailClosed, Logger: log, Fleet: s.Fleet, ClaimTTL: s.ClaimTTL, MaxKeys: s.MaxKeys,
		MaxKeyBytes: s.MaxKeyBytes, FailAfter: s.FailAfter}
}

// Bounds on the fleetlimit settings: a sync far below 10 ms only burns CPU
// (1 ns kept an idle serve at 116%), and each gateway of a fleet costs every
// key a counter in several designs.
const (
	MinSync     = 10 * time.Millisecond
	MaxSync     = time.Hour
	MaxGateways = 4096
	MaxTimeout  = 10 * time.Second
	MaxKeys     = 100_000_000
)

// Config is a loaded configuration: one or more domains and the settings.
type Config struct {
	// Settings are the settings in force (a caller may override some,
	// as serve's flags do).
	Settings Settings
	// FileSettings are the settings as the file gave them.
	FileSettings Settings
	domains      map[string]*node
	// Source names the file, for errors and logs.
	Source string
	digest [32]byte // of the bytes parsed, to tell a changed file
}

// Limits returns every configured limit, sorted by FullKey.
func (c *Config) Limits() []*RateLimit {
	var out []*RateLimit
	var walk func(n *node)
	walk = func(n *node) {
		if n.limit != nil {
			out = append(out, n.limit)
		}
		for _, ch := range n.children {
			walk(ch)
		}
	}
	for _, d := range c.domains {
		walk(d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FullKey < out[j].FullKey })
	return out
}

// String describes the limit as serve enforces it, e.g. "100 per MINUTE,
// shadow mode".
func (r *RateLimit) String() string {
	var b strings.Builder
	if r.Unlimited {
		b.WriteString("unlimited")
	} else {
		fmt.Fprintf(&b, "%d per %v", r.RequestsPerUnit, r.Unit)
	}
	if r.Name != "" {
		fmt.Fprintf(&b, ", name %q", r.Name)
	}
	if len(r.Replaces) > 0 {
		fmt.Fprintf(&b, ", replaces %s", strings.Join(r.Replaces, ", "))
	}
	if r.ShadowMode {
		b.WriteString(", shadow mode")
	}
	if r.DetailedMetric {
		b.WriteString(", detailed metric")
	}
	if r.QuotaMode {
		b.WriteString(", quota mode")
	}
	if r.Metadata != nil {
		b.WriteString(", metadata")
	}
	return b.String()
}

// Domains returns the configured domain names.
func (c *Config) Domains() []string {
	var ds []string
	for d := range c.domains {
		ds = append(ds, d)
	}
	return ds
}

// ConfigError is a configuration problem with its place.
type ConfigError struct {
	File string
	Line int
	Msg  string
}

func (e *ConfigError) Error() string {
	if e.File == "" {
		return e.Msg
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

var validKeys = map[string]bool{"domain": true, "key": true, "value": true, "descriptors": true, "rate_limit": true,
	"unit": true, "requests_per_unit": true, "unlimited": true, "shadow_mode": true, "name": true, "replaces": true,
	"detailed_metric": true, "quota_mode": true, "value_to_metric": true, "share_threshold": true, "metadata": true}

// Parse reads a configuration: one YAML document per domain (documents
// separated by ---), in envoyproxy/ratelimit's format, and at most one
// "fleetlimit" section.
func Parse(name string, r io.Reader) (*Config, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, &ConfigError{File: name, Msg: err.Error()}
	}
	return ParseFiles([]File{{Name: name, Src: src}}, false)
}

// File is one configuration file's name and contents.
type File struct {
	Name string
	Src  []byte
}

// ParseFiles reads several files as one configuration, as
// envoyproxy/ratelimit loads a config directory: a domain given in two
// files is an error, unless merge is set (MERGE_DOMAIN_CONFIG), when the
// later file's descriptors join the domain's. At most one file may have a
// fleetlimit section.
func ParseFiles(files []File, merge bool) (*Config, error) {
	names := make([]string, len(files))
	for i, f := range files {
		names[i] = f.Name
	}
	c := &Config{Source: strings.Join(names, ", "), domains: map[string]*node{}, digest: digest(files)}
	c.Settings = DefaultSettings()
	b := builder{c: c, merge: merge}
	for _, f := range files {
		if err := b.file(f); err != nil {
			return nil, err
		}
	}
	if len(c.domains) == 0 {
		return nil, &ConfigError{File: c.Source, Msg: "no domain configured"}
	}
	c.FileSettings = c.Settings
	return c, c.Settings.validate(b.settingsFile)
}

// builder puts files together into one Config.
type builder struct {
	c            *Config
	merge        bool
	settingsFile string // the file with the fleetlimit section
}

// file adds one file's documents.
func (b *builder) file(f File) error {
	name := f.Name
	dec := yaml.NewDecoder(bytes.NewReader(f.Src))
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return yamlError(name, err)
		}
		if len(doc.Content) == 0 {
			continue
		}
		if err := b.document(name, doc.Content[0]); err != nil {
			return err
		}
	}
}

// document adds one YAML document: a domain, a fleetlimit section, or both.
func (b *builder) document(name string, root *yaml.Node) error {
	if root.Kind != yaml.MappingNode {
		return &ConfigError{name, root.Line, "a config document must be a mapping with a domain and descriptors"}
	}
	if err := noDuplicateKeys(name, root); err != nil {
		return err
	}
	p := parser{file: name}
	var domain string
	var descs *yaml.Node
	domainLine, settings := root.Line, false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], root.Content[i+1]
		switch k.Value {
		case "domain":
			if v.Kind != yaml.ScalarNode {
				return &ConfigError{name, v.Line, "domain must be a string"}
			}
			domain, domainLine = v.Value, v.Line
		case "descriptors":
			descs = v
		case "fleetlimit":
			if b.settingsFile != "" {
				return &ConfigError{name, k.Line, "more than one fleetlimit section (the first is in " + b.settingsFile + ")"}
			}
			b.settingsFile, settings = name, true
			if err := p.settings(v, &b.c.Settings); err != nil {
				return err
			}
		default:
			if k.Tag != "!!str" {
				return &ConfigError{name, k.Line, "config error, key is not of type string: " + k.Value}
			}
			return &ConfigError{name, k.Line, fmt.Sprintf("config error, unknown key '%s' (want domain, descriptors or fleetlimit)", k.Value)}
		}
	}
	if domain == "" {
		if descs == nil && settings {
			return nil // a document with only the fleetlimit section
		}
		return &ConfigError{name, domainLine, "config file cannot have empty domain"}
	}
	root2 := b.c.domains[domain]
	switch {
	case root2 != nil && !b.merge:
		return &ConfigError{name, domainLine, fmt.Sprintf("duplicate domain '%s' in config file", domain)}
	case root2 == nil:
		root2 = &node{children: map[string]*node{}}
		b.c.domains[domain] = root2
	}
	if descs != nil {
		return p.descriptors(descs, root2, domain+".")
	}
	return nil
}

// noDuplicateKeys refuses a mapping, at any depth, that gives one key
// twice: YAML would keep the last silently, and the config would not say
// what its author meant.
func noDuplicateKeys(file string, n *yaml.Node) error {
	if n.Kind == yaml.MappingNode {
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if first, dup := seen[k.Value]; dup {
				return &ConfigError{file, k.Line, fmt.Sprintf("key %q given twice in one mapping (first on line %d)", k.Value, first)}
			}
			seen[k.Value] = k.Line
		}
	}
	for _, c := range n.Content {
		if err := noDuplicateKeys(file, c); err != nil {
			return err
		}
	}
	return nil
}

func yamlError(name string, err error) error {
	msg := err.Error()
	// yaml.v3 says "yaml: line N: ..."
	if rest, ok := strings.CutPrefix(msg, "yaml: line "); ok {
		if n, tail, ok := strings.Cut(rest, ":"); ok {
			if line, e := strconv.Atoi(n); e == nil {
				return &ConfigError{name, line, "invalid YAML:" + tail}
			}
		}
	}
	return &ConfigError{File: name, Msg: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

type parser struct{ file string }

func (p parser) errf(n *yaml.Node, format string, a ...any) error {
	return &ConfigError{p.file, n.Line, fmt.Sprintf(format, a...)}
}

func (p parser) descriptors(list *yaml.Node, parent *node, prefix string) error {
	if list.Kind == yaml.ScalarNode && list.Tag == "!!null" {
		return nil // "descriptors:" with nothing after it: none, as upstream
	}
	if list.Kind != yaml.SequenceNode {
		return p.errf(list, "descriptors must be a list")
	}
	for _, d := range list.Content {
		if d.Kind != yaml.MappingNode {
			return p.errf(d, "config error, yaml file contains list of type other than map: %s", d.Value)
		}
		var key, value string
		var rl, children, meta *yaml.Node
		var shadow, detailed, quota, toMetric, share bool
		for i := 0; i+1 < len(d.Content); i += 2 {
			k, v := d.Content[i], d.Content[i+1]
			if !validKeys[k.Value] {
				if k.Tag != "!!str" {
					return p.errf(k, "config error, key is not of type string: %s", k.Value)
				}
				return p.errf(k, "config error, unknown key '%s'", k.Value)
			}
			var err error
			switch k.Value {
			case "key":
				key, err = p.str(v)
			case "value":
				value, err = p.str(v)
			case "rate_limit":
				rl = v
			case "descriptors":
				children = v
			case "shadow_mode":
				shadow, err = p.boolean(v)
			case "detailed_metric":
				detailed, err = p.boolean(v)
			case "quota_mode":
				quota, err = p.boolean(v)
			case "value_to_metric":
				toMetric, err = p.boolean(v)
			case "share_threshold":
				share, err = p.boolean(v)
			case "metadata":
				meta = v
			default:
				return p.errf(k, "key %q does not belong in a descriptor", k.Value)
			}
			if err != nil {
				return err
			}
		}
		if key == "" {
			return p.errf(d, "descriptor has empty key")
		}
		final := key
		if value != "" {
			final += "_" + value
		}
		if _, dup := parent.children[final]; dup {
			return p.errf(d, "duplicate descriptor composite key '%s%s'", prefix, final)
		}
		if share && !strings.Contains(final, "*") {
			return p.errf(d, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", final)
		}
		n := &node{children: map[string]*node{}, valueToMetric: toMetric, shareThreshold: share}
		if rl != nil {
			lim, err := p.rateLimit(rl)
			if err != nil {
				return err
			}
			lim.ShadowMode, lim.DetailedMetric, lim.QuotaMode, lim.FullKey = shadow, detailed, quota, prefix+final
			if lim.Metadata, err = p.metadata(meta); err != nil {
				return err
			}
			n.limit = lim
		}
		if children != nil {
			if err := p.descriptors(children, n, prefix+final+"."); err != nil {
				return err
			}
		}
		parent.children[final] = n
		if strings.Contains(final, "*") {
			parent.wildcards = append(parent.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
		}
	}
	return nil
}

func (p parser) rateLimit(m *yaml.Node) (*RateLimit, error) {
	if m.Kind != yaml.MappingNode {
		return nil, p.errf(m, "rate_limit must be a mapping")
	}
	lim := &RateLimit{}
	unit := ""
	unitNode := m
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		var err error
		switch k.Value {
		case "unit":
			unit, err = p.str(v)
			unitNode = v
		case "requests_per_unit":
			var n uint64
			if v.Kind != yaml.ScalarNode {
				return nil, p.errf(v, "requests_per_unit must be a whole number")
			}
			n, err = strconv.ParseUint(v.Value, 10, 32)
			if err != nil {
				return nil, p.errf(v, "requests_per_unit %q: want a whole number from 0 to 4294967295", v.Value)
			}
			lim.RequestsPerUnit = uint32(n)
		case "unlimited":
			lim.Unlimited, err = p.boolean(v)
		case "name":
			lim.Name, err = p.str(v)
		case "replaces":
			if v.Kind != yaml.SequenceNode {
				return nil, p.errf(v, "replaces must be a list of {name: ...}")
			}
			for _, r := range v.Content {
				name := ""
				if r.Kind == yaml.MappingNode {
					for j := 0; j+1 < len(r.Content); j += 2 {
						if r.Content[j].Value != "name" {
							return nil, p.errf(r.Content[j], "config error, unknown key '%s' in replaces", r.Content[j].Value)
						}
						name = r.Content[j+1].Value
					}
				}
				if name == "" {
					return nil, p.errf(r, "should not have an empty replaces entry")
				}
				lim.Replaces = append(lim.Replaces, name)
			}
		default:
			if validKeys[k.Value] {
				return nil, p.errf(k, "key %q does not belong in rate_limit", k.Value)
			}
			return nil, p.errf(k, "config error, unknown key '%s'", k.Value)
		}
		if err != nil {
			return nil, err
		}
	}
	u, ok := unitNames[strings.ToUpper(unit)]
	switch {
	case lim.Unlimited && ok:
		return nil, p.errf(unitNode, "should not specify rate limit unit when unlimited")
	case !lim.Unlimited && !ok:
		return nil, p.errf(unitNode, "invalid rate limit unit '%s' (want second, minute, hour, day, week, month or year)", unit)
	}
	lim.Unit = u
	for _, r := range lim.Replaces {
		if r == lim.Name {
			return nil, p.errf(m, "replaces should not contain name of same descriptor")
		}
	}
	return lim, nil
}

// metadata converts a descriptor's metadata mapping (nil: none) to the
// Struct that the response's dynamic metadata carries.
func (p parser) metadata(v *yaml.Node) (*structpb.Struct, error) {
	if v == nil {
		return nil, nil
	}
	var m map[string]any
	if err := v.Decode(&m); err != nil {
		return nil, p.errf(v, "metadata must be a mapping: %v", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(m) == 0 {
		return nil, nil
	}
	st, err := structpb.NewStruct(m)
	if err != nil {
		return nil, p.errf(v, "error parsing metadata: %v", err)
	}
	return st, nil
}

func (p parser) str(v *yaml.Node) (string, error) {
	if v.Kind != yaml.ScalarNode {
		return "", p.errf(v, "want a string")
	}
	return v.Value, nil
}

func (p parser) boolean(v *yaml.Node) (bool, error) {
	var b bool
	if v.Kind != yaml.ScalarNode || v.Decode(&b) != nil {
		return false, p.errf(v, "want true or false, not %q", v.Value)
	}
	return b, nil
}

func (p parser) settings(v *yaml.Node, s *Settings) error {
	if v.Kind != yaml.MappingNode {
		return p.errf(v, "fleetlimit must be a mapping")
	}
	known := map[string]bool{}
	t := reflect.TypeFor[Settings]()
	for i := range t.NumField() {
		known[t.Field(i).Tag.Get("yaml")] = true
	}
	for i := 0; i+1 < len(v.Content); i += 2 {
		if !known[v.Content[i].Value] {
			return p.errf(v.Content[i], "unknown fleetlimit setting %q", v.Content[i].Value)
		}
	}
	if err := v.Decode(s); err != nil {
		return &ConfigError{p.file, v.Line, "fleetlimit settings: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	return nil
}

// DefaultSettings are the settings of a configuration that sets none.
func DefaultSettings() Settings {
	return Settings{Design: "shared-counter", WindowKind: window.Fixed, Sync: time.Second, Gateways: 1,
		Timeout: 50 * time.Millisecond, NearRatio: 0.8, Headers: HeadersDraft}
}

// Validate reports the first thing wrong with the settings.
func (s Settings) Validate() error { return s.validate("") }

func (s Settings) validate(file string) error {
	bad := func(msg string) error { return &ConfigError{File: file, Msg: "fleetlimit settings: " + msg} }
	if _, err := design.Lookup(s.Design); err != nil {
		return bad(err.Error())
	}
	if s.WindowKind != window.Fixed && s.WindowKind != window.Sliding {
		return bad(fmt.Sprintf("window_kind %v: want sliding or fixed", s.WindowKind))
	}
	if err := (window.Spec{Size: time.Second, Kind: s.WindowKind, Buckets: s.WindowBuckets}).Validate(); err != nil {
		return bad(strings.Replace(err.Error(), "window buckets", "window_buckets", 1))
	}
	switch {
	case s.Sync < MinSync || s.Sync > MaxSync:
		return bad(fmt.Sprintf("sync %v: want from %v to %v", s.Sync, MinSync, MaxSync))
	case s.Gateways < 1 || s.Gateways > MaxGateways:
		return bad(fmt.Sprintf("gateways %d: want 1 to %d", s.Gateways, MaxGateways))
	case s.Gateway < 0 || s.Gateway >= s.Gateways:
		return bad(fmt.Sprintf("gateway %d of %d: want 0 <= gateway < gateways", s.Gateway, s.Gateways))
	case s.Membership && (s.Gateways != 1 || s.Gateway != 0):
		return bad("membership learns the fleet's size and this process's index from Redis: leave gateways and gateway unset")
	case s.Timeout <= 0 || s.Timeout > MaxTimeout:
		return bad(fmt.Sprintf("timeout %v: want a positive duration of at most %v", s.Timeout, MaxTimeout))
	case s.NearRatio <= 0 || s.NearRatio > 1:
		return bad("near_ratio must be in (0, 1]")
	case s.ClaimTTL < 0 || (s.ClaimTTL > 0 && s.ClaimTTL < 100*time.Millisecond) || s.ClaimTTL > time.Hour:
		return bad(fmt.Sprintf("claim_ttl %v: want from 100ms to 1h", s.ClaimTTL))
	case s.MaxKeys < 0 || s.MaxKeys > MaxKeys:
		return bad(fmt.Sprintf("max_keys %d: want 1 to %d (0: the default, 100,000)", s.MaxKeys, MaxKeys))
	case s.MaxKeyBytes != 0 && (s.MaxKeyBytes < 1<<20 || s.MaxKeyBytes > 1<<34):
		return bad(fmt.Sprintf("max_key_bytes %d: want 1 MiB (1048576) to 16 GiB (0: the default, 64 MiB)", s.MaxKeyBytes))
	case s.FailAfter < 0 || s.FailAfter > 1000:
		return bad(fmt.Sprintf("fail_after %d: want 1 to 1000 (0: the default, 3)", s.FailAfter))
	case s.Headers != HeadersDraft && s.Headers != HeadersLegacy:
		return bad(fmt.Sprintf("headers %q: want draft or legacy", s.Headers))
	case s.StopIncrement && s.Design != "central-counter":
		return bad("stop_increment_over_limit (STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT) applies to design central-counter only: " +
			"fleetlimit's other designs never count a rejected request against the limit that rejected it, and do count it against its other limits")
	}
	if info, _ := design.Lookup(s.Design); info.FixedWindow && s.WindowKind != window.Fixed {
		return bad(fmt.Sprintf("design %s counts in fixed windows only: window_kind must be fixed", s.Design))
	}
	for _, h := range []string{s.LimitHeader, s.RemainingHeader, s.ResetHeader} {
		if h != "" && !httpguts.ValidHeaderFieldName(h) {
			return bad(fmt.Sprintf("header name %q is not a valid HTTP field name", h))
		}
	}
	return nil
}

// Entry is one key/value pair of a request descriptor.
type Entry struct{ Key, Value string }

// Lookup finds the limit for a descriptor's entries in domain, by the rules
// of envoyproxy/ratelimit: at each level the exact key_value, then the
// first wildcard value (in file order) that matches it, '*' standing for
// any run of characters, then the key alone (any value); a limit applies
// only at the descriptor's last entry. nil means no limit.
func (c *Config) Lookup(domain string, entries []Entry) *RateLimit {
	return matchEntries(c, domain, entriesOf(entries)).limit
}

// entrySource gives a descriptor's entries without copying them: the
// request's own (pbEntries), or a []Entry.
type entrySource interface {
	Len() int
	At(i int) (key, value string)
}

type entriesOf []Entry

func (e entriesOf) Len() int                  { return len(e) }
func (e entriesOf) At(i int) (string, string) { return e[i].Key, e[i].Value }

// match is a descriptor's limit and what it is counted and measured by.
type match struct {
	limit *RateLimit
	// metric names the limit in metrics: FullKey, or with detailed_metric
	// or value_to_metric the request's own path.
	metric string
	// shared[i], when not "", is the wildcard value that entry i counts
	// under (share_threshold): every value matching it shares one count.
	shared []string
}

// step is how one entry was matched.
type step struct {
	node     *node
	wildcard string // the wildcard key that matched, or ""
	byValue  bool   // matched key_value (exactly or by wildcard), not the key alone
}

// maxSteps bounds the entries matched without allocating; deeper
// descriptors still match, with an allocation.
const maxSteps = 8

// match finds the limit of entries in domain (see Lookup) and its names.
// It allocates nothing unless a name other than the limit's own is needed.
func matchEntries[E entrySource](c *Config, domain string, es E) match {
	var m match
	n := c.domains[domain]
	if n == nil {
		return m
	}
	var stack [maxSteps]step
	steps := stack[:0]
	var buf [128]byte
	named := false // some step needs a name beyond FullKey
	for i := 0; i < es.Len(); i++ {
		k, v := es.At(i)
		kv := append(append(append(buf[:0], k...), '_'), v...)
		st := step{node: n.children[string(kv)], byValue: true}
		if st.node == nil && len(n.wildcards) > 0 {
			s := string(kv)
			for _, w := range n.wildcards {
				if w.matches(s) {
					st.node, st.wildcard = n.children[w.key], w.key
					break
				}
			}
		}
		if st.node == nil {
			st.node, st.byValue = n.children[k], false
		}
		if st.node == nil {
			break
		}
		named = named || st.node.valueToMetric || (st.wildcard != "" && st.node.shareThreshold)
		steps = append(steps, st)
		if st.node.limit != nil && i == es.Len()-1 {
			m.limit = st.node.limit
		}
		if len(st.node.children) == 0 {
			break
		}
		n = st.node
	}
	if m.limit == nil {
		return match{}
	}
	m.metric = m.limit.FullKey
	if named || m.limit.DetailedMetric {
		nameMatch(&m, domain, es, steps)
	}
	return m
}

// name fills in the metric name and the shared values of a match whose
// path asks for them, as upstream builds them: detailed_metric names every
// entry's key_value (the shared ones under their wildcard), value_to_metric
// the request's value at its level, and a wildcard without either its
// pattern.
func nameMatch[E entrySource](m *match, domain string, es E, steps []step) {
	var toMetric strings.Builder
	toMetric.WriteString(domain)
	for i, st := range steps {
		k, v := es.At(i)
		value := ""
		switch {
		case st.wildcard != "" && st.node.shareThreshold:
			value = strings.TrimPrefix(st.wildcard, k+"_")
			if m.shared == nil {
				m.shared = make([]string, es.Len())
			}
			m.shared[i] = value
		case st.wildcard != "" && !st.node.valueToMetric:
			value = strings.TrimPrefix(st.wildcard, k+"_")
		case st.byValue || st.node.valueToMetric:
			value = v
		}
		toMetric.WriteString("." + k)
		if value != "" {
			toMetric.WriteString("_" + value)
		}
	}
	switch {
	case m.limit.DetailedMetric && m.shared != nil:
		m.metric = sharedName(domain, es, m.shared)
	case m.limit.DetailedMetric:
		var b strings.Builder
		b.WriteString(domain)
		for i := 0; i < es.Len(); i++ {
			k, v := es.At(i)
			b.WriteString("." + k + "_" + v)
		}
		m.metric = b.String()
	case toMetric.String() != m.limit.FullKey:
		m.metric = toMetric.String()
	}
}

// sharedName is domain and every entry's key_value, the shared ones under
// their wildcard value.
func sharedName[E entrySource](domain string, es E, shared []string) string {
	var b strings.Builder
	b.WriteString(domain)
	for i := 0; i < es.Len(); i++ {
		k, v := es.At(i)
		b.WriteString("." + k)
		switch {
		case shared[i] != "":
			b.WriteString("_" + shared[i])
		case v != "":
			b.WriteString("_" + v)
		}
	}
	return b.String()
}
