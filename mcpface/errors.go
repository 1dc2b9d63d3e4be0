package mcpface

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// A tool handler's error becomes the tool's result with isError set and
// the error's text as its content (the SDK does that), never a protocol
// error: a model reads it and tries again. These texts are written for it.

// argError is the tool's own refusal of an argument before the daemon is
// asked: it names the argument, the value and what was expected.
func argError(arg string, format string, args ...any) error {
	return fmt.Errorf("%s: %s", arg, fmt.Sprintf(format, args...))
}

// refusal words a daemon error for a model. names maps the daemon's field
// names to the tool's argument names (intent_text -> intent), so the text
// names what the model typed; the daemon's own words follow, which name
// the value and what was expected.
func refusal(err error, names map[string]string) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, client.ErrUnreachable) {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return fmt.Errorf("the mailroom daemon could not be reached, so nothing was done (%v); try again later", err)
		}
		// A connection that broke, or an answer that never came: the
		// request may have been carried out.
		return fmt.Errorf("the mailroom daemon did not answer (%v); the request may or may not have taken effect: look (get_task, drain_results) before doing it again", err)
	}
	var me *mailbox.Error
	if !errors.As(err, &me) {
		return err
	}
	msg := me.Message
	field := ""
	if me.Details != nil {
		field = me.Details.Field
	}
	if arg, ok := names[field]; ok && field != "" {
		msg = strings.Replace(msg, field+":", arg+":", 1)
		if !strings.HasPrefix(msg, arg+":") {
			msg = arg + ": " + msg
		}
	}
	var b strings.Builder
	switch me.Code {
	case mailbox.CodeInvalid:
		b.WriteString("refused, nothing changed: ")
	case mailbox.CodeForbidden:
		b.WriteString("forbidden for this session's token, nothing changed: ")
	case mailbox.CodeUnauthorized:
		b.WriteString("the daemon does not accept this session's token: ")
	case mailbox.CodeNotFound:
		b.WriteString("not found: ")
	case mailbox.CodeConflict:
		b.WriteString("conflict, nothing changed: ")
	case mailbox.CodeUnavailable:
		b.WriteString("the daemon cannot take this now, nothing changed: ")
	default:
		b.WriteString("the daemon refused (" + me.Code + "): ")
	}
	b.WriteString(msg)
	if d := me.Details; d != nil && d.ActualLeaseID != "" && !strings.Contains(msg, d.ActualLeaseID) {
		fmt.Fprintf(&b, " (the current lease is %s, held by %s, attempt %d)", d.ActualLeaseID, d.LeasedTo, d.Attempt)
	}
	return errors.New(b.String())
}
