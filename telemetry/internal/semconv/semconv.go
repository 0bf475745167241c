// Package semconv holds the names telemetry gives its spans, span events,
// attributes and metrics: the GenAI semantic conventions' and toolstream's
// own. docs/observability.md maps each; they live here, shared by the
// package and its tests, rather than in telemetry's API.
package semconv

import "go.opentelemetry.io/otel/attribute"

// ScopeName is the instrumentation scope of the tracer and meter.
const ScopeName = "github.com/toolstream/toolstream/telemetry"

// Attribute keys: the GenAI semantic conventions' and toolstream's own.
const (
	OperationName   = attribute.Key("gen_ai.operation.name")
	ToolName        = attribute.Key("gen_ai.tool.name")
	ToolCallID      = attribute.Key("gen_ai.tool.call.id")
	ToolType        = attribute.Key("gen_ai.tool.type")
	ToolDescription = attribute.Key("gen_ai.tool.description")
	ToolArguments   = attribute.Key("gen_ai.tool.call.arguments")
	ToolResult      = attribute.Key("gen_ai.tool.call.result")
	ConversationID  = attribute.Key("gen_ai.conversation.id")
	AgentID         = attribute.Key("gen_ai.agent.id")
	ErrorType       = attribute.Key("error.type")

	CallState      = attribute.Key("toolstream.call.state")
	Attempt        = attribute.Key("toolstream.attempt")
	SuspendReason  = attribute.Key("toolstream.suspend.reason")
	ApprovalStatus = attribute.Key("toolstream.approval.status")
	ApprovalNote   = attribute.Key("toolstream.approval.note")
	ApprovalReason = attribute.Key("toolstream.approval.reason")
	EventType      = attribute.Key("toolstream.event.type")
	BatchID        = attribute.Key("toolstream.batch.id")
	BatchSize      = attribute.Key("toolstream.batch.size")
	BatchFailed    = attribute.Key("toolstream.batch.failed")
	BatchStop      = attribute.Key("toolstream.batch.stop")
	Source         = attribute.Key("toolstream.source")
	Destination    = attribute.Key("toolstream.destination")
)

// Span and span event names.
const (
	OperationExecuteTool = "execute_tool"
	BatchSpan            = "toolstream.batch"
	EventAttempt         = "toolstream.attempt"
	EventSuspend         = "toolstream.suspend"
	EventReset           = "toolstream.reset"
	EventApproval        = "toolstream.approval"
	EventOther           = "toolstream.event"
)

// Metric names.
const (
	MetricDuration     = "gen_ai.execute_tool.duration"
	MetricActive       = "toolstream.calls.active"
	MetricApprovalWait = "toolstream.approval.wait"
	MetricDropped      = "toolstream.progress.dropped"
	MetricUndelivered  = "toolstream.events.undelivered"
)
