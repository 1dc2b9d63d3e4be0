package mailbox

import (
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
)

// Remote agents. A registered agent may be remote: an A2A server the
// daemon delivers its tasks to, leasing them on its behalf (the lease's
// holder is the agent) and posting its results under the lease guard, so
// every guarantee and repair covers it as it covers an agent that polls.
// The registry records where the agent is (RemoteSpec, never its
// credentials, which live in the daemon's configuration); the log records
// the moment the remote accepts a task (remote_accepted), since from then
// on the task is followed at the remote and never sent again blindly.

// Bindings a remote agent is called with. BindingAuto picks one from the
// remote's card; the legacy tasks/send dialect is used only when asked.
const (
	BindingAuto       = "auto"
	BindingJSONRPC03  = "jsonrpc-0.3"
	BindingJSONRPC10  = "jsonrpc-1.0"
	BindingHTTPJSON10 = "http+json-1.0"
	BindingLegacy     = "legacy"
)

// Bounds of a remote agent's registration.
const (
	DefaultRemoteConcurrency = 4
	MaxRemoteConcurrency     = 64
	MaxRemoteURLBytes        = 2048
)

// RemoteSpec says where a remote agent is and how many of its tasks may
// be in flight at once.
type RemoteSpec struct {
	// URL is the agent's base URL or the URL of its card.
	URL string `json:"url" yaml:"url"`
	// Binding is auto (from the card) or one of the Binding constants.
	Binding string `json:"binding" yaml:"binding"`
	// Concurrency bounds the tasks delivered and not yet finished; 0 (left
	// out) is the default, 4. A request that says "concurrency": 0 is
	// refused by the decoder (the zero tag), which alone can tell it from
	// a field left out; the log never holds 0 (it holds the default).
	Concurrency int `json:"concurrency,omitempty" yaml:"concurrency" zero:"expected 1 to 64 tasks in flight at once; leave the field out for the default, 4"`
	// RequireSignedCard: the remote's card is verified at every read
	// against the keys below (CardJWKSURL or CardJWKS, one of them), and
	// nothing is delivered to it while its card does not verify. The keys
	// are the operator's: never one the card itself names.
	RequireSignedCard bool `json:"require_signed_card,omitempty" yaml:"require_signed_card"`
	// CardJWKSURL is where the keys that sign the remote's cards are
	// published (a JWKS): https, or http on loopback.
	CardJWKSURL string `json:"card_jwks_url,omitempty" yaml:"card_jwks_url"`
	// CardJWKS is the keys themselves, a JWKS ({"keys": [...]}) as JSON
	// text: public keys only, which may travel in the log.
	CardJWKS string `json:"card_jwks,omitempty" yaml:"card_jwks"`
}

// MaxCardJWKSBytes bounds the keys a remote's registration carries.
const MaxCardJWKSBytes = 16 << 10

// normalizeRemote checks a remote agent's registration and fills in its
// defaults; field names the registration's remote object.
func normalizeRemote(field string, r *RemoteSpec) error {
	u := strings.TrimSpace(r.URL)
	switch {
	case u == "":
		return Invalidf(field+".url", "got \"\", expected the agent's base URL or card URL, such as http://127.0.0.1:9999/ or https://agent.example.com/.well-known/agent-card.json")
	case len(u) > MaxRemoteURLBytes:
		return Invalidf(field+".url", "got %d bytes, expected a URL of at most %d bytes", len(u), MaxRemoteURLBytes)
	}
	if err := cardChars(field+".url", u, false); err != nil {
		return err
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return Invalidf(field+".url", "got %s, expected an absolute http or https URL such as http://127.0.0.1:9999/", quote(r.URL))
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return Invalidf(field+".url", "got scheme %s, expected http or https", quote(p.Scheme))
	}
	if p.User != nil {
		return Invalidf(field+".url", "holds credentials (user:password@); expected a URL without them: put the remote's token in the daemon's configuration (remotes:), which never reaches the log")
	}
	if p.Fragment != "" {
		return Invalidf(field+".url", "got a #fragment, expected a URL without one")
	}
	r.URL = u
	switch r.Binding {
	case "":
		r.Binding = BindingAuto
	case BindingAuto, BindingJSONRPC03, BindingJSONRPC10, BindingHTTPJSON10, BindingLegacy:
	default:
		return Invalidf(field+".binding", "got %s, expected auto, jsonrpc-0.3, jsonrpc-1.0, http+json-1.0 or legacy", quote(r.Binding))
	}
	switch {
	case r.Concurrency == 0:
		r.Concurrency = DefaultRemoteConcurrency
	case r.Concurrency < 1 || r.Concurrency > MaxRemoteConcurrency:
		return Invalidf(field+".concurrency", "got %d, expected 1 to %d tasks in flight at once", r.Concurrency, MaxRemoteConcurrency)
	}
	return normalizeCardKeys(field, r)
}

