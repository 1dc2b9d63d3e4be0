package httpapi

import (
	"bytes"
	"net/http"
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/mailroom/mailroom/internal/sse"
	"github.com/mailroom/mailroom/mailbox"
)

// agents lists every agent the mailbox knows or has heard from. The answer
// is an object per agent inside a kind, so that later facts about an agent
// (its card, when it registered) and filters are additions, not a new shape.
func (a *api) agents(w http.ResponseWriter, r *http.Request) error {
	p, err := parseParams(r, "skill")
	if err != nil {
		return err
	}
	skill, filter := p.get("skill")
	if filter {
		if err := skillQuery(skill); err != nil {
			return err
		}
	}
	list, err := a.svc.Agents(r.Context())
	if err != nil {
		return err
	}
	if filter {
		kept := list[:0]
		for _, ag := range list {
			if ag.Card != nil && ag.Card.HasSkill(skill) {
				kept = append(kept, ag)
			}
		}
		list = kept
	}
	writeJSON(w, http.StatusOK, mailbox.AgentsResponse{Kind: mailbox.KindAgents, Agents: nonNil(list)})
	return nil
}

// wantsAgents reads ?agents=: whether an event stream also carries the
// agents listing. Off by default, so a reader that knows only log events
// (each with its id) never meets a block without one.
func wantsAgents(p params) (bool, error) {
	v, ok := p.get("agents")
	if !ok {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, mailbox.Invalidf("agents", "got %q, expected true or false (whether the stream also carries the agents listing)", v)
	}
	return on, nil
}

// appendAgents writes the agents listing as an SSE block without an id:
// it is no log event, so it must not move the subscriber's Last-Event-ID.
// The engine made it with its cards' webhook secrets redacted.
func appendAgents(buf *bytes.Buffer, up mailbox.AgentsUpdate) error {
	data, err := encodedOnce(up.Encoded, up)
	if err != nil {
		return err
	}
	sse.AppendBlock(buf, "", mailbox.EventAgents, data)
	return nil
}

// register registers or replaces the card of the agent in the path.
func (a *api) register(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	var card mailbox.AgentCard
	if err := decodeBody(w, r, &card, "an agent card"); err != nil {
		return err
	}
	reg, err := a.svc.RegisterAgent(r.Context(), r.PathValue("agent"), card)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.AgentRegisteredResponse{Kind: mailbox.KindAgentRegistered, Agent: reg})
	return nil
}

// deregister removes the card of the agent in the path.
func (a *api) deregister(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	agent := r.PathValue("agent")
	if err := a.svc.DeregisterAgent(r.Context(), agent); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, mailbox.AgentDeregisteredResponse{Kind: mailbox.KindAgentDeregistered, Agent: agent})
	return nil
}

// skillQuery checks a ?skill= filter: what a card's skill id could be,
// so a filter that can match nothing (a NUL, a control character, bytes
// that are not UTF-8) is refused rather than answered with an empty list.
func skillQuery(skill string) error {
	const expected = "expected a skill id such as code-review; omit the parameter for every agent"
	switch {
	case skill == "":
		return mailbox.Invalidf("skill", "got \"\", %s", expected)
	case len(skill) > mailbox.MaxCardTextBytes:
		return mailbox.Invalidf("skill", "got %d bytes, %s of at most %d bytes", len(skill), expected, mailbox.MaxCardTextBytes)
	case !utf8.ValidString(skill):
		return mailbox.Invalidf("skill", "got %q, which is not UTF-8; %s", skill, expected)
	}
	for i, r := range skill {
		if unicode.IsControl(r) {
			return mailbox.Invalidf("skill", "got %q, whose character U+%04X at byte %d is a control character; %s", skill, r, i, expected)
		}
	}
	return nil
}
