package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mailroom/mailroom/mailbox"
)

// Remote agents in the agent verbs: the flags that register one (an A2A
// server the daemon delivers to) and the table that shows how its
// deliveries go.

const remoteRegisterExamples = "mailroom agent register echo@remote --remote http://127.0.0.1:9999/    # an A2A server: the daemon delivers its tasks; its name and skills are the remote's\n" +
	"mailroom agent register echo@remote --remote https://echo.example.com/.well-known/agent-card.json --binding jsonrpc-0.3 --concurrency 8 --name Echo\n" +
	"mailroom agent register echo@remote --remote https://echo.example.com/ --require-signed-card --card-jwks-url https://echo.example.com/.well-known/jwks.json   # deliver only while its card's signature verifies\n" +
	"mailroom agent register echo@remote --remote https://echo.example.com/ --require-signed-card --card-jwks-file echo-keys.json   # the keys from a file, kept in the registration\n"

// bindings are the values --binding takes, in the order help lists them.
var bindings = []string{mailbox.BindingAuto, mailbox.BindingJSONRPC03, mailbox.BindingJSONRPC10, mailbox.BindingHTTPJSON10, mailbox.BindingLegacy}

type remoteFlags struct {
	url         *string
	binding     *string
	concurrency *int
	// The remote's card must be signed by one of these keys.
	requireSigned *bool
	jwksURL       *string
	jwksFile      *string
}

func addRemoteFlags(fs *verbFlags) remoteFlags {
	return remoteFlags{
		url: fs.String("remote", "", "the agent is a remote A2A server at this base URL or card URL: the daemon leases its tasks on its behalf and delivers them (its credentials go in the daemon's configuration, never here)"),
		binding: fs.String("binding", "", "with --remote: how to call it, "+strings.Join(bindings, ", ")+
			" (default auto: from the remote's card; legacy, the tasks/send dialect, only when asked)"),
		concurrency: fs.Int("concurrency", 0, fmt.Sprintf("with --remote: at most this many of its tasks in flight at once, 1 to %d (default %d)",
			mailbox.MaxRemoteConcurrency, mailbox.DefaultRemoteConcurrency)),
		requireSigned: fs.Bool("require-signed-card", false, "with --remote: deliver to it only while its card carries a signature by one of the keys of --card-jwks-url or --card-jwks-file (a card that does not verify stops delivery, shown as the remote's state)"),
		jwksURL:       fs.String("card-jwks-url", "", "with --require-signed-card: the https URL of the JWKS holding the keys that sign the remote's card (read on every read of the card; never a key URL the card names itself)"),
		jwksFile:      fs.String("card-jwks-file", "", "with --require-signed-card: a JSON file holding that JWKS ({\"keys\": [...]}), kept in the registration"),
	}
}

// spec is the remote the flags register, nil without --remote. It
// refuses what the daemon would refuse anyway when the mistake is plainly
// the flags' (a binding with no remote, a binding misspelt), so the error
// names the flag typed.
func (r remoteFlags) spec(fs *verbFlags) (*mailbox.RemoteSpec, error) {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["remote"] {
		for _, name := range []string{"binding", "concurrency", "require-signed-card", "card-jwks-url", "card-jwks-file"} {
			if given[name] {
				return nil, usagef("--%s: applies to a remote agent only; add --remote URL (the remote's base URL or card URL)", name)
			}
		}
		return nil, nil
	}
	if strings.TrimSpace(*r.url) == "" {
		return nil, usagef("--remote: got %q, expected the agent's base URL or card URL, such as http://127.0.0.1:9999/", *r.url)
	}
	if given["binding"] && !slices.Contains(bindings, *r.binding) {
		return nil, usagef("--binding: got %q, expected %s", *r.binding, strings.Join(bindings, ", "))
	}
	if given["concurrency"] && (*r.concurrency < 1 || *r.concurrency > mailbox.MaxRemoteConcurrency) {
		return nil, usagef("--concurrency: got %d, expected 1 to %d tasks in flight at once", *r.concurrency, mailbox.MaxRemoteConcurrency)
	}
	spec := &mailbox.RemoteSpec{URL: *r.url, Binding: *r.binding, Concurrency: *r.concurrency,
		RequireSignedCard: *r.requireSigned, CardJWKSURL: *r.jwksURL}
	if given["card-jwks-file"] {
		data, err := os.ReadFile(*r.jwksFile)
		if err != nil {
			return nil, usagef("--card-jwks-file: %v; expected a JSON file holding the JWKS that signs the remote's card", err)
		}
		spec.CardJWKS = string(data)
	}
	return spec, nil
}

