package mailbox

import (
	"errors"
	"strings"
	"testing"
)

// Public keys for the tests, base58 of 32 bytes each: bytes 1 to 32, 32
// bytes of 7, 32 bytes of 0xff (the longest, 44 characters) and 32 zero
// bytes (the shortest, 32 ones).
const (
	pkOneTo32 = "4wBqpZM9xaSheZzJSMawUKKwhdpChKbZ5eu5ky4Vigw"
	pkSevens  = "US517G5965aydkZ46HS38QLi7UQiSojurfbQfKCELFx"
	pkFFs     = "JEKNVnkbo3jma5nREBBJCDoXFVeKkD56V3xKrvRmWxFG"
	pkZero    = "11111111111111111111111111111111"
)

func TestValidateCovenantPubkey(t *testing.T) {
	for _, ok := range []string{pkOneTo32, pkSevens, pkFFs, pkZero, "14uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofL"} {
		if err := ValidateCovenantPubkey("sender.pubkey", ok); err != nil {
			t.Errorf("ValidateCovenantPubkey(%q) = %v, want nil", ok, err)
		}
	}
	tests := []struct{ in, want string }{
		{"", `sender.pubkey: got "" (0 characters), expected a base58 ed25519 public key (32 bytes`},
		{"abc", `got "abc" (3 characters)`},
		{strings.Repeat("z", 45), "(45 characters)"},
		{strings.Repeat("z", 5000), "got 5000 characters, expected"},
		// 0, O, I and l are not base58; nor is anything outside ASCII.
		{"0" + pkSevens[1:], "which is not base58"},
		{pkSevens[:42] + "O", "which is not base58"},
		{pkSevens[:42] + "l", "which is not base58"},
		{pkSevens[:40] + "é", "which is not base58"},
		// Right alphabet and length, wrong size.
		{"4uQeVj5tqViQh7yWWGStvkEG1Zmhx6uasJtWCJziofL", "which decodes to 31 bytes"},
		{"z" + pkFFs[1:], "which decodes to 33 bytes"},
		{strings.Repeat("1", 33), "which decodes to 33 bytes"},
	}
	for _, tc := range tests {
		err := ValidateCovenantPubkey("sender.pubkey", tc.in)
		var e *Error
		if !errors.As(err, &e) || e.Code != CodeInvalid || e.Details == nil || e.Details.Field != "sender.pubkey" {
			t.Errorf("ValidateCovenantPubkey(%q) = %v, want an invalid error naming sender.pubkey", tc.in, err)
			continue
		}
		if !strings.Contains(e.Message, tc.want) {
			t.Errorf("ValidateCovenantPubkey(%q) = %q, want it to say %q", tc.in, e.Message, tc.want)
		}
	}
}

func TestNormalizeTaskChecksTheCovenantOrigin(t *testing.T) {
	task := validTask()
	task.Covenant = &CovenantOrigin{SenderPubkey: pkOneTo32, RecipientPubkey: pkSevens}
	got, err := NormalizeTask(task)
	if err != nil || *got.Covenant != *task.Covenant {
		t.Fatalf("NormalizeTask = %+v, %v; want the origin kept as it is", got.Covenant, err)
	}
	for field, o := range map[string]CovenantOrigin{
		"covenant.sender_pubkey":    {SenderPubkey: "", RecipientPubkey: pkSevens},
		"covenant.recipient_pubkey": {SenderPubkey: pkSevens, RecipientPubkey: "0OIl" + pkSevens[4:]},
	} {
		task.Covenant = &o
		_, err := NormalizeTask(task)
		var e *Error
		if !errors.As(err, &e) || e.Details == nil || e.Details.Field != field {
			t.Errorf("NormalizeTask with %+v = %v, want a refusal naming %s", o, err, field)
		}
	}
}

// Covenant tasks in every state survive a snapshot, its JSON and a replay
// with their public keys.
func TestCovenantTasksRoundTrip(t *testing.T) {
	b := newBox(t)
	send := func() string {
		t.Helper()
		task, err := NormalizeTask(Task{ID: b.id(), Sender: "alice@local", Recipient: "bob@local", IntentText: "fetch papers",
			Covenant: &CovenantOrigin{SenderPubkey: pkOneTo32, RecipientPubkey: pkSevens}})
		if err != nil {
			t.Fatal(err)
		}
		ev, err := b.s.DecideSend(task, b.now)
		if err != nil {
			t.Fatal(err)
		}
		b.apply(ev)
		return task.ID
	}
	for range 4 {
		send()
	}
	b.lease("bob@local") // stays in flight
	drained, lp := b.lease("bob@local")
	pending, ld := b.lease("bob@local")
	// The fourth stays queued.
	if err := b.post(drained, lp.LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := b.post(pending, ld.LeaseID); err != nil {
		t.Fatal(err)
	}
	b.drain("alice@local") // drained's result, posted first
	for _, r := range b.s.Snapshot(0).Tasks {
		if r.Task.Covenant == nil || r.Task.Covenant.SenderPubkey != pkOneTo32 || r.Task.Covenant.RecipientPubkey != pkSevens {
			t.Fatalf("task %s (%s) in the snapshot has covenant %+v", r.Task.ID, r.State, r.Task.Covenant)
		}
	}
	b.roundTrip()
	b.jsonRoundTrip()
}