// normalizeCardKeys checks the keys a remote's card is verified with:
// given with require_signed_card and only then, one place or the other.
// That the JWKS holds usable keys is checked where they are used (the
// dispatcher's every read of the card), which shows a failure in the
// remote's state.
func normalizeCardKeys(field string, r *RemoteSpec) error {
	r.CardJWKSURL, r.CardJWKS = strings.TrimSpace(r.CardJWKSURL), strings.TrimSpace(r.CardJWKS)
	switch {
	case !r.RequireSignedCard && (r.CardJWKSURL != "" || r.CardJWKS != ""):
		return Invalidf(field+".require_signed_card", "got false with the card's keys given, expected true: the keys are used only to verify a card that must be signed")
	case !r.RequireSignedCard:
		return nil
	case r.CardJWKSURL == "" && r.CardJWKS == "":
		return Invalidf(field+".card_jwks_url", "got \"\" and no card_jwks, expected where the keys that sign the remote's card are (a JWKS URL such as https://agent.example.com/.well-known/jwks.json), or card_jwks with the keys themselves")
	case r.CardJWKSURL != "" && r.CardJWKS != "":
		return Invalidf(field+".card_jwks", "given beside card_jwks_url, expected one or the other")
	case r.CardJWKS != "":
		if len(r.CardJWKS) > MaxCardJWKSBytes {
			return Invalidf(field+".card_jwks", "got %d bytes, expected a JWKS of at most %d bytes", len(r.CardJWKS), MaxCardJWKSBytes)
		}
		var set struct {
			Keys []map[string]any `json:"keys"`
		}
		if err := json.Unmarshal([]byte(r.CardJWKS), &set); err != nil || len(set.Keys) == 0 {
			return Invalidf(field+".card_jwks", "is not a JWKS with keys, expected {\"keys\": [{\"kty\": ..., \"kid\": ...}]} as JSON text")
		}
		return nil
	}
	return checkJWKSURL(field+".card_jwks_url", r.CardJWKSURL)
}

// checkJWKSURL refuses a keys URL that is not https, but on loopback: keys
// read in clear text from another host could be anyone's.
func checkJWKSURL(field, u string) error {
	if len(u) > MaxRemoteURLBytes {
		return Invalidf(field, "got %d bytes, expected a URL of at most %d bytes", len(u), MaxRemoteURLBytes)
	}
	if err := cardChars(field, u, false); err != nil {
		return err
	}
	p, err := url.Parse(u)
	if err != nil || p.Host == "" || p.User != nil {
		return Invalidf(field, "got %s, expected an absolute https URL without credentials, such as https://agent.example.com/.well-known/jwks.json", quote(u))
	}
	switch host := p.Hostname(); {
	case p.Scheme == "https":
	case p.Scheme == "http" && (host == "localhost" || net.ParseIP(host).IsLoopback()):
	default:
		return Invalidf(field, "got %s, expected https (http only on loopback): keys read in clear text could be anyone's", quote(u))
	}
	return nil
}

