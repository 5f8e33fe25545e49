package protocol

// Command policy and approval (SPEC §16).

// MethodExecApprove decides a pending approval. Only an approver may call
// it: over HTTP with TRL_APPROVER_TOKEN, or a person in the console.
const MethodExecApprove = "exec.approve"

// NotifyExecApproval is sent on exec.stream and exec.attach when the
// command awaits approval and again when it is decided.
const NotifyExecApproval = "exec.approval"

// CodeCommandDenied refuses a command the policy denies (or a person
// denied): nothing ran. POLICY_DENIED is the gateway's own policy layer's
// (seed 000), never trl's.
const CodeCommandDenied Code = "COMMAND_DENIED"

// The state of a command that waits for a person, the reason a status
// says so, and the reason of a command that ended without running.
const (
	StateAwaitingApproval = "awaiting_approval"
	ReasonApproval        = "approval"
	ReasonDenied          = "denied"
)

// Approval is what a person is asked, and, once decided, the decision.
type Approval struct {
	ApprovalID string `json:"approval_id"`
	Rule       string `json:"rule"`
	Reason     string `json:"reason"`
	Dangerous  bool   `json:"dangerous"`
	// Command is the simple command that asked for approval (the whole
	// line is the status's command).
	Command string `json:"command"`
	// Decision is "approve" or "deny" once decided ("" while pending);
	// DecisionReason and Approver say why and who; TimedOut is set when
	// nobody decided in time (a denial).
	Decision       string `json:"decision,omitempty"`
	DecisionReason string `json:"decision_reason,omitempty"`
	Approver       string `json:"approver,omitempty"`
	TimedOut       bool   `json:"timed_out,omitempty"`
}

// ExecApproveParams are exec.approve's parameters.
type ExecApproveParams struct {
	ApprovalID string `json:"approval_id"`
	// Decision is "approve" or "deny".
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// ExecApproveResult is exec.approve's result.
type ExecApproveResult struct {
	ApprovalID string `json:"approval_id"`
	Decision   string `json:"decision"`
	ExecID     string `json:"exec_id,omitempty"`
}

// ApprovalNotification is the params of an exec.approval notification.
type ApprovalNotification struct {
	StreamID string   `json:"stream_id"`
	State    string   `json:"state"`
	Approval Approval `json:"approval"`
}

// PolicyDecision is error.data of COMMAND_DENIED when the policy denied a
// command outright.
type PolicyDecision struct {
	Rule      string `json:"rule"`
	Reason    string `json:"reason"`
	Dangerous bool   `json:"dangerous"`
	Command   string `json:"command"`
}
