package main

import (
	"bytes"
	"context"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"

	"github.com/mailroom/mailroom/daemon/auth"
	"github.com/mailroom/mailroom/mailbox"
)

const tokenSummary = "make bearer tokens for the daemon's config (token new)"

// runToken dispatches to its one sub-verb so that later ones (revoke, list)
// have a place to go.
func runToken(ctx context.Context, e *env, args []string) error {
	help := func(w io.Writer) {
		fmt.Fprintf(w, "mailroom token: %s\n\nUsage:\n  mailroom token new   %s\n\nExample:\n  mailroom token new --principal planner@local --cap a2a.send.* --cap a2a.drain\n\nRun 'mailroom token new --help' for flags.\n", tokenSummary, tokenNewSummary)
	}
	if len(args) == 0 {
		return usagef("missing sub-command: new")
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		help(e.stdout)
		return errHelpShown
	case "new":
		if err := runTokenNew(ctx, e, args[1:]); err != nil {
			return &verbError{verb: "token new", err: err}
		}
		return nil
	}
	return usagef("unknown sub-command %q, expected new", args[0])
}

const tokenNewSummary = "print a fresh token for a principal and the config entry (its hash) to paste"

// newToken is the --json shape of 'token new'.
type newToken struct {
	Principal string   `json:"principal"`
	Token     string   `json:"token"`
	SHA256    string   `json:"sha256"`
	Caps      []string `json:"caps"`
}

func runTokenNew(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "token new",
		summary: tokenNewSummary,
		usage:   "--principal P --cap CAP [--cap CAP]... [--json]",
		example: "mailroom token new --principal planner@local --cap a2a.send.* --cap a2a.drain",
	})
	principal := fs.String("principal", "", "who the token speaks for: an agent id such as planner@local, or an operator name (required)")
	var caps repeated
	fs.Var(&caps, "cap", "a capability, repeatable: a2a.send.<recipient|*>, a2a.recv, a2a.respond.<sender|*>, a2a.drain, a2a.read, a2a.repair.requeue, a2a.repair.force_error, a2a.compact, a2a.admin (at least one)")
	asJSON := fs.Bool("json", false, "print {principal, token, sha256, caps} as JSON")
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if err := required(fs, "principal", "cap"); err != nil {
		return err
	}
	if err := mailbox.ValidatePrincipal("--principal", *principal); err != nil {
		return usagef("%s", errorText(err))
	}
	for _, c := range caps {
		if err := auth.ValidateCap(c); err != nil {
			return usagef("--cap: %v", err)
		}
	}
	token, hash, err := auth.NewToken()
	if err != nil {
		return fmt.Errorf("reading randomness for the token: %w", err)
	}
	entry := auth.Token{Principal: *principal, SHA256: hash, Caps: caps}
	// The daemon validates entries with auth.New; check the one we print
	// the same way, so what we suggest is what it accepts.
	if _, err := auth.New([]auth.Token{entry}); err != nil {
		return usagef("%v", err)
	}
	if *asJSON {
		return writeJSON(e.stdout, newToken{Principal: *principal, Token: token, SHA256: hash, Caps: caps})
	}
	snippet, err := tokenSnippet(entry)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "token for %s:\n\n  %s\n\n", *principal, token)
	fmt.Fprintf(e.stdout, "It is shown only now: mailroom keeps only its hash. Give it to %s\n(as --token or MAILROOM_TOKEN) and keep it out of shell histories and logs.\n\n", *principal)
	// Not indented: it is pasted into a file where tokens: is a top-level key.
	fmt.Fprintf(e.stdout, "Add this to the daemon's config file (if it has tokens: already, add only the\n\"- principal\" entry under it), then restart the daemon:\n\n%s", snippet)
	return nil
}

// tokenSnippet is the entry as YAML under a tokens: key, written by the
// same YAML library the daemon reads it with, so quoting is always right.
func tokenSnippet(t auth.Token) (string, error) {
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(map[string][]auth.Token{"tokens": {t}}); err != nil {
		return "", err
	}
	if err := enc.Close(); err != nil {
		return "", err
	}
	return b.String(), nil
}
