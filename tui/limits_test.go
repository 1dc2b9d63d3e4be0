package tui

import (
	"encoding/json"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// A console on a daemon with retain_done 1 follows the daemon's limits,
// whether the snapshot it attached with carries them or a limits_set
// arrives on the stream, so a task id the daemon forgot and accepted again
// is no gap, and the replica ends equal to the daemon's state.
func TestModelFollowsTheDaemonsLimits(t *testing.T) {
	for _, name := range []string{"limits in the snapshot", "limits on the stream"} {
		t.Run(name, func(t *testing.T) {
			src := newSource(t)
			m := newModel()
			if name == "limits on the stream" {
				m.receive(src.snapshot())
			}
			l := mailbox.DefaultLimits()
			l.RetainDone = 1
			ev, _ := src.s.DecideLimits(l, src.nowMs)
			m.receive(src.emit(ev, nil))
			if name == "limits in the snapshot" {
				m.receive(src.snapshot())
			}

			const x, y = "00000000-0000-4000-8000-00000000000a", "00000000-0000-4000-8000-00000000000b"
			for _, id := range []string{x, y, x} {
				m.receive(src.emit(src.s.DecideSend(mailbox.Task{ID: id, Sender: "planner@local", Recipient: "worker-a@local", IntentText: "work"}, src.nowMs)))
				m.receive(src.lease("worker-a@local"))
				m.receive(src.post(id, mailbox.StatusOK, ""))
				m.receive(src.drain("planner@local"))
			}
			if st := m.status(); st.gap != nil || st.seq != src.s.Seq {
				t.Fatalf("status = %+v, want seq %d and no gap", st, src.s.Seq)
			}
			got, _ := json.Marshal(m.state.Snapshot(0))
			want, _ := json.Marshal(src.s.Snapshot(0))
			if string(got) != string(want) {
				t.Errorf("replica =\n%s\nwant the daemon's\n%s", got, want)
			}
		})
	}
}

// A limits_set that lowers audit_max trims the Audit pane at once.
func TestLimitsSetTrimsTheAuditRows(t *testing.T) {
	r := newRepaired(t)
	if n := len(r.m.rows().audit); n != 3 {
		t.Fatalf("%d repairs listed, want 3", n)
	}
	l := mailbox.DefaultLimits()
	l.AuditMax = 1
	ev, _ := r.src.s.DecideLimits(l, r.src.nowMs)
	r.m.receive(r.src.emit(ev, nil))
	if a := r.m.rows().audit; len(a) != 1 || a[0].Seq != r.auto.Seq {
		t.Errorf("after audit_max 1 the Audit pane lists %+v, want only the newest repair", a)
	}
}
