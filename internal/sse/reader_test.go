package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// read reads the whole stream, event by event, as "type|id|data" lines,
// and the error that ended it.
func read(stream string, max int, oneByte bool) ([]string, string, error) {
	var r io.Reader = strings.NewReader(stream)
	if oneByte {
		r = iotest.OneByteReader(r)
	}
	rd := NewReader(r, max)
	var got []string
	for {
		ev, err := rd.Next()
		if err != nil {
			return got, rd.LastID(), err
		}
		got = append(got, ev.Type+"|"+ev.ID+"|"+string(ev.Data))
	}
}

func TestReader(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []string
		lastID   string
		err      error
	}{
		{"the daemon's blocks", "id: 7\nevent: task_sent\ndata: {\"a\":1}\n\nevent: agents\ndata: []\n\n",
			[]string{"task_sent|7|{\"a\":1}", "agents||[]"}, "7", io.EOF},
		{"data lines joined by a newline", "data: one\ndata: two\ndata:\n\n", []string{"||one\ntwo\n"}, "", io.EOF},
		{"no space after the colon, and only one taken away", "data:x\ndata:  y\n\n", []string{"||x\n y"}, "", io.EOF},
		{"comments and heartbeats dispatch nothing", ": ping\n\n: hello\ndata: a\n\n", []string{"||a"}, "", io.EOF},
		{"CRLF line ends", "id: 1\r\ndata: a\r\n\r\n", []string{"|1|a"}, "1", io.EOF},
		{"CR line ends", "id: 1\rdata: a\r\rdata: b\r\r", []string{"|1|a", "||b"}, "1", io.EOF},
		{"a field without a colon is the field with no value", "data\n\n", []string{"||"}, "", io.EOF},
		{"a block without data is not dispatched, its type dropped", "event: x\nid: 4\n\ndata: a\n\n", []string{"||a"}, "4", io.EOF},
		{"unknown fields and retry ignored", "retry: 10\nfoo: bar\ndata: a\n\n", []string{"||a"}, "", io.EOF},
		{"an id with NUL is ignored", "id: 3\ndata: a\n\nid: x\x00y\ndata: b\n\n", []string{"|3|a", "||b"}, "3", io.EOF},
		{"a stream cut inside a block drops it", "data: a\n\ndata: b\n", []string{"||a"}, "", io.ErrUnexpectedEOF},
		{"a stream cut inside a line drops it", "data: a\n\ndata: b", []string{"||a"}, "", io.ErrUnexpectedEOF},
		{"an empty stream", "", nil, "", io.EOF},
		{"an event of the bound", "data: " + strings.Repeat("x", 16) + "\n\n", []string{"||" + strings.Repeat("x", 16)}, "", io.EOF},
		{"an event past the bound, in lines", "data: " + strings.Repeat("x", 10) + "\ndata: " + strings.Repeat("x", 10) + "\n\n", nil, "", &TooLargeError{Max: 16}},
		{"a line past the bound", "data: " + strings.Repeat("x", 100) + "\n\n", nil, "", &TooLargeError{Max: 16}},
	} {
		for _, oneByte := range []bool{false, true} {
			got, lastID, err := read(c.in, 16, oneByte)
			if strings.Join(got, ",") != strings.Join(c.want, ",") || lastID != c.lastID {
				t.Errorf("%s (one byte at a time: %v): events %q, last id %q, want %q, %q", c.name, oneByte, got, lastID, c.want, c.lastID)
			}
			var tl *TooLargeError
			if want, ok := c.err.(*TooLargeError); ok {
				if !errors.As(err, &tl) || tl.Max != want.Max {
					t.Errorf("%s: error %v, want %v", c.name, err, want)
				}
			} else if err != c.err {
				t.Errorf("%s: error %v, want %v", c.name, err, c.err)
			}
		}
	}
}

