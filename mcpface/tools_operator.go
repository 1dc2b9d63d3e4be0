package mcpface

import (
	"context"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mailroom/mailroom/mailbox"
)

// Discovery (every session) and the operator's tools (only a session whose
// token may repair: a2a.repair.requeue, a2a.repair.force_error or
// a2a.admin, or a daemon without tokens).

// ListAgentsInput is list_agents' arguments: none.
type ListAgentsInput struct{}

// SkillInput is find_agents_by_skill's arguments.
type SkillInput struct {
	Skill string `json:"skill" jsonschema:"a skill id, as agents' cards list them (list_agents shows them)"`
}

// AgentsOutput lists agents.
type AgentsOutput struct {
	Agents []AgentView `json:"agents" jsonschema:"the agents, sorted by id"`
}

// QueueStatusInput is queue_status' arguments.
type QueueStatusInput struct {
	State string `json:"state,omitempty" jsonschema:"only tasks in this state: queued, in_flight or waiting (default: all three)"`
	Limit int    `json:"limit,omitempty" jsonschema:"most tasks to list, 1 to 1000 (default 50): in-flight leases first, then tasks waiting on their senders, then queued tasks"`
}

// QueueStatusOutput is queue_status' answer.
type QueueStatusOutput struct {
	Queued         int        `json:"queued" jsonschema:"tasks waiting to be leased"`
	InFlight       int        `json:"in_flight" jsonschema:"tasks leased to a worker"`
	Waiting        int        `json:"waiting" jsonschema:"tasks waiting on their sender's answer"`
	ResultsPending int        `json:"results_pending" jsonschema:"results waiting for their senders to drain them"`
	Tasks          []TaskView `json:"tasks" jsonschema:"the tasks listed: in-flight leases (oldest first), then tasks waiting on their senders, then queued tasks (oldest first)"`
}

// StaleLeasesInput is stale_leases' arguments.
type StaleLeasesInput struct {
	OlderThanSeconds *int `json:"older_than_seconds,omitempty" jsonschema:"leases held at least this many seconds count as stale (default 300; 0 lists every lease)"`
	Limit            int  `json:"limit,omitempty" jsonschema:"most leases to list, 1 to 1000 (default 50), oldest first"`
}

// StaleLeasesOutput is stale_leases' answer.
type StaleLeasesOutput struct {
	Leases []TaskView `json:"leases" jsonschema:"in-flight tasks whose lease is older than asked, with lease_id and leased_to: what requeue and force_error need"`
}

// RequeueInput is requeue's arguments.
type RequeueInput struct {
	TaskID        string `json:"task_id" jsonschema:"the in-flight task"`
	LeaseID       string `json:"lease_id" jsonschema:"the lease you inspected (stale_leases shows it): refused if the lease changed since"`
	Reason        string `json:"reason" jsonschema:"why, for the audit trail, such as 'worker crashed'"`
	DuplicateRisk string `json:"duplicate_risk" jsonschema:"idempotent (only for tasks sent as idempotent) or operator_accepted (you accept the work may run twice)"`
	To            string `json:"to,omitempty" jsonschema:"optional: hand the task to this agent instead of its recipient; it must be an agent the mailbox knows (list_agents), unless new_agent is true"`
	NewAgent      bool   `json:"new_agent,omitempty" jsonschema:"optional, with to: true confirms that to is a new agent the mailbox has never heard of (without it such a move is refused, naming the known agents it is close to)"`
}

// ForceErrorInput is force_error's arguments.
type ForceErrorInput struct {
	TaskID  string `json:"task_id" jsonschema:"the in-flight or waiting task"`
	LeaseID string `json:"lease_id" jsonschema:"the lease you inspected (stale_leases shows it): refused if the lease changed since"`
	Reason  string `json:"reason" jsonschema:"why, for the audit trail, such as 'agent gone'"`
	Message string `json:"message" jsonschema:"the error message the task's sender gets as its result"`
}

// MoveQueuedInput is move_queued's arguments.
type MoveQueuedInput struct {
	TaskID    string `json:"task_id" jsonschema:"the queued task (no worker holds it)"`
	QueuedFor string `json:"queued_for" jsonschema:"the agent you saw it queued for (queue_status shows it): refused if it was leased or moved since"`
	To        string `json:"to" jsonschema:"the new recipient; it must be an agent the mailbox knows (list_agents), unless new_agent is true"`
	Reason    string `json:"reason" jsonschema:"why, for the audit trail, such as 'coder@local is gone'"`
	NewAgent  bool   `json:"new_agent,omitempty" jsonschema:"optional: true confirms that to is a new agent the mailbox has never heard of"`
}

