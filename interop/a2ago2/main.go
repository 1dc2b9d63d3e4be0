// Command a2ago2 drives an agent served by a Mailroom daemon with the
// official a2a-go v2 client (v2.3.1, the A2A 1.0 wire), over JSON-RPC and
// HTTP+JSON, and prints one JSON line per scenario: the binding, the
// scenario, its outcome (OK, or the reason of the typed error a2a-go
// mapped the answer to, as a2a.ErrorReason names it: TASK_NOT_FOUND,
// TASK_NOT_CANCELABLE, ..., SERVER_ERROR when it could not read the
// answer) and a detail. It judges nothing: daemon/a2a/interop_go2_test.go
// builds it, runs it against a real daemon with tokens and checks every
// outcome.
//
// It is a module of its own because a2a-go v2 requires a2a-go v0.3.15 and
// grpc 1.80, which in the root module would replace the a2a-go v0.3.3 the
// daemon's own tests are written against.
//
//	a2ago2 -base http://127.0.0.1:7717/agents/coder@local/ -token mr_...
//	a2ago2 -base https://127.0.0.1:7717/agents/coder@local/ -token mr_... -ca-file ca.crt
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/a2aproject/a2a-go/v2/a2a"
	"github.com/a2aproject/a2a-go/v2/a2aclient"
	"github.com/a2aproject/a2a-go/v2/a2aclient/agentcard"
)

// result is one scenario's line.
type result struct {
	Binding  string `json:"binding"`
	Scenario string `json:"scenario"`
	Outcome  string `json:"outcome"`
	Detail   string `json:"detail,omitempty"`
}

// bearer adds a token to every request, as an a2a-go v2 user must when
// the card lists no securityRequirements (the AuthInterceptor attaches
// credentials only for the schemes those list).
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// unknownTask is a task id no daemon has.
const unknownTask = a2a.TaskID("6f9619ff-8b86-4d11-b42d-00c04fc964ff")

func main() {
	base := flag.String("base", "", "the agent's A2A base URL, such as http://127.0.0.1:7717/agents/coder@local/")
	token := flag.String("token", "", "a bearer token that may send to the agent")
	hook := flag.String("hook", "http://127.0.0.1:9/hook", "the webhook URL of the push configs it sets")
	bindings := flag.String("bindings", "JSONRPC,HTTP+JSON", "the bindings to drive, comma-separated")
	caFile := flag.String("ca-file", "", "a PEM file of the CAs to trust for an https -base instead of the system's, as --ca-file makes mailroom's own clients")
	flag.Parse()
	if *base == "" {
		fmt.Fprintln(os.Stderr, "a2ago2: -base is required")
		os.Exit(2)
	}
	transport, err := transportTrusting(*caFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "a2ago2:", err)
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := json.NewEncoder(os.Stdout)
	for _, b := range strings.Split(*bindings, ",") {
		d := &driver{ctx: ctx, binding: a2a.TransportProtocol(b), base: *base, token: *token, hook: *hook, out: out, transport: transport}
		d.run()
	}
}

