package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/mailroom/mailroom/daemon/store"
	"github.com/mailroom/mailroom/mailbox"
)

// SharedOpener opens instance i of a shared store on dir (the same dir
// for every instance of one test, a fresh one per test).
type SharedOpener func(t *testing.T, dir string, i int) store.Shared

// SharedHooks are what the suite needs of the backend beyond the store.
type SharedHooks struct {
	// Disconnect ends the instance's connection to the shared backend as
	// a crash of its process or its network would.
	Disconnect func(t *testing.T, s store.Shared)
	// Pause stops the instance's work (its appends, its pings, its
	// reading) until resume, as a process the OS stopped; the backend
	// ends its session after its timeout.
	Pause func(t *testing.T, s store.Shared) (resume func())
	// AfterFailovers, when set, checks the backend's own records once the
	// failover test is done (that every term wrote after the one before,
	// say).
	AfterFailovers func(t *testing.T, dir string)
}

// RunShared runs the shared-store suite: three instances on one log.
func RunShared(t *testing.T, open SharedOpener, hooks SharedHooks) {
	t.Helper()
	for _, c := range sharedSuite {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, &cluster{open: open, hooks: hooks, dir: t.TempDir(), rng: rand.New(rand.NewPCG(7, 11)), nowMs: 1_767_225_600_000})
		})
	}
}

var sharedSuite = []struct {
	name string
	run  func(*testing.T, *cluster)
}{
	{"OneLeaderAtATime", testOneLeaderAtATime},
	{"FollowersSeeEveryEventOnceInOrder", testFollowersSeeEveryEvent},
	{"FailoverKeepsEveryAckedEventGaplessAcrossTenTakeovers", testFailoverKeepsAcked},
	{"CompactionByTheLeaderIsSeenByFollowers", testCompactionSeenByFollowers},
	{"AFollowerThatLostItsConnectionCatchesUp", testFollowerReconnects},
	{"AFollowerBehindACompactionReloadsFromTheSnapshot", testFollowerBehindCompaction},
	{"APausedLeaderIsFenced", testPausedLeaderFenced},
}

// member is one instance with the state it has seen: its own durable
// appends (in done) and everything apply brought.
type member struct {
	s    store.Shared
	mu   sync.Mutex
	st   *mailbox.State
	seen []uint64
	role store.Role
	bad  error
}

func (m *member) applied(ev mailbox.Event) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.st.Apply(ev); err != nil {
		m.bad = fmt.Errorf("event %d: %w", ev.Seq, err)
		return m.bad
	}
	m.seen = append(m.seen, ev.Seq)
	return nil
}

func (m *member) seq() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Seq
}

func (m *member) counts() mailbox.Counts {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st.Counts()
}

func (m *member) leads() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.role.Leader
}

// leadsIn reports whether m leads in the term of epoch.
func (m *member) leadsIn(epoch int64) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.role.Leader && m.role.Epoch == epoch
}

func (m *member) epoch() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.role.Epoch
}

type cluster struct {
	open    SharedOpener
	hooks   SharedHooks
	dir     string
	members []*member
	rng     *rand.Rand
	nowMs   int64
	acked   map[uint64]mailbox.Event
}

// start opens and follows n instances.
func (c *cluster) start(t *testing.T, n int) {
	t.Helper()
	for range n {
		c.join(t)
	}
}

// join opens one more instance, loads it and starts it following.
func (c *cluster) join(t *testing.T) *member {
	t.Helper()
	s := c.open(t, c.dir, len(c.members))
	t.Cleanup(func() { s.Close() })
	st, _ := LoadState(t, s)
	m := &member{s: s, st: st}
	s.Follow(st.Seq, m.applied, func(r store.Role) {
		m.mu.Lock()
		m.role = r
		m.mu.Unlock()
	})
	c.members = append(c.members, m)
	return m
}