// CancelQueuedInput is cancel_queued's arguments.
type CancelQueuedInput struct {
	TaskID    string `json:"task_id" jsonschema:"the queued task (no worker holds it)"`
	QueuedFor string `json:"queued_for" jsonschema:"the agent you saw it queued for (queue_status shows it): refused if it was leased or moved since"`
	Reason    string `json:"reason" jsonschema:"why, for the audit trail; the sender's error names it"`
	Message   string `json:"message,omitempty" jsonschema:"optional: the error message the task's sender gets (default: one naming who canceled it, the recipient and the reason)"`
}

// RepairOutput is requeue's, force_error's, move_queued's and
// cancel_queued's answer.
type RepairOutput struct {
	TaskID    string `json:"task_id"`
	Action    string `json:"action" jsonschema:"requeued, forced_error, moved or canceled"`
	State     string `json:"state" jsonschema:"the task's state now: queued or result_pending"`
	Attempt   int    `json:"attempt" jsonschema:"the attempts so far"`
	Recipient string `json:"recipient,omitempty" jsonschema:"the task's recipient now, after a requeue with to"`
}

var repairNames = map[string]string{"reason": "reason", "task_id": "task_id", "command.lease_id": "lease_id", "lease_id": "lease_id",
	"command.duplicate_risk": "duplicate_risk", "duplicate_risk": "duplicate_risk", "command.message": "message", "message": "message",
	"command.recipient": "to", "recipient": "to", "command.new_agent": "new_agent", "command.queued_for": "queued_for"}

func (f *Face) addDiscoveryTools() {
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "list_agents",
		Title: "List the mailbox's agents",
		Description: "List every agent the mailbox knows: its card (name, description, skills) when it registered one, its queued tasks, " +
			"leases and pending results, and when it was last seen. Use it to choose whom to send_task to. Changes nothing. Needs the a2a.read capability.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, f.listAgents)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:        "find_agents_by_skill",
		Title:       "Find agents with a skill",
		Description: "List the registered agents whose card lists the given skill id, with their cards and load. Changes nothing. Needs the a2a.read capability.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, f.findAgents)
}

func (f *Face) addOperatorTools() {
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:        "queue_status",
		Title:       "Queue status (operator)",
		Description: "The mailbox's totals (queued, in flight, waiting, results pending) and its tasks: in-flight leases first, then tasks waiting on their senders, then queued tasks. Changes nothing. Needs a2a.read.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, f.queueStatus)
	mcp.AddTool(f.Server, &mcp.Tool{
		Name:  "stale_leases",
		Title: "Find stale leases (operator)",
		Description: "List the leases held longer than older_than_seconds, oldest first: work a worker may have dropped. Each carries the task_id and lease_id " +
			"that requeue and force_error need. Leases never expire on their own: ending one is an operator's decision. Changes nothing. Needs a2a.read.",
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: boolPtr(false)},
	}, f.staleLeases)
	if f.mayRepair(capRequeue) {
		mcp.AddTool(f.Server, &mcp.Tool{
			Name:  "requeue",
			Title: "Requeue a stuck task (operator)",
			Description: "Take an in-flight task from the worker holding it and queue it again at the head of its recipient's queue (or hand it to another agent with to). " +
				"The work may then run twice: say so with duplicate_risk. Guarded by the lease_id you inspected, so a lease that changed meanwhile is left alone; recorded in the audit trail with your reason. Needs a2a.repair.requeue.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
		}, f.requeue)
		mcp.AddTool(f.Server, &mcp.Tool{
			Name:  "move_queued",
			Title: "Move a queued task to another agent (operator)",
			Description: "Hand a queued task, one no worker holds (an agent that is gone leaves its queue behind), to another agent: it keeps its place as the one that has waited longest. " +
				"Guarded by queued_for, the agent you saw it queued for; recorded in the audit trail with your reason. Needs a2a.repair.requeue and the right to send to the new agent.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
		}, f.moveQueued)
	}
	if f.mayRepair(capForceError) {
		mcp.AddTool(f.Server, &mcp.Tool{
			Name:  "force_error",
			Title: "End a stuck task with an error (operator)",
			Description: "End an in-flight or waiting task with an error result for its sender: the worker's lease ends and its late result is refused. " +
				"Guarded by the lease_id you inspected; recorded in the audit trail with your reason. Needs a2a.repair.force_error.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
		}, f.forceError)
		mcp.AddTool(f.Server, &mcp.Tool{
			Name:  "cancel_queued",
			Title: "Cancel a queued task (operator)",
			Description: "End a queued task, one no worker holds, with an error result for its sender naming your reason: it leaves the queue. " +
				"Guarded by queued_for, the agent you saw it queued for; recorded in the audit trail. Needs a2a.repair.force_error.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: boolPtr(true), OpenWorldHint: boolPtr(false)},
		}, f.cancelQueued)
	}
}

