package bench

import (
	"bufio"
	"strings"
	"testing"
)

func TestLightReaderParsesWhatTheReportNeeds(t *testing.T) {
	long := `{"seq":7,"at_ms":1795373351541,"type":"snapshot","snapshot":{"x":"` + strings.Repeat("y", 200<<10) + `"}}`
	br := bufio.NewReaderSize(strings.NewReader("id: 7\nevent: snapshot\ndata: "+long+"\n\n: ping\n\nid: 8\n"), 64<<10)
	var lines []string
	for {
		l, err := readLinePrefix(br)
		if err != nil {
			break
		}
		lines = append(lines, string(l))
	}
	if len(lines) != 7 || lines[0] != "id: 7" || lines[3] != "" || lines[4] != ": ping" || lines[6] != "id: 8" {
		t.Fatalf("lines = %q", lines)
	}
	if !strings.HasPrefix(lines[2], `data: {"seq":7,"at_ms":1795373351541`) || len(lines[2]) > 1024 {
		t.Fatalf("a 200 KiB data line should come back as its head only, got %d bytes", len(lines[2]))
	}
	if got := atMs([]byte(lines[2][6:])); got != 1795373351541 {
		t.Errorf("atMs = %d", got)
	}
	if got := atMs([]byte(`{"seq":1}`)); got != 0 {
		t.Errorf("atMs without the field = %d", got)
	}
}
