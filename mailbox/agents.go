package mailbox

import "sort"

// EventAgents is the type of the agents listing pushed on the event stream
// (AgentsUpdate). Like a snapshot it is never logged or applied; unlike
// every other event it has no seq, so it is written without an id and never
// moves a subscriber's resume point.
const EventAgents = "agents"

// AgentInfo is what the daemon knows about one agent. Queued, InFlight,
// OldestLeaseAgeMs and ResultsPending come from the durable state (Agents);
// the daemon adds the rest from memory: results posted in the last five
// minutes and when the agent last called it.
type AgentInfo struct {
	Agent string `json:"agent"`
	// Queued counts the tasks waiting for the agent as their recipient.
	Queued int `json:"queued"`
	// InFlight counts the leases the agent holds; OldestLeaseAgeMs is the
	// age of the oldest of them (0 when it holds none).
	InFlight         int   `json:"in_flight"`
	OldestLeaseAgeMs int64 `json:"oldest_lease_age_ms"`
	// ResultsPending counts results waiting for the agent, as the sender,
	// to drain them.
	ResultsPending int `json:"results_pending"`
	// Waiting counts the tasks waiting on the agent, as their sender, to
	// answer their workers' questions; OldestWaitingMs is how long the
	// oldest of them has waited (0 when none).
	Waiting         int   `json:"waiting,omitempty"`
	OldestWaitingMs int64 `json:"oldest_waiting_ms,omitempty"`
	// ResultsOK5m and ResultsError5m count the results the agent posted (as
	// the lease holder) with status ok or error in the last five minutes;
	// forced errors count as errors.
	ResultsOK5m    int `json:"results_ok_5m"`
	ResultsError5m int `json:"results_error_5m"`
	// Undrained counts the finished results waiting for the agent, as
	// the sender, to drain them (ResultsPending without the questions it
	// has not drained yet, which Waiting counts, and without the results
	// of tasks that came through the A2A edge, which their callers read
	// by id).
	Undrained int `json:"undrained,omitempty"`
	// LastSeenMs is when the agent last called the daemon (send, lease,
	// result or drain); 0 when it has not since the daemon started. While
	// one of its long polls waits it is the listing's time.
	LastSeenMs int64 `json:"last_seen_ms"`
	// Polling says a long poll (lease or drain) of the agent waits right
	// now: it is seen, however long ago the poll began.
	Polling bool `json:"polling,omitempty"`
	// WebhookDead counts the dead letters of the agent's webhook (its
	// card's, told of the results waiting for it as a sender);
	// WebhookFailing, its notifications tried, failed and to be tried
	// again (what the delivering instance knows; 0 elsewhere). Either
	// means its webhook is failing.
	WebhookDead    int `json:"webhook_dead,omitempty"`
	WebhookFailing int `json:"webhook_failing,omitempty"`
	// Card and RegisteredAtMs are set for a registered agent (one the
	// daemon serves as an A2A server).
	Card           *AgentCard `json:"card,omitempty"`
	RegisteredAtMs int64      `json:"registered_at_ms,omitempty"`
	// Remote is what the daemon's dispatcher knows of a remote agent now
	// (memory only; absent for an agent that polls, and on an instance
	// that has no dispatcher).
	Remote *RemoteStatus `json:"remote,omitempty"`
}

// AgentsResponse answers GET /a2a/agents: one object per agent, sorted by
// agent id.
type AgentsResponse struct {
	Kind   string      `json:"kind"`
	Agents []AgentInfo `json:"agents"`
}

// AgentsUpdate is the agents listing as pushed on the event stream
// (`event: agents`, no id), at most once a second and only after a change.
type AgentsUpdate struct {
	Type   string      `json:"type"` // EventAgents
	AtMs   int64       `json:"at_ms"`
	Agents []AgentInfo `json:"agents"`

	// Encoded, when set, is this update's JSON, made once for every
	// subscriber; never part of the JSON itself.
	Encoded []byte `json:"-"`
	// Seq is the last event the listing counts: a stream hands it on only
	// after that event, so the listing never gets ahead of the events.
	// Never part of the JSON.
	Seq uint64 `json:"-"`
}

