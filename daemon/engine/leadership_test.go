package engine

import (
	"context"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
)

// watchdog bounds a test that waits on signals, so a missing one fails
// the test instead of hanging it.
const watchdog = 30 * time.Second

func next(t *testing.T, sub *RoleSubscription) Leadership {
	t.Helper()
	select {
	case l := <-sub.C():
		return l
	case <-time.After(watchdog):
		t.Fatal("no role delivered")
		return Leadership{}
	}
}

// A listener is told the role when it starts listening, then every
// change; each term of leading has a number of its own. One that does
// not keep up is told the latest, never blocking the store.
func TestListenRoleDeliversTheRoleThenEveryChange(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	sub := e.ListenRole()
	defer sub.Close()
	if l := next(t, sub); !l.Leader || l.Term != 1 {
		t.Fatalf("on a store of its own: %+v, want leading in term 1", l)
	}

	e.roleChanged(store.Role{Epoch: 2, Holder: "b", LeaderURL: "http://b"})
	if l := next(t, sub); l.Leader || l.LeaderURL != "http://b" || l.Term != 1 {
		t.Fatalf("after a takeover by b: %+v, want following b, term still 1", l)
	}
	e.roleChanged(store.Role{Leader: true, Epoch: 3})
	if l := next(t, sub); !l.Leader || l.Epoch != 3 || l.Term != 2 {
		t.Fatalf("leading again: %+v, want leading in term 2 at epoch 3", l)
	}

	// Three changes while nobody reads: the listener is told the last.
	e.roleChanged(store.Role{Epoch: 4})
	e.roleChanged(store.Role{Epoch: 4, Holder: "c", LeaderURL: "http://c"})
	e.roleChanged(store.Role{Leader: true, Epoch: 5})
	if l := next(t, sub); !l.Leader || l.Epoch != 5 || l.Term != 3 {
		t.Fatalf("after three changes unread: %+v, want the last (leading in term 3)", l)
	}
	select {
	case l := <-sub.C():
		t.Fatalf("told %+v again, want each change once", l)
	default:
	}

	// A late listener starts from the role now.
	late := e.ListenRole()
	defer late.Close()
	if l := next(t, late); !l.Leader || l.Term != 3 {
		t.Fatalf("a listener that came late: %+v, want leading in term 3", l)
	}
	sub.Close()
	e.roleChanged(store.Role{Epoch: 6})
	select {
	case l := <-sub.C():
		t.Fatalf("a closed subscription was told %+v", l)
	default:
	}
}

// A term of WhileLeading ends the moment the instance stops leading and
// the next begins when it leads again; WhileLeading returns only once the
// term's work has stopped.
func TestWhileLeadingRunsATermPerLead(t *testing.T) {
	e := open(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	terms := make(chan context.Context)
	stopped := make(chan struct{})
	returned := make(chan struct{})
	go func() {
		defer close(returned)
		e.WhileLeading(ctx, func(term context.Context) {
			terms <- term
			<-term.Done()
			stopped <- struct{}{}
		})
	}()
	wait := func(what string) context.Context {
		t.Helper()
		select {
		case term := <-terms:
			return term
		case <-time.After(watchdog):
			t.Fatalf("%s: no term began", what)
			return nil
		}
	}
	first := wait("on a store of its own")
	e.roleChanged(store.Role{Leader: true, Epoch: 9})
	select {
	case <-first.Done():
		t.Fatal("a new epoch within the lead ended the term")
	default:
	}
	e.roleChanged(store.Role{Epoch: 10, Holder: "b", LeaderURL: "http://b"})
	select {
	case <-stopped:
	case <-time.After(watchdog):
		t.Fatal("the term did not end when the instance stopped leading")
	}
	e.roleChanged(store.Role{Leader: true, Epoch: 11})
	second := wait("leading again")
	if second.Err() != nil {
		t.Fatal("the new term began ended")
	}
	cancel()
	select {
	case <-stopped:
	case <-time.After(watchdog):
		t.Fatal("the term did not end with WhileLeading's context")
	}
	select {
	case <-returned:
	case <-time.After(watchdog):
		t.Fatal("WhileLeading did not return")
	}
}
