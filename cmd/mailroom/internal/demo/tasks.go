package demo

import (
	"fmt"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// What the planner asks for: a kind and the intents that go with it.
var kinds = []struct {
	kind    string
	intents []string
}{
	{"summarize", []string{"summarize the incident report for %s", "summarize yesterday's support tickets about %s", "write a three-line summary of the %s design doc"}},
	{"translate", []string{"translate the %s release notes into German", "translate the %s onboarding email into Japanese"}},
	{"classify", []string{"classify the new %s tickets by severity", "label the %s feedback as bug, request or praise"}},
	{"fetch", []string{"fetch the latest %s metrics from the dashboard", "download the %s changelog and extract the breaking changes"}},
	{"review", []string{"review the %s pull request for race conditions", "check the %s migration script against the schema"}},
	{"plan", []string{"break the %s launch into tasks with owners"}},
}

var subjects = []string{"billing", "search", "checkout", "auth", "mobile app", "data pipeline", "pricing page", "status page"}

var partialReasons = []string{
	"rate limited after 40% of the input",
	"two of five sources were unreachable",
	"context window exceeded; summarized the first half",
}

var errorReasons = []string{
	"upstream API returned 503",
	"input document is empty",
	"tool call timed out after 30s",
	"permission denied reading the source",
}

// newTask makes the planner's next task: a random kind and worker, a
// deadline now and then (some so close they pass while queued), and either
// an idempotency key or none (unsafe), so the console shows every posture.
func (a *agent) newTask(now time.Time, recent []string) mailbox.Task {
	if a.lastIdempotent != nil && a.rng.IntN(10) == 0 {
		// The same idempotent task again, as a retrying planner would send
		// it: the daemon deduplicates it or replays its result.
		t := *a.lastIdempotent
		a.lastIdempotent = nil
		return t
	}
	k := kinds[a.rng.IntN(len(kinds))]
	subject := subjects[a.rng.IntN(len(subjects))]
	kind := k.kind
	t := mailbox.Task{
		Sender:     Planner,
		Recipient:  Workers[a.rng.IntN(len(Workers))],
		IntentText: fmt.Sprintf(k.intents[a.rng.IntN(len(k.intents))], subject),
		TaskKind:   &kind,
	}
	switch n := a.rng.IntN(100); {
	case n < 20:
		d := now.Add(time.Duration(3+a.rng.IntN(10)) * time.Second).UnixMilli() // soon: may pass due in the queue
		t.DeadlineMs = &d
	case n < 50:
		d := now.Add(time.Duration(30+a.rng.IntN(150)) * time.Second).UnixMilli()
		t.DeadlineMs = &d
	}
	if a.rng.IntN(2) == 0 {
		a.sent++
		t.Idempotency = &mailbox.Idempotency{DuplicateSafety: mailbox.DuplicateIdempotent, Key: fmt.Sprintf("%s:%s:%d", kind, subject, a.sent)}
		a.lastIdempotent = &t
	}
	if len(recent) > 0 && a.rng.IntN(8) == 0 {
		t.Parent = recent[a.rng.IntN(len(recent))]
	}
	return t
}
