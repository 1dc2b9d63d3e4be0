package engine

import (
	"context"
	"testing"

	"github.com/mailroom/mailroom/mailbox"
)

// The daemon's own update of a card (the dispatcher syncing a remote's)
// goes through only over the registration it read: one an operator made
// since stays, and nothing is written.
func TestRegisterAgentIfKeepsARegistrationMadeSince(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx := context.Background()
	remote := &mailbox.RemoteSpec{URL: "http://127.0.0.1:9/"}
	read, err := e.RegisterAgent(ctx, "r@remote", mailbox.AgentCard{Remote: remote})
	if err != nil {
		t.Fatal(err)
	}
	// The operator registers it again (another address) after the read.
	moved, err := e.RegisterAgent(mailbox.WithPrincipal(ctx, "oncall"), "r@remote", mailbox.AgentCard{Remote: &mailbox.RemoteSpec{URL: "http://127.0.0.1:10/"}})
	if err != nil {
		t.Fatal(err)
	}
	seq := e.DurableSeq()
	_, err = e.RegisterAgentIf(ctx, "r@remote", mailbox.AgentCard{Name: "From the remote's card", Remote: remote}, read)
	if mailbox.ErrorCode(err) != mailbox.CodeConflict {
		t.Fatalf("an update over a registration made since: %v, want a conflict", err)
	}
	if e.DurableSeq() != seq {
		t.Error("the refused update wrote an event")
	}
	var now mailbox.RegisteredAgent
	e.View(func(s *mailbox.State) { now, _ = s.Registered("r@remote") })
	if now.Card.Remote.URL != "http://127.0.0.1:10/" || now.Principal != "oncall" {
		t.Errorf("registration after the refused update = %+v, want the operator's", now)
	}
	// Over the registration as it is now, the update goes through.
	got, err := e.RegisterAgentIf(ctx, "r@remote", mailbox.AgentCard{Name: "From the remote's card", Remote: moved.Card.Remote}, moved)
	if err != nil || got.Card.Name != "From the remote's card" {
		t.Errorf("an update over the current registration = %+v, %v", got, err)
	}
	// An agent deregistered since is not registered again by it.
	if err := e.DeregisterAgent(ctx, "r@remote"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.RegisterAgentIf(ctx, "r@remote", mailbox.AgentCard{Name: "back", Remote: remote}, got); mailbox.ErrorCode(err) != mailbox.CodeConflict {
		t.Errorf("an update of a deregistered agent: %v, want a conflict", err)
	}
}
