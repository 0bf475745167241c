package mcpbridge

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/toolkit"
)

// maxToolName is the longest tool name models accept (toolkit.CheckToolName).
const maxToolName = 64

// hashSuffixLen is the length of "_" and 8 hex digits.
const hashSuffixLen = 9

// maxPrefix leaves room for at least one character of the tool's own name
// and the hash suffix.
const maxPrefix = maxToolName - hashSuffixLen - 1

// defaultPrefix returns the prefix of a server's tools when WithPrefix does
// not set one: "mcp__<server>__".
func defaultPrefix(server string) string { return "mcp__" + server + "__" }

// ToolName is the naming rule: the toolstream name of the MCP tool named tool
// behind prefix.
//
//   - prefix+tool when that is a valid tool name (^[a-zA-Z0-9_-]{1,64}$);
//   - otherwise every character outside [a-zA-Z0-9_-] becomes '_', the result
//     is cut to fit, and "_" and the first 8 hex digits of the SHA-256 of the
//     original name are appended: two MCP names that differ always give two
//     toolstream names, and the same name always gives the same one.
func ToolName(prefix, tool string) string {
	if name := prefix + tool; toolkit.CheckToolName(name) == nil {
		return name
	}
	var b strings.Builder
	for _, r := range tool {
		if r < 128 && (r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	s := b.String()
	if room := maxToolName - len(prefix) - hashSuffixLen; len(s) > room {
		s = s[:max(room, 0)]
	}
	sum := sha256.Sum256([]byte(tool))
	return prefix + s + "_" + hex.EncodeToString(sum[:4])
}

// checkPrefix reports whether prefix can start tool names.
func checkPrefix(prefix string) error {
	if len(prefix) > maxPrefix {
		return fmt.Errorf("mcpbridge: tool prefix %q is %d characters; at most %d leave room for the tools' own names",
			prefix, len(prefix), maxPrefix)
	}
	if prefix == "" {
		return nil
	}
	if err := toolkit.CheckToolName(prefix); err != nil {
		return fmt.Errorf("mcpbridge: tool prefix %q: only letters, digits, '_' and '-' may appear in tool names", prefix)
	}
	return nil
}
