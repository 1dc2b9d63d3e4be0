package ssetest

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestReader(t *testing.T) {
	r := NewReader(strings.NewReader(": ping\n\nid: 3\nevent: task_sent\ndata: {}\n\nevent: agents\ndata: []\n\n"))
	b, err := r.Next()
	if err != nil || !b.Heartbeat() || !b.Comment {
		t.Fatalf("first block %+v, %v; want a heartbeat", b, err)
	}
	b, err = r.NextEvent()
	if err != nil || b.ID != "3" || b.Event != "task_sent" || b.Data != "{}" || b.Raw != "id: 3\nevent: task_sent\ndata: {}\n" {
		t.Fatalf("second block %+v, %v", b, err)
	}
	b, err = r.NextEvent()
	if err != nil || b.ID != "" || b.Event != "agents" || b.Data != "[]" {
		t.Fatalf("third block %+v, %v", b, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Fatalf("at the end: %v, want io.EOF", err)
	}
}

func TestReaderRefusesWhatTheWriterNeverWrites(t *testing.T) {
	for _, s := range []string{"retry: 5\n\n", "data: 1\ndata: 2\n\n", "id: 1\ndata: {}", "data:{}\n\n"} {
		if _, err := NewReader(strings.NewReader(s)).Next(); err == nil || errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("%q: %v, want a refusal", s, err)
		}
	}
}
