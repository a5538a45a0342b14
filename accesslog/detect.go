package accesslog

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// DetectLines is how many of a log's first lines Detect reads.
const DetectLines = 50

// Detect names the format of a log from its first lines (at most
// DetectLines of them; blank and comment lines aside): the one format
// every line it can tell is in. It fails, saying which lines disagree, on
// a mix of formats, and when no line is in any format it knows.
func Detect(head []byte) (Format, error) {
	var got Format
	var firstAt, n int
	for i, line := range bytes.Split(head, []byte("\n")) {
		line = bytes.TrimRight(line, "\r")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if n++; n > DetectLines {
			break
		}
		f := formatOf(line)
		switch {
		case f == 0 || f == commentLine:
			continue
		case got == 0:
			got, firstAt = f, i+1
		case f != got:
			return 0, fmt.Errorf("a mix of formats: line %d is %v, line %d is %v (one format a log; give --format to read it as one and count the other lines as unreadable)", firstAt, got, i+1, f)
		}
	}
	if got == 0 {
		return 0, fmt.Errorf("cannot tell the log's format from its first lines: want %s (give --format)", FormatNames)
	}
	return got, nil
}

// commentLine marks a "#" line, which says nothing of the format but for
// CloudFront's header lines.
const commentLine Format = -1

// formatOf is the format line b is in, or 0.
func formatOf(b []byte) Format {
	s := strings.TrimSpace(string(b))
	switch {
	case strings.HasPrefix(s, "#Version:") || strings.HasPrefix(s, "#Fields:") && strings.Contains(s, "cs-uri-stem"):
		return CloudFront
	case strings.HasPrefix(s, "#"):
		return commentLine
	case strings.HasPrefix(s, "{"):
		return jsonFlavour(b)
	case strings.HasPrefix(s, "["):
		if strings.Count(s, `"`) >= 2 {
			return Envoy
		}
		return 0
	}
	if f := strings.Split(s, "\t"); len(f) >= cloudfront.min {
		if _, err := time.Parse(cloudFrontTime, f[0]+" "+f[1]); err == nil {
			return CloudFront
		}
	}
	return textFlavour(s)
}

// jsonFlavour tells Caddy's access log from other JSON lines.
func jsonFlavour(b []byte) Format {
	if !gjson.ValidBytes(b) {
		return 0
	}
	v := gjson.GetManyBytes(b, "logger", "request.remote_ip", "ts")
	if strings.HasPrefix(v[0].String(), "http.log.access") || v[1].Exists() && v[2].Exists() {
		return Caddy
	}
	return JSON
}

// albTypes are the first field of an ALB log line.
var albTypes = map[string]bool{"http": true, "https": true, "h2": true, "grpcs": true, "ws": true, "wss": true}

// textFlavour tells the space-separated formats and CSV apart.
func textFlavour(s string) Format {
	r := Reader{}
	tok := r.tokens([]byte(s))
	switch {
	case len(tok) >= alb.min && albTypes[tok[0]]:
		if _, err := time.Parse(time.RFC3339Nano, tok[1]); err == nil {
			return ALB
		}
	case len(tok) >= common.min:
		if _, err := time.Parse(clfTime, tok[3]); err == nil && strings.Contains(tok[4], " ") {
			if len(tok) >= combined.min {
				return Combined
			}
			return Common
		}
	}
	if f := strings.Split(s, ","); len(f) >= 2 && len(f) <= 4 {
		if strings.EqualFold(strings.TrimSpace(f[0]), "time") {
			return CSV
		}
		if _, ok := parseEpoch(f[0]); ok {
			return CSV
		}
		if _, err := time.Parse(time.RFC3339Nano, f[0]); err == nil {
			return CSV
		}
	}
	return 0
}
