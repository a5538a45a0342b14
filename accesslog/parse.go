package accesslog

import (
	"encoding/csv"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
)

// The time layouts of the text formats.
const (
	clfTime   = "02/Jan/2006:15:04:05 -0700"
	envoyTime = time.RFC3339Nano
)

// text is a line of a text format split into tokens: a [bracketed] time, a
// "quoted" string (its quotes off, \" kept as is), or a run of non-spaces.
func (r *Reader) tokens(b []byte) []string {
	s := unsafe.String(unsafe.SliceData(b), len(b)) // read-only, for this line only
	f := r.f[:0]
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == ' ' || c == '\t':
			i++
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil
			}
			f = append(f, s[i+1:i+j])
			i += j + 1
		case c == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				if s[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(s) {
				return nil
			}
			f = append(f, s[i+1:j])
			i = j + 1
		default:
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' {
				j++
			}
			f = append(f, s[i:j])
			i = j
		}
	}
	r.f = f
	return f
}

// textFields are the named fields of a text format's tokens.
type textFields struct {
	time, ip, user, request string
	headers                 map[string]int // header name, lower case -> token
	min                     int            // tokens a line needs
	timeLayout              string
	timeAt                  int
	requestAt               int // the request line "METHOD PATH PROTOCOL"
	methodAt, pathAt        int // or, with pathAt > 0, its method and path apart
	ipAt                    int // the client's address; -1: X-Forwarded-For's first
	ipPort                  bool
	gatewayAt               int // -1: none
	userAt                  int // -1: none
}

var (
	common   = textFields{min: 7, timeLayout: clfTime, timeAt: 3, requestAt: 4, gatewayAt: -1, userAt: 2}
	combined = textFields{min: 9, timeLayout: clfTime, timeAt: 3, requestAt: 4, gatewayAt: -1, userAt: 2,
		headers: map[string]int{"referer": 7, "user-agent": 8}}
	envoy = textFields{min: 13, timeLayout: envoyTime, timeAt: 0, requestAt: 1, gatewayAt: 12, ipAt: -1, userAt: -1,
		headers: map[string]int{"x-forwarded-for": 8, "user-agent": 9, "x-request-id": 10, "authority": 11, ":authority": 11, "host": 11}}
	// alb: type time elb client:port target:port three times, two status
	// codes, two sizes, "request" "user_agent" ssl_cipher ssl_protocol
	// target_group_arn "trace_id" "domain_name" "chosen_cert_arn"
	// matched_rule_priority request_creation_time ...; the line's time is
	// when the response was sent, request_creation_time when the request
	// came: the request's time here
	alb = textFields{min: 22, timeLayout: time.RFC3339Nano, timeAt: 21, requestAt: 12, gatewayAt: 2, ipAt: 3, ipPort: true, userAt: -1,
		headers: map[string]int{"user-agent": 13}}
	// cloudfront: the standard log's fields in their documented order
	// (a #Fields line reorders them): date time x-edge-location sc-bytes
	// c-ip cs-method cs(Host) cs-uri-stem sc-status cs(Referer)
	// cs(User-Agent) cs-uri-query cs(Cookie) x-edge-result-type
	// x-edge-request-id x-host-header cs-protocol cs-bytes time-taken ...
	cloudfront = textFields{min: 19, timeAt: 0, requestAt: 18, methodAt: 5, pathAt: 7, gatewayAt: 2, ipAt: 4, userAt: -1,
		headers: map[string]int{"host": 6, "referer": 9, "user-agent": 10}}
)

func layoutOf(f Format) *textFields {
	switch f {
	case Common:
		return &common
	case Combined:
		return &combined
	case ALB:
		return &alb
	case CloudFront:
		return &cloudfront
	}
	return &envoy
}

// parseText reads a line of the Common, Combined, Envoy or ALB format.
func (r *Reader) parseText(b []byte, l *Line) string {
	lay := layoutOf(r.opt.Format)
	tok := r.tokens(b)
	if len(tok) < lay.min {
		return "not a " + r.opt.Format.String() + " log line (too few fields)"
	}
	t, ok := r.parseTime(tok[lay.timeAt], lay.timeLayout)
	if !ok {
		return "time " + strconv.Quote(tok[lay.timeAt]) + " is not " + lay.timeLayout
	}
	l.Time = t
	return r.textRest(tok, lay, l)
}

// textRest reads the key, the client and the gateway of a text line whose
// time is read.
func (r *Reader) textRest(tok []string, lay *textFields, l *Line) string {
	key, why := r.opt.Key.text(tok, lay, r.opt.Format)
	if why != "" {
		return why
	}
	l.Key = r.intern(key)
	if r.opt.Client {
		c, why := clientKey.text(tok, lay, r.opt.Format)
		if why != "" {
			return why
		}
		l.Client = r.intern(c)
	}
	if r.opt.Gateway != "" {
		if l.Gateway = tok[lay.gatewayAt]; l.Gateway == "-" || l.Gateway == "" {
			return "no " + r.opt.Gateway
		}
		l.Gateway = r.intern(l.Gateway)
	}
	return ""
}

