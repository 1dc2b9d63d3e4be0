// Package metrics is the daemon's small metrics exposition: each component
// writes its own figures (the log its sync histogram, the engine its queue
// sizes, the HTTP layer its request counts) into a Writer, which renders
// them as Prometheus text (format 0.0.4) or as JSON for scripts and the
// bench. It is written by hand: the figures are few, and a client library
// would be the daemon's largest dependency.
package metrics

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Source is a component that reports its own metrics.
type Source interface {
	WriteMetrics(w *Writer)
}

// Writer collects metric families in the order they are written.
type Writer struct {
	families []family
}

type family struct {
	name, help, typ string
	value           float64        // gauge and counter
	isLabeled       bool           // a labeled counter, samples in labeled
	labeled         []Labeled      //
	hist            *histogramView // histogram
	hists           []HistogramSample
	isLabeledHist   bool // a labeled histogram, series in hists
}

// HistogramSample is one series of a labeled histogram: its labels (never
// "le", which the exposition adds) and its buckets.
type HistogramSample struct {
	Labels [][2]string // name, value pairs, in order
	Bounds []float64   // upper bounds, ascending, without +Inf
	Counts []uint64    // per bound, not cumulative
	Sum    float64
	Count  uint64 // every observation, the +Inf bucket
}

// Labeled is one sample of a labeled counter.
type Labeled struct {
	Labels [][2]string // name, value pairs, in order
	Value  float64
}

// Gauge writes a value that goes up and down.
func (w *Writer) Gauge(name, help string, v float64) {
	w.families = append(w.families, family{name: name, help: help, typ: "gauge", value: v})
}

// Counter writes a value that only goes up.
func (w *Writer) Counter(name, help string, v float64) {
	w.families = append(w.families, family{name: name, help: help, typ: "counter", value: v})
}

// LabeledCounter writes a counter family with labels, samples sorted by
// their labels so the output is stable.
func (w *Writer) LabeledCounter(name, help string, samples []Labeled) {
	s := append([]Labeled(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return labelString(s[i].Labels) < labelString(s[j].Labels) })
	w.families = append(w.families, family{name: name, help: help, typ: "counter", isLabeled: true, labeled: s})
}

// LabeledHistogram writes a histogram family with labels, series sorted by
// their labels so the output is stable.
func (w *Writer) LabeledHistogram(name, help string, samples []HistogramSample) {
	s := append([]HistogramSample(nil), samples...)
	sort.Slice(s, func(i, j int) bool { return labelString(s[i].Labels) < labelString(s[j].Labels) })
	w.families = append(w.families, family{name: name, help: help, typ: "histogram", isLabeledHist: true, hists: s})
}

// Histogram writes h as it stands.
func (w *Writer) Histogram(name, help string, h *Histogram) {
	v := h.view()
	w.families = append(w.families, family{name: name, help: help, typ: "histogram", hist: &v})
}

// WriteText renders the families in the Prometheus text format.
func (w *Writer) WriteText(out io.Writer) error {
	var b strings.Builder
	for _, f := range w.families {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", f.name, f.help, f.name, f.typ)
		switch {
		case f.hist != nil:
			var cum uint64
			for i, le := range f.hist.Bounds {
				cum += f.hist.Counts[i]
				fmt.Fprintf(&b, "%s_bucket{le=\"%s\"} %d\n", f.name, formatFloat(le), cum)
			}
			fmt.Fprintf(&b, "%s_bucket{le=\"+Inf\"} %d\n", f.name, f.hist.Count)
			fmt.Fprintf(&b, "%s_sum %s\n%s_count %d\n", f.name, formatFloat(f.hist.Sum), f.name, f.hist.Count)
		case f.isLabeled:
			for _, s := range f.labeled {
				fmt.Fprintf(&b, "%s%s %s\n", f.name, labelString(s.Labels), formatFloat(s.Value))
			}
		case f.isLabeledHist:
			for _, s := range f.hists {
				var cum uint64
				labels := s.Labels[:len(s.Labels):len(s.Labels)]
				for i, le := range s.Bounds {
					cum += s.Counts[i]
					fmt.Fprintf(&b, "%s_bucket%s %d\n", f.name, labelString(append(labels, [2]string{"le", formatFloat(le)})), cum)
				}
				fmt.Fprintf(&b, "%s_bucket%s %d\n", f.name, labelString(append(labels, [2]string{"le", "+Inf"})), s.Count)
				ls := labelString(s.Labels)
				fmt.Fprintf(&b, "%s_sum%s %s\n%s_count%s %d\n", f.name, ls, formatFloat(s.Sum), f.name, ls, s.Count)
			}
		default:
			fmt.Fprintf(&b, "%s %s\n", f.name, formatFloat(f.value))
		}
	}
	_, err := io.WriteString(out, b.String())
	return err
}

