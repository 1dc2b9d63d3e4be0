package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

var (
	convKills    = flag.Int("conv.kills", 3, "kill -9 rounds of TestFaultKill9Conversations (.ci/run runs 10)")
	convTLSKills = flag.Int("conv.tls-kills", 2, "kill -9 rounds of TestFaultKill9ConversationsTLS (.ci/run runs 4)")
)

// convPairs is how many sender/recipient pairs hold conversations at once.
const convPairs = 3

// convMaxQuestions is the most questions a worker asks on one task before
// it finishes it.
const convMaxQuestions = 3

// A worker's k-th question on a task and its sender's answer to it are
// texts of their own, so every turn found after a restart names the
// request that made it.
func questionText(id string, k int) string { return fmt.Sprintf("q%d %s", k, id) }
func answerText(question string) string    { return "a: " + question }

// convLedger is what the conversation suite's clients were told
// (acknowledged: a 2xx answer) and what they tried, across every kill.
type convLedger struct {
	ledgerBase

	tried      map[string]bool      // task ids a send was attempted for
	sent       map[string]bool      // acknowledged sends
	askTried   map[string]bool      // question texts a worker posted
	asked      map[string][]string  // acknowledged questions per task, in order
	replyTried map[string]bool      // answer texts a sender posted
	replied    map[string][]string  // acknowledged answers per task (a duplicate reply too: the daemon said the answer is there)
	turnsAcked map[string]int       // the most turns a reply's answer said the task holds
	finTried   map[string]bool      // tasks a final result was posted for
	finished   map[string]bool      // acknowledged final results
	unanswered map[string][2]string // replies the kill left without an answer: task -> sender and question, retried after the restart

	acks, replies, questions, duplicates, conflicts, retried atomic.Int64
	waitingSeen                                              int // tasks waiting when a verify ran, summed
}

func newConvLedger(t *testing.T) *convLedger {
	return &convLedger{ledgerBase: ledgerBase{t: t}, tried: map[string]bool{}, sent: map[string]bool{}, askTried: map[string]bool{}, asked: map[string][]string{},
		replyTried: map[string]bool{}, replied: map[string][]string{}, turnsAcked: map[string]int{}, finTried: map[string]bool{}, finished: map[string]bool{},
		unanswered: map[string][2]string{}}
}

// failed takes a request that got no answer: the client stops, as every
// later request would fail too. That is expected when the run ends or the
// daemon is being killed; any other failure fails the test.
// convLoad is one pair's sender and worker.
type convLoad struct {
	c                 *client.Client
	l                 *convLedger
	sender, recipient string
}

// worker leases its recipient's tasks and, on each, asks its sender a
// question (input_required or auth_required) up to convMaxQuestions
// times, or finishes it. A lease after a reply must carry the answer.
func (w *convLoad) worker(ctx context.Context, rng *rand.Rand) {
	for ctx.Err() == nil {
		// The daemon holds the request until a task arrives (or 100 ms):
		// no spinning on an empty queue.
		leases, err := w.c.LeaseN(ctx, w.recipient, 1, 100*time.Millisecond)
		if err != nil {
			w.l.failed(ctx, "lease", err)
			return
		}
		for _, lt := range leases {
			task := lt.Task
			if msg := turnsProblem(task.Turns); msg != "" {
				w.l.t.Errorf("task %s leased with turns %s", task.ID, msg)
			}
			asked := 0
			for _, tu := range task.Turns {
				if tu.Role == mailbox.RoleWorker {
					asked++
				}
			}
			r := mailbox.Result{TaskID: task.ID, LeaseID: lt.Lease.LeaseID}
			if asked < convMaxQuestions && rng.IntN(4) != 0 {
				q := questionText(task.ID, asked+1)
				r.Status = []string{mailbox.StatusInputRequired, mailbox.StatusAuthRequired}[rng.IntN(2)]
				r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: q}}
				w.l.do(func() { w.l.askTried[q] = true })
				if err := w.c.PostResult(ctx, r); err != nil {
					w.l.failed(ctx, "ask", err)
					return
				}
				w.l.do(func() { w.l.asked[task.ID] = append(w.l.asked[task.ID], q) })
				w.l.questions.Add(1)
			} else {
				r.Status = mailbox.StatusOK
				r.Content = []mailbox.Content{{Type: mailbox.ContentText, Text: "done " + task.ID}}
				w.l.do(func() { w.l.finTried[task.ID] = true })
				if err := w.c.PostResult(ctx, r); err != nil {
					w.l.failed(ctx, "finish", err)
					return
				}
				w.l.do(func() { w.l.finished[task.ID] = true })
			}
			w.l.acks.Add(1)
		}
	}
}

