package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/mailroom/mailroom/daemon/store/logstore"
	"github.com/mailroom/mailroom/mailbox"
)

const logSummary = "check a stopped daemon's log, or move aside the record that keeps it from starting"

func runLog(ctx context.Context, e *env, args []string) error {
	return runGroup(ctx, e, "log", logSummary,
		"  mailroom log check --data-dir /var/lib/mailroom\n  mailroom log repair --data-dir /var/lib/mailroom --seq 3 --reason 'written by the 1.4.0 bug'\n",
		[]subVerb{{"check", logCheckSummary, runLogCheck}, {"repair", logRepairSummary, runLogRepair}}, args)
}

const logCheckSummary = "replay the log as the daemon would on start, changing nothing, and name the first record it cannot replay"

func runLogCheck(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "log check",
		summary: logCheckSummary,
		usage:   "--data-dir DIR [--json]",
		example: "mailroom log check --data-dir /var/lib/mailroom\n" +
			"# exit 0: the daemon can start (torn last lines it cuts itself are warnings)\n" +
			"# exit 1: it cannot; the report names the record and the 'mailroom log repair' command\n" +
			"# refuses to run while a daemon has the data dir open",
	})
	dataDir := addDataDirFlag(fs)
	asJSON := fs.Bool("json", false, "print the report as one JSON object")
	if err := parseDataDirFlags(fs, args, dataDir, "data-dir"); err != nil {
		return err
	}
	r, err := logstore.Check(*dataDir)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(e.stdout, checkOutputOf(r)); err != nil {
			return err
		}
	} else {
		printCheck(e.stdout, r)
	}
	return verdict(r, "cannot")
}

const logRepairSummary = "replace the one record 'log check' names with a record_skipped event, keeping the original segment as .broken"

func runLogRepair(_ context.Context, e *env, args []string) error {
	fs := newFlagSet(e, verbHelp{
		verb:    "log repair",
		summary: logRepairSummary,
		usage:   "--data-dir DIR --seq N [--reason TEXT] [--json]",
		example: "mailroom log check --data-dir /var/lib/mailroom    # names the record, say seq 3\n" +
			"mailroom log repair --data-dir /var/lib/mailroom --seq 3 --reason 'written by the 1.4.0 bug'\n" +
			"# refuses unless seq 3 is the first record 'log check' cannot replay; checks the log again after\n" +
			"# exit 0: the daemon can start now; exit 1: refused, or another record must be moved aside",
	})
	dataDir := addDataDirFlag(fs)
	seq := fs.Uint64("seq", 0, "the seq of the record to move aside, as 'mailroom log check' names it (required)")
	reason := fs.String("reason", "", "why, recorded in the record_skipped event")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	if err := parseDataDirFlags(fs, args, dataDir, "data-dir", "seq"); err != nil {
		return err
	}
	if *seq == 0 {
		return usagef("--seq: got 0, expected the seq of the record 'mailroom log check' names (1 or more)")
	}
	out, err := logstore.SkipRecord(*dataDir, *seq, *reason)
	if err != nil {
		return err
	}
	if *asJSON {
		if err := writeJSON(e.stdout, repairOutput{
			MovedAside:  recordOutputOf(out.Skipped),
			KeptAs:      out.KeptAs,
			Replacement: out.Replacement,
			After:       checkOutputOf(out.After),
		}); err != nil {
			return err
		}
	} else {
		p := out.Skipped
		fmt.Fprintf(e.stdout, "moved %s aside\n", p.Name())
		fmt.Fprintf(e.stdout, "  file       %s, line %d: now a %s event\n", p.Path, p.Line, out.Replacement.Type)
		fmt.Fprintf(e.stdout, "  original   %s (the segment as it was)\n", out.KeptAs)
		fmt.Fprintf(e.stdout, "  reason     %s\n\nchecking the log again:\n", out.Replacement.Reason)
		printCheck(e.stdout, out.After)
	}
	return verdict(out.After, "still cannot")
}

func addDataDirFlag(fs *verbFlags) *string {
	return fs.String("data-dir", "", "the daemon's data directory (required); no daemon may be running on it")
}

// parseDataDirFlags parses args, which take no positional arguments, and
// requires the named flags and a non-blank --data-dir.
func parseDataDirFlags(fs *verbFlags, args []string, dataDir *string, names ...string) error {
	if _, err := parseExact(fs, args); err != nil {
		return err
	}
	if err := required(fs, names...); err != nil {
		return err
	}
	if strings.TrimSpace(*dataDir) == "" {
		return usagef("--data-dir: got %q, expected the daemon's data directory", *dataDir)
	}
	return nil
}

// verdict is nil when the daemon can start on r's log, and otherwise says
// in one line why not and what to do (the report above has the details).
func verdict(r logstore.Report, cannot string) error {
	p := r.Problem
	switch {
	case r.Damage != nil:
		return fmt.Errorf("the daemon %s start on data dir %s: its log is damaged in a way that moving a record aside does not fix (see the report)", cannot, r.Dir)
	case p == nil:
		return nil
	case p.Snapshot:
		return fmt.Errorf("the daemon %s start on data dir %s: snapshot seq %d cannot be replayed, and a snapshot cannot be moved aside; restore the data dir from a backup", cannot, r.Dir, p.Seq)
	}
	return fmt.Errorf("the daemon %s start on data dir %s: record seq %d cannot be replayed; move it aside with '%s'", cannot, r.Dir, p.Seq, p.RepairCommand())
}