// IsRemote reports whether the registered agent is a remote A2A server
// the daemon delivers to.
func (r *RegisteredAgent) IsRemote() bool { return r.Card.Remote != nil }

// EventRemoteAccepted records that a remote agent accepted a task
// delivered under a lease: the remote's own task and context ids, and the
// binding it was called with. From then on the task is followed at the
// remote, never sent again blindly.
const EventRemoteAccepted = "remote_accepted"

// MaxRemoteIDBytes bounds the ids a remote gives its tasks.
const MaxRemoteIDBytes = 256

// RemoteRef is a task as a remote agent knows it.
type RemoteRef struct {
	TaskID    string `json:"task_id"`
	ContextID string `json:"context_id,omitempty"`
	Binding   string `json:"binding"`
}

// RemoteDelivery is where a task delivered to a remote agent is: the
// remote's ids, the lease it was accepted under, and when.
type RemoteDelivery struct {
	RemoteRef
	Agent        string `json:"agent"`
	LeaseID      string `json:"lease_id"`
	AcceptedAtMs int64  `json:"accepted_at_ms"`
}

// AcceptedUnder reports whether the remote accepted the task under lease
// leaseID: the delivery recovery follows rather than sends.
func (r *TaskRecord) AcceptedUnder(leaseID string) bool {
	return r.Remote != nil && leaseID != "" && r.Remote.LeaseID == leaseID
}

func normalizeRemoteRef(ref RemoteRef) (RemoteRef, error) {
	if err := cardText("remote.task_id", ref.TaskID, MaxRemoteIDBytes, true, "the remote's task id"); err != nil {
		return ref, err
	}
	if err := cardText("remote.context_id", ref.ContextID, MaxRemoteIDBytes, false, "the remote's context id"); err != nil {
		return ref, err
	}
	switch ref.Binding {
	case BindingJSONRPC03, BindingJSONRPC10, BindingHTTPJSON10, BindingLegacy:
	default:
		return ref, Invalidf("remote.binding", "got %s, expected the binding the remote was called with (jsonrpc-0.3, jsonrpc-1.0, http+json-1.0 or legacy)", quote(ref.Binding))
	}
	return ref, nil
}

// DecideRemoteAccepted returns the remote_accepted event that records a
// remote's acceptance of a task delivered under leaseID. The lease must
// still be the task's current one: a remote that answers after an
// operator's repair or a cancel is refused like a late result.
func (s *State) DecideRemoteAccepted(taskID, leaseID string, ref RemoteRef, nowMs int64) (Event, error) {
	ref, err := normalizeRemoteRef(ref)
	if err != nil {
		return Event{}, err
	}
	t, err := s.inFlightTask(taskID, leaseID, "lease_id", "record a remote's acceptance of")
	if err != nil {
		return Event{}, err
	}
	if leaseID == "" {
		return Event{}, Invalidf("lease_id", "got \"\", expected the lease the task was delivered under")
	}
	return Event{AtMs: nowMs, Type: EventRemoteAccepted, TaskID: t.Task.ID, LeaseID: t.LeaseID, LeasedTo: t.LeasedTo, Attempt: t.Attempt, Remote: &ref}, nil
}

// applyRemoteAccepted records where the remote keeps the task.
func (s *State) applyRemoteAccepted(ev Event) error {
	t, err := s.taskIn(ev.TaskID, TaskInFlight)
	if err != nil {
		return err
	}
	if ev.Remote == nil || ev.LeaseID == "" || ev.LeaseID != t.LeaseID {
		return fmt.Errorf("task %s: remote acceptance without its remote or under lease %q, not the current lease %s", t.Task.ID, ev.LeaseID, t.LeaseID)
	}
	t.Remote = &RemoteDelivery{RemoteRef: *ev.Remote, Agent: t.LeasedTo, LeaseID: t.LeaseID, AcceptedAtMs: ev.AtMs}
	t.addHistory(ev)
	return nil
}

