package sse

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestBlocks(t *testing.T) {
	for _, c := range []struct {
		id, typ, data, want string
	}{
		{"7", "task_sent", `{"a":1}`, "id: 7\nevent: task_sent\ndata: {\"a\":1}\n\n"},
		{"", "agents", `[]`, "event: agents\ndata: []\n\n"},
		{"9", "", `{}`, "id: 9\ndata: {}\n\n"},
		{"", "", `{}`, "data: {}\n\n"},
	} {
		if got := string(Block(c.id, c.typ, []byte(c.data))); got != c.want {
			t.Errorf("Block(%q, %q) = %q, want %q", c.id, c.typ, got, c.want)
		}
	}
}

func TestWriterChunksAndPings(t *testing.T) {
	rec := httptest.NewRecorder()
	w := Open(rec, time.Second)
	big := bytes.Repeat([]byte("x"), 3*WriteChunk+5)
	if err := w.Write(big); err != nil {
		t.Fatal(err)
	}
	if err := w.Ping(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if got := rec.Header().Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("Content-Type %q", got)
	}
	if want := string(big) + ": ping\n\n"; rec.Body.String() != want {
		t.Errorf("body of %d bytes, want %d", rec.Body.Len(), len(want))
	}
}

func anyJSON(mt string, _ map[string]string) bool { return mt == "application/json" }

func TestReadBodyProblems(t *testing.T) {
	for _, c := range []struct {
		ct, body string
		want     Kind
	}{
		{"text/plain", `{}`, ContentType},
		{"application/json", strings.Repeat(" ", 20), Empty},
		{"", strings.Repeat("x", 40), TooLarge},
		{"application/json", "{\"a\":\"\xff\"}", BadUTF8},
		{"application/json; charset=utf-8", `{"a":1}`, 0},
	} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(c.body))
		if c.ct != "" {
			r.Header.Set("Content-Type", c.ct)
		}
		body, p := ReadBody(httptest.NewRecorder(), r, 32, anyJSON)
		switch {
		case c.want == 0 && (p != nil || string(body) != c.body):
			t.Errorf("%q: got %q, %v", c.body, body, p)
		case c.want != 0 && (p == nil || p.Kind != c.want):
			t.Errorf("%q: got %v, want kind %d", c.body, p, c.want)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("{\"a\":\"\xff\"}"))
	if _, p := ReadBody(httptest.NewRecorder(), r, 32, anyJSON); p == nil || p.Offset != 6 {
		t.Errorf("invalid UTF-8 at %v, want offset 6", p)
	}
}

func TestLastEventID(t *testing.T) {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	if id, p := LastEventID(r); id != nil || p != nil {
		t.Errorf("no header: %v %v", id, p)
	}
	r.Header.Set(HeaderLastEventID, "42")
	if id, p := LastEventID(r); p != nil || id == nil || *id != 42 {
		t.Errorf("42: %v %v", id, p)
	}
	r.Header.Set(HeaderLastEventID, "-1")
	if _, p := LastEventID(r); p == nil || p.Kind != BadLastEventID || p.Field != HeaderLastEventID || p.Value != "-1" {
		t.Errorf("-1: %v", p)
	}
	if _, p := ParseID("last_event_id", ""); p == nil || p.Field != "last_event_id" {
		t.Errorf("empty parameter: %v", p)
	}
}

// TestUnframedStreamIsTheRawBytes reads an OpenUnframed stream off the
// wire, as a real HTTP/1.1 server sends it: no chunked framing, the body
// is exactly the bytes written, and it ends when the connection closes.
// Open, beside it, still frames its body in chunks and keeps the
// connection.
func TestUnframedStreamIsTheRawBytes(t *testing.T) {
	body := "id: 1\nevent: e\ndata: {}\n\n" + strings.Repeat("x", 9000)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		open := Open
		if r.URL.Path == "/unframed" {
			open = OpenUnframed
		}
		s := open(w, time.Second)
		defer s.Close()
		if err := s.Write(nil); err != nil {
			t.Error(err)
		}
		for _, part := range []string{body[:30], body[30:]} {
			if err := s.Write([]byte(part)); err != nil {
				t.Error(err)
			}
		}
	}))
	defer srv.Close()
	for _, c := range []struct {
		path    string
		chunked bool
	}{{"/unframed", false}, {"/framed", true}} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", c.path)
		_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		br := bufio.NewReader(conn)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		chunked := len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"
		if chunked != c.chunked || resp.Close == c.chunked {
			t.Errorf("%s: Transfer-Encoding %v, Close %v; want chunked %v", c.path, resp.TransferEncoding, resp.Close, c.chunked)
		}
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s: reading the body: %v", c.path, err)
		}
		if string(got) != body {
			t.Errorf("%s: body of %d bytes, want the %d written", c.path, len(got), len(body))
		}
		if !c.chunked {
			// Read to the end of the stream: the server closed it.
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("%s: after the body, read %d bytes, err %v; want the connection closed", c.path, n, err)
			}
		}
		conn.Close()
	}
}