// remoteFlag is the flag a refused field of the card's remote was typed
// into.
func remoteFlag(field string) (string, bool) {
	switch field {
	case "remote", "remote.url":
		return "--remote", true
	case "remote.binding":
		return "--binding", true
	case "remote.concurrency":
		return "--concurrency", true
	case "remote.require_signed_card":
		return "--require-signed-card", true
	case "remote.card_jwks_url":
		return "--card-jwks-url", true
	case "remote.card_jwks":
		return "--card-jwks-file", true
	}
	return "", false
}

func printRemoteRegistered(w io.Writer, agent string, card mailbox.AgentCard) {
	r := card.Remote
	fmt.Fprintf(w, "registered %s as a remote agent: the daemon delivers its tasks to %s (binding %s, at most %d in flight)\n",
		agent, visible(r.URL), visible(r.Binding), r.Concurrency)
	if card.Name == "" {
		fmt.Fprintln(w, "its name and skills are the remote's own, served once the daemon has read its card")
	} else {
		fmt.Fprintf(w, "served as %s with %d skill%s\n", visible(card.Name), len(card.Skills), plural(len(card.Skills)))
	}
}

// printRemoteAgents writes a second table for the remote agents among
// shown (nothing if there are none): where each is, how it is called,
// how its deliveries go and the last thing that went wrong.
func printRemoteAgents(w io.Writer, shown []mailbox.AgentInfo, now time.Time) error {
	var remotes []mailbox.AgentInfo
	for _, a := range shown {
		if a.Card != nil && a.Card.Remote != nil {
			remotes = append(remotes, a)
		}
	}
	if len(remotes) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nremote agents (the daemon delivers their tasks):")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "AGENT\tURL\tBINDING\tSTATE\tIN FLIGHT\tDELIVERIES\tLAST ERROR")
	for _, a := range remotes {
		spec, st := a.Card.Remote, a.Remote
		binding, state, inFlight, deliveries, lastErr := spec.Binding, "not reported", fmt.Sprintf("%d/%d", a.InFlight, spec.Concurrency), "-", "-"
		if st != nil {
			if st.Binding != "" && st.Binding != spec.Binding {
				binding = st.Binding + " (" + spec.Binding + ")"
			}
			state = remoteState(st, now)
			inFlight = fmt.Sprintf("%d/%d", st.InFlight, st.Limit)
			deliveries = deliveryCounts(st.Deliveries)
			lastErr = orDash(truncate(st.LastError, 60))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.Agent, truncate(spec.URL, 72), truncate(binding, 28), state, inFlight, deliveries, lastErr)
	}
	return tw.Flush()
}

// remoteState is a remote agent's state as the table says it: how long
// it has been so, and when an open circuit is probed next.
func remoteState(st *mailbox.RemoteStatus, now time.Time) string {
	s := strings.ReplaceAll(truncate(st.State, 20), "_", " ")
	if st.SinceMs > 0 {
		s += " for " + age(now, st.SinceMs)
	}
	if st.State == mailbox.RemoteCircuitOpen && st.NextProbeMs > 0 {
		s += ", probe " + until(now, st.NextProbeMs)
	}
	return s
}

// deliveryCounts counts a remote's deliveries by state, the ones left
// for the operator (lost, unknown) first: "1 lost, 2 polling".
func deliveryCounts(ds []mailbox.DeliveryStatus) string {
	if len(ds) == 0 {
		return "-"
	}
	order := []string{mailbox.DeliveryLost, mailbox.DeliveryUnknown, mailbox.DeliveryRetrying, mailbox.DeliverySending,
		mailbox.DeliveryAccepted, mailbox.DeliveryStreaming, mailbox.DeliveryPolling, mailbox.DeliveryCanceling}
	n := map[string]int{}
	for _, d := range ds {
		n[d.State]++
	}
	var parts []string
	for _, s := range order {
		if n[s] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[s], s))
			delete(n, s)
		}
	}
	var other []string
	for s := range n {
		other = append(other, fmt.Sprintf("%d %s", n[s], truncate(s, 20)))
	}
	slices.Sort(other)
	return strings.Join(append(parts, other...), ", ")
}
