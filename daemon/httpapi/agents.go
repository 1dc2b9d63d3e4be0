package httpapi

import (
	"bytes"
	"net/http"
	"strconv"

	"github.com/mailroom/mailroom/mailbox"
)

// agents lists every agent the mailbox knows or has heard from. The answer
// is an object per agent inside a kind, so that later facts about an agent
// (its card, when it registered) and filters are additions, not a new shape.
func (a *api) agents(w http.ResponseWriter, r *http.Request) error {
	if _, err := parseParams(r); err != nil {
		return err
	}
	list, err := a.svc.Agents(r.Context())
	if err != nil {
		return err
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
		return false, mailbox.Invalidf("agents", "agents: got %q, expected true or false (whether the stream also carries the agents listing)", v)
	}
	return on, nil
}

// appendAgents writes the agents listing as an SSE block without an id:
// it is no log event, so it must not move the subscriber's Last-Event-ID.
func appendAgents(buf *bytes.Buffer, up mailbox.AgentsUpdate) error {
	data, err := encodedOnce(up.Encoded, up)
	if err != nil {
		return err
	}
	appendBlock(buf, "", mailbox.EventAgents, data)
	return nil
}
