package mailbox

// When each agent last acted on the mailbox (sent, leased, posted a
// result or a question, drained, answered a question), derived from the
// events themselves: replay, a follower and a console get the same
// times, and they survive a restart. A snapshot does not carry them: on
// a restore they are derived again from the remembered tasks' histories,
// so an agent all of whose tasks were forgotten (finished and drained past
// retain_done) has none until it acts again. Polls that find nothing
// change nothing and are not here: the engine keeps those in memory.

// actor is the agent whose action ev records, "" for none: decided
// before ev applies (a drain may forget its task).
func (s *State) actor(ev Event) string {
	switch ev.Type {
	case EventTaskSent:
		if ev.Task != nil {
			return ev.Task.Sender
		}
	case EventTaskLeased, EventResultPosted:
		return ev.LeasedTo
	case EventResultDrained, EventTaskReplied:
		if t, ok := s.tasks[ev.TaskID]; ok {
			return t.Task.Sender
		}
	}
	return ""
}

// noteActed records that agent acted at atMs (times never go back).
func (s *State) noteActed(agent string, atMs int64) {
	if agent != "" && atMs > s.acted[agent] {
		s.acted[agent] = atMs
	}
}

// actedFromHistory derives the times from a restored task's history.
func (s *State) actedFromHistory(t *taskRec) {
	for _, h := range t.History {
		switch h.Type {
		case EventTaskSent, EventResultDrained, EventTaskReplied:
			s.noteActed(t.Task.Sender, h.AtMs)
		case EventTaskLeased, EventResultPosted:
			s.noteActed(h.LeasedTo, h.AtMs)
		}
	}
}

// LastActed is when agent last acted on the mailbox, 0 when unknown.
func (s *State) LastActed(agent string) int64 { return s.acted[agent] }
