package tui

import (
	"unicode/utf8"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
)

// diffScreen is the terminal as the console's application sees it: every
// frame is drawn into a buffer of its own, and Show passes on to the
// terminal only the cells that differ from the last frame shown. tview
// clears the whole screen before each frame and draws every cell again,
// and tcell counts a cell drawn over a cleared one as changed even when it
// holds what the terminal already shows, so without this every frame
// rewrote every character on screen (12 KB a frame at 200x50): what an
// idle console sent over SSH once a second. A frame that changes nothing
// writes nothing.
type diffScreen struct {
	tcell.Screen
	// back is the frame being drawn, shown what the terminal was last
	// given, cell by cell (nil until the first frame, or after a resize
	// or a Sync: then every cell is given again).
	back, shown []dcell
	w, h        int
	// cursor is where the cursor was asked to be (hidden: x < 0), and
	// cursorShown where it was when the terminal last showed a frame.
	cursor, cursorShown [2]int
	// shows counts the frames given to the terminal.
	shows uint64
	// widths are the widths of the characters past 0x1100 drawn so far.
	widths map[rune]int
	// initErr is what Init said: tview's SetScreen, which calls it, does
	// not.
	initErr error
}

// dcell is one cell: its character, any combining ones, its style. The
// right half of a wide character is covered.
type dcell struct {
	r       rune
	comb    string
	style   tcell.Style
	covered bool
}

func newDiffScreen(s tcell.Screen) *diffScreen {
	return &diffScreen{Screen: s, cursor: [2]int{-1, -1}, cursorShown: [2]int{-2, -2}}
}

// fit sizes the buffers to the terminal; a new size draws everything anew.
func (d *diffScreen) fit() {
	w, h := d.Screen.Size()
	if w == d.w && h == d.h && d.shown != nil {
		return
	}
	if w != d.w || h != d.h || d.back == nil {
		d.back = make([]dcell, w*h)
		for i := range d.back {
			d.back[i] = dcell{r: ' '}
		}
	}
	d.w, d.h = w, h
	d.shown = make([]dcell, w*h)
}

func (d *diffScreen) Init() error {
	if err := d.Screen.Init(); err != nil {
		d.initErr = err
		return err
	}
	d.fit()
	return nil
}

func (d *diffScreen) Clear() { d.Fill(' ', tcell.StyleDefault) }

func (d *diffScreen) Fill(r rune, style tcell.Style) {
	d.fit()
	for i := range d.back {
		d.back[i] = dcell{r: r, style: style}
	}
}

func (d *diffScreen) at(x, y int) *dcell {
	if x < 0 || y < 0 || x >= d.w || y >= d.h {
		return nil
	}
	return &d.back[y*d.w+x]
}

func (d *diffScreen) SetContent(x, y int, primary rune, combining []rune, style tcell.Style) {
	c := d.at(x, y)
	if c == nil {
		return
	}
	comb := ""
	if len(combining) > 0 {
		comb = string(combining)
	}
	*c = dcell{r: primary, comb: comb, style: style}
}

func (d *diffScreen) SetCell(x, y int, style tcell.Style, ch ...rune) {
	if len(ch) > 0 {
		d.SetContent(x, y, ch[0], ch[1:], style)
	}
}

func (d *diffScreen) Put(x, y int, str string, style tcell.Style) (string, int) {
	if str == "" {
		return "", 0
	}
	r, n := utf8.DecodeRuneInString(str)
	d.SetContent(x, y, r, nil, style)
	return str[n:], d.width(r)
}

func (d *diffScreen) PutStr(x, y int, str string) {
	d.PutStrStyled(x, y, str, tcell.StyleDefault)
}

func (d *diffScreen) PutStrStyled(x, y int, str string, style tcell.Style) {
	for str != "" && x < d.w {
		var w int
		str, w = d.Put(x, y, str, style)
		x += w
	}
}

func (d *diffScreen) Get(x, y int) (string, tcell.Style, int) {
	c := d.at(x, y)
	if c == nil {
		return " ", tcell.StyleDefault, 1
	}
	s := string(c.r) + c.comb
	return s, c.style, d.width(c.r)
}

func (d *diffScreen) GetContent(x, y int) (rune, []rune, tcell.Style, int) {
	c := d.at(x, y)
	if c == nil {
		return ' ', nil, tcell.StyleDefault, 1
	}
	var comb []rune
	if c.comb != "" {
		comb = []rune(c.comb)
	}
	return c.r, comb, c.style, d.width(c.r)
}

// width is how many columns r takes: two for a wide character. The
// widths of the characters past ASCII's neighbours (borders, the
// sparkline, …) are remembered: Show asks for every cell of every frame.
func (d *diffScreen) width(r rune) int {
	if r < 0x1100 {
		return 1
	}
	w, ok := d.widths[r]
	if !ok {
		if d.widths == nil {
			d.widths = map[rune]int{}
		}
		w = max(1, tview.TaggedStringWidth(string(r)))
		d.widths[r] = w
	}
	return w
}

func (d *diffScreen) ShowCursor(x, y int) {
	d.cursor = [2]int{x, y}
	d.Screen.ShowCursor(x, y)
}

func (d *diffScreen) HideCursor() {
	d.cursor = [2]int{-1, -1}
	d.Screen.HideCursor()
}

// Show gives the terminal the cells that changed since the last frame,
// and shows them; with none changed, and the cursor where it was, it does
// nothing at all.
func (d *diffScreen) Show() {
	d.fit()
	changed := d.cursor != d.cursorShown
	for y := 0; y < d.h; y++ {
		for x := 0; x < d.w; x++ {
			i := y*d.w + x
			c := d.back[i]
			if d.shown[i] != c {
				var comb []rune
				if c.comb != "" {
					comb = []rune(c.comb)
				}
				d.Screen.SetContent(x, y, c.r, comb, c.style)
				d.shown[i] = c
				changed = true
				if d.width(c.r) > 1 && x+1 < d.w {
					d.shown[i+1] = dcell{covered: true}
				}
			}
			if d.width(c.r) > 1 {
				x++
			}
		}
	}
	if !changed {
		return
	}
	d.cursorShown = d.cursor
	d.shows++
	d.Screen.Show()
}

// Sync draws every cell again, whatever the terminal shows.
func (d *diffScreen) Sync() {
	d.shown = nil
	d.fit()
	d.Screen.Sync()
}
