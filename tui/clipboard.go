package tui

import (
	"encoding/base64"
	"errors"
	"io"

	"github.com/gdamore/tcell/v2"
)

// osc52 is the terminal sequence that puts text on the clipboard of the
// terminal the operator looks at: it travels over SSH, and tmux passes it
// on (set-clipboard on), where a local clipboard tool would not reach.
func osc52(text string) []byte {
	return []byte("\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(text)) + "\a")
}

// terminalClipboard writes the sequence to the terminal tcell draws on.
type terminalClipboard struct{ screen tcell.Screen }

func (t terminalClipboard) Write(p []byte) (int, error) {
	if t.screen == nil {
		return 0, errNoTerminal
	}
	// Written on the UI goroutine, between frames: nothing else writes to
	// the terminal then.
	if tty, ok := t.screen.Tty(); ok {
		return tty.Write(p)
	}
	return 0, errNoTerminal
}

var errNoTerminal = errors.New("no terminal to write the clipboard sequence to")

// clipboard is where the copy sequence goes.
func (c *Console) clipboard() io.Writer {
	if c.opts.Clipboard != nil {
		return c.opts.Clipboard
	}
	return terminalClipboard{screen: c.screen}
}

// copySelected copies the full task id of the focused pane's selected row.
func (c *Console) copySelected() {
	i, ok := c.panes[c.focus].selected()
	if !ok {
		c.flash(false, "nothing selected to copy")
		return
	}
	c.copyID(c.rows.id(c.focus, i))
}

// copyID puts id on the operator's clipboard and says so.
func (c *Console) copyID(id string) {
	if _, err := c.clipboard().Write(osc52(id)); err != nil {
		c.flash(false, "could not copy "+id+": "+err.Error())
		return
	}
	c.flash(true, "copied "+id+" (OSC 52: your terminal must allow clipboard writes)")
}
