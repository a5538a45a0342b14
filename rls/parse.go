package rls

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"google.golang.org/protobuf/types/known/structpb"
	"gopkg.in/yaml.v3"
)

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
	if err := c.Settings.validate(b.settingsFile); err != nil {
		return c, err
	}
	return c, c.Enforceable(c.Settings)
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
		if err := p.descriptor(d, parent, prefix); err != nil {
			return err
		}
	}
	return nil
}

// descFields are the keys of one descriptor as the file gives them.
type descFields struct {
	key, value                               string
	rl, rls, children, meta                  *yaml.Node
	shadow, detailed, quota, toMetric, share bool
}

// descriptorFields reads a descriptor's keys, refusing unknown ones.
func (p parser) descriptorFields(d *yaml.Node) (descFields, error) {
	var f descFields
	for i := 0; i+1 < len(d.Content); i += 2 {
		k, v := d.Content[i], d.Content[i+1]
		if !validKeys[k.Value] {
			if k.Tag != "!!str" {
				return f, p.errf(k, "config error, key is not of type string: %s", k.Value)
			}
			return f, p.errf(k, "config error, unknown key '%s'", k.Value)
		}
		var err error
		switch k.Value {
		case "key":
			f.key, err = p.str(v)
		case "value":
			f.value, err = p.str(v)
		case "rate_limit":
			f.rl = v
		case "rate_limits":
			f.rls = v
		case "descriptors":
			f.children = v
		case "shadow_mode":
			f.shadow, err = p.boolean(v)
		case "detailed_metric":
			f.detailed, err = p.boolean(v)
		case "quota_mode":
			f.quota, err = p.boolean(v)
		case "value_to_metric":
			f.toMetric, err = p.boolean(v)
		case "share_threshold":
			f.share, err = p.boolean(v)
		case "metadata":
			f.meta = v
		default:
			return f, p.errf(k, "key %q does not belong in a descriptor", k.Value)
		}
		if err != nil {
			return f, err
		}
	}
	return f, nil
}

// descriptor reads one descriptor of a list into parent, its children too.
func (p parser) descriptor(d *yaml.Node, parent *node, prefix string) error {
	if d.Kind != yaml.MappingNode {
		return p.errf(d, "config error, yaml file contains list of type other than map: %s", d.Value)
	}
	f, err := p.descriptorFields(d)
	if err != nil {
		return err
	}
	if f.key == "" {
		return p.errf(d, "descriptor has empty key")
	}
	final := f.key
	if f.value != "" {
		final += "_" + f.value
	}
	if _, dup := parent.children[final]; dup {
		return p.errf(d, "duplicate descriptor composite key '%s%s'", prefix, final)
	}
	if f.share && !strings.Contains(final, "*") {
		return p.errf(d, "share_threshold can only be used with wildcard values (containing '*'), but found key '%s'", final)
	}
	n := &node{children: map[string]*node{}, valueToMetric: f.toMetric, shareThreshold: f.share}
	if n.limit, err = p.descriptorLimit(f, prefix+final); err != nil {
		return err
	}
	if f.children != nil {
		if err := p.descriptors(f.children, n, prefix+final+"."); err != nil {
			return err
		}
	}
	parent.children[final] = n
	if strings.Contains(final, "*") {
		parent.wildcards = append(parent.wildcards, wildcard{key: final, parts: strings.Split(final, "*")})
	}
	return nil
}

// descriptorLimit is the limit of a descriptor whose full key is full: nil
// when it has none.
func (p parser) descriptorLimit(f descFields, full string) (*RateLimit, error) {
	if f.rl != nil && f.rls != nil {
		return nil, p.errf(f.rls, "descriptor '%s' has both rate_limit and rate_limits: give one limit in rate_limit, or several in rate_limits", full)
	}
	if f.rl == nil && f.rls == nil {
		return nil, nil
	}
	var lim *RateLimit
	var err error
	if f.rl != nil {
		lim, err = p.rateLimit(f.rl)
	} else {
		lim, err = p.rateLimits(f.rls)
	}
	if err != nil {
		return nil, err
	}
	lim.ShadowMode, lim.DetailedMetric, lim.QuotaMode, lim.FullKey = f.shadow, f.detailed, f.quota, full
	if lim.Metadata, err = p.metadata(f.meta); err != nil {
		return nil, err
	}
	return lim, nil
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
		case "unit_multiplier": // a fleetlimit extension: upstream refuses the key
			var n uint64
			n, err = strconv.ParseUint(v.Value, 10, 32)
			if v.Kind != yaml.ScalarNode || err != nil || n < 1 {
				return nil, p.errf(v, "unit_multiplier %q: want a whole number from 1 to 4294967295 (a window of that many units)", v.Value)
			}
			lim.UnitMultiplier = uint32(n)
		case "unlimited":
			lim.Unlimited, err = p.boolean(v)
		case "name":
			lim.Name, err = p.str(v)
		case "replaces":
			lim.Replaces, err = p.replaces(v)
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
	case lim.Unlimited && lim.UnitMultiplier > 0:
		return nil, p.errf(m, "should not specify unit_multiplier when unlimited")
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

// replaces reads a rate limit's replaces list of {name: ...}.
func (p parser) replaces(v *yaml.Node) ([]string, error) {
	if v.Kind != yaml.SequenceNode {
		return nil, p.errf(v, "replaces must be a list of {name: ...}")
	}
	var names []string
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
		names = append(names, name)
	}
	return names, nil
}

// MaxLimitsPerDescriptor is the most limits a rate_limits list holds.
const MaxLimitsPerDescriptor = 8

// rateLimits reads a descriptor's rate_limits list, a fleetlimit extension:
// several limits on one descriptor, each a rate_limit mapping with a unit,
// requests_per_unit, and optionally unit_multiplier and name; the first is
// the descriptor's limit, the rest its Also.
func (p parser) rateLimits(list *yaml.Node) (*RateLimit, error) {
	if list.Kind != yaml.SequenceNode || len(list.Content) == 0 {
		return nil, p.errf(list, "rate_limits must be a list of one or more limits, each like rate_limit: {unit: second, requests_per_unit: 10}")
	}
	if len(list.Content) > MaxLimitsPerDescriptor {
		return nil, p.errf(list, "rate_limits holds %d limits: at most %d", len(list.Content), MaxLimitsPerDescriptor)
	}
	var first *RateLimit
	names := map[string]bool{}
	for i, m := range list.Content {
		lim, err := p.rateLimit(m)
		if err != nil {
			return nil, err
		}
		switch {
		case lim.Unlimited:
			return nil, p.errf(m, "rate_limits entry %d is unlimited: a descriptor without a limit needs no list", i+1)
		case len(lim.Replaces) > 0:
			return nil, p.errf(m, "rate_limits entry %d replaces other limits: replaces belongs in a single rate_limit", i+1)
		case lim.Name != "" && names[lim.Name]:
			return nil, p.errf(m, "rate_limits entry %d: the name %q is taken by another entry", i+1, lim.Name)
		}
		names[lim.Name] = lim.Name != ""
		if first == nil {
			first = lim
			continue
		}
		for _, o := range append([]*RateLimit{first}, first.Also...) {
			if o.Window() == lim.Window() {
				return nil, p.errf(m, "rate_limits entry %d: two limits of one window (%v) on one descriptor: keep the lower", i+1, lim.Window())
			}
		}
		first.Also = append(first.Also, lim)
	}
	return first, nil
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
