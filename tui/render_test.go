package tui

import (
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// TestRenderersWriteOneCellPerColumn keeps each renderer's cells, and its
// export records, in step with its columns: a cell too many panics, one too
// few would leave a column blank (or an export field under the wrong
// heading) without a word.
func TestRenderersWriteOneCellPerColumn(t *testing.T) {
	task := mailbox.Task{ID: "0000aaaa-0000-4000-8000-000000000001", Sender: "s@local", Recipient: "r@local"}
	asked := task
	asked.Turns = []mailbox.Turn{{Role: mailbox.RoleWorker, Agent: "r@local", Status: mailbox.StatusInputRequired, LeaseID: "lease-1", Attempt: 1,
		Content: []mailbox.Content{{Type: mailbox.ContentText, Text: "which database?"}}}}
	r := &rows{
		queued:  []mailbox.QueueEntry{{Task: task}},
		leases:  []mailbox.QueueEntry{{Task: task, LeaseID: "lease-1", LeasedTo: "r@local"}},
		results: []resultRow{{PendingResult: mailbox.PendingResult{Result: mailbox.Result{TaskID: task.ID, Status: mailbox.StatusOK}}}},
		audit:   []mailbox.AuditRecord{{TaskID: task.ID, Action: mailbox.OutcomeRequeued}},
		agents:  []agentRow{{AgentInfo: mailbox.AgentInfo{Agent: "r@local"}}},
		waiting: []mailbox.QueueEntry{{State: mailbox.TaskWaiting, Task: asked}},
		deliveries: []mailbox.NotificationStatus{{Notification: mailbox.Notification{ID: "7-1", TaskID: task.ID, Event: mailbox.EventTaskLeased},
			State: mailbox.DeliveryFailing, URL: "http://127.0.0.1:9/hook", NextTryMs: 5}},
	}
	for p := range paneCount {
		c := &paneContent{pane: p, rows: r, marks: map[string]string{}}
		var s cellSlot
		w := rowWriter{cells: s.cells[:len(paneColumns[p])]}
		renderers[p].render(c, &w, 0)
		if w.n != len(paneColumns[p]) {
			t.Errorf("%s renderer wrote %d cells, want %d (its columns)", p, w.n, len(paneColumns[p]))
		}
		rec := renderers[p].record(exportJob{pane: p, rows: r}, 0)
		if want := len(paneColumns[p]) + len(renderers[p].exportTimes()); len(rec) != want {
			t.Errorf("%s export record has %d fields, want %d (its columns and times)", p, len(rec), want)
		}
	}
}
