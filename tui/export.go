package tui

import (
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// export saves the focused pane, as filtered and sorted, to a CSV file
// (Ctrl-S) or a JSON file (J) in Options.ExportDir, off the UI goroutine,
// and says where.
func (c *Console) export(asJSON bool) {
	p := c.panes[c.focus]
	if c.rows == nil {
		c.flash(false, "nothing to save yet: the console has not received the mailbox")
		return
	}
	// Rows and the pane's index are never changed once built, so the
	// writer may read them while the panes move on.
	x := exportJob{pane: p.id(), rows: c.rows, idx: p.content.idx, params: p.params,
		st: p.staleness(), at: c.opts.Now(), dir: c.opts.ExportDir, json: asJSON}
	c.bg.spawn(func() {
		path, err := x.save()
		c.app.QueueUpdateDraw(func() {
			if err != nil {
				c.flash(false, "could not save the "+x.pane.String()+" pane: "+err.Error())
				return
			}
			c.flash(true, fmt.Sprintf("saved %s %s rows to %s", commas(len(x.idx)), x.pane.String(), path))
		})
	})
}

type exportJob struct {
	pane   paneID
	rows   *rows
	idx    []int32
	params viewParams
	st     staleness
	at     time.Time
	dir    string
	json   bool
}

// save writes the file under a new name, mailroom-<pane>-<time>.csv, and
// returns its absolute path.
func (x exportJob) save() (string, error) {
	dir := x.dir
	if dir == "" {
		dir = "."
	}
	ext := ".csv"
	if x.json {
		ext = ".json"
	}
	base := filepath.Join(dir, "mailroom-"+strings.ToLower(x.pane.String())+"-"+x.at.Format("20060102-150405"))
	var f *os.File
	var err error
	for n := 1; ; n++ {
		name := base + ext
		if n > 1 {
			name = base + "-" + strconv.Itoa(n) + ext
		}
		// Never overwrite: two saves in one second get two files.
		f, err = os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if !errors.Is(err, fs.ErrExist) || n > 100 {
			break
		}
	}
	if err != nil {
		return "", err
	}
	if x.json {
		err = x.writeJSON(f)
	} else {
		err = x.writeCSV(f)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return filepath.Abs(f.Name())
}

// writeCSV writes the pane's columns with nothing cut: full ids, full
// names, the whole intent; then the times the ages are counted from.
func (x exportJob) writeCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	var head []string
	for _, col := range paneColumns[x.pane] {
		head = append(head, col.heading)
	}
	cw.Write(append(head, renderers[x.pane].exportTimes()...))
	for _, j := range x.idx {
		cw.Write(renderers[x.pane].record(x, int(j)))
	}
	cw.Flush()
	return cw.Error()
}

// exportAt is an absolute time as an export writes it.
func exportAt(ms int64) string { return time.UnixMilli(ms).UTC().Format(time.RFC3339Nano) }

// exportDeadline is a deadline as an export writes it: empty for none.
func exportDeadline(d *int64) string {
	if d == nil {
		return ""
	}
	return exportAt(*d)
}

// writeJSON writes the rows as the daemon's own objects, as `--json`
// prints them, with what the pane was narrowed and sorted by.
func (x exportJob) writeJSON(w io.Writer) error {
	out := struct {
		Pane      string `json:"pane"`
		SavedAtMs int64  `json:"saved_at_ms"`
		Filter    string `json:"filter,omitempty"`
		StaleOnly bool   `json:"stale_only,omitempty"`
		Sort      string `json:"sort"`
		Rows      []any  `json:"rows"`
	}{Pane: strings.ToLower(x.pane.String()), SavedAtMs: x.at.UnixMilli(), Filter: x.params.filter, StaleOnly: x.params.staleOnly,
		Sort: x.params.sort.label(x.pane), Rows: make([]any, 0, len(x.idx))}
	switch x.pane {
	case paneAudit:
		out.Sort = "newest first"
	case paneDeliveries:
		out.Sort = "oldest first"
	}
	for _, j := range x.idx {
		var row any
		switch x.pane {
		case paneQueue:
			row = x.rows.queued[j]
		case paneLeases:
			row = x.rows.leases[j]
		case paneWaiting:
			row = x.rows.waiting[j]
		case paneDeliveries:
			row = x.rows.deliveries[j]
		case paneResults:
			row = x.rows.results[j].PendingResult
		case paneAgents:
			// The daemon's object, with the leases the console counted.
			a := x.rows.agents[j]
			a.InFlight = a.held
			if a.held > 0 {
				a.OldestLeaseAgeMs = x.st.nowMs - a.oldestLeasedAtMs
			}
			a.Waiting, a.OldestWaitingMs = a.waiting, 0
			if a.waiting > 0 {
				a.OldestWaitingMs = x.st.nowMs - a.oldestWaitingMs
			}
			row = struct {
				mailbox.AgentInfo
				ProbablyGone bool `json:"probably_gone"`
			}{a.AgentInfo, x.st.gone(&a)}
		default:
			row = x.rows.audit[j]
		}
		out.Rows = append(out.Rows, row)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}
