package tui

import (
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/mailroom/mailroom/internal/testlog"
	"github.com/mailroom/mailroom/mailbox"
)

// savedPath reads the file a save flashed: the outcome line, which wraps
// over up to three rows above the hint bar.
func savedPath(t *testing.T, f frame) string {
	t.Helper()
	y, _, ok := f.find("saved ")
	if !ok {
		t.Fatalf("no save on screen:\n%s", f)
	}
	var b strings.Builder
	for _, l := range f.lines[y : len(f.lines)-1] {
		b.WriteString(strings.TrimRight(l, " "))
	}
	m := regexp.MustCompile(`saved \d+ \w+ rows to ?(/\S+)`).FindStringSubmatch(b.String())
	if m == nil {
		t.Fatalf("no saved file named:\n%s", f)
	}
	return m[1]
}

// y copies the selected row's full task id with the OSC 52 sequence, so it
// reaches the operator's clipboard over SSH and through tmux; the detail
// view copies its task's.
func TestCopyTheSelectedTaskID(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	first := api.send("worker-a@local", "first")
	second := api.send("worker-a@local", "second")
	forSizes(t, func(t *testing.T, w, h int) {
		clip := &testlog.Buffer{}
		r := runConsoleSized(t, api.c, Options{Addr: d.URL(), Clipboard: clip}, w, h)
		r.scr.waitForText(t, short(second))
		r.scr.press(char('j'), char('y'))
		r.scr.waitForText(t, "copied "+second)
		want := "\x1b]52;c;" + base64.StdEncoding.EncodeToString([]byte(second)) + "\a"
		if got := clip.String(); got != want {
			t.Errorf("y wrote %q to the terminal, want %q", got, want)
		}
		r.scr.press(char('k'), key(tcell.KeyEnter))
		r.scr.waitForText(t, "Task "+first)
		r.scr.press(char('y'))
		r.scr.waitForText(t, "copied "+first)
		if got := clip.String(); !strings.HasSuffix(got, "\x1b]52;c;"+base64.StdEncoding.EncodeToString([]byte(first))+"\a") {
			t.Errorf("y in the detail view wrote %q", got)
		}
	})
}

