package tui

import (
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// Dialogs are modals sized to their content: an 80x24 terminal must show
// every field.

// Dialog geometry: wide enough for a full lease id beside its label, and
// never wider or taller than the screen.
const (
	dialogWidth = 90
	fieldWidth  = 50
)

// modal centers a primitive on the screen at the size it asks for, never
// larger than the screen, so that an 80x24 terminal shows every field.
type modal struct {
	tview.Primitive
	size func(screenW, screenH int) (w, h int)
}

func (m *modal) Draw(screen tcell.Screen) {
	sw, sh := screen.Size()
	w, h := m.size(sw, sh)
	w, h = min(w, sw), min(h, sh)
	m.SetRect((sw-w)/2, (sh-h)/2, w, h)
	m.Primitive.Draw(screen)
}

// wrappedRows is how many rows text takes wrapped at width.
func wrappedRows(text string, width int) int {
	if text == "" || width <= 0 {
		return 0
	}
	n := 0
	for _, line := range strings.Split(text, "\n") {
		n += max(1, len(tview.WordWrap(line, width)))
	}
	return n
}