func (f *Face) listAgents(ctx context.Context, _ *mcp.CallToolRequest, _ ListAgentsInput) (*mcp.CallToolResult, AgentsOutput, error) {
	as, err := f.c.Agents(ctx)
	if err != nil {
		return nil, AgentsOutput{}, refusal(err, nil)
	}
	return nil, agentsOutput(as), nil
}

func (f *Face) findAgents(ctx context.Context, _ *mcp.CallToolRequest, in SkillInput) (*mcp.CallToolResult, AgentsOutput, error) {
	if in.Skill == "" {
		return nil, AgentsOutput{}, argError("skill", "missing; give a skill id such as code (list_agents shows each agent's skills)")
	}
	as, err := f.c.AgentsWithSkill(ctx, in.Skill)
	if err != nil {
		return nil, AgentsOutput{}, refusal(err, nil)
	}
	return nil, agentsOutput(as), nil
}

func agentsOutput(as []mailbox.AgentInfo) AgentsOutput {
	out := AgentsOutput{Agents: []AgentView{}}
	for _, a := range as {
		out.Agents = append(out.Agents, agentView(a))
	}
	return out
}

// listLimit checks an operator listing's limit.
func listLimit(limit int) (int, error) {
	if limit == 0 {
		return 50, nil
	}
	if limit < 1 || limit > 1000 {
		return 0, argError("limit", "got %d, expected 1 to 1000", limit)
	}
	return limit, nil
}

func (f *Face) queueStatus(ctx context.Context, _ *mcp.CallToolRequest, in QueueStatusInput) (*mcp.CallToolResult, QueueStatusOutput, error) {
	limit, err := listLimit(in.Limit)
	if err != nil {
		return nil, QueueStatusOutput{}, err
	}
	switch in.State {
	case "", mailbox.TaskQueued, mailbox.TaskInFlight, mailbox.TaskWaiting:
	default:
		return nil, QueueStatusOutput{}, argError("state", "got %q, expected queued, in_flight or waiting (or leave it out for all three)", in.State)
	}
	st, err := f.c.Status(ctx)
	if err != nil {
		return nil, QueueStatusOutput{}, refusal(err, nil)
	}
	out := QueueStatusOutput{Queued: st.Queued, InFlight: st.InFlight, Waiting: st.Waiting, ResultsPending: st.ResultsPending, Tasks: []TaskView{}}
	// What an operator acts on comes first: leases, then questions
	// waiting, then the queue, as `mailroom status` lists them.
	states := []string{mailbox.TaskInFlight, mailbox.TaskWaiting, mailbox.TaskQueued}
	if in.State != "" {
		states = []string{in.State}
	}
	for _, state := range states {
		if len(out.Tasks) == limit {
			break
		}
		view, err := f.c.Queue(ctx, mailbox.QueueFilter{Limit: limit - len(out.Tasks), State: state})
		if err != nil {
			return nil, QueueStatusOutput{}, refusal(err, nil)
		}
		for _, e := range view.Tasks {
			out.Tasks = append(out.Tasks, entryView(e))
		}
	}
	return nil, out, nil
}

func (f *Face) staleLeases(ctx context.Context, _ *mcp.CallToolRequest, in StaleLeasesInput) (*mcp.CallToolResult, StaleLeasesOutput, error) {
	limit, err := listLimit(in.Limit)
	if err != nil {
		return nil, StaleLeasesOutput{}, err
	}
	older := 300
	if in.OlderThanSeconds != nil {
		older = *in.OlderThanSeconds
	}
	if older < 0 || older > 100*365*24*3600 {
		return nil, StaleLeasesOutput{}, argError("older_than_seconds", "got %d, expected 0 or more seconds (up to 100 years)", older)
	}
	age := (time.Duration(older) * time.Second).Milliseconds()
	view, err := f.c.Queue(ctx, mailbox.QueueFilter{Limit: limit, State: mailbox.TaskInFlight, MinLeaseAgeMs: &age})
	if err != nil {
		return nil, StaleLeasesOutput{}, refusal(err, map[string]string{"min_lease_age_ms": "older_than_seconds"})
	}
	out := StaleLeasesOutput{Leases: []TaskView{}}
	for _, e := range view.Tasks {
		out.Leases = append(out.Leases, entryView(e))
	}
	return nil, out, nil
}

