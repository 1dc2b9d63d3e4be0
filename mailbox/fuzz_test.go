package mailbox

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// checkInvariants verifies what must hold after any sequence of accepted
// events: no task both queued and leased, indexes agree with records,
// every result belongs to a known task waiting for it.
func checkInvariants(s *State) error {
	queued := map[string]bool{}
	for _, t := range s.queued.items {
		if t.State != TaskQueued {
			return fmt.Errorf("task %s in the queue but %s", t.Task.ID, t.State)
		}
		if queued[t.Task.ID] {
			return fmt.Errorf("task %s queued twice", t.Task.ID)
		}
		queued[t.Task.ID] = true
	}
	n := 0
	for r, h := range s.byRecipient {
		for _, t := range h.items {
			if !queued[t.Task.ID] || t.Task.Recipient != r {
				return fmt.Errorf("recipient queue %s holds %s wrongly", r, t.Task.ID)
			}
			n++
		}
	}
	if n != len(queued) {
		return fmt.Errorf("recipient queues hold %d tasks, global queue %d", n, len(queued))
	}
	for id, t := range s.inFlight {
		if t.State != TaskInFlight || queued[id] || t.LeaseID == "" || t.Attempt < 1 {
			return fmt.Errorf("in-flight task %s is %s (queued %v, lease %q, attempt %d)", id, t.State, queued[id], t.LeaseID, t.Attempt)
		}
	}
	for id, t := range s.waiting {
		if t.State != TaskWaiting || queued[id] || s.inFlight[id] != nil || t.LeaseID != "" {
			return fmt.Errorf("waiting task %s is %s (queued %v, lease %q)", id, t.State, queued[id], t.LeaseID)
		}
		if q, ok := t.lastTurn(); !ok || q.Role != RoleWorker || !Asks(q.Status) {
			return fmt.Errorf("waiting task %s has no question as its newest turn (%+v)", id, t.Task.Turns)
		}
	}
	for id, t := range s.tasks {
		if t.State == TaskQueued && !queued[id] || t.State == TaskInFlight && s.inFlight[id] == nil || t.State == TaskWaiting && s.waiting[id] == nil {
			return fmt.Errorf("task %s is %s but not indexed so", id, t.State)
		}
		// A waiting task's question is pending until its sender drains it.
		if _, ok := s.results[id]; ok && t.State != TaskResultPending && t.State != TaskWaiting || !ok && t.State == TaskResultPending {
			return fmt.Errorf("task %s is %s, pending result %v", id, t.State, ok)
		}
	}
	for id, r := range s.results {
		if t, ok := s.tasks[id]; !ok || t.Task.Sender != r.Sender {
			return fmt.Errorf("result %s belongs to no sent task", id)
		}
	}
	if s.resultsAll.Len() != len(s.results) {
		return fmt.Errorf("result heap %d, map %d", s.resultsAll.Len(), len(s.results))
	}
	bySender := 0
	for sender, h := range s.bySender {
		for _, r := range h.items {
			if r.Sender != sender || s.results[r.TaskID] != r {
				return fmt.Errorf("sender heap %s holds result %s of %s wrongly", sender, r.TaskID, r.Sender)
			}
			bySender++
		}
	}
	if bySender != len(s.results) {
		return fmt.Errorf("sender heaps hold %d results, map %d", bySender, len(s.results))
	}
	named := map[string]int{}
	for _, t := range s.tasks {
		named[t.Task.Sender]++
		named[t.Task.Recipient]++
	}
	if !reflect.DeepEqual(named, s.agents) {
		return fmt.Errorf("agents counted %v, named by the remembered tasks %v", s.agents, named)
	}
	return nil
}