// JSON renders the families as one object: a gauge or counter is a number,
// a labeled counter a list of {"labels":{...},"value":N}, a histogram
// {"buckets":[{"le":S,"count":N}...],"sum":S,"count":N} with per-bucket
// (not cumulative) counts, a labeled histogram a list of such objects each
// with its "labels".
func (w *Writer) JSON() ([]byte, error) {
	type bucket struct {
		LE    float64 `json:"le"`
		Count uint64  `json:"count"`
	}
	out := make(map[string]any, len(w.families))
	for _, f := range w.families {
		switch {
		case f.isLabeledHist:
			type series struct {
				Labels  map[string]string `json:"labels"`
				Buckets []bucket          `json:"buckets"`
				Sum     float64           `json:"sum"`
				Count   uint64            `json:"count"`
			}
			ss := make([]series, len(f.hists))
			for i, s := range f.hists {
				m := make(map[string]string, len(s.Labels))
				for _, kv := range s.Labels {
					m[kv[0]] = kv[1]
				}
				bs := make([]bucket, len(s.Bounds))
				for j, le := range s.Bounds {
					bs[j] = bucket{le, s.Counts[j]}
				}
				ss[i] = series{m, bs, s.Sum, s.Count}
			}
			out[f.name] = ss
		case f.hist != nil:
			bs := make([]bucket, len(f.hist.Bounds))
			for i, le := range f.hist.Bounds {
				bs[i] = bucket{le, f.hist.Counts[i]}
			}
			out[f.name] = map[string]any{"buckets": bs, "sum": f.hist.Sum, "count": f.hist.Count}
		case f.isLabeled:
			type sample struct {
				Labels map[string]string `json:"labels"`
				Value  float64           `json:"value"`
			}
			ss := make([]sample, len(f.labeled))
			for i, s := range f.labeled {
				m := make(map[string]string, len(s.Labels))
				for _, kv := range s.Labels {
					m[kv[0]] = kv[1]
				}
				ss[i] = sample{m, s.Value}
			}
			out[f.name] = ss
		default:
			out[f.name] = f.value
		}
	}
	return json.Marshal(out)
}

func labelString(labels [][2]string) string {
	if len(labels) == 0 {
		return ""
	}
	parts := make([]string, len(labels))
	for i, kv := range labels {
		parts[i] = kv[0] + `="` + labelEscaper.Replace(kv[1]) + `"`
	}
	return "{" + strings.Join(parts, ",") + "}"
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func formatFloat(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(v, 'g', -1, 64)
}

// Histogram counts observations into fixed buckets. It is safe for
// concurrent use.
type Histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative; the last slot is +Inf
	sum    float64
	n      uint64
}

// NewHistogram returns a histogram with the given upper bounds, ascending.
func NewHistogram(bounds ...float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

// Observe records one value.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.mu.Lock()
	h.counts[i]++
	h.sum += v
	h.n++
	h.mu.Unlock()
}

// Sum and Count report the total of the values observed and their number.
func (h *Histogram) Sum() (sum float64, count uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.sum, h.n
}

type histogramView struct {
	Bounds []float64
	Counts []uint64 // per bound, not cumulative
	Sum    float64
	Count  uint64
}

func (h *Histogram) view() histogramView {
	h.mu.Lock()
	defer h.mu.Unlock()
	return histogramView{Bounds: append([]float64(nil), h.bounds...), Counts: append([]uint64(nil), h.counts[:len(h.bounds)]...), Sum: h.sum, Count: h.n}
}
