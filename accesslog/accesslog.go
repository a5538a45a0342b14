// Package accesslog reads access logs as real servers write them, one
// request a line, for a replay through the designs: the Common and Combined
// Log Formats (Apache, nginx's default), JSON lines with named fields
// (nginx's and Envoy's JSON logs), Envoy's default text format, and a plain
// CSV of time, key, and optionally gateway and cost. A gzipped or
// zstd-compressed log, or standard input, is read as it is (Open).
//
// It streams: memory does not grow with the log. A line it cannot read is
// counted and the first few kept with their line numbers, never fatal
// unless the caller says so; it never guesses a field it cannot find.
package accesslog

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Format is a log's line format.
type Format int

// The formats.
const (
	CSV        Format = iota + 1 // time,key[,gateway][,cost], an optional header line
	Common                       // host ident user [time] "request" status bytes
	Combined                     // Common, then "referer" "user-agent"
	JSON                         // one JSON object a line; fields by name (Options.TimeField)
	Envoy                        // Envoy's default access log format
	ALB                          // AWS Application Load Balancer's access log
	CloudFront                   // AWS CloudFront's standard access log (tab-separated, #Fields)
	Caddy                        // Caddy's JSON access log (logger http.log.access)
)

var formatNames = map[string]Format{"csv": CSV, "common": Common, "combined": Combined, "json": JSON, "envoy": Envoy,
	"alb": ALB, "cloudfront": CloudFront, "caddy": Caddy}

// FormatNames lists the formats' names.
const FormatNames = "csv, common, combined, json, envoy, alb, cloudfront or caddy"

// ParseFormat reads a format's name (FormatNames).
func ParseFormat(s string) (Format, error) {
	if f, ok := formatNames[strings.ToLower(s)]; ok {
		return f, nil
	}
	return 0, fmt.Errorf("log format %q: want %s", s, FormatNames)
}

// String is the format's name.
func (f Format) String() string {
	for n, v := range formatNames {
		if v == f {
			return n
		}
	}
	return "unknown"
}

// Options say how to read a log.
type Options struct {
	Format Format
	// Key names the rate-limited key of a line (ParseKey): default the
	// client's address ("ip") for the text formats, the "key" column for
	// CSV.
	Key Key
	// TimeField is a JSON log's time field: RFC 3339, the Common Log
	// Format's time, or seconds since 1970 as a number. Empty: the first
	// of TimeFields the log's first line has.
	TimeField string
	// Gateway, when set, names the field that says which gateway served
	// the line (a JSON field, or "upstream-host" in Envoy's format; CSV's
	// third column). Empty: the replay routes requests itself.
	Gateway string
	// MaxBad, when > 0, makes the MaxBad-th unreadable line an error.
	MaxBad int
	// Client fills Line.Client with the client's address (text formats).
	Client bool
}

// Line is one request of the log.
type Line struct {
	Number  int    // 1 for the file's first line
	Time    int64  // Unix nanoseconds
	Key     string // the rate-limited key
	Gateway string // the gateway field's value, "" without one
	Cost    int    // at least 1
	Client  string // the client's address, with Options.Client
}

// BadLine is a line the reader could not read.
type BadLine struct {
	Number int
	Reason string
}

// ShownBad is how many bad lines a Reader keeps.
const ShownBad = 5

// Reader reads a log line by line. It is not safe for concurrent use.
type Reader struct {
	opt   Options
	sc    *bufio.Scanner
	n     int // line number
	bad   int
	shown []BadLine
	f     []string // a text line's fields, reused line to line
	// the last text time parsed, and its value
	lastTS string
	lastT  int64
	file   *countingReader   // the bytes read of the file, for progress
	names  map[string]string // keys and gateways seen lately, to hand out one copy of each
	cf     *textFields       // a CloudFront log's fields, as its #Fields line orders them
	// detected: the format was detected (Detect)
	detected bool
}

// maxNames bounds the names a Reader keeps to hand out again.
const maxNames = 1 << 16

// intern returns a copy of s that outlives the line: the one it handed out
// before for the same text, so that a log's repeated keys cost no
// allocation each.
func (r *Reader) intern(s string) string {
	if c, ok := r.names[s]; ok {
		return c
	}
	if r.names == nil || len(r.names) >= maxNames {
		r.names = make(map[string]string, 1024)
	}
	c := strings.Clone(s)
	r.names[c] = c
	return c
}

// MaxLine is the longest line read: a longer one ends the read with an
// error, since nothing after it can be trusted to start a line.
const MaxLine = 1 << 20

// NewReader reads the log from r with opt.
// With no Options.Format it detects the format from the log's first
// lines (Detect); Reader.Format says which it chose.
func NewReader(r io.Reader, opt Options) (*Reader, error) {
	detected := false
	if opt.Format == 0 {
		br := bufio.NewReaderSize(r, 64<<10)
		head, err := br.Peek(64 << 10)
		if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
			return nil, err
		}
		if opt.Format, err = Detect(head); err != nil {
			return nil, err
		}
		r, detected = br, true
	}
	if opt.Format < CSV || opt.Format > Caddy {
		return nil, fmt.Errorf("accesslog: format %d: want %s", opt.Format, FormatNames)
	}
	if opt.Key.parts == nil {
		k := "ip"
		if opt.Format == CSV {
			k = "key"
		}
		opt.Key, _ = ParseKey(k)
	}
	if err := opt.Key.check(opt.Format); err != nil {
		return nil, err
	}
	if err := checkGateway(opt.Format, opt.Gateway); err != nil {
		return nil, err
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	return &Reader{opt: opt, sc: sc, detected: detected}, nil
}

