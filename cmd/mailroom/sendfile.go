package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// sendFile sends the tasks of a JSON-lines file (or stdin) in batches and
// prints one line a task, in file order: its id, or why it was refused.
// It fails (exit 1) when any task was refused.
func sendFile(ctx context.Context, e *env, cf *clientFlags, path string, asJSON bool) error {
	in, closeIn, err := openTasks(e, path)
	if err != nil {
		return err
	}
	defer closeIn()
	c, ctx, cancel, err := cf.connect(ctx, e)
	if err != nil {
		return err
	}
	defer cancel()
	s := &fileSender{c: c, e: e, asJSON: asJSON}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), mailbox.MaxBodyBytes)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		if s.add(line, text); len(s.batch) == mailbox.DefaultBatchMax {
			if err := s.flush(ctx); err != nil {
				return err
			}
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("reading %s at line %d: %w", path, line+1, err)
	}
	if err := s.flush(ctx); err != nil {
		return err
	}
	if s.refused > 0 {
		return fmt.Errorf("%d of the tasks were refused (their lines say why); the others were sent", s.refused)
	}
	return nil
}

// openTasks opens the file --file names, stdin for "-".
func openTasks(e *env, path string) (io.Reader, func(), error) {
	if path == "-" {
		if e.stdin == nil {
			return os.Stdin, func() {}, nil
		}
		return e.stdin, func() {}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, usagef("--file: %v", err)
	}
	return f, func() { f.Close() }, nil
}

// fileSender sends the lines of a file a batch at a time and prints the
// answers in file order.
type fileSender struct {
	c      *client.Client
	e      *env
	asJSON bool
	// batch are the lines waiting for their answer.
	batch   []pendingLine
	refused int
}

// pendingLine is one line waiting for its answer: a task to send, or the
// refusal it met already.
type pendingLine struct {
	line    int
	task    mailbox.Task
	refusal *mailbox.BatchItem
}

// add decodes a line into the batch; one that is no task waits in it with
// its refusal, to be printed in its place.
func (s *fileSender) add(line int, text string) {
	var t mailbox.Task
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	p := pendingLine{line: line}
	if err := dec.Decode(&t); err != nil {
		p.refusal = &mailbox.BatchItem{Kind: mailbox.KindError, Code: mailbox.CodeInvalid, Message: "not a task: " + strings.TrimPrefix(err.Error(), "json: ")}
	}
	p.task = t
	s.batch = append(s.batch, p)
}

// flush sends the batch's tasks in one request and prints every line's
// answer.
func (s *fileSender) flush(ctx context.Context) error {
	if len(s.batch) == 0 {
		return nil
	}
	var tasks []mailbox.Task
	for _, p := range s.batch {
		if p.refusal == nil {
			tasks = append(tasks, p.task)
		}
	}
	var items []mailbox.BatchItem
	if len(tasks) > 0 {
		var err error
		if items, err = s.c.SendBatch(ctx, tasks); err != nil {
			return fmt.Errorf("sending lines %d to %d: %w (the lines before them were sent)", s.batch[0].line, s.batch[len(s.batch)-1].line, err)
		}
	}
	k := 0
	for _, p := range s.batch {
		it := mailbox.BatchItem{}
		if p.refusal != nil {
			it = *p.refusal
		} else {
			it = items[k]
			it.Message = strings.Replace(it.Message, fmt.Sprintf("tasks[%d]", k), "task", 1)
			k++
		}
		if err := s.report(p.line, it); err != nil {
			return err
		}
	}
	s.batch = s.batch[:0]
	return nil
}

// report prints one line's answer: its task's id, or why it was refused.
func (s *fileSender) report(line int, it mailbox.BatchItem) error {
	if !it.OK() {
		s.refused++
	}
	if s.asJSON {
		it.Index = line
		return writeJSON(s.e.stdout, it)
	}
	if it.OK() {
		fmt.Fprintln(s.e.stdout, it.TaskID)
	} else {
		fmt.Fprintf(s.e.stdout, "error: line %d: %s\n", line, it.Message)
	}
	return nil
}
