package mailbox

// Secrets. A push config's token and its authentication's credentials,
// and the same of a native sender's webhook (card.webhook), are what a
// receiver trusts a notification by. The log keeps them (it is the
// daemon's own storage: the notifier must deliver after a restart), and
// they leave the daemon in the POST to the receiver only. Everything a
// reader is given (the event stream and its snapshots, the agents
// listing, task and agent reads, the A2A push-config answers, even to the
// task's owner) shows a secret that is set as RedactedSecret and one that
// is not as absent, so a reader knows whether the receiver is sent one
// without learning it. Redaction is on the way out (Redact), never in the
// state or the log, so replay and the log's bytes are unchanged.

// RedactedSecret stands in for a secret's value wherever the daemon shows
// a push config or a webhook. It is refused as a secret's value on the way
// in (a config read and set back would otherwise lose its secret).
const RedactedSecret = "***"

func redactSecret(v string) string {
	if v == "" {
		return ""
	}
	return RedactedSecret
}

func (a *PushAuth) hasSecret() bool {
	return a != nil && a.Credentials != "" && a.Credentials != RedactedSecret
}

func (a *PushAuth) redacted() *PushAuth {
	if !a.hasSecret() {
		return a
	}
	return &PushAuth{Schemes: a.Schemes, Credentials: RedactedSecret}
}

func (c PushConfig) hasSecret() bool {
	return c.Token != "" && c.Token != RedactedSecret || c.Authentication.hasSecret()
}

// Redacted returns c with its token and credentials shown as
// RedactedSecret.
func (c PushConfig) Redacted() PushConfig {
	c.Token = redactSecret(c.Token)
	c.Authentication = c.Authentication.redacted()
	return c
}

func (w *Webhook) hasSecret() bool { return w != nil && w.Config().hasSecret() }

func (c AgentCard) hasSecret() bool { return c.Webhook.hasSecret() }

// Redacted returns c with its webhook's secrets shown as RedactedSecret.
func (c AgentCard) Redacted() AgentCard {
	if c.hasSecret() {
		w := *c.Webhook
		w.Token, w.Authentication = redactSecret(w.Token), w.Authentication.redacted()
		c.Webhook = &w
	}
	return c
}

func (r TaskRecord) hasSecret() bool {
	for _, c := range r.Push {
		if c.hasSecret() {
			return true
		}
	}
	return false
}

// Redacted returns r with its push configs' secrets shown as
// RedactedSecret.
func (r TaskRecord) Redacted() TaskRecord {
	if r.hasSecret() {
		r.Push = redactConfigs(r.Push)
	}
	return r
}

func redactConfigs(cs []PushConfig) []PushConfig {
	out := make([]PushConfig, len(cs))
	for i, c := range cs {
		out[i] = c.Redacted()
	}
	return out
}

// Redacted returns s with the secrets of its tasks' push configs and of
// its registered agents' webhooks shown as RedactedSecret; s itself is
// not changed (its slices are copied where they change).
func (s *Snapshot) Redacted() *Snapshot {
	if s == nil {
		return nil
	}
	out := *s
	for i, t := range s.Tasks {
		if t.hasSecret() {
			if &out.Tasks[0] == &s.Tasks[0] {
				out.Tasks = append([]TaskRecord(nil), s.Tasks...)
			}
			out.Tasks[i] = t.Redacted()
		}
	}
	for i, r := range s.Registry {
		if r.Card.hasSecret() {
			if &out.Registry[0] == &s.Registry[0] {
				out.Registry = append([]RegisteredAgent(nil), s.Registry...)
			}
			out.Registry[i].Card = r.Card.Redacted()
		}
	}
	return &out
}

// HasSecret reports whether ev carries a secret a reader must not see:
// a push config (push_config_set), a card with a webhook
// (agent_registered), a snapshot holding either.
func (ev Event) HasSecret() bool {
	switch {
	case ev.Push != nil && ev.Push.hasSecret(), ev.Card != nil && ev.Card.hasSecret():
		return true
	case ev.Snapshot != nil:
		for _, t := range ev.Snapshot.Tasks {
			if t.hasSecret() {
				return true
			}
		}
		for _, r := range ev.Snapshot.Registry {
			if r.Card.hasSecret() {
				return true
			}
		}
	}
	return false
}

// Redacted returns ev as it may leave the daemon: with its secrets shown
// as RedactedSecret and, when that changed it, without its pre-encoded
// bytes (Encoded is the log's encoding, secrets and all), so it is
// encoded again. An event without secrets is returned as it is.
func (ev Event) Redacted() Event {
	if !ev.HasSecret() {
		return ev
	}
	ev.Encoded = nil
	if ev.Push != nil {
		c := ev.Push.Redacted()
		ev.Push = &c
	}
	if ev.Card != nil {
		c := ev.Card.Redacted()
		ev.Card = &c
	}
	ev.Snapshot = ev.Snapshot.Redacted()
	return ev
}

func redactAgents(as []AgentInfo) []AgentInfo {
	var out []AgentInfo
	for i, a := range as {
		if a.Card != nil && a.Card.hasSecret() {
			if out == nil {
				out = append([]AgentInfo(nil), as...)
			}
			c := a.Card.Redacted()
			out[i].Card = &c
		}
	}
	if out == nil {
		return as
	}
	return out
}

// Redacted returns the listing with its cards' webhook secrets shown as
// RedactedSecret (and without its pre-encoded bytes when that changed
// it).
func (u AgentsUpdate) Redacted() AgentsUpdate {
	agents := redactAgents(u.Agents)
	if len(agents) > 0 && &agents[0] != &u.Agents[0] {
		u.Agents, u.Encoded = agents, nil
	}
	return u
}

// Redact returns v as it may leave the daemon: any of the wire types that
// can carry a push config or a webhook with each secret shown as
// RedactedSecret (see Redacted of each), anything else as it is. Every
// answer and stream block the daemon writes passes through it.
func Redact(v any) any {
	switch x := v.(type) {
	case Event:
		return x.Redacted()
	case AgentsUpdate:
		return x.Redacted()
	case TaskRecord:
		return x.Redacted()
	case TaskResponse:
		x.TaskRecord = x.TaskRecord.Redacted()
		return x
	case AgentsResponse:
		x.Agents = redactAgents(x.Agents)
		return x
	case AgentRegisteredResponse:
		x.Agent.Card = x.Agent.Card.Redacted()
		return x
	case RegisteredAgent:
		x.Card = x.Card.Redacted()
		return x
	case PushConfig:
		return x.Redacted()
	case []PushConfig:
		return redactConfigs(x)
	case *Snapshot:
		return x.Redacted()
	}
	return v
}
