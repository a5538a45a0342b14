package fleetlimitcaddy

import (
	"strconv"

	"github.com/caddyserver/caddy/v2"
	"github.com/caddyserver/caddy/v2/caddyconfig/caddyfile"
	"github.com/caddyserver/caddy/v2/caddyconfig/httpcaddyfile"
	"github.com/caddyserver/caddy/v2/modules/caddyhttp"
)

func init() {
	httpcaddyfile.RegisterHandlerDirective("fleetlimit", parseCaddyfile)
	// after authentication, before anything that answers
	httpcaddyfile.RegisterDirectiveOrder("fleetlimit", httpcaddyfile.After, "basic_auth")
}

// parseCaddyfile sets up the handler from Caddyfile tokens.
func parseCaddyfile(h httpcaddyfile.Helper) (caddyhttp.MiddlewareHandler, error) {
	var m Handler
	err := m.UnmarshalCaddyfile(h.Dispenser)
	return &m, err
}

// UnmarshalCaddyfile reads the handler's block:
//
//	fleetlimit {
//		zone <name> {
//			key     <key, with placeholders>
//			limit   <requests per window>
//			window  <duration>
//			design  <design>
//			sync    <duration>
//			match   { <matchers> }
//		}
//		redis <address...> {
//			mode     single|cluster|sentinel
//			master   <name>
//			username <name>
//			password <password>
//			db       <n>
//			prefix   <prefix>
//			tls {
//				ca   <CA bundle, PEM; default the system's>
//				cert <client certificate, PEM>
//				key  <its key, PEM>
//				skip_hostname_verification
//			}
//		}
//		gateways   <K>
//		gateway    <index>
//		membership
//		fleet      <name>
//		timeout    <duration>
//		headers    draft|legacy|none
//	}
func (h *Handler) UnmarshalCaddyfile(d *caddyfile.Dispenser) error {
	d.Next() // the directive's name
	if d.NextArg() {
		return d.ArgErr()
	}
	for d.NextBlock(0) {
		var err error
		switch d.Val() {
		case "zone":
			err = h.zone(d)
		case "redis":
			err = h.redis(d)
		case "gateways":
			err = intArg(d, &h.Gateways)
		case "gateway":
			err = intArg(d, &h.Gateway)
		case "membership":
			h.Membership = true
			if d.NextArg() {
				err = d.ArgErr()
			}
		case "fleet":
			err = stringArg(d, &h.Fleet)
		case "timeout":
			err = durationArg(d, &h.Timeout)
		case "headers":
			err = stringArg(d, &h.Headers)
		default:
			err = d.Errf("fleetlimit: unknown setting %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// zone reads a zone block.
func (h *Handler) zone(d *caddyfile.Dispenser) error {
	var name string
	if err := stringArg(d, &name); err != nil {
		return err
	}
	if _, dup := h.Zones[name]; dup {
		return d.Errf("fleetlimit: zone %s named twice", name)
	}
	z := &Zone{}
	for nest := d.Nesting(); d.NextBlock(nest); {
		var err error
		switch d.Val() {
		case "key":
			err = stringArg(d, &z.Key)
		case "limit":
			err = intArg(d, &z.Limit)
		case "window":
			err = durationArg(d, &z.Window)
		case "design":
			err = stringArg(d, &z.Design)
		case "sync":
			err = durationArg(d, &z.Sync)
		case "match":
			var set caddy.ModuleMap
			set, err = caddyhttp.ParseCaddyfileNestedMatcherSet(d)
			z.MatcherSetsRaw = append(z.MatcherSetsRaw, set)
		default:
			err = d.Errf("fleetlimit: zone %s: unknown setting %q", name, d.Val())
		}
		if err != nil {
			return err
		}
	}
	if h.Zones == nil {
		h.Zones = map[string]*Zone{}
	}
	h.Zones[name] = z
	return nil
}

// redis reads the redis line and its block.
func (h *Handler) redis(d *caddyfile.Dispenser) error {
	r := &Redis{Addresses: d.RemainingArgs()}
	for nest := d.Nesting(); d.NextBlock(nest); {
		var err error
		switch d.Val() {
		case "mode":
			err = stringArg(d, &r.Mode)
		case "master":
			err = stringArg(d, &r.Master)
		case "username":
			err = stringArg(d, &r.Username)
		case "password":
			err = stringArg(d, &r.Password)
		case "db":
			err = intArg(d, &r.DB)
		case "prefix":
			err = stringArg(d, &r.Prefix)
		case "address":
			r.Addresses = append(r.Addresses, d.RemainingArgs()...)
		case "tls":
			r.TLS, err = redisTLS(d)
		default:
			err = d.Errf("fleetlimit: redis: unknown setting %q", d.Val())
		}
		if err != nil {
			return err
		}
	}
	if len(r.Addresses) == 0 {
		return d.Errf("fleetlimit: redis: no address")
	}
	h.Redis = r
	return nil
}

// redisTLS reads the redis block's tls line and its block: "tls" alone is
// TLS with the system's CAs.
func redisTLS(d *caddyfile.Dispenser) (*RedisTLS, error) {
	if d.NextArg() {
		return nil, d.Errf("fleetlimit: redis: tls: settings go in its block, not %q", d.Val())
	}
	t := &RedisTLS{}
	for nest := d.Nesting(); d.NextBlock(nest); {
		var err error
		switch d.Val() {
		case "ca":
			err = stringArg(d, &t.CA)
		case "cert":
			err = stringArg(d, &t.Cert)
		case "key":
			err = stringArg(d, &t.Key)
		case "skip_hostname_verification":
			if d.NextArg() {
				err = d.Errf("fleetlimit: redis: tls: skip_hostname_verification takes no value, not %q", d.Val())
			}
			t.SkipHostnameVerification = true
		default:
			err = d.Errf("fleetlimit: redis: tls: unknown setting %q", d.Val())
		}
		if err != nil {
			return nil, err
		}
	}
	return t, nil
}

// stringArg reads a setting's one argument.
func stringArg(d *caddyfile.Dispenser, to *string) error {
	name := d.Val()
	if !d.NextArg() {
		return d.Errf("fleetlimit: %s: missing its value", name)
	}
	*to = d.Val()
	if d.NextArg() {
		return d.Errf("fleetlimit: %s: one value, not %q too", name, d.Val())
	}
	return nil
}

// intArg reads a setting's one whole-number argument.
func intArg(d *caddyfile.Dispenser, to *int) error {
	name := d.Val()
	var s string
	if err := stringArg(d, &s); err != nil {
		return err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return d.Errf("fleetlimit: %s %q: want a whole number", name, s)
	}
	*to = n
	return nil
}

// durationArg reads a setting's one duration argument.
func durationArg(d *caddyfile.Dispenser, to *caddy.Duration) error {
	name := d.Val()
	var s string
	if err := stringArg(d, &s); err != nil {
		return err
	}
	v, err := caddy.ParseDuration(s)
	if err != nil {
		return d.Errf("fleetlimit: %s %q: want a duration such as 1m or 500ms", name, s)
	}
	*to = caddy.Duration(v)
	return nil
}

// Interface guard.
var _ caddyfile.Unmarshaler = (*Handler)(nil)
