// Package gateway is the docker-runner adapter of seed 000: it accepts a
// gateway's POST /execute ({"call","ctx","target"}), validates it, and runs
// the tool through trl's typed API — protocol.API calls only
// (SessionCreate, ExecStream, ExecWait, ExecCancel, SessionDestroy), never
// the session or exec packages — answering with a ToolResult, or the wrapped form with updates
// when output came over time.
//
// It owns the mapping from (target.tenantId, target.workspaceId,
// ctx.sessionId) to a named session, created on first use and destroyed
// after an idle period; the turn-taking of calls in one session; the
// split of a call's timeout so the answer beats the gateway's own; and the
// memory of recent answers by ctx.toolCallId, so a retried POST gets the
// first answer instead of running the command twice.
//
// Authentication, the Host check and the transport-level caps are the HTTP
// transport's, which mounts a Gateway at /execute.
package gateway
