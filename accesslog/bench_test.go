package accesslog

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"io"
	"testing"
)

// csvLog is n lines of time,key.
func csvLog(n int) []byte {
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, "%d.%03d,10.0.%d.%d\n", 1796428800+i/100, i%1000, i%200, i%250)
	}
	return b.Bytes()
}

// BenchmarkCSV reads a CSV log by the Reader (its own split, encoding/csv
// only for quoted lines) and by encoding/csv alone (ReuseRecord), side by
// side: the Reader's lines/s include the time parsed and the key handed
// out, encoding/csv's only the fields split.
func BenchmarkCSV(b *testing.B) {
	data := csvLog(200_000)
	b.Run("reader", func(b *testing.B) {
		for b.Loop() {
			r, _ := NewReader(bytes.NewReader(data), Options{Format: CSV})
			var l Line
			for r.Next(&l) != io.EOF {
			}
		}
		b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "lines/s")
	})
	b.Run("encoding-csv", func(b *testing.B) {
		for b.Loop() {
			cr := csv.NewReader(bytes.NewReader(data))
			cr.ReuseRecord = true
			for {
				if _, err := cr.Read(); err == io.EOF {
					break
				}
			}
		}
		b.ReportMetric(float64(200_000*b.N)/b.Elapsed().Seconds(), "lines/s")
	})
}