// Agents returns, at time nowMs and sorted by agent id, every agent the
// state knows: registered, the sender or recipient of a task it remembers,
// or a lease holder. It fills in the counts the state holds; the rest is zero.
func (s *State) Agents(nowMs int64) []AgentInfo {
	byID := make(map[string]*AgentInfo, len(s.agents))
	get := func(id string) *AgentInfo {
		a, ok := byID[id]
		if !ok {
			a = &AgentInfo{Agent: id}
			byID[id] = a
		}
		return a
	}
	for id := range s.agents {
		get(id)
	}

	for id, r := range s.registry {
		a := get(id)
		card := r.Card
		a.Card, a.RegisteredAtMs = &card, r.RegisteredAtMs
	}
	for id, h := range s.byRecipient {
		get(id).Queued = h.Len()
	}
	for _, t := range s.inFlight {
		a := get(t.LeasedTo)
		a.InFlight++
		a.OldestLeaseAgeMs = max(a.OldestLeaseAgeMs, nowMs-t.LeasedAtMs)
	}
	for id, h := range s.bySender {
		a := get(id)
		a.ResultsPending = h.Len()
		a.Undrained = h.Len()
	}
	for id, r := range s.results {
		if t, ok := s.tasks[id]; ok && (t.State == TaskWaiting || t.Task.A2A != nil) {
			// An undrained question (Waiting counts it), or an A2A
			// task's result, which its caller reads by id, not by
			// draining: neither is owed as a drain.
			get(r.Sender).Undrained--
		}
	}
	for _, t := range s.waiting {
		a := get(t.Task.Sender)
		a.Waiting++
		a.OldestWaitingMs = max(a.OldestWaitingMs, nowMs-t.WaitingSince())
	}
	for _, n := range s.outbox {
		if n.Agent != "" && n.Dead {
			get(n.Agent).WebhookDead++
		}
	}
	out := make([]AgentInfo, 0, len(byID))
	for id, a := range byID {
		a.LastSeenMs = s.acted[id]
		out = append(out, *a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Agent < out[j].Agent })
	return out
}

// addTask remembers t, and the agents it names.
func (s *State) addTask(t *taskRec) {
	s.tasks[t.Task.ID] = t
	s.countAgent(t.Task.Sender, 1)
	s.countAgent(t.Task.Recipient, 1)
}

// dropTask forgets t, and the agents only it named.
func (s *State) dropTask(t *taskRec) {
	s.forgetNotifications(t)
	delete(s.tasks, t.Task.ID)
	s.countAgent(t.Task.Sender, -1)
	s.countAgent(t.Task.Recipient, -1)
}

func (s *State) countAgent(id string, d int) {
	if n := s.agents[id] + d; n > 0 {
		s.agents[id] = n
	} else {
		delete(s.agents, id)
	}
}

// moveTask hands a task out of the queues (leased, or just dequeued) to
// another recipient, remembering whom it was sent to; its
// idempotency twin tracking follows it.
func (s *State) moveTask(t *taskRec, recipient string) {
	if t.SentTo == "" {
		t.SentTo = t.Task.Recipient
	}
	s.untrackLive(t)
	s.countAgent(t.Task.Recipient, -1)
	t.Task.Recipient = recipient
	s.countAgent(recipient, 1)
	s.trackLive(t)
}

// Owes is everything that waits on the agent: the leases it holds, the
// tasks queued for it, the questions waiting on its answer and the
// results waiting for it to drain. An agent that owes anything and is not
// seen is probably gone.
func (a AgentInfo) Owes() int { return a.InFlight + a.Queued + a.Waiting + a.Undrained }

// WebhookIsFailing says whether the agent's webhook is failing: dead letters,
// or notifications being retried.
func (a AgentInfo) WebhookIsFailing() bool { return a.WebhookDead+a.WebhookFailing > 0 }
