package tui

import (
	"flag"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/mailbox"
)

// benchEventsFlag sizes the benchmarks' mailbox: 100k events by default,
// -bench.events 1000000 for the million-row figures.
var benchEventsFlag = flag.Int("bench.events", 100_000, "tui benchmarks: events in the stream (rows of the big pane)")

// benchStream returns 100k events as a daemon would stream them: a snapshot
// of an empty mailbox, then sends, with a lease and a result for some, so
// the replica does the same work as under a busy daemon.
func benchStream(b *testing.B, mixed bool) []mailbox.Event {
	b.Helper()
	benchEvents := *benchEventsFlag
	src := newSource(b)
	evs := []mailbox.Event{src.snapshot()}
	for i := 0; len(evs) < benchEvents; i++ {
		ev := src.send(fmt.Sprintf("worker-%d@local", i%3), withKind("summarize"), withIntent(fmt.Sprintf("summarize report %d for the weekly review", i)))
		evs = append(evs, ev)
		if mixed && i%4 == 0 && len(evs) < benchEvents-1 {
			evs = append(evs, src.lease(ev.Task.Recipient))
			leased := evs[len(evs)-1].TaskID
			if i%8 == 0 {
				evs = append(evs, src.post(leased, mailbox.StatusOK, ""))
			}
		}
	}
	return evs[:benchEvents]
}

// BenchmarkApplyEvents measures what the stream reader costs per event:
// the model's lock, State.Apply and its bookkeeping.
func BenchmarkApplyEvents(b *testing.B) {
	for _, mixed := range []bool{false, true} {
		name := "sends"
		if mixed {
			name = "mixed"
		}
		b.Run(name, func(b *testing.B) {
			evs := benchStream(b, mixed)
			benchEvents := len(evs)
			apply := func() *model {
				m := newModel()
				for _, ev := range evs {
					m.receive(ev)
				}
				return m
			}
			// The replica's heap, measured once outside the timed loop.
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			m := apply()
			runtime.GC()
			runtime.ReadMemStats(&after)
			if st := m.status(); st.gap != nil || st.applied != uint64(benchEvents) {
				b.Fatalf("replica status %+v, want %d events applied", st, benchEvents)
			}
			runtime.KeepAlive(m)
			for b.Loop() {
				apply()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*benchEvents), "ns/event")
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "replica-MB")
		})
	}
}

// BenchmarkApplyOnABigPane measures what an event costs a replica that
// already holds -bench.events tasks, as a console that connected to a big
// mailbox gets them in its first snapshot: 100,000 events (sends, leases
// and results) applied on top of it, per event. (BenchmarkApplyEvents
// builds the replica from nothing, so its figure includes growing it.)
func BenchmarkApplyOnABigPane(b *testing.B) {
	const tail = 100_000
	src := newSource(b)
	for i := range *benchEventsFlag {
		src.send(fmt.Sprintf("worker-%d@local", i%3), withKind("summarize"), withIntent(fmt.Sprintf("summarize report %d for the weekly review", i)))
	}
	snap := src.snapshot()
	evs := make([]mailbox.Event, 0, tail)
	for i := 0; len(evs) < tail; i++ {
		ev := src.send(fmt.Sprintf("worker-%d@local", i%3), withKind("summarize"), withIntent(fmt.Sprintf("follow-up %d", i)))
		evs = append(evs, ev)
		if i%4 == 0 && len(evs) < tail-1 {
			evs = append(evs, src.lease(ev.Task.Recipient))
			if i%8 == 0 {
				evs = append(evs, src.post(evs[len(evs)-1].TaskID, mailbox.StatusOK, ""))
			}
		}
	}
	evs = evs[:tail]
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		m := newModel()
		m.receive(snap)
		runtime.GC()
		b.StartTimer()
		for _, ev := range evs {
			m.receive(ev)
		}
		b.StopTimer()
		if st := m.status(); st.gap != nil || st.applied != uint64(tail+1) {
			b.Fatalf("replica status %+v, want the snapshot and %d events applied", st, tail)
		}
		if r := m.rows(); len(r.queued)+len(r.leases)+len(r.results) < *benchEventsFlag {
			b.Fatalf("replica of %d queued, %d leased, %d results; want at least %d in all", len(r.queued), len(r.leases), len(r.results), *benchEventsFlag)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tail), "ns/event")
}

