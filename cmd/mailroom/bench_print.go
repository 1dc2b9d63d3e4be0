package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/cmd/mailroom/internal/bench"
)

// The summaries bench prints for a reader, one per kind of report.

func printBench(w io.Writer, r bench.Report) {
	if lp := r.LongPoll; lp != nil {
		fmt.Fprintf(w, "mailroom bench: long polls, %d idle workers waiting %dms each\n", lp.Workers, lp.WaitMs)
		fmt.Fprintf(w, "idle      %10.2f requests/s from all the workers over %.1fs\n", lp.IdleRequestsPerS, lp.IdleS)
		fmt.Fprintf(w, "delay     send to a waiting worker's lease: p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms over %d sends (%d lost)\n",
			lp.Delay.P50, lp.Delay.P90, lp.Delay.P99, lp.Delay.Max, lp.Sends, lp.Lost)
		return
	}
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" { // "" when the filesystem could not be told: a warning says why
			target += " (log on " + r.DataFS + ")"
		}
	}
	if r.Pairs == 0 && r.Fanout != nil {
		fmt.Fprintf(w, "mailroom bench --fanout-only: %s, %s asked (ran %.2fs), the load from another process\n", target,
			time.Duration(r.DurationS*float64(time.Second)), r.ElapsedS)
		printFanout(w, r.Fanout)
		return
	}
	fmt.Fprintf(w, "mailroom bench: %s, %d pairs, %s asked (ran %.2fs), payload %d B", target, r.Pairs,
		time.Duration(r.DurationS*float64(time.Second)), r.ElapsedS, r.PayloadBytes)
	if r.RateLimit > 0 {
		fmt.Fprintf(w, ", capped at %g cycles/s", r.RateLimit)
	}
	if r.Pipeline {
		fmt.Fprint(w, ", pipelined (two cycles per pair)")
	}
	if r.Batch > 1 {
		fmt.Fprintf(w, ", %d tasks per request (cycle latency is a round's)", r.Batch)
		if r.WaitMs > 0 {
			fmt.Fprintf(w, ", long polls of %dms", r.WaitMs)
		}
	}
	fmt.Fprintln(w)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	counted := "each 2xx and durable"
	if r.VolatileLog {
		counted = "each 2xx and synced, to memory only"
	}
	fmt.Fprintf(w, "cycles    %10d  %10.1f/s  (send, lease, result, drain: %s)\n", r.Cycles, r.CyclesPerS, counted)
	fmt.Fprintf(w, "requests  %10d  %10.1f/s\n", r.Requests, r.RequestsPerS)
	fmt.Fprintf(w, "errors    %10d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-20s %d\n", k, r.Errors[k])
	}
	d := r.Daemon
	fmt.Fprintf(w, "fsync     %10d batches, %.1f events per batch (%d events, %.2fs syncing)\n", d.FsyncBatches, d.MeanBatch, d.EventsAppended, d.FsyncSeconds)

	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency ms\tp50\tp90\tp99\tmax\t")
	for _, s := range []struct {
		name string
		l    bench.Latency
	}{{"send", r.Latency.Send}, {"lease", r.Latency.Lease}, {"result", r.Latency.Result}, {"drain", r.Latency.Drain}, {"cycle", r.Latency.Cycle}} {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%.3f\t%.3f\t\n", s.name, s.l.P50, s.l.P90, s.l.P99, s.l.Max)
	}
	tw.Flush()

	if f := r.Fanout; f != nil {
		fmt.Fprintln(w)
		printFanout(w, f)
	}
}

func printFanout(w io.Writer, f *bench.FanoutReport) {
	over := ""
	if f.LoadS >= 1 {
		over = fmt.Sprintf(" over %.1f s of events", f.LoadS)
	}
	fmt.Fprintf(w, "fanout    %d subscribers at %.0f events/s%s: delivery p50 %.0f ms, p90 %.0f ms, p99 %.0f ms, max %.0f ms\n",
		f.Subscribers, f.EventsPerS, over, f.Delivery.P50, f.Delivery.P90, f.Delivery.P99, f.Delivery.Max)
	verdict := "yes"
	if !f.Complete {
		verdict = "NO"
	}
	fmt.Fprintf(w, "          every subscriber got every event once: %s (missed %d, repeated %d, reconnects %d; %d to %d events each, up to seq %d)\n",
		verdict, f.Missed, f.Repeated, f.Reconnect, f.ReceivedMin, f.ReceivedMax, f.FinalSeq)
}