func TestReaderLongLines(t *testing.T) {
	// Lines longer than the reader's buffer are gathered whole.
	big := strings.Repeat("y", 200<<10)
	got, _, err := read("data: "+big+"\n\ndata: small\n\n", 1<<20, false)
	if err != io.EOF || len(got) != 2 || got[0] != "||"+big || got[1] != "||small" {
		t.Fatalf("long line: %d events, error %v", len(got), err)
	}
}

func TestTooLargeSaysTheBound(t *testing.T) {
	if got := (&TooLargeError{Max: 4 << 20}).Error(); got != "an event larger than 4194304 bytes" {
		t.Errorf("Error() = %q", got)
	}
}

func TestReaderKeep(t *testing.T) {
	big := strings.Repeat("y", 200<<10)
	for _, c := range []struct {
		name, in string
		want     []string
		cut      []bool
	}{
		{"a long line cut at Keep", "id: 1\ndata: " + big + "\n\ndata: small\n\n", []string{"1|" + big[:8], "|small"}, []bool{true, false}},
		{"data lines cut at Keep", "data: 12345\ndata: 67890\n\n", []string{"|12345\n67"}, []bool{true}},
		{"an event of Keep whole", "data: 12345678\n\n", []string{"|12345678"}, []bool{false}},
	} {
		for _, oneByte := range []bool{false, true} {
			var r io.Reader = strings.NewReader(c.in)
			if oneByte {
				r = iotest.OneByteReader(r)
			}
			rd := NewReader(r, 16)
			rd.Keep = 8
			var got []string
			var cut []bool
			for {
				ev, err := rd.Next()
				if err != nil {
					if err != io.EOF {
						t.Errorf("%s: %v", c.name, err)
					}
					break
				}
				got, cut = append(got, ev.ID+"|"+string(ev.Data)), append(cut, ev.Cut)
			}
			if strings.Join(got, ",") != strings.Join(c.want, ",") || fmt.Sprint(cut) != fmt.Sprint(c.cut) {
				t.Errorf("%s (one byte at a time: %v): %q cut %v, want %q cut %v", c.name, oneByte, got, cut, c.want, c.cut)
			}
		}
	}
}

func TestReaderComments(t *testing.T) {
	rd := NewReader(strings.NewReader(": ping\n\n:x\ndata: a\n\n"), 16)
	var comments []string
	rd.OnComment = func(text []byte) { comments = append(comments, string(text)) }
	ev, err := rd.Next()
	if err != nil || string(ev.Data) != "a" || strings.Join(comments, ",") != " ping,x" {
		t.Errorf("event %q, error %v, comments %q", ev.Data, err, comments)
	}
}

// The reader reads what the writer writes.
func TestReaderReadsTheWriter(t *testing.T) {
	var buf bytes.Buffer
	AppendBlock(&buf, "12", "task_sent", []byte(`{"seq":12}`))
	buf.Write(Ping)
	AppendBlock(&buf, "", "agents", []byte(`[]`))
	got, lastID, err := read(buf.String(), 1<<10, false)
	if err != io.EOF || strings.Join(got, ",") != `task_sent|12|{"seq":12},agents||[]` || lastID != "12" {
		t.Errorf("got %q, last id %q, error %v", got, lastID, err)
	}
}

// BenchmarkReader reads a stream of task_sent events as the daemon writes
// them.
func BenchmarkReader(b *testing.B) {
	var buf bytes.Buffer
	for i := range 1000 {
		AppendBlock(&buf, "1"+strings.Repeat("0", i%6), "task_sent", []byte(`{"seq":12,"at_ms":1795373351541,"type":"task_sent","task_id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","task":{"id":"6f9619ff-8b86-4d11-b42d-00c04fc964ff","sender":"planner@local","recipient":"coder@local","intent_text":"fix the bug"}}`))
	}
	stream := buf.Bytes()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		rd := NewReader(bytes.NewReader(stream), 1<<20)
		for {
			if _, err := rd.Next(); err != nil {
				break
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/event")
}