// converse is the sender's side: it sends tasks, drains its results and
// answers every question, the ones it drains at once and the ones it finds
// waiting on it in the queue (questions it drained without hearing back,
// the daemon having died first, or has not drained yet). Both paths may
// answer the same question; the second is a duplicate or a conflict, never
// a second turn.
func (w *convLoad) converse(ctx context.Context, rng *rand.Rand) {
	for round := 0; ctx.Err() == nil; round++ {
		if rng.IntN(2) == 0 && !w.send(ctx) {
			return
		}
		res, err := w.c.Drain(ctx, w.sender)
		if err != nil {
			w.l.failed(ctx, "drain", err)
			return
		}
		// Half the questions drained are answered at once; the others
		// wait for the queue listing, so kills find tasks waiting.
		if res != nil && mailbox.Asks(res.Status) && len(res.Content) == 1 && rng.IntN(2) == 0 {
			if !w.reply(ctx, res.TaskID, res.Content[0].Text) {
				return
			}
		}
		if round%4 != 0 {
			continue
		}
		view, err := w.c.Queue(ctx, mailbox.QueueFilter{State: mailbox.TaskWaiting, Limit: mailbox.MaxLimit})
		if err != nil {
			w.l.failed(ctx, "queue", err)
			return
		}
		for _, e := range view.Tasks {
			if e.Task.Sender != w.sender {
				continue
			}
			q, ok := e.Task.Question()
			if !ok || len(q.Content) != 1 {
				w.l.t.Errorf("task %s waits without a question: turns %+v", e.Task.ID, e.Task.Turns)
				continue
			}
			if !w.reply(ctx, e.Task.ID, q.Content[0].Text) {
				return
			}
		}
	}
}

func (w *convLoad) send(ctx context.Context) bool {
	id := uuid.NewString()
	w.l.do(func() { w.l.tried[id] = true })
	out, err := w.c.Send(ctx, mailbox.Task{ID: id, Sender: w.sender, Recipient: w.recipient, IntentText: "converse " + id[:8]})
	if err != nil {
		w.l.failed(ctx, "send", err)
		return false
	}
	if out.TaskID != id {
		w.l.t.Errorf("send %s acknowledged as %s", id, out.TaskID)
	}
	w.l.do(func() { w.l.sent[id] = true })
	w.l.acks.Add(1)
	return true
}

// reply answers question on task id; false when the sender must stop.
func (w *convLoad) reply(ctx context.Context, id, question string) bool {
	a := answerText(question)
	w.l.do(func() { w.l.replyTried[a] = true })
	out, err := w.c.Reply(ctx, mailbox.Reply{TaskID: id, Sender: w.sender, Content: []mailbox.Content{{Type: mailbox.ContentText, Text: a}}})
	switch {
	case errors.Is(err, mailbox.ErrConflict):
		// The other path answered first and the task moved on.
		w.l.conflicts.Add(1)
		return true
	case err != nil:
		if w.l.killed.Load() && ctx.Err() == nil {
			w.l.do(func() { w.l.unanswered[id] = [2]string{w.sender, question} })
		}
		w.l.failed(ctx, "reply", err)
		return false
	}
	w.l.ackReply(id, a, out)
	return true
}

