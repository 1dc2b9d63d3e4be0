package engine

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// alwaysCurrent is a shared store's word that the view is current, as a
// follower's is right after it read the table.
type alwaysCurrent struct{ confirms int }

func (c *alwaysCurrent) CurrentAt(time.Time) bool          { return true }
func (c *alwaysCurrent) Confirm(ctx context.Context) error { c.confirms++; return nil }

// A follower's view can be current by a read of the table that was
// applied while an answer was being made from the state before it: a
// follower resumed from a pause answered a queue read, 100 ms after it
// woke, without the leases the new leader had given meanwhile (CI, 25
// pauses). The answer stands only when the state it was made from is the
// state the read made current; otherwise it is made again.
func TestAFollowersAnswerIsMadeFromTheStateItsReadMadeCurrent(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	cur := &alwaysCurrent{}
	e.cur = cur
	e.leading.Store(false)

	// The first time the answer is made, the follower's read of the table
	// is applied under it: a task the leader had queued.
	var made []int
	late := mailbox.Event{AtMs: 1, Type: mailbox.EventTaskSent, Task: &mailbox.Task{ID: "00000000-0000-4000-8000-000000000777", Sender: "p@pg", Recipient: "w@pg", IntentText: "sent meanwhile"}}
	err := e.read(func() {
		e.durableMu.RLock()
		made = append(made, e.durable.Counts().Queued)
		e.durableMu.RUnlock()
		if len(made) == 1 {
			e.durableMu.Lock()
			late.Seq = e.durable.Seq + 1
			if err := e.durable.Apply(late); err != nil {
				t.Error(err)
			}
			e.durableMu.Unlock()
		}
	})
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if len(made) != 2 || made[0] != 0 || made[1] != 1 {
		t.Fatalf("the answer was made from %v queued tasks, want once from 0 (refused: the read moved the state under it) and then from 1", made)
	}

	// A state that does not move under the answer is answered at once.
	made = nil
	if err := e.read(func() { made = append(made, 1) }); err != nil || len(made) != 1 {
		t.Errorf("a read over a still state ran %d times, %v; want once", len(made), err)
	}

	// A state that keeps moving is not answered from at all: 503.
	n := 0
	err = e.read(func() {
		n++
		e.durableMu.Lock()
		ev := mailbox.Event{Seq: e.durable.Seq + 1, AtMs: 2, Type: mailbox.EventTaskSent,
			Task: &mailbox.Task{ID: "00000000-0000-4000-8000-00000000080" + string(rune('0'+n)), Sender: "p@pg", Recipient: "w@pg", IntentText: "more"}}
		if err := e.durable.Apply(ev); err != nil {
			t.Error(err)
		}
		e.durableMu.Unlock()
	})
	if mailbox.ErrorCode(err) != mailbox.CodeUnavailable {
		t.Errorf("a read over a state that kept moving: %v after %d tries, want 503", err, n)
	}
	if cur.confirms != 0 {
		t.Errorf("Confirm was called %d times though the view was current", cur.confirms)
	}
}