// clientKey is the client's address as a key.
var clientKey, _ = ParseKey("ip")

// requestPath is the path of a request line "METHOD PATH PROTOCOL", its
// query off.
func requestPath(req string) (method, path string, ok bool) {
	method, rest, ok := strings.Cut(req, " ")
	if !ok {
		return "", "", false
	}
	path, _, _ = strings.Cut(rest, " ")
	path = originForm(path)
	if q := strings.IndexByte(path, '?'); q >= 0 {
		path = path[:q]
	}
	return method, path, path != ""
}

// originForm is a request target's path: an absolute URL's
// (http://host:80/a/b, as ALB logs it) without its scheme and host.
func originForm(path string) string {
	for _, scheme := range [...]string{"http://", "https://", "ws://", "wss://", "grpc://", "grpcs://"} {
		if rest, ok := strings.CutPrefix(path, scheme); ok {
			if i := strings.IndexByte(rest, '/'); i >= 0 {
				return rest[i:]
			}
			return "/"
		}
	}
	return path
}

// prefix is the first n segments of a path: /v1/users/7 at 2 is /v1/users.
func prefix(path string, n int) string {
	i := 0
	for seg := 0; seg < n; seg++ {
		j := strings.IndexByte(path[min(i+1, len(path)):], '/')
		if j < 0 {
			return path
		}
		i += j + 1
	}
	if i == 0 {
		return path
	}
	return path[:i]
}

// parseCSV reads a CSV line: time,key[,gateway][,cost].
func (r *Reader) parseCSV(b []byte, l *Line) string {
	s := unsafe.String(unsafe.SliceData(b), len(b))
	var f []string
	if strings.IndexByte(s, '"') >= 0 {
		rec, err := csv.NewReader(strings.NewReader(s)).Read()
		if err != nil {
			return "not a CSV line: " + err.Error()
		}
		f = rec
	} else {
		f = r.f[:0]
		for {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				f = append(f, s)
				break
			}
			f, s = append(f, s[:i]), s[i+1:]
		}
		r.f = f
	}
	if r.n == 1 && len(f) > 0 && strings.EqualFold(strings.TrimSpace(f[0]), "time") {
		return skip
	}
	if len(f) < 2 || len(f) > 4 {
		return "want time,key[,gateway][,cost]: " + strconv.Itoa(len(f)) + " fields"
	}
	t, ok := parseEpoch(f[0])
	if !ok {
		if t, ok = r.parseTime(f[0], time.RFC3339Nano); !ok {
			return "time " + strconv.Quote(f[0]) + " is neither seconds since 1970 nor RFC 3339"
		}
	}
	l.Time = t
	if f[1] == "" {
		return "empty key"
	}
	l.Key = r.intern(f[1])
	if len(f) >= 3 && r.opt.Gateway != "" {
		if f[2] == "" {
			return "empty gateway"
		}
		l.Gateway = r.intern(f[2])
	}
	if len(f) == 4 {
		c, err := strconv.Atoi(f[3])
		if err != nil || c < 1 {
			return "cost " + strconv.Quote(f[3]) + " is not a whole number of at least 1"
		}
		l.Cost = c
	}
	return ""
}

// parseJSON reads a JSON line.
func (r *Reader) parseJSON(b []byte, l *Line) string {
	if !gjson.ValidBytes(b) {
		return "not a JSON object"
	}
	if r.opt.TimeField == "" {
		r.opt.TimeField = guessTimeField(b)
	}
	tv := gjson.GetBytes(b, r.opt.TimeField)
	switch tv.Type {
	case gjson.Number:
		t, ok := parseEpoch(tv.Raw)
		if !ok {
			return "time " + tv.Raw + " is not seconds since 1970"
		}
		l.Time = t
	case gjson.String:
		t, ok := r.parseTime(tv.Str, time.RFC3339Nano)
		if !ok {
			if t, ok = r.parseTime(tv.Str, clfTime); !ok {
				return "time " + strconv.Quote(tv.Str) + " is neither RFC 3339 nor the Common Log Format's"
			}
		}
		l.Time = t
	default:
		if r.opt.TimeField == "" {
			return "no time field (" + strings.Join(TimeFields, ", ") + "; name one with TimeField)"
		}
		return "no time field " + strconv.Quote(r.opt.TimeField)
	}
	key, why := r.opt.Key.json(b)
	if why != "" {
		return why
	}
	l.Key = r.intern(key)
	return r.jsonGateway(b, l)
}
