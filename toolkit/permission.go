package toolkit

import (
	"context"
	"encoding/json"
)

// PermissionDecision is what a permission check says about a call.
// The permission interceptor (interceptors.Permissions) uses the same
// values: interceptors.Decision is this type.
type PermissionDecision string

// Permission decisions. PermissionPass is a check's "no opinion": the
// permission interceptor goes on to its own rules.
const (
	PermissionPass  PermissionDecision = ""
	PermissionAllow PermissionDecision = "allow"
	PermissionAsk   PermissionDecision = "ask"
	PermissionDeny  PermissionDecision = "deny"
)

// Permission is a tool's own verdict on one of its calls.
type Permission struct {
	Decision PermissionDecision
	// Reason is told to the model on deny and shown to the person on ask.
	Reason string
}

// PermissionCheck is a tool's own permission check (AgentScope's per-tool
// checkPermissions): it sees the call's context (session, user: see
// CallInfoFrom) and exactly the arguments the handler would receive
// (prepared and validated), and says allow, ask, deny or pass. It must be
// quick and must not block: it runs on every call of the tool.
//
// The engine itself never calls it: a permission interceptor does
// (interceptors.Permissions consults it before its rules). A toolkit
// without one runs the tool whatever the check would say.
type PermissionCheck func(ctx context.Context, args json.RawMessage) Permission