// Ctrl-S saves the focused pane, as filtered and sorted, to a CSV file and
// says where; J saves it as JSON, the daemon's own objects.
func TestSaveThePaneAsShown(t *testing.T) {
	t.Parallel()
	d, api := startMailbox(t)
	for i, w := range []string{"worker-b@local", "worker-a@local", "worker-c@local", "worker-a@local", "worker-b@local"} {
		api.send(w, "job, \"quoted\" "+string(rune('A'+i)))
		api.lease(w)
	}
	api.send("other@local", "not leased")
	forSizes(t, func(t *testing.T, w, h int) {
		dir := t.TempDir()
		r := runConsoleSized(t, api.c, Options{Addr: d.URL(), ExportDir: dir}, w, h)
		r.scr.waitForText(t, "in flight 5")
		// Leases, without worker-c, by holder, zoomed to see every row.
		r.scr.press(char('2'), char('/'))
		r.scr.typeText("job")
		r.scr.press(key(tcell.KeyEnter), char('H'), char('z'))
		r.scr.waitForText(t, "sort:holder↑")
		r.scr.press(char('/'))
		r.scr.press(key(tcell.KeyBackspace), key(tcell.KeyBackspace), key(tcell.KeyBackspace))
		r.scr.typeText("@local")
		r.scr.press(key(tcell.KeyEnter))
		f := r.scr.waitForText(t, "filter:/@local")
		var shown []string // the pane's rows, top to bottom: task, holder
		idRow := regexp.MustCompile(`[│║]([0-9a-f]{8}) +\S+ +(\S+)`)
		for _, l := range f.lines {
			if m := idRow.FindStringSubmatch(l); m != nil {
				shown = append(shown, m[1]+" "+m[2])
			}
		}
		if len(shown) != 5 {
			t.Fatalf("the pane shows %d leases, want 5:\n%s", len(shown), f)
		}

		r.scr.press(key(tcell.KeyCtrlS))
		f = r.scr.waitForText(t, "saved 5 Leases rows to ")
		path := savedPath(t, f)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
		if err != nil {
			t.Fatalf("%s is no CSV: %v\n%s", path, err, data)
		}
		if got := strings.Join(recs[0], ","); !strings.HasPrefix(got, "TASK,AGE,HOLDER,REMOTE,ATT,DEADLINE,LEASE,INTENT,SENDER") {
			t.Errorf("CSV heading = %s", got)
		}
		var saved []string
		for _, rec := range recs[1:] {
			saved = append(saved, mailbox.ShortID(rec[0])+" "+rec[2])
			if len(rec[0]) != 36 || !strings.HasPrefix(rec[7], "job, \"quoted\" ") {
				t.Errorf("a saved row is not whole: %q", rec)
			}
		}
		if strings.Join(saved, "\n") != strings.Join(shown, "\n") {
			t.Errorf("the file's rows\n%s\nare not the pane's\n%s", strings.Join(saved, "\n"), strings.Join(shown, "\n"))
		}

		r.scr.press(char('J'))
		f = r.scr.waitForText(t, ".json")
		var doc struct {
			Pane   string               `json:"pane"`
			Filter string               `json:"filter"`
			Sort   string               `json:"sort"`
			Rows   []mailbox.QueueEntry `json:"rows"`
		}
		data, err = os.ReadFile(savedPath(t, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("the JSON file does not decode: %v\n%s", err, data)
		}
		saved = saved[:0]
		for _, e := range doc.Rows {
			saved = append(saved, mailbox.ShortID(e.Task.ID)+" "+e.LeasedTo)
		}
		if doc.Pane != "leases" || doc.Filter != "@local" || doc.Sort != "holder↑" || strings.Join(saved, "\n") != strings.Join(shown, "\n") {
			t.Errorf("the JSON file says pane %q filter %q sort %q rows\n%s\nwant the pane's\n%s", doc.Pane, doc.Filter, doc.Sort, strings.Join(saved, "\n"), strings.Join(shown, "\n"))
		}
	})
}

// Ctrl-S and J save the Agents pane as shown too: filtered, sorted by a
// Shift-letter, the file's rows are the pane's rows in the pane's order,
// the CSV with the pane's cells, the JSON with the daemon's objects.
func TestSaveTheAgentsPaneAsShown(t *testing.T) {
	t.Parallel()
	forSizes(t, func(t *testing.T, w, h int) {
		m := newStaleMailbox(t) // planner, worker-a and worker-b gone, worker-c fresh
		for range 3 {
			m.api.send("worker-c@local", "waiting")
		}
		m.api.send("worker-b@local", "waiting")
		dir := t.TempDir()
		r := runConsoleSized(t, m.api.c, Options{Addr: m.d.URL(), Now: m.clk.Now, StaleAfter: staleAfterForTests, ExportDir: dir}, w, h)
		r.scr.waitForText(t, "stale 4")
		r.scr.press(char('5'), char('z'), char('/'))
		r.scr.typeText("worker")
		r.scr.press(key(tcell.KeyEnter), char('Q'))
		f := r.scr.waitFor(t, "worker agents by queued↓", func(f frame) bool {
			return f.contains("sort:queued↓") && f.contains("filter:/worker") && !f.contains("planner@local") && agentOrder(f) == "worker-c worker-b worker-a"
		})
		var shown []string // the pane's rows, top to bottom: agent, held, queued
		agentRow := regexp.MustCompile(`[│║](worker-\S+) +(?:probably gone|working|idle) +(?:! )?\S+(?: ago)?(?: \([^)]*\))? +(\d+) +\S+ +(\d+) `)
		for _, l := range f.lines {
			if m := agentRow.FindStringSubmatch(l); m != nil {
				shown = append(shown, m[1]+" "+m[2]+" "+m[3])
			}
		}
		if len(shown) != 3 {
			t.Fatalf("the pane shows %d agents, want 3:\n%s", len(shown), f)
		}

		r.scr.press(key(tcell.KeyCtrlS))
		f = r.scr.waitForText(t, "saved 3 Agents rows to ")
		data, err := os.ReadFile(savedPath(t, f))
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(strings.NewReader(string(data))).ReadAll()
		if err != nil {
			t.Fatalf("the CSV file does not parse: %v\n%s", err, data)
		}
		if got := strings.Join(recs[0], ","); got != "AGENT,STATUS,SEEN,HELD,OLDEST,QUEUED,RESULTS,WAITING,OK/ERR,NOTE,LAST SEEN AT,OLDEST LEASED AT,OLDEST WAITING SINCE" {
			t.Errorf("CSV heading = %s", got)
		}
		var saved []string
		for _, rec := range recs[1:] {
			saved = append(saved, rec[0]+" "+rec[3]+" "+rec[5])
		}
		if strings.Join(saved, "\n") != strings.Join(shown, "\n") {
			t.Errorf("the CSV file's rows\n%s\nare not the pane's\n%s", strings.Join(saved, "\n"), strings.Join(shown, "\n"))
		}

		r.scr.press(char('J'))
		f = r.scr.waitForText(t, ".json")
		var doc struct {
			Pane   string `json:"pane"`
			Filter string `json:"filter"`
			Sort   string `json:"sort"`
			Rows   []struct {
				mailbox.AgentInfo
				ProbablyGone bool `json:"probably_gone"`
			} `json:"rows"`
		}
		if data, err = os.ReadFile(savedPath(t, f)); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			t.Fatalf("the JSON file does not decode: %v\n%s", err, data)
		}
		saved = saved[:0]
		for _, a := range doc.Rows {
			saved = append(saved, a.Agent+" "+strconv.Itoa(a.InFlight)+" "+strconv.Itoa(a.Queued))
			if a.ProbablyGone != (a.Agent != "worker-c@local") {
				t.Errorf("%s is saved as probably gone %v", a.Agent, a.ProbablyGone)
			}
		}
		if doc.Pane != "agents" || doc.Filter != "worker" || doc.Sort != "queued↓" || strings.Join(saved, "\n") != strings.Join(shown, "\n") {
			t.Errorf("the JSON file says pane %q filter %q sort %q rows\n%s\nwant the pane's\n%s", doc.Pane, doc.Filter, doc.Sort, strings.Join(saved, "\n"), strings.Join(shown, "\n"))
		}

	})
}
