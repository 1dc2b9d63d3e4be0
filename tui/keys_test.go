package tui

import (
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

func key(k tcell.Key) *tcell.EventKey { return tcell.NewEventKey(k, 0, tcell.ModNone) }
func char(r rune) *tcell.EventKey     { return tcell.NewEventKey(tcell.KeyRune, r, tcell.ModNone) }

func TestRegistryLookup(t *testing.T) {
	full, ro := defaultRegistry(), defaultRegistry().withoutDangerous()
	tests := []struct {
		reg  registry
		ev   *tcell.EventKey
		pane paneID
		want actionID
		ok   bool
	}{
		{full, char('R'), paneLeases, actRequeue, true},
		{full, char('E'), paneLeases, actForceError, true},
		{full, char('R'), paneQueue, actMoveQueued, true}, // a queued task is moved, not requeued
		{full, char('E'), paneQueue, actCancelQueued, true},
		{ro, char('R'), paneQueue, 0, false},
		{ro, char('R'), paneLeases, 0, false},
		{ro, char('E'), paneLeases, 0, false},
		{ro, char('q'), paneLeases, actQuit, true},
		{full, key(tcell.KeyTab), paneResults, actFocusNext, true},
		{full, key(tcell.KeyBacktab), paneQueue, actFocusPrev, true},
		{full, char('2'), paneQueue, actFocusPane, true},
		{full, char('j'), paneQueue, 0, false}, // movement belongs to the table
		{full, key(tcell.KeyEnter), paneResults, actDetail, true},
		{full, char('!'), paneLeases, actStaleOnly, true},
		{full, char('4'), paneQueue, actFocusPane, true},
		{ro, char('4'), paneLeases, actFocusPane, true}, // reading the trail changes nothing
		{full, key(tcell.KeyEnter), paneAudit, actDetail, true},
		{full, char('/'), paneAudit, actFilter, true},
		{full, char('s'), paneAudit, 0, false}, // the trail always reads newest first
		{full, char('R'), paneAudit, 0, false},
	}
	for _, tt := range tests {
		a, ok := tt.reg.lookup(tt.ev, tt.pane)
		if ok != tt.ok || ok && a.id != tt.want {
			t.Errorf("lookup(%s in %s) = %v, %v; want %v, %v", tt.ev.Name(), tt.pane, a.id, ok, tt.want, tt.ok)
		}
	}
}

// A key means one thing in each pane; it may mean another in another pane
// (Enter opens a task's detail, on the Agents pane it shows the agent).
func TestRegistryHasNoKeyTwice(t *testing.T) {
	for p := paneQueue; p < paneCount; p++ {
		seen := map[keySpec]string{}
		for _, a := range defaultRegistry().actions {
			if !a.panes.has(p) {
				continue
			}
			for _, k := range a.keys {
				if other, dup := seen[k]; dup {
					t.Errorf("in %s key %v is bound to both %q and %q", p, k, other, a.desc)
				}
				seen[k] = a.desc
			}
		}
	}
}

func TestReadOnlyHidesRepairsFromHintsAndHelp(t *testing.T) {
	full, ro := defaultRegistry(), defaultRegistry().withoutDangerous()
	if h := full.hintText(paneLeases, 1000); !strings.Contains(h, "<R>") || !strings.Contains(h, "<E>") {
		t.Errorf("leases hints %q lack the repair keys", h)
	}
	if h := full.hintText(paneQueue, 1000); strings.Contains(h, "requeue") || strings.Contains(h, "force error") || !strings.Contains(h, "<R>[-] move") || !strings.Contains(h, "<E>[-] cancel") {
		t.Errorf("queue hints %q offer a lease repair, or not the queued task's", h)
	}
	if h := ro.hintText(paneQueue, 1000); strings.Contains(h, "<R>") || strings.Contains(h, "<E>") {
		t.Errorf("read-only queue hints %q offer repairs", h)
	}
	if h := ro.hintText(paneLeases, 1000); strings.Contains(h, "<R>") || strings.Contains(h, "<E>") {
		t.Errorf("read-only hints %q offer repairs", h)
	}
	help := strings.Join(ro.helpLines(), "\n")
	if strings.Contains(help, "requeue") || strings.Contains(help, "force an error") {
		t.Errorf("read-only help lists repairs:\n%s", help)
	}
}
