package tui

import (
	"strings"
	"testing"

	"github.com/mailroom/mailroom/daemon/daemontest"
)

// A card an older daemon took (before card text with control characters
// was refused) replays as it was; the Agents pane shows its name and
// skill ids with those characters escaped, never raw.
func TestAgentsPaneEscapesAnOldCardsControlCharacters(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	body := `{"seq":1,"at_ms":1735689600000,"type":"agent_registered","agent":"old@local","card":{"name":"Old\u001b[31m\u202eagent","description":"","version":"","skills":[{"id":"fix\u001b]0;pwned\u0007","name":"Fix","description":"","tags":[],"examples":[]}],"default_input_modes":[],"default_output_modes":[]}}`
	daemontest.WriteLog(t, dir, body)
	d := daemontest.Start(t, daemontest.Options{Dir: dir})
	c := newClient(t, d.URL())
	r := runConsoleSized(t, c, Options{Addr: d.URL()}, 160, 30)
	r.scr.waitFor(t, "the first frame", func(frame) bool { return true })
	r.scr.press(char('5'))
	f := r.scr.waitFor(t, "the old agent's row", func(f frame) bool { return strings.Contains(agentLine(f, "old@local"), "A2A") })
	line := agentLine(f, "old@local")
	if !strings.Contains(line, `A2A "Old\x1b[31m\u202eagent" skills "fix\x1b]0;pwned\a"`) {
		t.Errorf("the old card's row is %q; want its name and skill id escaped", line)
	}
	if strings.ContainsAny(f.String(), "\x1b\x07\u202e") {
		t.Errorf("a control character reached the screen:\n%q", f.String())
	}
}
