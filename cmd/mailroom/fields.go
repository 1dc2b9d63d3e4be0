package main

import (
	"errors"
	"regexp"
	"strings"

	"github.com/mailroom/mailroom/mailbox"
)

// argForField maps, per verb, the request fields the daemon names when it
// refuses a value (details.field) to the flag or argument the user typed
// that value into. A field the verb's user cannot have typed is not listed:
// a refusal of it is the CLI's bug, not a usage error.
var argForField = map[string]map[string]string{
	"send": {
		"id":                           "--id",
		"sender":                       "--from",
		"recipient":                    "--to",
		"intent_text":                  "--intent",
		"task_kind":                    "--kind",
		"parent":                       "--parent",
		"deadline_ms":                  "--deadline",
		"idempotency.key":              "--idempotency-key",
		"idempotency.duplicate_safety": "--idempotent",
		"context":                      "--context",
	},
	"lease": {"recipient": "--recipient"},
	"result post": {
		"task_id":         "TASK_ID",
		"status":          "--status",
		"lease_id":        "--lease-id",
		"error_message":   "--error-message",
		"content[].text":  "--text",
		"content[].value": "--json-value",
	},
	"result next": {"sender": "--sender"},
	"status": {
		"limit":              "-n",
		"state":              "--state",
		"min_lease_age_ms":   "--min-lease-age-ms",
		"deadline_within_ms": "--deadline-within-ms",
	},
	"requeue": {
		"task_id":                "TASK_ID",
		"reason":                 "--reason",
		"command.lease_id":       "--lease-id",
		"command.duplicate_risk": "--duplicate-risk",
		"command.recipient":      "--to",
		"command.new_agent":      "--new-agent",
	},
	"force-error": {
		"task_id":          "TASK_ID",
		"reason":           "--reason",
		"command.lease_id": "--lease-id",
		"command.message":  "--message",
	},
	"move": {
		"task_id":            "TASK_ID",
		"reason":             "--reason",
		"command.queued_for": "--queued-for",
		"command.recipient":  "--to",
		"command.new_agent":  "--new-agent",
	},
	"cancel": {
		"task_id":            "TASK_ID",
		"reason":             "--reason",
		"command.queued_for": "--queued-for",
		"command.message":    "--message",
	},
	"hand-over": {
		"task_id":           "TASK_ID",
		"reason":            "--reason",
		"command.sent_by":   "--sent-by",
		"command.sender":    "--to",
		"command.new_agent": "--new-agent",
	},
	"retry-stale": {
		"min_lease_age_ms": "--min-lease-age-ms",
		"max_attempts":     "--max-attempts",
		"max_requeues":     "--max-requeues",
		"scan_limit":       "--scan-limit",
	},
	"audit": {
		"task_id": "--task",
		"limit":   "-n",
	},
}

// index is a list index in a field path, content[3] -> content[].
var index = regexp.MustCompile(`\[\d+\]`)

// asUsageError names the flag or argument the user typed wherever the
// daemon names its own field for it. A value the daemon refuses (400
// invalid) becomes a usage error: the flag, then the daemon's own words
// about the value. Any other refusal that names a field (a lease that moved
// on, a task never sent) keeps its code and details, with the flag for the
// field in its message. Anything else is returned unchanged, nil included.
func asUsageError(verb string, err error) error {
	var me *mailbox.Error
	if !errors.As(err, &me) || me.Details == nil || me.Details.Field == "" {
		return err
	}
	arg, ok := argFor(verb, me.Details.Field)
	if !ok {
		return err
	}
	// The daemon's message starts with its own name for the field; the
	// flag replaces it rather than standing before it.
	msg, named := strings.CutPrefix(me.Message, me.Details.Field+": ")
	// Another field the message mentions (what to set instead) is named
	// by its flag too.
	for field, other := range argForField[verb] {
		if strings.Contains(field, ".") {
			msg = strings.ReplaceAll(msg, field, other)
		}
	}
	if me.Code == mailbox.CodeInvalid {
		return &usageError{msg: arg + ": " + msg}
	}
	if !named {
		return err
	}
	renamed := *me
	renamed.Message = arg + ": " + msg
	return &renamed
}

// argFor finds the flag for field, or for the nearest field enclosing it
// (a JSON value's inner path belongs to --json-value).
func argFor(verb, field string) (string, bool) {
	args := argForField[verb]
	f := index.ReplaceAllString(field, "[]")
	for {
		if a, ok := args[f]; ok {
			return a, true
		}
		i := strings.LastIndexAny(f, ".[")
		if i < 0 {
			return "", false
		}
		f = f[:i]
	}
}
