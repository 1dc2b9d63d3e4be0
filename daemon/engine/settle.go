package engine

import (
	"fmt"

	"github.com/mailroom/mailroom/mailbox"
)

// The durable side of the pipeline (ARCHITECTURE, step 5): what happens
// to an event once the store has synced it, or failed to.

// settle runs on the store's writer goroutine, once per event, in seq
// order. Publishing under the durable state's lock keeps subscribers'
// snapshots and live events seamless: a subscriber registers under the same
// lock.
func (e *Engine) settle(ev mailbox.Event, err error) {
	if err != nil {
		e.broken.Store(true)
		return
	}
	e.durableMu.Lock()
	defer e.durableMu.Unlock()
	if aerr := e.durable.Apply(ev); aerr != nil {
		// The event was decided on a state that mirrors this one; if they
		// disagree the engine has a bug, and every later decision would be
		// made on a state that is not the log's. Stop deciding; reads keep
		// serving what is durable, and a restart replays the log.
		e.bug(fmt.Errorf("the durable state refused durable event %d (%s): %w", ev.Seq, ev.Type, aerr))
		return
	}
	e.hub.publish(ev)
	e.presence.settled(ev)
	e.wakeSeqWaiters()
}
