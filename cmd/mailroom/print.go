package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// writeJSON prints v as one indented JSON object, for --json.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func isUnreachable(err error) bool { return errors.Is(err, client.ErrUnreachable) }

// errorText is the daemon's message for its own errors (without the code
// prefix *mailbox.Error adds) and the error itself for anything else.
func errorText(err error) string {
	var me *mailbox.Error
	if errors.As(err, &me) {
		return me.Message
	}
	return err.Error()
}

// conflictDetails spells out a lease-guard conflict: the lease the caller
// expected, the one that is current, who holds it and since when.
func conflictDetails(err error) string {
	var me *mailbox.Error
	if !errors.As(err, &me) || me.Details == nil {
		return ""
	}
	d := me.Details
	var b strings.Builder
	if d.ExpectedLeaseID != "" {
		fmt.Fprintf(&b, "  expected lease: %s\n", d.ExpectedLeaseID)
	}
	switch {
	case d.ActualLeaseID != "":
		fmt.Fprintf(&b, "  current lease:  %s", d.ActualLeaseID)
		if d.LeasedTo != "" {
			fmt.Fprintf(&b, ", held by %s", d.LeasedTo)
		}
		if d.LeasedAtMs > 0 {
			at := time.UnixMilli(d.LeasedAtMs)
			fmt.Fprintf(&b, " since %s (%s ago)", at.UTC().Format(time.RFC3339), age(time.Now(), d.LeasedAtMs))
		}
		if d.Attempt > 0 {
			fmt.Fprintf(&b, ", attempt %d", d.Attempt)
		}
		b.WriteString("\n")
	case d.ExpectedLeaseID != "":
		b.WriteString("  current lease:  none\n")
	}
	if d.ExpectedRecipient != "" {
		fmt.Fprintf(&b, "  expected queued for: %s\n  queued for now:      %s\n", d.ExpectedRecipient, d.ActualRecipient)
	}
	if d.TaskState != "" {
		fmt.Fprintf(&b, "  task state:     %s\n", d.TaskState)
	}
	return b.String()
}

// age is how long ago atMs was, to the second, as "4m12s".
func age(now time.Time, atMs int64) string {
	if atMs <= 0 {
		return "-"
	}
	d := now.Sub(time.UnixMilli(atMs)).Truncate(time.Second)
	if d < 0 {
		d = 0
	}
	return d.String()
}

// until is how far off atMs is, "in 4m12s" or "4m12s ago".
func until(now time.Time, atMs int64) string {
	d := time.UnixMilli(atMs).Sub(now).Truncate(time.Second)
	if d < 0 {
		return (-d).String() + " ago"
	}
	return "in " + d.String()
}

// truncate shortens s to n runes with an ellipsis, on one line, for tables.
// truncate is s on one line of at most n characters for a table, every
// character that does not print escaped (a card registered before control
// characters were refused may still hold an escape sequence or a bidi
// override, which must never reach the terminal raw).
func truncate(s string, n int) string {
	s = visible(strings.Join(strings.Fields(s), " "))
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// printTask writes a task as "field  value" lines, for lease and for people.
func printTask(w io.Writer, t mailbox.Task, now time.Time) {
	fmt.Fprintf(w, "task       %s\n", t.ID)
	fmt.Fprintf(w, "from       %s\n", t.Sender)
	fmt.Fprintf(w, "to         %s\n", t.Recipient)
	if k := t.Kind(); k != "" {
		fmt.Fprintf(w, "kind       %s\n", k)
	}
	if t.Parent != "" {
		fmt.Fprintf(w, "parent     %s\n", t.Parent)
	}
	if t.DeadlineMs != nil {
		fmt.Fprintf(w, "deadline   %s (%s)\n", time.UnixMilli(*t.DeadlineMs).UTC().Format(time.RFC3339), until(now, *t.DeadlineMs))
	}
	if t.Idempotency != nil {
		fmt.Fprintf(w, "duplicate  %s (key %s)\n", t.Idempotency.DuplicateSafety, t.Idempotency.Key)
	}
	fmt.Fprintf(w, "intent     %s\n", t.IntentText)
	// The conversation so far: the worker reads every question and answer.
	for i, turn := range t.Turns {
		who := "asked by " + turn.Agent + " (" + turn.Status + ")"
		if turn.Role == mailbox.RoleSender {
			who = "answered by " + turn.Agent
		}
		fmt.Fprintf(w, "turn %-5d %s %s: %s\n", i+1, time.UnixMilli(turn.AtMs).UTC().Format(time.RFC3339), who, contentLine(mailbox.Result{Content: turn.Content}))
	}
}

// contentLine is a result's content on one line: its texts, JSON values,
// or error message.
func contentLine(r mailbox.Result) string {
	var parts []string
	if r.ErrorMessage != "" {
		parts = append(parts, r.ErrorMessage)
	}
	for _, c := range r.Content {
		switch c.Type {
		case mailbox.ContentText:
			parts = append(parts, c.Text)
		case mailbox.ContentJSON:
			parts = append(parts, string(c.Value))
		}
	}
	return strings.Join(parts, " | ")
}

// printResult writes a drained result for people.
func printResult(w io.Writer, r mailbox.PendingResult) {
	fmt.Fprintf(w, "task       %s\n", r.TaskID)
	fmt.Fprintf(w, "status     %s\n", r.Status)
	fmt.Fprintf(w, "from       %s\n", r.Recipient)
	fmt.Fprintf(w, "to         %s\n", r.Sender)
	if r.PostedAtMs > 0 {
		fmt.Fprintf(w, "posted     %s\n", time.UnixMilli(r.PostedAtMs).UTC().Format(time.RFC3339))
	}
	if r.Forced {
		fmt.Fprintf(w, "forced     yes (an operator force-errored the task)\n")
	}
	if r.ErrorMessage != "" {
		fmt.Fprintf(w, "error      %s\n", r.ErrorMessage)
	}
	for _, c := range r.Content {
		switch c.Type {
		case mailbox.ContentText:
			fmt.Fprintf(w, "text       %s\n", c.Text)
		case mailbox.ContentJSON:
			fmt.Fprintf(w, "json       %s\n", c.Value)
		}
	}
	if mailbox.Asks(r.Status) {
		fmt.Fprintf(w, "waiting    the worker asks %s; answer with: mailroom reply %s --text ...\n", r.Sender, r.TaskID)
	}
}

// visible is s as it may be written to a terminal: as it is when every
// character in it prints, else quoted with the others escaped.
func visible(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
