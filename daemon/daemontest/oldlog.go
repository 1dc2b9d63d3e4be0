package daemontest

import (
	"hash/crc32"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// WriteLog writes dir's first log segment holding events (each an event's
// JSON, seq 1, 2, ... in order) as checksummed records, the way a daemon
// writes them: for tests of what an older daemon's log may hold that
// today's daemon refuses at the door, such as card text with control
// characters. Start a daemon on dir afterwards to replay it.
func WriteLog(t testing.TB, dir string, events ...string) {
	t.Helper()
	table := crc32.MakeTable(crc32.Castagnoli)
	var b strings.Builder
	for i, ev := range events {
		b.WriteString(`{"seq":` + strconv.Itoa(i+1) + `,"crc":` + strconv.FormatUint(uint64(crc32.Checksum([]byte(ev), table)), 10) + `,"event":` + ev + "}\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "log-00000000000000000001.jsonl"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}