func (l *convLedger) ackReply(id, answer string, out mailbox.ReplyOutcome) {
	l.do(func() {
		l.replied[id] = append(l.replied[id], answer)
		l.turnsAcked[id] = max(l.turnsAcked[id], out.Turns)
	})
	if out.Duplicate {
		l.duplicates.Add(1)
	}
	l.replies.Add(1)
	l.acks.Add(1)
}

// retryUnanswered sends again, as a client whose request got no answer
// does, every reply the last kill cut off. One that was not durable is
// taken now; one that was is answered as a duplicate while the task still
// holds it as its newest answer, or refused as a conflict once the task
// moved on; it never adds a second answer.
func (l *convLedger) retryUnanswered(c *client.Client) {
	l.mu.Lock()
	retry := l.unanswered
	l.unanswered = map[string][2]string{}
	l.mu.Unlock()
	for id, sq := range retry {
		a := answerText(sq[1])
		out, err := c.Reply(l.t.Context(), mailbox.Reply{TaskID: id, Sender: sq[0], Content: []mailbox.Content{{Type: mailbox.ContentText, Text: a}}})
		switch {
		case errors.Is(err, mailbox.ErrConflict):
			l.conflicts.Add(1)
		case err != nil:
			l.t.Errorf("retrying the reply to %s after the restart: %v", id, err)
		default:
			l.ackReply(id, a, out)
			l.retried.Add(1)
		}
	}
}

// turnsProblem says what is wrong with a conversation, or "": turns
// alternate question and answer from a question, each answer answers the
// question before it.
func turnsProblem(ts []mailbox.Turn) string {
	for i, tu := range ts {
		want := mailbox.RoleWorker
		if i%2 == 1 {
			want = mailbox.RoleSender
		}
		if tu.Role != want || len(tu.Content) != 1 {
			return fmt.Sprintf("%+v: turn %d is a %s turn with %d parts, want a %s turn with one", ts, i, tu.Role, len(tu.Content), want)
		}
		if want == mailbox.RoleSender && tu.Content[0].Text != answerText(ts[i-1].Content[0].Text) {
			return fmt.Sprintf("%+v: turn %d answers %q, the question before it is %q", ts, i, tu.Content[0].Text, ts[i-1].Content[0].Text)
		}
	}
	return ""
}

