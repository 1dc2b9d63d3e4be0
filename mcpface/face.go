// Package mcpface is Mailroom's Model Context Protocol face: an MCP server
// (github.com/modelcontextprotocol/go-sdk) whose tools and resources let an
// agent inside an MCP host send tasks, take work, answer questions, find
// other agents and, with a repair token, mend stuck leases.
//
// The face holds no policy of its own. Every tool is a call of the Go client
// (package client) to a daemon, carrying the caller's bearer token, so the
// daemon's guarded service (auth.Guard) decides every request exactly as it
// decides the CLI's, and its refusals come back as tool errors a model can
// act on. `mailroom mcp` serves one face over stdio; the daemon's /mcp route
// serves one per HTTP session (Handler).
package mcpface

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/client"
	"github.com/mailroom/mailroom/mailbox"
)

// ErrNoAgent is New's error when neither the token nor Options.Agent says
// whom the session acts for (a daemon without tokens).
var ErrNoAgent = errors.New("no agent to act as")

// Options configure a face.
type Options struct {
	// Agent is the agent id the session acts as: the sender of the tasks it
	// sends, the recipient it leases for. "" means the token's principal;
	// a daemon without tokens has none, and then Agent is required.
	Agent string
	// Version is the server's version in the MCP handshake.
	Version string
	// Logger gets the face's log; nil discards it.
	Logger *slog.Logger
	// SessionID, when set, is the MCP session id the server gives its
	// session (the streamable HTTP transport's Mcp-Session-Id).
	SessionID string
	// Ended, when set, is called once the session the face serves has
	// ended (after Close).
	Ended func()
}

// Face is one MCP server acting as one agent against one daemon.
type Face struct {
	// Server is the MCP server; run it on a transport (mcp.StdioTransport,
	// an in-memory one) or hand it to a StreamableHTTPHandler.
	Server *mcp.Server

	c     *client.Client
	agent string
	who   mailbox.WhoAmI
	log   *slog.Logger
	// sessionID is Options.SessionID.
	sessionID string

	// mu guards the subscriptions (watched), the card resources listed
	// (cards) and follow, the event stream behind the subscriptions,
	// started by the first and ended by Close.
	mu      sync.Mutex
	watched map[string]int  // task id -> subscriptions
	cards   map[string]bool // card resource URIs
	follow  *follower
}

// The capabilities that decide which tools a face lists. The daemon
// decides every call; the list only spares a model tools it could never
// use.
const (
	capAdmin      = "a2a.admin"
	capRequeue    = "a2a.repair.requeue"
	capForceError = "a2a.repair.force_error"
)

// New asks the daemon whom c's token speaks for and returns a face acting
// as that agent (or opts.Agent). It fails when the daemon cannot be
// reached, refuses the token, or runs without tokens and no agent is given.
func New(ctx context.Context, c *client.Client, opts Options) (*Face, error) {
	who, err := c.WhoAmI(ctx)
	if err != nil {
		return nil, err
	}
	agent := opts.Agent
	if agent == "" {
		agent = who.Principal
	}
	if agent == "" {
		return nil, fmt.Errorf("agent: the daemon at %s runs without tokens, so it cannot say whom this session acts for; give the agent id it sends as and leases for (such as planner@local): %w", c.BaseURL(), ErrNoAgent)
	}
	// An agent given is checked here; a principal is the daemon's to
	// judge (an operator's name such as Alice sends nothing, and its
	// repairs need no agent id).
	if opts.Agent != "" {
		if err := mailbox.ValidateAgentID("agent", agent); err != nil {
			return nil, err
		}
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	version := opts.Version
	if bi, ok := debug.ReadBuildInfo(); version == "" && ok && bi.Main.Version != "" {
		version = bi.Main.Version
	}
	if version == "" {
		version = "(devel)"
	}
	f := &Face{c: c, agent: agent, who: who, log: logger, sessionID: opts.SessionID, watched: map[string]int{}}
	var sessionID func() string
	if opts.SessionID != "" {
		sessionID = func() string { return opts.SessionID }
	}
	f.Server = mcp.NewServer(&mcp.Implementation{Name: "mailroom", Title: "Mailroom", Version: version}, &mcp.ServerOptions{
		Instructions: f.instructions(),
		GetSessionID: sessionID,
		// A face serves one session: when it ends, so does the face's
		// event stream.
		InitializedHandler: func(_ context.Context, req *mcp.InitializedRequest) {
			go func() {
				req.Session.Wait()
				f.Close()
				if opts.Ended != nil {
					opts.Ended()
				}
			}()
		},
		Logger:             logger,
		SubscribeHandler:   f.subscribe,
		UnsubscribeHandler: f.unsubscribe,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{Subscribe: true},
		},
	})
	f.addSenderTools()
	f.addWorkerTools()
	f.addDiscoveryTools()
	if f.mayRepair(capRequeue) || f.mayRepair(capForceError) {
		f.addOperatorTools()
	}
	f.addResources()
	return f, nil
}

// Agent is the agent id the face acts as.
func (f *Face) Agent() string { return f.agent }

// Close ends the face's event stream, if a subscription started one.
func (f *Face) Close() {
	f.mu.Lock()
	fl := f.follow
	f.follow = nil
	f.mu.Unlock()
	if fl != nil {
		fl.stop()
	}
}

// mayRepair reports whether the token holds capability (or a2a.admin), or
// the daemon runs without tokens, where everyone may.
func (f *Face) mayRepair(capability string) bool {
	if !f.who.Auth {
		return true
	}
	return slices.Contains(f.who.Capabilities, capability) || slices.Contains(f.who.Capabilities, capAdmin)
}

func (f *Face) instructions() string {
	return "Mailroom is a durable mailbox for work between agents. This session acts as the agent " + f.agent + ". " +
		"To delegate: send_task to another agent (find one with list_agents or find_agents_by_skill), then wait_result for that task or drain_results for all of yours (each can wait up to 20 s); a result whose status is input_required is a question: answer it with reply. " +
		"To work: lease_task (it can wait up to 20 s), do the work, then post_result with the task_id and lease_id the lease gave you, or ask_input to ask the sender a question. " +
		"Tasks are resources (mailroom://tasks/{task_id}) you can read and subscribe to. Refusals explain which argument was wrong and what was expected."
}
