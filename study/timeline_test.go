package study

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/fleetlimit/fleetlimit/sim"
)

// svgTexts returns the text of every <text> element of an SVG document,
// and fails the test if the document is not well-formed XML.
func svgTexts(t *testing.T, doc []byte) []string {
	t.Helper()
	var texts []string
	dec := xml.NewDecoder(bytes.NewReader(doc))
	inText := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return texts
		}
		if err != nil {
			t.Fatalf("not well-formed SVG: %v", err)
		}
		switch v := tok.(type) {
		case xml.StartElement:
			inText = v.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, string(v))
			}
		case xml.EndElement:
			inText = false
		}
	}
}

// A drawn timeline names every part of the run: the window's admits
// against L, each gateway's view, the syncs and round trips, when the
// flood starts, and the run's figures; a fleet too large for a line a
// gateway shows its least, median and most; PNG decodes at its size.
func TestDrawTimeline(t *testing.T) {
	p := sim.Defaults()
	p.Design, p.Gateways, p.Duration = "permit", 8, 4*time.Minute
	p.Traffic, p.Also = sim.Traffic{Kind: sim.Steady, Factor: 0.8}, []sim.Traffic{{Kind: sim.Flood, Factor: 100, Start: 90 * time.Second}}
	r, tl, err := sim.RunTimeline(p, 500*time.Millisecond, p.Duration)
	if err != nil {
		t.Fatal(err)
	}
	var svg bytes.Buffer
	if err := DrawTimeline(&svg, "svg", p, r, tl); err != nil {
		t.Fatal(err)
	}
	all := strings.Join(svgTexts(t, svg.Bytes()), "\n")
	for _, want := range []string{"permit: K = 8 gateways", "the fleet's admits in the 1m0s window", "L = 100",
		"each gateway's view", "gateway 0", "gateway 7", "syncs", "round trips", "flood ×100 starts (1m30s)",
		"time from the run's start", "worst window"} {
		if !strings.Contains(all, want) {
			t.Errorf("the picture does not say %q; its texts:\n%s", want, all)
		}
	}
	if strings.Contains(all, "median gateway") {
		t.Error("8 gateways drawn as a median")
	}

	p.Gateways = 32
	if r, tl, err = sim.RunTimeline(p, time.Second, p.Duration); err != nil {
		t.Fatal(err)
	}
	svg.Reset()
	if err := DrawTimeline(&svg, "svg", p, r, tl); err != nil {
		t.Fatal(err)
	}
	all = strings.Join(svgTexts(t, svg.Bytes()), "\n")
	if !strings.Contains(all, "median gateway") || strings.Contains(all, "gateway 31") {
		t.Errorf("32 gateways: want their least, median and most, not a line each:\n%s", all)
	}

	var pic bytes.Buffer
	if err := DrawTimeline(&pic, "png", p, r, tl); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&pic)
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != 816 || b.Dy() != 768 {
		t.Errorf("PNG of %v, want 816×768 (8.5 × 8 inches at 96 dpi)", b)
	}
	if err := DrawTimeline(io.Discard, "jpg", p, r, tl); err == nil {
		t.Error("jpg accepted")
	}
}