// verify checks a restarted daemon's whole state (the snapshot its event
// stream opens with) against the ledger: every acknowledged send, question
// and reply is there, nothing is there that nobody tried, and every task
// is in one state that agrees with its turns.
func (l *convLedger) verify(c *client.Client, p *proc, when string) {
	t := l.t
	t.Helper()
	snap := p.snapshot(t)
	view, err := c.Queue(t.Context(), mailbox.QueueFilter{Limit: mailbox.MaxLimit})
	if err != nil {
		t.Fatalf("%s: queue: %v", when, err)
	}
	status, err := c.Status(t.Context())
	if err != nil {
		t.Fatalf("%s: status: %v", when, err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()

	tasks := map[string]mailbox.TaskRecord{}
	waiting := 0
	for _, tr := range snap.Tasks {
		id := tr.Task.ID
		tasks[id] = tr
		if !l.tried[id] {
			t.Errorf("%s: task %s is in the mailbox but nobody sent it", when, id)
		}
		ts := tr.Task.Turns
		if msg := turnsProblem(ts); msg != "" {
			t.Errorf("%s: task %s (%s) has turns %s", when, id, tr.State, msg)
			continue
		}
		for _, tu := range ts {
			text := tu.Content[0].Text
			if tu.Role == mailbox.RoleWorker && !l.askTried[text] || tu.Role == mailbox.RoleSender && !l.replyTried[text] {
				t.Errorf("%s: task %s holds the %s turn %q, which nobody posted", when, id, tu.Role, text)
			}
		}
		lastWorker := len(ts) > 0 && ts[len(ts)-1].Role == mailbox.RoleWorker
		switch tr.State {
		case mailbox.TaskWaiting:
			waiting++
			if !lastWorker {
				t.Errorf("%s: task %s waits on its sender, but its newest turn is no question: %+v", when, id, ts)
			}
		case mailbox.TaskQueued, mailbox.TaskInFlight:
			if lastWorker {
				t.Errorf("%s: task %s is %s with its newest question unanswered: %+v", when, id, tr.State, ts)
			}
		}
	}
	for id := range l.sent {
		if _, ok := tasks[id]; !ok {
			t.Errorf("%s: acknowledged task %s is gone", when, id)
		}
	}
	has := func(ts []mailbox.Turn, role, text string) bool {
		for _, tu := range ts {
			if tu.Role == role && tu.Content[0].Text == text {
				return true
			}
		}
		return false
	}
	for id, qs := range l.asked {
		tr := tasks[id]
		for _, q := range qs {
			if !has(tr.Task.Turns, mailbox.RoleWorker, q) {
				t.Errorf("%s: task %s (%s) lacks its acknowledged question %q: turns %+v", when, id, tr.State, q, tr.Task.Turns)
			}
		}
	}
	for id, as := range l.replied {
		tr := tasks[id]
		for _, a := range as {
			if !has(tr.Task.Turns, mailbox.RoleSender, a) {
				t.Errorf("%s: task %s (%s) lacks its acknowledged answer %q: turns %+v", when, id, tr.State, a, tr.Task.Turns)
			}
			if q, ok := tr.Task.Question(); ok && tr.State == mailbox.TaskWaiting && answerText(q.Content[0].Text) == a {
				t.Errorf("%s: task %s waits on the question %q, whose answer was acknowledged", when, id, q.Content[0].Text)
			}
		}
		if n := l.turnsAcked[id]; len(tr.Task.Turns) < n {
			t.Errorf("%s: task %s holds %d turns; a reply was acknowledged with %d", when, id, len(tr.Task.Turns), n)
		}
	}
	for id := range l.finished {
		if s := tasks[id].State; s != mailbox.TaskResultPending && s != mailbox.TaskDone {
			t.Errorf("%s: task %s is %s after its result was acknowledged", when, id, s)
		}
	}
	for _, r := range snap.Results {
		tr := tasks[r.TaskID]
		switch {
		case tr.State == mailbox.TaskWaiting:
			if q, _ := tr.Task.Question(); !mailbox.Asks(r.Status) || len(r.Content) != 1 || r.Content[0].Text != q.Content[0].Text {
				t.Errorf("%s: waiting task %s has the pending result %+v, not its question %q", when, r.TaskID, r, q.Content[0].Text)
			}
		case tr.State == mailbox.TaskResultPending:
			if r.Status != mailbox.StatusOK || !l.finTried[r.TaskID] {
				t.Errorf("%s: task %s has the pending result %+v, which nobody posted", when, r.TaskID, r)
			}
		default:
			t.Errorf("%s: task %s is %s and has a result pending: %+v", when, r.TaskID, tr.State, r)
		}
	}
	// No task is in two places: the queue lists each once, in the state
	// its record holds, and the counts agree.
	listed := map[string]bool{}
	for _, e := range view.Tasks {
		if listed[e.Task.ID] {
			t.Errorf("%s: task %s is listed twice in the queue", when, e.Task.ID)
		}
		listed[e.Task.ID] = true
		if s := tasks[e.Task.ID].State; s != e.State {
			t.Errorf("%s: task %s is listed %s and recorded %s", when, e.Task.ID, e.State, s)
		}
	}
	if status.Waiting != waiting {
		t.Errorf("%s: status counts %d tasks waiting, the state holds %d", when, status.Waiting, waiting)
	}
	l.waitingSeen += waiting
}

// TestFaultKill9Conversations kills the real daemon with SIGKILL while
// workers ask questions and senders answer them, restarts it on the same
// data dir, and checks after every restart that every acknowledged reply
// is on its task (which no longer waits on the question it answered),
// every acknowledged question is there, no task is lost, and no task is in
// two states. Compaction thresholds are tiny so that kills land
// mid-compaction and restarts load snapshots holding waiting tasks.
func TestFaultKill9Conversations(t *testing.T) { kill9Conversations(t, *convKills, procTLS{}) }

// TestFaultKill9ConversationsTLS is TestFaultKill9Conversations with the
// daemon serving TLS from the test's CA and the senders, the workers and
// the checks over HTTPS and HTTP/2: a kill cuts a connection carrying
// every pair's requests at once, and still no acknowledged question or
// reply is lost.
func TestFaultKill9ConversationsTLS(t *testing.T) {
	kill9Conversations(t, *convTLSKills, newProcTLS(t))
}

// kill9Conversations is the conversation suite: kills kills of the daemon
// serving as hop says, and the checks after each restart.
func kill9Conversations(t *testing.T, kills int, hop procTLS) {
	seed := faultSeed(t)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	dir := t.TempDir()
	l := newConvLedger(t)
	flags := []string{"--compact-min-bytes", "8KiB", "--compact-factor", "2"}
	hc := &http.Client{Transport: hop.secure(&http.Transport{MaxIdleConnsPerHost: 2*convPairs + 2})}
	defer hc.CloseIdleConnections()

	for i := range kills {
		p := startProcTLS(t, dir, hop, flags...)
		c, err := client.New(p.url(), client.WithHTTPClient(hc))
		if err != nil {
			t.Fatal(err)
		}
		l.verify(c, p, fmt.Sprintf("restart %d", i))
		if t.Failed() {
			t.Fatalf("restart %d: stopping at the first failed check (seed %d); the daemon's log:\n%s", i, seed, p.out)
		}
		l.retryUnanswered(c)

		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		for n := range convPairs {
			w := &convLoad{c: c, l: l, sender: fmt.Sprintf("conv-s-%d@local", n), recipient: fmt.Sprintf("conv-r-%d@local", n)}
			srng, wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(n))), rand.New(rand.NewPCG(rng.Uint64(), uint64(n)+convPairs))
			wg.Go(func() { w.converse(ctx, srng) })
			wg.Go(func() { w.worker(ctx, wrng) })
		}

		before := l.acks.Load()
		p.killDuringLoad(t, rng, fmt.Sprintf("kill %d", i), &l.killed, cancel, wg.Wait)
		if l.acks.Load() == before {
			t.Errorf("kill %d: no request was acknowledged in the load before the kill; the daemon's log:\n%s", i, p.out)
		}
		if t.Failed() {
			t.Fatalf("kill %d failed (seed %d)", i, seed)
		}
	}

	p := startProcTLS(t, dir, hop, flags...)
	c, err := client.New(p.url(), client.WithHTTPClient(hc))
	if err != nil {
		t.Fatal(err)
	}
	l.verify(c, p, "final restart")
	if l.replies.Load() == 0 || l.questions.Load() == 0 {
		t.Errorf("%d questions and %d replies acknowledged: the load held no conversations", l.questions.Load(), l.replies.Load())
	}
	var longest int
	for _, n := range l.turnsAcked {
		longest = max(longest, n)
	}
	t.Logf("%d kills; acknowledged %d sends, %d questions, %d replies (%d retried after a kill, %d duplicates), %d final results; %d reply conflicts; %d tasks waiting summed over the restarts; longest conversation %d turns; %d *.broken files",
		kills, len(l.sent), l.questions.Load(), l.replies.Load(), l.retried.Load(), l.duplicates.Load(), len(l.finished), l.conflicts.Load(), l.waitingSeen, longest,
		len(brokenFiles(t, dir)))
}