// BenchmarkConsoleHeap measures what a console holds with a pane of
// -bench.events rows: the replica, and the rows the pane shows, copied out
// of it. The stream that fed it is dropped before measuring, so the
// replica's strings count as its own, as a console's decoded from the
// wire are.
func BenchmarkConsoleHeap(b *testing.B) {
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		m := newModel()
		for _, ev := range benchStream(b, false) {
			m.receive(ev)
		}
		runtime.GC()
		var replica runtime.MemStats
		runtime.ReadMemStats(&replica)
		p := newPane(paneQueue, time.Now, time.Minute)
		p.SetRect(0, 0, 160, 48)
		p.show(m.rows())
		runtime.GC()
		runtime.ReadMemStats(&after)
		if got := p.content.GetRowCount() - 1; got != *benchEventsFlag-1 {
			b.Fatalf("pane has %d rows, want %d", got, *benchEventsFlag-1)
		}
		b.ReportMetric(float64(replica.HeapAlloc-before.HeapAlloc)/(1<<20), "replica-MB")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "console-MB")
		runtime.KeepAlive(m)
		runtime.KeepAlive(p)
	}
}

// BenchmarkFrame draws one frame of the Queue pane at 1k and 100k rows.
// The table asks only for its visible cells, so both cost the same: what
// is left is tview and tcell painting a 160x48 screen.
func BenchmarkFrame(b *testing.B) {
	evs := benchStream(b, false)
	for _, rows := range []int{1_000, len(evs) - 1} {
		b.Run(fmt.Sprintf("rows=%d", rows), func(b *testing.B) {
			m := newModel()
			for _, ev := range evs[:rows+1] { // the first event is the snapshot
				m.receive(ev)
			}
			scr := tcell.NewSimulationScreen("UTF-8")
			if err := scr.Init(); err != nil {
				b.Fatal(err)
			}
			scr.SetSize(160, 48)
			p := newPane(paneQueue, time.Now, time.Minute)
			p.SetRect(0, 0, 160, 48)
			p.show(m.rows())
			if got := p.content.GetRowCount() - 1; got != rows {
				b.Fatalf("pane has %d rows, want %d", got, rows)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			for b.Loop() {
				p.Draw(scr)
			}
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/frame")
			b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "heap-MB")
		})
	}
}

// BenchmarkFrameWithAgents draws a frame of the 100k-row Queue pane and of
// the Agents pane beside it, with the agents listing installed.
func BenchmarkFrameWithAgents(b *testing.B) {
	evs := benchStream(b, false)
	m := newModel()
	for _, ev := range evs {
		m.receive(ev)
	}
	m.setAgents(m.state.Agents(time.Now().UnixMilli()), 0)
	scr := tcell.NewSimulationScreen("UTF-8")
	if err := scr.Init(); err != nil {
		b.Fatal(err)
	}
	scr.SetSize(160, 48)
	queue, agents := newPane(paneQueue, time.Now, time.Minute), newPane(paneAgents, time.Now, time.Minute)
	queue.SetRect(0, 0, 160, 38)
	agents.SetRect(0, 38, 160, 10)
	r := m.rows()
	queue.show(r)
	agents.show(r)
	if n := agents.content.GetRowCount() - 1; n != 4 {
		b.Fatalf("the Agents pane has %d rows, want the planner and 3 workers", n)
	}
	if n := queue.content.GetRowCount() - 1; n != len(evs)-1 {
		b.Fatalf("the Queue pane has %d rows, want %d", n, len(evs)-1)
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for b.Loop() {
		queue.Draw(scr)
		agents.Draw(scr)
	}
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/frame")
	b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "heap-MB")
}

// BenchmarkRebuild100k measures what a changed state costs between frames:
// copying the rows out of the replica and selecting the pane's rows.
func BenchmarkRebuild100k(b *testing.B) {
	m := newModel()
	for _, ev := range benchStream(b, false) {
		m.receive(ev)
	}
	p := newPane(paneQueue, time.Now, time.Minute)
	for b.Loop() {
		p.show(m.rows())
	}
}

// BenchmarkRebuild100kSorted is BenchmarkRebuild100k with the pane sorted
// by a column the state does not keep it in (the intent): a sort of every
// row on each rebuild.
func BenchmarkRebuild100kSorted(b *testing.B) {
	m := newModel()
	for _, ev := range benchStream(b, false) {
		m.receive(ev)
	}
	p := newPane(paneQueue, time.Now, time.Minute)
	p.params.sort = sortSpec{key: 'I'}
	for b.Loop() {
		p.show(m.rows())
	}
}