// guard checks what every repair needs before the daemon is asked: the
// lease it is guarded by and a reason.
func guard(leaseID, reason string) error {
	if leaseID == "" {
		return argError("lease_id", "missing; give the lease_id you inspected (stale_leases or queue_status show it), so a lease that changed meanwhile is left alone")
	}
	if reason == "" {
		return argError("reason", "missing; say why, for the audit trail")
	}
	return nil
}

func (f *Face) requeue(ctx context.Context, _ *mcp.CallToolRequest, in RequeueInput) (*mcp.CallToolResult, RepairOutput, error) {
	if err := guard(in.LeaseID, in.Reason); err != nil {
		return nil, RepairOutput{}, err
	}
	switch in.DuplicateRisk {
	case mailbox.RiskIdempotent, mailbox.RiskOperatorAccepted:
	default:
		return nil, RepairOutput{}, argError("duplicate_risk", "got %q, expected idempotent (only for tasks sent as idempotent) or operator_accepted (you accept the work may run twice)", in.DuplicateRisk)
	}
	return f.repair(ctx, mailbox.RepairRequest{TaskID: in.TaskID, Reason: in.Reason,
		Command: mailbox.RepairCommand{Action: mailbox.ActionRequeue, LeaseID: in.LeaseID, DuplicateRisk: in.DuplicateRisk, Recipient: in.To, NewAgent: in.NewAgent}})
}

func (f *Face) forceError(ctx context.Context, _ *mcp.CallToolRequest, in ForceErrorInput) (*mcp.CallToolResult, RepairOutput, error) {
	if err := guard(in.LeaseID, in.Reason); err != nil {
		return nil, RepairOutput{}, err
	}
	if in.Message == "" {
		return nil, RepairOutput{}, argError("message", "missing; give the error message the task's sender will read")
	}
	return f.repair(ctx, mailbox.RepairRequest{TaskID: in.TaskID, Reason: in.Reason,
		Command: mailbox.RepairCommand{Action: mailbox.ActionForceError, LeaseID: in.LeaseID, Message: in.Message}})
}

// queuedGuard checks what a repair of a queued task needs before the
// daemon is asked: the recipient it is guarded by and a reason.
func queuedGuard(queuedFor, reason string) error {
	if queuedFor == "" {
		return argError("queued_for", "missing; give the agent you saw the task queued for (queue_status shows it), so a task leased or moved meanwhile is left alone")
	}
	if reason == "" {
		return argError("reason", "missing; say why, for the audit trail")
	}
	return nil
}

func (f *Face) moveQueued(ctx context.Context, _ *mcp.CallToolRequest, in MoveQueuedInput) (*mcp.CallToolResult, RepairOutput, error) {
	if err := queuedGuard(in.QueuedFor, in.Reason); err != nil {
		return nil, RepairOutput{}, err
	}
	if in.To == "" {
		return nil, RepairOutput{}, argError("to", "missing; give the agent the task goes to (list_agents shows them)")
	}
	return f.repair(ctx, mailbox.RepairRequest{TaskID: in.TaskID, Reason: in.Reason,
		Command: mailbox.RepairCommand{Action: mailbox.ActionMove, QueuedFor: in.QueuedFor, Recipient: in.To, NewAgent: in.NewAgent}})
}

func (f *Face) cancelQueued(ctx context.Context, _ *mcp.CallToolRequest, in CancelQueuedInput) (*mcp.CallToolResult, RepairOutput, error) {
	if err := queuedGuard(in.QueuedFor, in.Reason); err != nil {
		return nil, RepairOutput{}, err
	}
	return f.repair(ctx, mailbox.RepairRequest{TaskID: in.TaskID, Reason: in.Reason,
		Command: mailbox.RepairCommand{Action: mailbox.ActionCancel, QueuedFor: in.QueuedFor, Message: in.Message}})
}

func (f *Face) repair(ctx context.Context, req mailbox.RepairRequest) (*mcp.CallToolResult, RepairOutput, error) {
	out, err := f.c.Repair(ctx, req)
	if err != nil {
		return nil, RepairOutput{}, refusal(err, repairNames)
	}
	return nil, RepairOutput{TaskID: out.TaskID, Action: out.Action, State: out.State, Attempt: out.Attempt, Recipient: out.Recipient}, nil
}