func printBenchA2A(w io.Writer, r bench.A2AReport) {
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" {
			target += " (log on " + r.DataFS + ")"
		}
	}
	fmt.Fprintf(w, "mailroom bench --a2a: %s, %d A2A callers (blocking message/send, %s to the edge), %s each way in %d rounds (mailroom, server, ...), payload %d B\n",
		target, r.Senders, r.Binding, time.Duration(r.DurationS*float64(time.Second)), r.Rounds, r.PayloadBytes)
	fmt.Fprintf(w, "agent %s (%d native workers answering at once); A2A server in this process at %s (answers at once)\n", r.Agent, r.Senders, r.A2AURL)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "way\ttasks\ttasks/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, x := range []struct {
		name string
		f    bench.WayFigures
	}{{"mailroom", r.Mailroom}, {"server", r.Server}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", x.name, x.f.Tasks, x.f.TasksPerS, x.f.Latency.P50, x.f.Latency.P90, x.f.Latency.P99, x.f.Latency.Max)
	}
	tw.Flush()
	fmt.Fprintf(w, "ratio     %.2f of the server's tasks/s; mailroom adds %.2f ms at p50, %.2f ms at p99\n", r.Ratio, r.AddedP50Ms, r.AddedP99Ms)
	verdict := "yes"
	if !r.Durable.OK {
		verdict = "NO"
	}
	fmt.Fprintf(w, "durable   every task answered through the daemon sent, leased, answered and delivered in its log: %s (%d of %d", verdict, r.Durable.Complete, r.Durable.Checked)
	if r.Durable.Note != "" {
		fmt.Fprintf(w, "; %s", r.Durable.Note)
	}
	fmt.Fprintf(w, "); %.2f events a task\n", r.EventsPerTask)
	fmt.Fprintf(w, "errors    %d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-28s %d\n", k, r.Errors[k])
	}
}

func printBenchRemote(w io.Writer, r bench.RemoteReport) {
	target := "daemon at " + r.Target
	if r.Embedded {
		target = "embedded daemon"
		if r.DataFS != "" {
			target += " (log on " + r.DataFS + ")"
		}
	}
	how := "A2A callers (blocking message/send to the agent's card on the daemon)"
	if r.Via == bench.ViaNative {
		how = "native senders (send, then drain)"
	}
	fmt.Fprintf(w, "mailroom bench --remote: %s, %d %s, %s each way in %d rounds (remote, relay, direct, ...), payload %d B\n", target, r.Senders, how,
		time.Duration(r.DurationS*float64(time.Second)), r.Rounds, r.PayloadBytes)
	fmt.Fprintf(w, "A2A server in this process at %s (answers at once); remote agent %s, binding %s, concurrency %d\n", r.A2AURL, r.Agent, r.Binding, r.Concurrency)
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "WARNING: %s\n", warning)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\ttasks\ttasks/s\tp50 ms\tp90 ms\tp99 ms\tmax ms\tconnections\t")
	for _, x := range []struct {
		name string
		f    bench.WayFigures
	}{{"through mailroom", r.Remote}, {"through a proxy", r.Relay}, {"direct", r.Direct}} {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.3f\t%.3f\t%.3f\t%.3f\t%d\t\n", x.name, x.f.Tasks, x.f.TasksPerS, x.f.Latency.P50, x.f.Latency.P90, x.f.Latency.P99, x.f.Latency.Max, x.f.Connections)
	}
	tw.Flush()
	fmt.Fprintf(w, "ratio     %.2f of direct (through mailroom's tasks/s over direct's); %.2f of the proxy's\n", r.Ratio, r.OfRelay)
	fmt.Fprintf(w, "          the proxy (net/http/httputil, keeping nothing): %.2f of direct, the floor of any hop in front of the server here\n", r.RelayRatio)
	fmt.Fprintln(w, "          (connections: those the A2A server accepted from each way's client; about one per sender is a client that keeps them)")
	fmt.Fprint(w, "rounds   ")
	for _, rf := range r.PerRound {
		fmt.Fprintf(w, " %s %.0f/s", rf.Way, rf.TasksPerS)
	}
	fmt.Fprintln(w)
	d := r.Durable
	label, where := "durable  ", "the daemon's log"
	if r.VolatileLog {
		label, where = "synced   ", "the daemon's log (on "+r.DataFS+": in memory only, not durable)"
	}
	switch {
	case d.OK:
		fmt.Fprintf(w, "%s yes: %s holds task_sent, task_leased, remote_accepted, result_posted and result_drained of all %d tasks\n", label, where, d.Checked)
	default:
		fmt.Fprintf(w, "%s NO: %d of %d tasks have all five events in %s, %d do not", label, d.Complete, d.Checked, where, d.Missing)
		if d.Note != "" {
			fmt.Fprintf(w, " (%s)", d.Note)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "errors    %d\n", r.ErrorsTotal)
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		fmt.Fprintf(w, "  %-24s %d\n", k, r.Errors[k])
	}
	dm := r.Daemon
	fmt.Fprintf(w, "fsync     %d batches, %.1f events per batch, %.1f events per task (%d events, %.2fs syncing)\n",
		dm.FsyncBatches, dm.MeanBatch, r.EventsPerTask, dm.EventsAppended, dm.FsyncSeconds)
}
