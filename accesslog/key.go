package accesslog

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// Key says what a line's rate-limited key is: one or more parts joined by
// "+", each one of
//
//	ip             the client's address (Envoy: X-Forwarded-For's first)
//	user           the Common Log Format's authenticated user
//	method         the request's method
//	path, path:N   the request's path without its query, or its first N segments
//	header:NAME    a header the format logs (combined: Referer, User-Agent;
//	               envoy: X-Forwarded-For, User-Agent, X-Request-Id, Authority)
//	field:NAME     a JSON field, by gjson path (json only)
//	prefix:NAME:N  the first N path segments of a JSON field (json only)
//	key            the CSV's key column (csv only)
//
// A line without one of its parts is a bad line. The zero Key is the
// format's default.
type Key struct {
	parts []keyPart
	spec  string
}

type keyPart struct {
	kind string // ip, user, method, path, header, field, prefix, key
	name string // header or field name (headers lower case)
	n    int    // path segments, 0: all
}

// ParseKey reads a key spec, e.g. "ip", "header:User-Agent" or
// "ip+path:1".
func ParseKey(spec string) (Key, error) {
	k := Key{spec: spec}
	for _, s := range strings.Split(spec, "+") {
		kind, arg, _ := strings.Cut(s, ":")
		p := keyPart{kind: kind}
		switch kind {
		case "ip", "user", "method", "key":
			if arg != "" {
				return Key{}, fmt.Errorf("key %q: %s takes nothing after it", spec, kind)
			}
		case "path":
			if arg != "" {
				n, err := strconv.Atoi(arg)
				if err != nil || n < 1 {
					return Key{}, fmt.Errorf("key %q: path:N wants N of 1 or more segments", spec)
				}
				p.n = n
			}
		case "header", "field":
			if arg == "" {
				return Key{}, fmt.Errorf("key %q: %s:NAME wants a name", spec, kind)
			}
			p.name = arg
			if kind == "header" {
				p.name = strings.ToLower(arg)
			}
		case "prefix":
			name, ns, ok := strings.Cut(arg, ":")
			n, err := strconv.Atoi(ns)
			if !ok || name == "" || err != nil || n < 1 {
				return Key{}, fmt.Errorf("key %q: prefix:FIELD:N wants a JSON field and N of 1 or more segments", spec)
			}
			p.name, p.n = name, n
		default:
			return Key{}, fmt.Errorf("key %q: %q is not ip, user, method, path[:N], header:NAME, field:NAME, prefix:FIELD:N or key", spec, s)
		}
		k.parts = append(k.parts, p)
	}
	return k, nil
}

// String is the key's spec.
func (k Key) String() string { return k.spec }

// check reports a part the format cannot give.
func (k Key) check(f Format) error {
	for _, p := range k.parts {
		ok := true
		switch p.kind {
		case "key":
			ok = f == CSV
		case "field", "prefix":
			ok = f == JSON
		case "ip":
			ok = f != CSV
		case "method", "path":
			ok = f != CSV && f != JSON
		case "user":
			ok = f == Common || f == Combined || f == Caddy
		case "header":
			_, ok = layoutOf(f).headers[p.name]
			ok = ok && f != CSV && f != JSON || f == Caddy
		}
		if !ok {
			return fmt.Errorf("key %q: a %v log has no %s%s", k.spec, f, p.kind, map[bool]string{true: " " + p.name}[p.name != ""])
		}
	}
	return nil
}

// text is the key of a text line's tokens, or why there is none; it may
// share the line's memory (the caller copies it).
func (k Key) text(tok []string, lay *textFields, f Format) (string, string) {
	if len(k.parts) == 1 {
		return k.part(k.parts[0], tok, lay, f)
	}
	var b strings.Builder
	for i, p := range k.parts {
		if i > 0 {
			b.WriteByte('+')
		}
		v, why := k.part(p, tok, lay, f)
		if why != "" {
			return "", why
		}
		b.WriteString(v)
	}
	return b.String(), ""
}

// part is one part of a text line's key, or why there is none.
func (k Key) part(p keyPart, tok []string, lay *textFields, f Format) (string, string) {
	var v string
	switch p.kind {
	case "ip":
		if lay.ipAt < 0 {
			v, _, _ = strings.Cut(tok[lay.headers["x-forwarded-for"]], ",")
			v = strings.TrimSpace(v)
		} else if v = tok[lay.ipAt]; lay.ipPort {
			v = hostOf(v)
		}
	case "user":
		v = tok[lay.userAt]
	case "method", "path":
		m, path, ok := "", "", true
		if lay.pathAt > 0 {
			m, path = tok[lay.methodAt], tok[lay.pathAt]
		} else if m, path, ok = requestPath(tok[lay.requestAt]); !ok {
			return "", "request " + strconv.Quote(tok[lay.requestAt]) + " is not METHOD PATH PROTOCOL"
		}
		if v = m; p.kind == "path" {
			v = path
			if p.n > 0 {
				v = prefix(path, p.n)
			}
		}
	case "header":
		v = tok[lay.headers[p.name]]
	}
	if v == "" || v == "-" {
		return "", "no " + p.kind + map[bool]string{true: " " + p.name}[p.name != ""]
	}
	return v, ""
}

// json is the key of a JSON line, or why there is none.
func (k Key) json(b []byte) (string, string) {
	var out strings.Builder
	for i, p := range k.parts {
		if i > 0 {
			out.WriteByte('+')
		}
		if p.kind == "ip" {
			v, why := jsonIP(b)
			if why != "" {
				return "", why
			}
			out.WriteString(v)
			continue
		}
		v := gjson.GetBytes(b, p.name)
		if !v.Exists() || v.String() == "" {
			return "", "no field " + strconv.Quote(p.name)
		}
		s := v.String()
		if p.kind == "prefix" {
			if q := strings.IndexByte(s, '?'); q >= 0 {
				s = s[:q]
			}
			s = prefix(s, p.n)
		}
		out.WriteString(s)
	}
	return out.String(), ""
}
