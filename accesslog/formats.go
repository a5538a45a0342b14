package accesslog

import (
	"fmt"
	"net/textproto"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// TimeFields are the time fields a JSON log is looked up by when
// Options.TimeField is empty, in this order: the names nginx's, Envoy's
// and common loggers' JSON formats give it.
var TimeFields = []string{"time", "start_time", "timestamp", "@timestamp", "time_iso8601", "time_local", "ts"}

// guessTimeField is the first of TimeFields line b has, or "".
func guessTimeField(b []byte) string {
	for _, f := range TimeFields {
		if gjson.GetBytes(b, f).Exists() {
			return f
		}
	}
	return ""
}

// ipFields are the fields a JSON log's client address is looked up by
// (key ip): nginx's, Caddy's and Envoy's names for it.
var ipFields = []string{"remote_addr", "client_ip", "remote_ip", "downstream_remote_address", "x_forwarded_for"}

// jsonIP is a JSON line's client address (key ip), without a port.
func jsonIP(b []byte) (string, string) {
	for _, f := range ipFields {
		if v := gjson.GetBytes(b, f); v.Exists() && v.String() != "" && v.String() != "-" {
			s, _, _ := strings.Cut(v.String(), ",")
			return hostOf(strings.TrimSpace(s)), ""
		}
	}
	return "", "no client address (" + strings.Join(ipFields, ", ") + ")"
}

// hostOf is an address without its port: 10.0.0.1:80 is 10.0.0.1,
// [::1]:80 is ::1; an address without a port is as it is.
func hostOf(a string) string {
	if strings.HasPrefix(a, "[") {
		if i := strings.IndexByte(a, ']'); i > 0 {
			return a[1:i]
		}
		return a
	}
	if strings.Count(a, ":") == 1 {
		a, _, _ = strings.Cut(a, ":")
	}
	return a
}

// checkGateway reports a gateway field the format cannot give.
func checkGateway(f Format, g string) error {
	ok := g == ""
	switch f {
	case JSON, Caddy, CSV:
		ok = true
	case Envoy:
		ok = ok || g == "upstream-host"
	case ALB:
		ok = ok || g == "elb"
	case CloudFront:
		ok = ok || g == "x-edge-location"
	}
	if !ok {
		return fmt.Errorf("accesslog: a %v log names no gateway field %q (json, caddy: any field; envoy: upstream-host; alb: elb; cloudfront: x-edge-location; csv: its third column)", f, g)
	}
	return nil
}

// parseCaddy reads a line of Caddy's JSON access log: ts is when the line
// was written, as the request ended; the request came duration seconds
// before.
func (r *Reader) parseCaddy(b []byte, l *Line) string {
	if !gjson.ValidBytes(b) {
		return "not a JSON object"
	}
	v := gjson.GetManyBytes(b, "ts", "duration", "logger")
	if v[2].Exists() && !strings.HasPrefix(v[2].String(), "http.log.access") {
		return skip // another logger's line
	}
	end, ok := parseEpoch(v[0].Raw)
	if v[0].Type != gjson.Number || !ok {
		return "no ts, seconds since 1970"
	}
	dur := int64(0)
	if v[1].Exists() {
		if v[1].Type != gjson.Number || v[1].Float() < 0 {
			return "duration " + v[1].Raw + " is not seconds"
		}
		dur = int64(v[1].Float() * 1e9)
	}
	l.Time = end - dur
	key, why := r.opt.Key.caddy(b)
	if why != "" {
		return why
	}
	l.Key = r.intern(key)
	if r.opt.Client {
		c, why := clientKey.caddy(b)
		if why != "" {
			return why
		}
		l.Client = r.intern(c)
	}
	return r.jsonGateway(b, l)
}

// jsonGateway reads a JSON line's gateway field, if one is named.
func (r *Reader) jsonGateway(b []byte, l *Line) string {
	if r.opt.Gateway != "" {
		g := gjson.GetBytes(b, r.opt.Gateway)
		if !g.Exists() || g.String() == "" {
			return "no gateway field " + strconv.Quote(r.opt.Gateway)
		}
		l.Gateway = r.intern(g.String())
	}
	return ""
}

// caddy is the key of a Caddy access log line, or why there is none.
func (k Key) caddy(b []byte) (string, string) {
	var out strings.Builder
	for i, p := range k.parts {
		if i > 0 {
			out.WriteByte('+')
		}
		var path string
		switch p.kind {
		case "ip":
			path = "request.client_ip"
			if !gjson.GetBytes(b, path).Exists() {
				path = "request.remote_ip"
			}
		case "user":
			path = "user_id"
		case "method":
			path = "request.method"
		case "path":
			path = "request.uri"
		case "header":
			path = "request.headers." + gjson.Escape(textproto.CanonicalMIMEHeaderKey(p.name)) + ".0"
		}
		v := gjson.GetBytes(b, path).String()
		if p.kind == "path" {
			v, _, _ = strings.Cut(v, "?")
			if p.n > 0 {
				v = prefix(v, p.n)
			}
		}
		if v == "" {
			return "", "no " + p.kind + map[bool]string{true: " " + p.name}[p.name != ""]
		}
		out.WriteString(v)
	}
	return out.String(), ""
}

// cloudFrontTime is the layout of a CloudFront line's date and time.
const cloudFrontTime = "2006-01-02 15:04:05"

// parseCloudFront reads a line of CloudFront's standard log: fields apart
// by tabs, "#" lines as comments (a #Fields line names the fields, and
// reorders them). date and time say when the response was served;
// time-taken, in seconds, how long before that the request came.
func (r *Reader) parseCloudFront(b []byte, l *Line) string {
	s := unsafe.String(unsafe.SliceData(b), len(b)) // read-only, for this line only
	if strings.HasPrefix(s, "#") {
		if rest, ok := strings.CutPrefix(s, "#Fields:"); ok {
			return r.cloudFrontFields(rest)
		}
		return skip
	}
	lay := r.cf
	if lay == nil {
		lay = &cloudfront
	}
	tok := append(r.f[:0], strings.Split(s, "\t")...)
	r.f = tok
	if len(tok) < lay.min {
		return "not a cloudfront log line (too few fields)"
	}
	end, err := time.Parse(cloudFrontTime, tok[lay.timeAt]+" "+tok[lay.timeAt+1])
	if err != nil {
		return "date and time " + strconv.Quote(tok[lay.timeAt]+" "+tok[lay.timeAt+1]) + " are not " + cloudFrontTime
	}
	taken, err := strconv.ParseFloat(tok[lay.requestAt], 64)
	if err != nil || taken < 0 {
		return "time-taken " + strconv.Quote(tok[lay.requestAt]) + " is not seconds"
	}
	l.Time = end.UnixNano() - int64(taken*1e9)
	return r.textRest(tok, lay, l)
}

// cloudFrontFields takes a #Fields line: the fields' order from here on.
// (The layout's requestAt holds time-taken's place.)
func (r *Reader) cloudFrontFields(names string) string {
	at := map[string]int{}
	for i, n := range strings.Fields(names) {
		at[n] = i
	}
	lay := cloudfront
	lay.headers = map[string]int{}
	need := map[string]*int{"date": &lay.timeAt, "c-ip": &lay.ipAt, "cs-method": &lay.methodAt, "cs-uri-stem": &lay.pathAt,
		"x-edge-location": &lay.gatewayAt, "time-taken": &lay.requestAt}
	for n, p := range need {
		i, ok := at[n]
		if !ok {
			return "#Fields has no " + n
		}
		*p = i
		lay.min = max(lay.min, i+1)
	}
	if at["time"] != lay.timeAt+1 {
		return "#Fields: time does not follow date"
	}
	for h, n := range map[string]string{"host": "cs(Host)", "referer": "cs(Referer)", "user-agent": "cs(User-Agent)"} {
		if i, ok := at[n]; ok {
			lay.headers[h] = i
			lay.min = max(lay.min, i+1)
		}
	}
	r.cf = &lay
	return skip
}
