package bench

import (
	"context"
	"time"
)

// pipelineDepth is how many cycles one pipelined pair keeps in flight:
// the one being drained and at most one more.
const pipelineDepth = 2

// inFlight is one cycle of a pipelined pair as it passes from stage to
// stage.
type inFlight struct {
	id    string
	start time.Time
}

// runPipelined runs the pair as three agents' loops instead of one: the
// sender sends the next task while the previous cycle is still being
// worked on or drained, the recipient leases and posts, and the sender's
// drain loop drains. At most pipelineDepth cycles are in flight, and every
// check of a sequential cycle still holds: leases and drains go oldest
// first and each stage hands the next the cycles in send order, so each
// lease and each drain must return exactly the task the stage expects.
// The hand-offs are channels because the three loops are one load
// generator; real agents would poll or follow the event stream.
func (p *pair) runPipelined(ctx context.Context, more func() bool) {
	slots := make(chan struct{}, pipelineDepth)
	sent := make(chan inFlight, pipelineDepth)
	posted := make(chan inFlight, pipelineDepth)
	// Each stage keeps its own samples; merged when all three are done.
	lease, drain := &pair{c: p.c, sender: p.sender, recipient: p.recipient, errors: map[string]uint64{},
		cycles: p.cycles, requests: p.requests, failures: p.failures}, &pair{c: p.c, sender: p.sender, recipient: p.recipient,
		errors: map[string]uint64{}, cycles: p.cycles, requests: p.requests, failures: p.failures}
	done := make(chan struct{}, 2)

	go func() { // the recipient
		defer func() { close(posted); done <- struct{}{} }()
		for c := range sent {
			task, l, ok := lease.lease(ctx, c.id)
			if ok && lease.post(ctx, task, l) {
				posted <- c
				continue
			}
			<-slots // this cycle failed; its slot is free again
		}
	}()
	go func() { // the sender's drain loop
		defer func() { done <- struct{}{} }()
		for c := range posted {
			if drain.drain(ctx, c.id) {
				drain.cycleNs.add(time.Since(c.start))
				drain.cycles.Add(1)
			}
			<-slots
		}
	}()
	// The sender: a new cycle starts only when a slot is free.
	for more() {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		start := time.Now()
		id, ok := p.send(ctx)
		if !ok {
			<-slots
			continue
		}
		sent <- inFlight{id: id, start: start}
	}
	close(sent)
	<-done
	<-done

	p.leaseNs, p.resultNs = lease.leaseNs, lease.resultNs
	p.drainNs, p.cycleNs = drain.drainNs, drain.cycleNs
	for _, q := range []*pair{lease, drain} {
		for k, n := range q.errors {
			p.errors[k] += n
		}
	}
}
