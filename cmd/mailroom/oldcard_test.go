package main

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// A card an older daemon took (before control characters in card text
// were refused) is listed with those characters escaped: agent list
// never writes an escape sequence or a bidi override to the terminal.
func TestAgentListEscapesAnOldCardsControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := `{"seq":1,"at_ms":1735689600000,"type":"agent_registered","agent":"old@local","card":{"name":"Old\u001b[31m\u202eagent","description":"","version":"","skills":[{"id":"fix\u001b]0;pwned\u0007","name":"Fix","description":"","tags":[],"examples":[]}],"default_input_modes":[],"default_output_modes":[]}}`
	daemontest.WriteLog(t, dir, body)
	addr := startDaemonIn(t, dir)
	table := mustCLI(t, addr, "agent", "list")
	if strings.ContainsAny(table, "\x1b\x07\u202e") {
		t.Fatalf("agent list wrote a control character raw:\n%q", table)
	}
	if !strings.Contains(table, `"Old\x1b[31m\u202eagent"`) || !strings.Contains(table, `"fix\x1b]0;pwned\a"`) {
		t.Fatalf("agent list does not show the old card's name and skill escaped:\n%s", table)
	}
}
