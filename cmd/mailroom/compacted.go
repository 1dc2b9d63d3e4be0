package main

import (
	"fmt"
	"io"

	"github.com/mailroom/mailroom/mailbox"
)

// printCompacted writes a compaction's outcome for people and, when the
// data dir grew, why: a compaction that makes things bigger looks like a
// bug to whoever ran it.
func printCompacted(w io.Writer, out mailbox.CompactOutcome) {
	fmt.Fprintf(w, "compacted at seq %d: log and snapshot %d bytes -> %d bytes", out.Seq, out.BytesBefore, out.BytesAfter)
	if out.SnapshotPath != "" {
		fmt.Fprintf(w, " (snapshot %s)", out.SnapshotPath)
	}
	fmt.Fprintln(w)
	if grew := out.BytesAfter - out.BytesBefore; grew > 0 {
		fmt.Fprintf(w, "the data dir grew by %d bytes: a snapshot holds the whole live state (every queued and in-flight task, pending result,\n"+
			"remembered task and repair record), and the log before it was smaller than that state. Compaction pays off once the\n"+
			"log outgrows the state; the daemon compacts on its own when the log reaches compact_factor times the snapshot.\n", grew)
	}
}