// Format is the log's format: the one given, or the one detected.
func (r *Reader) Format() Format { return r.opt.Format }

// Detected reports whether the format was detected rather than given.
func (r *Reader) Detected() bool { return r.detected }

// TimeField is a JSON log's time field: the one given, or the one found
// on its first line ("" before it is read, and for other formats).
func (r *Reader) TimeField() string { return r.opt.TimeField }

// Open opens a log file ("-": standard input), decompressing it when it is
// gzipped or zstd-compressed (told by its first bytes, whatever its name),
// and returns a Reader of it, the file's size in bytes (0 when unknown,
// see Reader.Read) and its closer.
func Open(path string, opt Options) (*Reader, int64, func() error, error) {
	f, size, err := openFile(path)
	if err != nil {
		return nil, 0, nil, err
	}
	cf := &countingReader{r: f}
	r, closeZ, err := decompress(bufio.NewReaderSize(cf, 256<<10))
	if err != nil {
		f.Close()
		return nil, 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	closeAll := func() error { closeZ(); return f.Close() }
	rd, err := NewReader(r, opt)
	if err != nil {
		closeAll()
		return nil, 0, nil, err
	}
	rd.file = cf
	return rd, size, closeAll, nil
}

// openFile opens path, or standard input for "-", and says its size (0
// for a stream).
func openFile(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), 0, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	size := st.Size()
	if !st.Mode().IsRegular() {
		size = 0 // a pipe or a device: no size to show progress against
	}
	return f, size, nil
}

// decompress reads br through gzip or zstd when its first bytes say so.
func decompress(br *bufio.Reader) (io.Reader, func(), error) {
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { zr.Close() }, nil
	case bytes.Equal(head, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// Read returns the bytes of the file read so far (compressed, for a
// gzipped one), beside its size for progress; 0 for a Reader not made by
// Open.
func (r *Reader) Read() int64 {
	if r.file == nil {
		return 0
	}
	return r.file.n
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// Next reads the next line that holds a request. It returns io.EOF at the
// end, and an error only for a failed read or, with Options.MaxBad, too
// many bad lines.
func (r *Reader) Next(l *Line) error {
	for r.sc.Scan() {
		r.n++
		b := r.sc.Bytes()
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		why := r.parse(b, l)
		if why == "" {
			l.Number = r.n
			return nil
		}
		if why == skip {
			continue
		}
		r.bad++
		if len(r.shown) < ShownBad {
			r.shown = append(r.shown, BadLine{r.n, why})
		}
		if r.opt.MaxBad > 0 && r.bad >= r.opt.MaxBad {
			return fmt.Errorf("line %d: %s (%d unreadable lines)", r.n, why, r.bad)
		}
	}
	if err := r.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("line %d: longer than %d bytes", r.n+1, MaxLine)
		}
		return err
	}
	return io.EOF
}

// skip marks a line that holds no request (CSV's header).
const skip = "\x00skip"

// Bad returns how many lines could not be read, and the first few.
func (r *Reader) Bad() (int, []BadLine) { return r.bad, r.shown }

// Lines is how many lines have been read.
func (r *Reader) Lines() int { return r.n }

// parse reads line b into l, or says why it cannot.
func (r *Reader) parse(b []byte, l *Line) string {
	*l = Line{Cost: 1}
	switch r.opt.Format {
	case CSV:
		return r.parseCSV(b, l)
	case JSON:
		return r.parseJSON(b, l)
	case Caddy:
		return r.parseCaddy(b, l)
	case CloudFront:
		return r.parseCloudFront(b, l)
	}
	return r.parseText(b, l)
}

// parseTime reads a text time, reusing the last one's value when the
// text is the same (a busy log's lines share their second).
func (r *Reader) parseTime(s string, layout string) (int64, bool) {
	if s == r.lastTS && s != "" {
		return r.lastT, true
	}
	t, err := time.Parse(layout, s)
	if err != nil {
		return 0, false
	}
	r.lastTS, r.lastT = strings.Clone(s), t.UnixNano()
	return r.lastT, true
}

// parseEpoch reads seconds since 1970 with a decimal fraction, exactly to
// the nanosecond (a float64 would lose them); digits past the ninth are
// below a nanosecond and left out.
func parseEpoch(s string) (int64, bool) {
	sec, frac, dot := strings.Cut(s, ".")
	if sec == "" || len(sec) > 11 || len(frac) > 18 || (dot && frac == "") {
		return 0, false
	}
	for i := 9; i < len(frac); i++ {
		if frac[i] < '0' || frac[i] > '9' {
			return 0, false
		}
	}
	var n int64
	for i := 0; i < len(sec); i++ {
		c := sec[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	var f int64
	for i := 0; i < 9; i++ {
		f *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			f += int64(c - '0')
		}
	}
	return n*1e9 + f, true
}