// transportTrusting is Go's default transport, trusting the CAs in caFile
// instead of the system's when one is given.
func transportTrusting(caFile string) (http.RoundTripper, error) {
	if caFile == "" {
		return http.DefaultTransport, nil
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("-ca-file: got %q, which holds no PEM certificate", caFile)
	}
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

type driver struct {
	ctx       context.Context
	binding   a2a.TransportProtocol
	base      string
	token     string
	hook      string
	out       *json.Encoder
	transport http.RoundTripper // trusting -ca-file
}

// report prints a scenario's outcome: OK when err is nil, else the
// reason of the typed error a2a-go mapped it to.
func (d *driver) report(scenario string, err error, detail string) {
	r := result{Binding: string(d.binding), Scenario: scenario, Outcome: "OK", Detail: detail}
	if err != nil {
		r.Outcome = a2a.ErrorReason(err)
		r.Detail = err.Error()
	}
	_ = d.out.Encode(r)
}

// client resolves the card and makes a client for the driver's binding,
// with the token or without.
func (d *driver) client(card *a2a.AgentCard, withToken bool) (*a2aclient.Client, error) {
	hc := &http.Client{Timeout: 30 * time.Second, Transport: d.transport}
	if withToken {
		hc.Transport = bearer{d.token, d.transport}
	}
	return a2aclient.NewFromCard(d.ctx, card,
		a2aclient.WithJSONRPCTransport(hc), a2aclient.WithRESTTransport(hc),
		a2aclient.WithConfig(a2aclient.Config{PreferredTransports: []a2a.TransportProtocol{d.binding}}))
}

func (d *driver) run() {
	card, err := agentcard.NewResolver(&http.Client{Timeout: 30 * time.Second, Transport: d.transport}).Resolve(d.ctx, d.base)
	detail := ""
	if err == nil {
		var schemes []string
		for name := range card.SecuritySchemes {
			schemes = append(schemes, string(name))
		}
		detail = "security schemes: " + strings.Join(schemes, ",")
	}
	d.report("card", err, detail)
	if err != nil {
		return
	}
	c, err := d.client(card, true)
	if err != nil {
		d.report("client", err, "")
		return
	}
	defer func() { _ = c.Destroy() }()

	_, err = c.GetTask(d.ctx, &a2a.GetTaskRequest{ID: unknownTask})
	d.report("get-unknown", err, "")

	task, err := d.send(c, "a task to cancel")
	d.report("send", err, "")
	if err != nil {
		return
	}
	_, err = c.GetTask(d.ctx, &a2a.GetTaskRequest{ID: task.ID})
	d.report("get", err, "")
	canceled, err := c.CancelTask(d.ctx, &a2a.CancelTaskRequest{ID: task.ID})
	if err == nil && canceled.Status.State != a2a.TaskStateCanceled {
		err = fmt.Errorf("canceled task is %s", canceled.Status.State)
	}
	d.report("cancel", err, "")
	_, err = c.CancelTask(d.ctx, &a2a.CancelTaskRequest{ID: task.ID})
	d.report("cancel-finished", err, "")

	answer := a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart("the answer"))
	answer.TaskID = unknownTask
	_, err = c.SendMessage(d.ctx, &a2a.SendMessageRequest{Message: answer, Config: &a2a.SendMessageConfig{ReturnImmediately: true}})
	d.report("answer-unknown", err, "")

	pushed, err := d.send(c, "a task with webhooks")
	if err != nil {
		d.report("send", err, "")
		return
	}
	cfg := &a2a.PushConfig{TaskID: pushed.ID, ID: "audit", URL: d.hook, Token: "tok-hook"}
	created, err := c.CreateTaskPushConfig(d.ctx, cfg)
	if err == nil && (created.ID != "audit" || created.URL != d.hook) {
		err = fmt.Errorf("created %+v", created)
	}
	d.report("push-create", err, "")
	got, err := c.GetTaskPushConfig(d.ctx, &a2a.GetTaskPushConfigRequest{TaskID: pushed.ID, ID: "audit"})
	if err == nil && (got.ID != "audit" || got.URL != d.hook) {
		err = fmt.Errorf("got %+v", got)
	}
	d.report("push-get", err, "")
	list, err := c.ListTaskPushConfigs(d.ctx, &a2a.ListTaskPushConfigRequest{TaskID: pushed.ID})
	if err == nil && (len(list) != 1 || list[0].ID != "audit") {
		err = fmt.Errorf("listed %d configs", len(list))
	}
	d.report("push-list", err, "")
	err = c.DeleteTaskPushConfig(d.ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: pushed.ID, ID: "audit"})
	d.report("push-delete", err, "")
	err = c.DeleteTaskPushConfig(d.ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: pushed.ID, ID: "audit"})
	d.report("push-delete-again", err, "")
	list, err = c.ListTaskPushConfigs(d.ctx, &a2a.ListTaskPushConfigRequest{TaskID: pushed.ID})
	if err == nil && len(list) != 0 {
		err = fmt.Errorf("listed %d configs after the delete", len(list))
	}
	d.report("push-list-deleted", err, "")
	_, err = c.GetTaskPushConfig(d.ctx, &a2a.GetTaskPushConfigRequest{TaskID: pushed.ID, ID: "audit"})
	d.report("push-get-deleted", err, "")
	err = c.DeleteTaskPushConfig(d.ctx, &a2a.DeleteTaskPushConfigRequest{TaskID: unknownTask, ID: "audit"})
	d.report("push-delete-unknown-task", err, "")

	anon, err := d.client(card, false)
	if err != nil {
		d.report("client-without-token", err, "")
		return
	}
	defer func() { _ = anon.Destroy() }()
	_, err = anon.GetTask(d.ctx, &a2a.GetTaskRequest{ID: pushed.ID})
	d.report("get-without-token", err, "")
}

// send sends a message without waiting for its task to finish and returns
// the task.
func (d *driver) send(c *a2aclient.Client, text string) (*a2a.Task, error) {
	res, err := c.SendMessage(d.ctx, &a2a.SendMessageRequest{
		Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.NewTextPart(text)),
		Config:  &a2a.SendMessageConfig{ReturnImmediately: true},
	})
	if err != nil {
		return nil, err
	}
	task, ok := res.(*a2a.Task)
	if !ok {
		return nil, errors.New("the send answered a message, not a task")
	}
	return task, nil
}
