package bench

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Whether every task delivered through the daemon was made durable: its
// five events, read from the event stream while the run goes on.

// DurableCheck says whether the daemon made durable, for every task
// delivered through it, its task_sent, a task_leased to the remote agent,
// its remote_accepted, an ok result_posted and its result_drained: read
// from its event stream (which carries durable events only), followed
// during the run.
type DurableCheck struct {
	Checked  uint64 `json:"checked"`
	Complete uint64 `json:"complete"`
	// Missing counts the tasks some of whose events were not found.
	Missing uint64 `json:"missing"`
	// OK is true when every task checked was complete.
	OK bool `json:"ok"`
	// Note says why the check could not be made, when it could not.
	Note string `json:"note,omitempty"`
}

// A task's events, as bits, for the durability check.
const (
	seenSent = 1 << iota
	seenLeased
	seenAccepted
	seenPosted
	seenDrained
	seenAll = seenSent | seenLeased | seenAccepted | seenPosted | seenDrained
	// seenServed is a task leased and answered by a native worker and its
	// result delivered to its A2A caller: no remote accepted it.
	seenServed = seenSent | seenLeased | seenPosted | seenDrained
)

// taskLog follows the daemon's event stream during the run, from the seq
// before it, and notes for each task which of its events the daemon made
// durable (the stream carries only durable events). It parses only the
// few fields it needs from each event's JSON, as the fan-out subscribers
// do, so that it costs the measurement little (it is one console's worth
// of work for the daemon, on the remote rounds only: the direct rounds
// append nothing).
type taskLog struct {
	agent string
	// want is the events a task must have: seenAll for a remote agent's,
	// seenServed for a task its workers lease natively.
	want uint8
	// seen is written by the follower only, and read once it stopped.
	seen map[string]uint8
	last atomic.Uint64
	// gap: the stream sent a snapshot instead of some of the run's
	// events (the subscriber fell too far behind): those are not seen.
	gap    atomic.Bool
	cancel context.CancelFunc
	done   chan struct{}
}

// followLog starts following after seq from; a task is complete when it
// has every event of want.
func followLog(ctx context.Context, hc *http.Client, baseURL, token, agent string, from uint64, want uint8) *taskLog {
	ctx, cancel := context.WithCancel(ctx)
	l := &taskLog{agent: agent, want: want, seen: map[string]uint8{}, cancel: cancel, done: make(chan struct{})}
	l.last.Store(from)
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			readStream(ctx, hc, baseURL, token, true, l.last.Load(), l.note, func(ev mailbox.Event) bool {
				if ev.Type == mailbox.EventSnapshot {
					l.gap.Store(true)
				}
				l.last.Store(ev.Seq)
				return true
			})
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return l
}

// note reads the data of ev (whose type came before it).
func (l *taskLog) note(ev *mailbox.Event, line []byte) {
	var bit uint8
	key := `"task_id":"`
	switch ev.Type {
	case mailbox.EventTaskSent:
		bit, key = seenSent, `"task":{"id":"`
	case mailbox.EventTaskLeased:
		if stringField(line, `"leased_to":"`) != l.agent {
			return
		}
		bit = seenLeased
	case mailbox.EventRemoteAccepted:
		bit = seenAccepted
	case mailbox.EventResultPosted:
		// The result's own task_id comes after the event's, and its
		// status right after that.
		if !bytes.Contains(line, []byte(`"status":"ok"`)) {
			return
		}
		bit = seenPosted
	case mailbox.EventResultDrained:
		bit = seenDrained
	default:
		return
	}
	if id := stringField(line, key); id != "" {
		l.seen[id] |= bit
	}
}

// stringField is the string value after key in line ("" when absent);
// the values looked for (ids, agent names) hold no escapes.
func stringField(line []byte, key string) string {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return ""
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return ""
	}
	return string(rest[:j])
}

// logWait bounds how long, after the run, the follower may take to reach
// the daemon's last seq.
const logWait = 30 * time.Second

// check waits (bounded) until the follower has seen seq to, stops it, and
// checks that each task of done has every event it must have.
func (l *taskLog) check(to uint64, done []string) DurableCheck {
	deadline := time.NewTimer(logWait)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
wait:
	for l.last.Load() < to {
		select {
		case <-deadline.C:
			break wait
		case <-l.done: // the run was cancelled
			break wait
		case <-poll.C:
		}
	}
	reached := l.last.Load() >= to
	l.cancel()
	<-l.done
	dc := DurableCheck{Checked: uint64(len(done))}
	for _, id := range done {
		if l.seen[id]&l.want == l.want {
			dc.Complete++
		} else {
			dc.Missing++
		}
	}
	switch {
	case l.gap.Load():
		dc.Note = "the event stream sent a snapshot instead of some of the run's events (the follower fell behind): the tasks in them could not be checked"
	case !reached:
		dc.Note = fmt.Sprintf("the event stream did not reach seq %d within %s of the run's end", to, logWait)
	}
	dc.OK = dc.Missing == 0
	return dc
}