// Remote agent states, as the daemon's dispatcher sees them (memory only,
// shown in the agents listing).
const (
	// RemoteResolving: its card is being fetched (at start, or after
	// its registration changed).
	RemoteResolving = "resolving"
	// RemoteHealthy: the last call to it was answered.
	RemoteHealthy = "healthy"
	// RemoteFailing: calls to it fail and are retried with backoff.
	RemoteFailing = "failing"
	// RemoteCircuitOpen: it failed too often: no new task is leased for
	// it (its tasks stay queued) until a probe is answered.
	RemoteCircuitOpen = "circuit_open"
	// RemoteStandby: this instance does not lead a shared mailbox, so
	// another instance delivers.
	RemoteStandby = "standby"
)

// Delivery states of a task leased for a remote agent.
const (
	DeliverySending  = "sending"  // sent (or about to be), not yet accepted
	DeliveryRetrying = "retrying" // the send failed before the remote accepted it; retried with backoff
	// DeliveryChecking: the send may have reached the remote (before a
	// restart or a takeover, or a send cut before its answer), and the
	// daemon asks the remote whether it holds the task (ListTasks by the
	// context id derived from the task) before sending it again or
	// leaving it to the operator.
	DeliveryChecking  = "checking"
	DeliveryAccepted  = "accepted"  // the remote accepted it: followed, never sent again
	DeliveryStreaming = "streaming" // followed on the remote's stream
	DeliveryPolling   = "polling"   // followed by polling the remote's task
	DeliveryCanceling = "canceling" // a cancel or repair is being passed on to the remote
	// DeliveryLost: the remote answered that it does not know a task it
	// had accepted (its task store was reset): the lease is left for the
	// operator.
	DeliveryLost = "lost"
	// DeliveryUnknown: it may have reached the remote (sent before the
	// daemon restarted, or a send that timed out or broke before the
	// answer), the remote cannot say whether it holds it, and it is not
	// idempotent (or its resends reached remote_resend_max), so it is not
	// sent again: the lease is left for the operator. Its last error says
	// why it could not be settled.
	DeliveryUnknown = "unknown"
)

// RemoteStatus is what the dispatcher knows of a remote agent now.
type RemoteStatus struct {
	// Binding and Endpoint are what its card resolved to ("" until it did).
	Binding  string `json:"binding,omitempty"`
	Endpoint string `json:"endpoint,omitempty"`
	State    string `json:"state"`
	// SinceMs is when it entered State.
	SinceMs   int64  `json:"since_ms,omitempty"`
	LastError string `json:"last_error,omitempty"`
	// InFlight counts the deliveries under way; Limit is its concurrency.
	InFlight int `json:"in_flight"`
	Limit    int `json:"limit"`
	// NextProbeMs is when an open circuit is probed next.
	NextProbeMs int64            `json:"next_probe_ms,omitempty"`
	Deliveries  []DeliveryStatus `json:"deliveries,omitempty"`
}

// DeliveryStatus is one task leased for a remote agent.
type DeliveryStatus struct {
	TaskID       string `json:"task_id"`
	LeaseID      string `json:"lease_id"`
	State        string `json:"state"`
	RemoteTaskID string `json:"remote_task_id,omitempty"`
	LastError    string `json:"last_error,omitempty"`
	Attempts     int    `json:"attempts,omitempty"`
	NextTryMs    int64  `json:"next_try_ms,omitempty"`
	// Resends counts the sends of an idempotent task made again after a
	// send that may have reached the remote; ResendMax is the bound
	// (remote_resend_max) past which the lease is left to the operator.
	Resends   int `json:"resends,omitempty"`
	ResendMax int `json:"resend_max,omitempty"`
}