// FuzzApply feeds State arbitrary event sequences (most of them nonsense)
// and checks that refused events change nothing, accepted ones keep the
// invariants, and attempts never go down.
func FuzzApply(f *testing.F) {
	f.Add([]byte{0, 0, 1, 0, 2, 0, 4, 0, 1, 0, 3, 0})
	f.Add([]byte{0, 1, 0, 2, 1, 1, 5, 1, 1, 1, 2, 2, 6, 2})
	f.Add([]byte{0, 0, 0, 0, 1, 7, 1, 0, 9, 9, 4, 0, 4, 0})
	f.Add([]byte{0, 0, 1, 0, 8, 0, 3, 0, 9, 0, 1, 0, 8, 0, 9, 0, 1, 0, 2, 0, 3, 0})
	f.Add([]byte{0, 1, 1, 1, 8, 1, 5, 1, 0, 2, 1, 2, 8, 2, 9, 10, 9, 2, 4, 2})
	f.Add([]byte{0, 0, 1, 0, 8, 0, 10, 1, 10, 0, 9, 0, 0, 1, 1, 1, 2, 1, 10, 1, 3, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := NewState()
		s.RetainDone, s.ResultCacheMax = 3, 2
		ids := []string{"00000000-0000-4000-8000-000000000001", "00000000-0000-4000-8000-000000000002", "00000000-0000-4000-8000-000000000003"}
		attempts := map[string]int{}
		leases := map[string]string{}
		for i := 0; i+1 < len(ops); i += 2 {
			op, id := ops[i]%11, ids[int(ops[i+1])%len(ids)]
			seq := s.Seq + 1
			if ops[i+1] >= 200 {
				seq += uint64(ops[i+1] % 3) // sometimes a gap
			}
			lease := fmt.Sprintf("10000000-0000-4000-8000-%012d", i)
			ev := Event{Seq: seq, AtMs: int64(i), TaskID: id}
			switch op {
			case 0:
				ev.Type, ev.Task = EventTaskSent, &Task{ID: id, Sender: "s", Recipient: fmt.Sprint("r", ops[i+1]%2), IntentText: "x",
					Idempotency: &Idempotency{DuplicateSafety: DuplicateIdempotent, Key: "k"}}
			case 1:
				ev.Type, ev.LeaseID, ev.LeasedTo, ev.Attempt = EventTaskLeased, lease, "r", attempts[id]+1
			case 2:
				ev.Type, ev.LeaseID, ev.Result = EventResultPosted, leases[id], &Result{TaskID: id, Status: StatusOK}
			case 3:
				ev.Type = EventResultDrained
			case 4:
				ev.Type, ev.LeaseID = EventTaskRequeued, leases[id]
				if ops[i+1]&4 != 0 {
					ev.Recipient = fmt.Sprint("r", ops[i+1]>>3%2) // sometimes its own
				}
			case 5:
				ev.Type, ev.Result = EventTaskForceErrored, &Result{TaskID: id, Status: StatusError}
			case 6:
				ev.Type, ev.Task, ev.Result = EventResultReplayed, &Task{ID: id, Sender: "s", Recipient: "r0", IntentText: "x"}, &Result{TaskID: id, Status: StatusOK}
			case 7:
				ev.Type, ev.Attempt = EventTaskLeased, int(ops[i+1]) // usually a wrong attempt
			case 8:
				// A worker's question: the task waits on its sender.
				ev.Type, ev.LeaseID, ev.Result = EventResultPosted, leases[id], &Result{TaskID: id, Status: StatusInputRequired, Content: []Content{{Type: ContentText, Text: "?"}}}
			case 9:
				ev.Type, ev.Turn = EventTaskReplied, &Turn{Role: RoleSender, Agent: "s", Content: []Content{{Type: ContentText, Text: "!"}}}
				if ops[i+1]&8 != 0 {
					ev.Turn = nil // a reply without its turn is refused
				}
			case 10:
				// Handed to another sender (sometimes to the one it has,
				// or from one it does not have: refused).
				ev.Type, ev.Sender, ev.Agent = EventTaskHandedOver, fmt.Sprint("s", ops[i+1]%3), "s"
				if rec, ok := s.Task(id); ok && ops[i+1]&16 == 0 {
					ev.Agent = rec.Task.Sender
				}
			}
			before, _ := json.Marshal(s.Snapshot(0))
			if err := s.Apply(ev); err != nil {
				after, _ := json.Marshal(s.Snapshot(0))
				if string(before) != string(after) {
					t.Fatalf("refused event %+v changed the state: %v", ev, err)
				}
				continue
			}
			if err := checkInvariants(s); err != nil {
				t.Fatalf("after %s on %s: %v", ev.Type, id, err)
			}
			if rec, ok := s.Task(id); ok {
				if rec.Attempt < attempts[id] && ev.Type != EventTaskSent && ev.Type != EventResultReplayed {
					t.Fatalf("attempt of %s went down from %d to %d", id, attempts[id], rec.Attempt)
				}
				attempts[id], leases[id] = rec.Attempt, rec.LeaseID
			} else {
				delete(attempts, id) // forgotten after RetainDone drains
			}
		}
		restored := NewState()
		restored.RetainDone, restored.ResultCacheMax = 3, 2
		if err := restored.Restore(s.Snapshot(0)); err != nil {
			t.Fatalf("snapshot does not restore: %v", err)
		}
		if err := checkInvariants(restored); err != nil {
			t.Fatalf("restored state: %v", err)
		}
	})
}