func printCheck(w io.Writer, r logstore.Report) {
	switch {
	case r.Healthy():
		fmt.Fprintf(w, "log in %s: the daemon can start\n", r.Dir)
	default:
		fmt.Fprintf(w, "log in %s: the daemon cannot start\n", r.Dir)
	}
	if r.Damage == nil {
		if r.SnapshotPath != "" {
			fmt.Fprintf(w, "  snapshot   seq %d (%s)\n", r.SnapshotSeq, r.SnapshotPath)
		} else {
			fmt.Fprintf(w, "  snapshot   none\n")
		}
		fmt.Fprintf(w, "  segments   %s\n", orDash(strings.Join(r.Segments, "\n             ")))
		fmt.Fprintf(w, "  events     %d replayed after the snapshot\n", r.Events)
		fmt.Fprintf(w, "  last seq   %d\n", r.LastSeq)
	}
	for _, warning := range r.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warning)
	}
	if r.Damage != nil {
		fmt.Fprintf(w, "damage: %v\n", r.Damage)
	}
	p := r.Problem
	if p == nil {
		return
	}
	fmt.Fprintf(w, "cannot replay %s:\n", p.Name())
	fmt.Fprintf(w, "  file       %s\n", p.Path)
	if !p.Snapshot {
		fmt.Fprintf(w, "  line       %d, byte offset %d\n", p.Line, p.Offset)
	}
	if p.AtMs != 0 {
		fmt.Fprintf(w, "  at         %s\n", time.UnixMilli(p.AtMs).UTC().Format(time.RFC3339Nano))
	}
	fmt.Fprintf(w, "  problem    %s\n", p.Problem())
	if p.Snapshot {
		fmt.Fprintf(w, "  what now   %s\n", p.Advice())
		return
	}
	if p.Refused {
		fmt.Fprintf(w, "  note       if another version of mailroom wrote this log, run that version instead\n")
	}
	fmt.Fprintf(w, "  repair     %s\n", p.RepairCommand())
	fmt.Fprintf(w, "             (the original segment is kept as %s.broken)\n", filepath.Base(p.Path))
}

// checkOutput is 'log check --json'.
type checkOutput struct {
	DataDir  string          `json:"data_dir"`
	Healthy  bool            `json:"healthy"`
	Snapshot *snapshotOutput `json:"snapshot"`
	Segments []string        `json:"segments"`
	Events   int             `json:"events"`
	LastSeq  uint64          `json:"last_seq"`
	Warnings []string        `json:"warnings"`
	Problem  *recordOutput   `json:"problem"`
	Damage   *string         `json:"damage"`
}

type snapshotOutput struct {
	Path string `json:"path"`
	Seq  uint64 `json:"seq"`
}

// recordOutput is a record that cannot be replayed, in --json.
type recordOutput struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Offset   int64  `json:"offset"`
	Seq      uint64 `json:"seq"`
	Type     string `json:"type,omitempty"`
	TaskID   string `json:"task_id,omitempty"`
	AtMs     int64  `json:"at_ms,omitempty"`
	Snapshot bool   `json:"snapshot"`
	// Refused: it decodes but replay refuses it; otherwise it does not decode.
	Refused bool `json:"refused"`
	// Cause says what is wrong with it.
	Cause string `json:"cause"`
	// RepairCommand is empty for a snapshot, which cannot be moved aside.
	RepairCommand string `json:"repair_command,omitempty"`
	Advice        string `json:"advice"`
}

// repairOutput is 'log repair --json'.
type repairOutput struct {
	MovedAside  *recordOutput `json:"moved_aside"`
	KeptAs      string        `json:"kept_as"`
	Replacement mailbox.Event `json:"replacement"`
	After       checkOutput   `json:"after"`
}

func checkOutputOf(r logstore.Report) checkOutput {
	out := checkOutput{DataDir: r.Dir, Healthy: r.Healthy(), Segments: r.Segments, Events: r.Events, LastSeq: r.LastSeq,
		Warnings: r.Warnings, Problem: recordOutputOf(r.Problem)}
	if out.Segments == nil {
		out.Segments = []string{}
	}
	if out.Warnings == nil {
		out.Warnings = []string{}
	}
	if r.SnapshotPath != "" {
		out.Snapshot = &snapshotOutput{Path: r.SnapshotPath, Seq: r.SnapshotSeq}
	}
	if r.Damage != nil {
		d := r.Damage.Error()
		out.Damage = &d
	}
	return out
}

func recordOutputOf(p *logstore.RecordError) *recordOutput {
	if p == nil {
		return nil
	}
	return &recordOutput{File: p.Path, Line: p.Line, Offset: p.Offset, Seq: p.Seq, Type: p.Type, TaskID: p.TaskID, AtMs: p.AtMs,
		Snapshot: p.Snapshot, Refused: p.Refused, Cause: p.Problem(), RepairCommand: p.RepairCommand(), Advice: p.Advice()}
}