// leader waits until exactly one member says it leads and returns it.
func (c *cluster) leader(t *testing.T) *member {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for time.Now().Before(deadline) {
		var leads []*member
		for _, m := range c.members {
			if m.leads() {
				leads = append(leads, m)
			}
		}
		if len(leads) == 1 {
			return leads[0]
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("no single leader among %d instances after %v", len(c.members), waitLimit)
	return nil
}

// wave decides n events on m's state and appends them without waiting in
// between (so they share commits); it returns how many were acknowledged,
// which must be a prefix.
func (c *cluster) wave(t *testing.T, m *member, n int) int {
	t.Helper()
	m.mu.Lock()
	w := &Workload{State: m.st.Clone(), Conversations: true, rng: c.rng, nowMs: c.nowMs}
	m.mu.Unlock()
	evs := w.Events(t, n)
	c.nowMs = w.nowMs
	errs := make([]chan error, n)
	for i, ev := range evs {
		errs[i] = make(chan error, 1)
		m.s.AppendUnit([]mailbox.Event{ev}, func(err error) {
			if err == nil {
				if aerr := m.applied(ev); aerr != nil {
					t.Errorf("instance refuses its own durable event: %v", aerr)
				}
			}
			errs[i] <- err
		})
	}
	acked := 0
	failed := false
	for i, ch := range errs {
		err := await(t, ch, "done callback")
		switch {
		case err == nil && failed:
			t.Errorf("event %d acknowledged after an earlier one of its wave failed", evs[i].Seq)
		case err == nil:
			acked++
			if c.acked == nil {
				c.acked = map[uint64]mailbox.Event{}
			}
			c.acked[evs[i].Seq] = evs[i]
		default:
			failed = true
		}
	}
	return acked
}

// converge waits until every member has applied up to seq.
func (c *cluster) converge(t *testing.T, seq uint64) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for _, m := range c.members {
		for m.seq() < seq {
			if time.Now().After(deadline) {
				t.Fatalf("an instance stays at seq %d, want %d", m.seq(), seq)
			}
			time.Sleep(2 * time.Millisecond)
		}
		m.mu.Lock()
		bad := m.bad
		m.mu.Unlock()
		if bad != nil {
			t.Fatalf("an instance refused an event: %v", bad)
		}
	}
}

// checkAll checks that every member holds the same state, saw every event
// once in order, and that a fresh Load holds every acknowledged event.
func (c *cluster) checkAll(t *testing.T, lead *member) {
	t.Helper()
	head := lead.seq()
	c.converge(t, head)
	for _, m := range c.members {
		m.mu.Lock()
		SameState(t, m.st, lead.st)
		m.mu.Unlock()
	}
	fresh := c.open(t, c.dir, len(c.members))
	defer fresh.Close()
	st, evs := LoadState(t, fresh)
	SameState(t, st, lead.st)
	bySeq := map[uint64]mailbox.Event{}
	for _, ev := range evs {
		bySeq[ev.Seq] = ev
	}
	for seq, want := range c.acked {
		got, ok := bySeq[seq]
		if !ok && seq > st.Seq {
			t.Errorf("acknowledged event %d is not in the log (head %d)", seq, st.Seq)
			continue
		}
		if ok {
			SameEvents(t, []mailbox.Event{got}, []mailbox.Event{want})
		}
	}
}

func testOneLeaderAtATime(t *testing.T, c *cluster) {
	c.start(t, 3)
	lead := c.leader(t)
	c.wave(t, lead, 10)
	for range 50 {
		n := 0
		for _, m := range c.members {
			if m.leads() {
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%d instances lead at once", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	before := lead.s.LastSeq()
	for _, m := range c.members {
		if m == lead {
			continue
		}
		done := make(chan error, 1)
		m.s.AppendUnit([]mailbox.Event{{Seq: m.s.LastSeq() + 1, Type: mailbox.EventLimitsSet}}, func(err error) { done <- err })
		if err := await(t, done, "a follower's done"); !errors.Is(err, store.ErrNotLeader) {
			t.Errorf("a follower's Append: %v, want ErrNotLeader", err)
		}
	}
	c.wave(t, lead, 3)
	if got := lead.s.LastSeq(); got != before+3 {
		t.Errorf("the leader is at seq %d, want %d: a follower's append got through", got, before+3)
	}
	c.checkAll(t, lead)
}

func testFollowersSeeEveryEvent(t *testing.T, c *cluster) {
	c.start(t, 3)
	lead := c.leader(t)
	sawWaiting := false
	for range 20 {
		if got := c.wave(t, lead, 25); got != 25 {
			t.Fatalf("%d of 25 acknowledged with no failover", got)
		}
		// Followers reach the leader's state while tasks wait on their
		// senders, questions drained or not.
		if n := lead.counts().Waiting; n > 0 {
			sawWaiting = true
			c.converge(t, lead.seq())
			for _, m := range c.members {
				m.mu.Lock()
				SameState(t, m.st, lead.st)
				m.mu.Unlock()
			}
		}
	}
	c.converge(t, 500)
	checkConversations(t, c.acked)
	if !sawWaiting {
		t.Errorf("no task was waiting on its sender after any wave: the workload no longer leaves questions open")
	}
	for _, m := range c.members {
		if m == lead {
			continue
		}
		m.mu.Lock()
		for i, seq := range m.seen {
			if seq != uint64(i+1) {
				m.mu.Unlock()
				t.Fatalf("a follower's apply saw seq %d in place %d", seq, i+1)
			}
		}
		m.mu.Unlock()
	}
	c.checkAll(t, lead)
}

func testFailoverKeepsAcked(t *testing.T, c *cluster) {
	if c.hooks.Disconnect == nil {
		t.Skip("the backend gives no Disconnect hook")
	}
	c.start(t, 3)
	refused := 0
	for round := range 10 {
		lead := c.leader(t)
		c.wave(t, lead, 20)
		term := lead.epoch()
		// Cut the leader off before a wave (its appends meet a broken
		// session) or while one is in flight. The next leader reads to
		// the head before it says it leads.
		if round%2 == 0 {
			c.hooks.Disconnect(t, lead.s)
			refused += 30 - c.wave(t, lead, 30)
		} else {
			done := make(chan int, 1)
			go func() { done <- c.wave(t, lead, 30) }()
			c.hooks.Disconnect(t, lead.s)
			refused += 30 - <-done
		}
		for lead.leadsIn(term) {
			// It finds out at its next statement or ping. It may win
			// the next term itself: its campaign can come first.
			time.Sleep(5 * time.Millisecond)
		}
	}
	lead := c.leader(t)
	c.wave(t, lead, 10)
	lead = c.leader(t)
	c.checkAll(t, lead)
	// Every acknowledged seq is in the log: the log is 1..head without a
	// gap (Load checks it) and head covers them.
	for seq := range c.acked {
		if seq > lead.s.LastSeq() {
			t.Errorf("acknowledged seq %d beyond the head %d", seq, lead.s.LastSeq())
		}
	}
	if refused == 0 {
		t.Errorf("no append was refused across 10 cut-off leaders: the failover path did not run")
	}
	t.Logf("10 takeovers: %d events acknowledged, %d refused, head %d", len(c.acked), refused, lead.s.LastSeq())
	if c.hooks.AfterFailovers != nil {
		c.hooks.AfterFailovers(t, c.dir)
	}
}

func testCompactionSeenByFollowers(t *testing.T, c *cluster) {
	c.start(t, 3)
	lead := c.leader(t)
	c.wave(t, lead, 60)
	c.converge(t, 60)
	out, err := lead.s.Compact(func() *mailbox.Snapshot {
		lead.mu.Lock()
		defer lead.mu.Unlock()
		return lead.st.Snapshot(snapshotAtMs)
	})
	if err != nil || out.Seq != 60 {
		t.Fatalf("Compact = %+v, %v", out, err)
	}
	// The workload's first 60 events (the suite's seed) leave tasks
	// waiting on their senders: the snapshot carries them to followers.
	if n := lead.counts().Waiting; n == 0 {
		t.Errorf("the snapshot at seq 60 holds no task waiting on its sender: the workload or its seed changed, and this test no longer shows followers loading one")
	}
	c.wave(t, lead, 15)
	c.converge(t, 75)
	for _, m := range c.members {
		if m == lead {
			continue
		}
		if _, err := m.s.EventsSince(10, 5); !errors.Is(err, store.ErrCompacted) {
			t.Errorf("a follower's EventsSince(10) after compaction: %v, want ErrCompacted", err)
		}
		evs, err := m.s.EventsSince(60, 100)
		if err != nil || len(evs) != 15 {
			t.Errorf("a follower's EventsSince(60) = %d events, %v; want the 15 after the snapshot", len(evs), err)
		}
	}
	c.checkAll(t, lead)
}

func testFollowerReconnects(t *testing.T, c *cluster) {
	if c.hooks.Disconnect == nil {
		t.Skip("the backend gives no Disconnect hook")
	}
	c.start(t, 3)
	lead := c.leader(t)
	c.wave(t, lead, 20)
	c.converge(t, 20)
	for _, m := range c.members {
		if m != lead {
			c.hooks.Disconnect(t, m.s)
			break
		}
	}
	for range 5 {
		c.wave(t, lead, 20)
	}
	c.checkAll(t, lead)
}

func testFollowerBehindCompaction(t *testing.T, c *cluster) {
	if c.hooks.Pause == nil {
		t.Skip("the backend gives no Pause hook")
	}
	c.start(t, 3)
	lead := c.leader(t)
	c.wave(t, lead, 20)
	c.converge(t, 20)
	var behind *member
	for _, m := range c.members {
		if m != lead {
			behind = m
			break
		}
	}
	resume := c.hooks.Pause(t, behind.s)
	c.wave(t, lead, 40)
	// Play on until a task waits on its sender, so that the snapshot the
	// follower reloads from holds one.
	for lead.counts().Waiting == 0 {
		if lead.seq() >= 200 {
			resume()
			t.Fatalf("no task waits on its sender at seq %d: the workload no longer leaves questions open", lead.seq())
		}
		c.wave(t, lead, 1)
	}
	snapSeq := lead.seq()
	if _, err := lead.s.Compact(func() *mailbox.Snapshot {
		lead.mu.Lock()
		defer lead.mu.Unlock()
		return lead.st.Snapshot(snapshotAtMs)
	}); err != nil {
		t.Fatal(err)
	}
	c.wave(t, lead, 10)
	resume()
	c.checkAll(t, lead)
	behind.mu.Lock()
	defer behind.mu.Unlock()
	if behind.st.Seq != snapSeq+10 {
		t.Errorf("the follower that fell behind is at seq %d, want %d", behind.st.Seq, snapSeq+10)
	}
}

func testPausedLeaderFenced(t *testing.T, c *cluster) {
	if c.hooks.Pause == nil {
		t.Skip("the backend gives no Pause hook")
	}
	c.start(t, 3)
	old := c.leader(t)
	c.wave(t, old, 20)
	resume := c.hooks.Pause(t, old.s)
	// Another instance takes over once the paused one's session ends,
	// and writes.
	var next *member
	deadline := time.Now().Add(waitLimit)
	for next == nil {
		for _, m := range c.members {
			if m != old && m.leads() {
				next = m
			}
		}
		if time.Now().After(deadline) {
			resume()
			t.Fatal("nobody took over from the paused leader")
		}
		time.Sleep(5 * time.Millisecond)
	}
	c.wave(t, next, 15)
	head := next.s.LastSeq()
	resume()
	// Woken, the old leader still believes it leads until it tries: its
	// append is refused, and nothing of it reaches the log.
	ev := mailbox.Event{Seq: old.s.LastSeq() + 1, AtMs: c.nowMs, Type: mailbox.EventLimitsSet, Limits: &mailbox.Limits{RetainDone: 7}}
	done := make(chan error, 1)
	old.s.AppendUnit([]mailbox.Event{ev}, func(err error) { done <- err })
	if err := await(t, done, "the woken leader's done"); err == nil {
		t.Fatal("a paused leader appended after another took over")
	}
	c.wave(t, next, 5)
	if got := next.s.LastSeq(); got != head+5 {
		t.Errorf("the new leader is at seq %d, want %d", got, head+5)
	}
	c.checkAll(t, next)
}

// checkConversations requires the acknowledged events to hold
// conversations (questions and replies), so that followers are shown to
// apply them.
func checkConversations(t *testing.T, acked map[uint64]mailbox.Event) {
	t.Helper()
	questions, replies := 0, 0
	for _, ev := range acked {
		switch {
		case ev.Type == mailbox.EventResultPosted && mailbox.Asks(ev.Result.Status):
			questions++
		case ev.Type == mailbox.EventTaskReplied:
			replies++
		}
	}
	if questions == 0 || replies == 0 {
		t.Errorf("%d events acknowledged with %d questions and %d replies: the workload no longer plays conversations", len(acked), questions, replies)
	}
}
