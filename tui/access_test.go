package tui

import (
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/daemon/daemontest"
)

// The capability names the registry checks are the daemon's.
func TestCapabilityNamesAreTheDaemons(t *testing.T) {
	for got, want := range map[string]string{capAdmin: auth.CapAdmin, capRequeue: auth.CapRequeue, capForceError: auth.CapForceError} {
		if got != want {
			t.Errorf("the console checks %q, the daemon grants %q", got, want)
		}
	}
}

// "no auth" is the daemon's answer, not a guess: a console that cannot
// reach the daemon yet does not know, and offers no repair until it does.
func TestNoAuthOnlyOnceTheDaemonSaysSo(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	id := api.send("worker-a@local", "wait for the daemon")
	api.lease("worker-a@local")
	d.Stop()
	r := runConsole(t, api.c, Options{Addr: d.URL()})
	r.scr.waitForText(t, "reconnecting (attempt")
	r.scr.press(char('2'))
	f := r.scr.waitForText(t, "<!> stale only")
	if f.contains("no auth") || !f.contains("whoami…") {
		t.Errorf("before the daemon answered, the header should not say no auth:\n%s", f.lines[0])
	}
	if f.contains("<R>") || f.contains("<E>") {
		t.Errorf("before the daemon said what the token may do, repairs are offered:\n%s", f)
	}

	d.Restart()
	f = r.scr.waitForText(t, "no auth")
	r.scr.waitForText(t, short(id))
	r.scr.waitForText(t, "<R> requeue")
	if f.contains("whoami…") {
		t.Errorf("after the answer the header still asks:\n%s", f.lines[0])
	}
}

// Repair keys the token may not use are not there: not on the hint bar,
// not in the help, and the key does nothing.
func TestRepairKeysFollowTheTokensCapabilities(t *testing.T) {
	t.Parallel()
	d := daemontest.Start(t, daemontest.Options{Tokens: []auth.Token{
		{Principal: "oncall-ann", Token: "t-ann", Caps: []string{auth.CapAdmin}},
		{Principal: "viewer-vic", Token: "t-vic", Caps: []string{auth.CapRead}},
		{Principal: "requeuer-rae", Token: "t-rae", Caps: []string{auth.CapRead, auth.CapRequeue}},
	}})
	admin, err := client.New(d.URL(), client.WithToken("t-ann"))
	if err != nil {
		t.Fatal(err)
	}
	api := agentAPI{t, admin}
	api.send("worker-a@local", "stuck somewhere")
	api.lease("worker-a@local")

	for _, tt := range []struct {
		principal, token string
		requeue, force   bool
	}{
		{"viewer-vic", "t-vic", false, false},
		{"requeuer-rae", "t-rae", true, false},
		{"oncall-ann", "t-ann", true, true},
	} {
		t.Run(tt.principal, func(t *testing.T) {
			c, err := client.New(d.URL(), client.WithToken(tt.token))
			if err != nil {
				t.Fatal(err)
			}
			r := runConsole(t, c, Options{Addr: d.URL()})
			r.scr.waitForText(t, "stuck somewhere")
			r.scr.waitForText(t, "as "+tt.principal)
			r.scr.press(char('2'))
			f := r.scr.waitForText(t, "<!> stale only")
			if f.contains("<R> requeue") != tt.requeue || f.contains("<E> force error") != tt.force {
				t.Errorf("hint bar offers requeue %v, force error %v; want %v, %v:\n%s", f.contains("<R>"), f.contains("<E>"), tt.requeue, tt.force, f.lines[len(f.lines)-1])
			}
			if none := !tt.requeue && !tt.force; f.contains("no repair rights") != none {
				t.Errorf("header says no repair rights = %v, want %v:\n%s", !none, none, f.lines[0])
			}
			r.scr.press(char('?'))
			f = r.scr.waitForText(t, "Help (Esc to go back)")
			if f.contains("requeue the marked leases") != tt.requeue || f.contains("force an error on the marked") != tt.force {
				t.Errorf("help lists requeue %v, force error %v; want %v, %v", f.contains("requeue the marked"), f.contains("force an error"), tt.requeue, tt.force)
			}
			r.scr.press(key(tcell.KeyEscape))
			r.scr.waitForNoText(t, "Help (Esc to go back)")
			if !tt.requeue {
				// R and E do nothing; / after them proves they were read.
				r.scr.press(char('R'), char('E'), char('/'))
				f = r.scr.waitForText(t, "filter Leases:")
				if f.contains("Requeue task") || f.contains("Force an error") {
					t.Errorf("a repair dialog opened without the capability:\n%s", f)
				}
			}
		})
	}
}
