package bench

import (
	"math"
	"slices"
	"time"
)

// Latency summarises one series of samples in milliseconds. Percentiles are
// nearest-rank over every sample (no estimation): a p99 of 4.2 means 99% of
// the samples took 4.2 ms or less.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P99   float64 `json:"p99_ms"`
	Max   float64 `json:"max_ms"`
}

// samples collects durations. One per goroutine, merged at the end, so the
// hot path never takes a lock. A few million samples are a few tens of MB,
// which is why exact percentiles are affordable here.
type samples []time.Duration

func (s *samples) add(d time.Duration) { *s = append(*s, d) }

// summarize sorts s in place and returns its percentiles.
func (s samples) summarize() Latency {
	if len(s) == 0 {
		return Latency{}
	}
	slices.Sort(s)
	at := func(q float64) float64 { return ms(s[rank(q, len(s))]) }
	return Latency{Count: len(s), P50: at(0.50), P90: at(0.90), P99: at(0.99), Max: ms(s[len(s)-1])}
}

// rank is the nearest-rank index of quantile q among n sorted samples.
func rank(q float64, n int) int {
	i := int(math.Ceil(q*float64(n))) - 1
	return min(max(i, 0), n-1)
}

// ms rounds to microseconds so reports do not print nanosecond noise.
func ms(d time.Duration) float64 { return math.Round(float64(d)/1e3) / 1e3 }

// msHistogram counts whole-millisecond samples. Event delivery latency is
// measured against at_ms, which has millisecond resolution, so finer
// buckets would be false precision; and with 200 subscribers at thousands
// of events a second, one counter per millisecond keeps memory flat where
// raw samples would not.
type msHistogram struct {
	buckets []uint64 // buckets[i] counts samples of i ms; the last one counts everything at or over it
	max     int64
	n       uint64
}

// histogramSpanMs is where the histogram stops resolving: anything slower
// is counted in the last bucket (and still shows as the max).
const histogramSpanMs = 10_000

func newMsHistogram() *msHistogram { return &msHistogram{buckets: make([]uint64, histogramSpanMs+1)} }

func (h *msHistogram) add(v int64) {
	v = max(v, 0) // a remote daemon's clock may run ahead of ours
	h.buckets[min(v, histogramSpanMs)]++
	h.max = max(h.max, v)
	h.n++
}

func (h *msHistogram) merge(o *msHistogram) {
	for i, c := range o.buckets {
		h.buckets[i] += c
	}
	h.max = max(h.max, o.max)
	h.n += o.n
}

// quantile is the nearest-rank quantile q in ms.
func (h *msHistogram) quantile(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	want := uint64(rank(q, int(h.n))) + 1
	var seen uint64
	for i, c := range h.buckets {
		if seen += c; seen >= want {
			if i == histogramSpanMs {
				return float64(h.max)
			}
			return float64(i)
		}
	}
	return float64(h.max)
}

func (h *msHistogram) summarize() Latency {
	return Latency{Count: int(h.n), P50: h.quantile(0.50), P90: h.quantile(0.90), P99: h.quantile(0.99), Max: float64(h.max)}
}
