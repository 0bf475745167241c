package toolkit

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/schema"
)

// OutputError is the cause of a call whose result did not match the tool's
// output schema (errors.AsType[*OutputError] on [Result.Err]). Its message
// lists one problem per line as "path: message", as [ArgumentError] does
// for arguments.
type OutputError struct {
	Tool     string
	Problems []Problem
}

// Error lists the problems, one "- path: message" line each.
func (e *OutputError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tool %q returned a result that does not match its output schema:", e.Tool)
	for _, p := range e.Problems {
		b.WriteString("\n- ")
		b.WriteString(p.String())
	}
	return b.String()
}

// outputSchema is a tool's output schema, compiled.
type outputSchema struct {
	json json.RawMessage
	v    *schema.Validator
}

func (o *outputSchema) raw() json.RawMessage {
	if o == nil {
		return nil
	}
	return o.json
}

// newOutputSchema compiles an output schema, which must describe an object
// (MCP's structuredContent is one).
func newOutputSchema(name string, s *jsonschema.Schema) (*outputSchema, error) {
	if s.Type != "object" {
		return nil, fmt.Errorf("toolkit: tool %q: output schema must have \"type\": \"object\", got %q", name, schemaTypeName(s))
	}
	v, err := schema.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: output schema: %w", name, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: output schema: %w", name, err)
	}
	return &outputSchema{json: raw, v: v}, nil
}

// rawOutputSchema compiles the output schema a raw tool's spec declares.
func rawOutputSchema(spec *Spec) (*outputSchema, error) {
	if len(spec.OutputSchema) == 0 {
		return nil, nil
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(spec.OutputSchema, &s); err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: output schema: %w", spec.Name, err)
	}
	return newOutputSchema(spec.Name, &s)
}

// typedOutputSchema infers the output schema of a typed tool from Out.
func typedOutputSchema[Out any](name string) (*outputSchema, error) {
	t := reflect.TypeFor[Out]()
	s, ok, err := schema.ForOutput(t)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: output type %s: %w (return json.RawMessage or any to publish no output schema)", name, t, err)
	}
	if !ok {
		return nil, nil
	}
	return newOutputSchema(name, s)
}

// CheckOutput checks content, a successful result of the tool, against
// the tool's output schema, as the engine does before the model sees it:
// nil when the tool has no output schema or the result conforms, else an
// *[OutputError] that lists the problems.
// [Session.Submit] uses it for an external tool's result; it is there for
// code that hands a tool's result over on its own.
func (t *Tool) CheckOutput(content []events.Part) error {
	if t == nil || t.output == nil {
		return nil
	}
	return t.output.check(t.spec.Name, content, t.typed != nil)
}

// check validates a successful call's structured result: the last JSON
// part of its content (a typed tool's is the value it returned, which comes
// last). A raw tool's result must have one; a typed tool's null (a nil map)
// is no structured result.
func (o *outputSchema) check(tool string, content []events.Part, typed bool) error {
	var found *events.Part
	for i := len(content) - 1; i >= 0; i-- {
		if content[i].Type == events.PartJSON {
			found = &content[i]
			break
		}
	}
	if typed && (found == nil || string(found.JSON) == "null") {
		return nil
	}
	if found == nil {
		return &OutputError{Tool: tool, Problems: []Problem{{Message: "no structured result: the result has no JSON value"}}}
	}
	v, err := schema.Decode(found.JSON)
	if err != nil {
		return &OutputError{Tool: tool, Problems: []Problem{{Message: err.Error()}}}
	}
	if probs := o.v.Validate(v); len(probs) > 0 {
		return &OutputError{Tool: tool, Problems: probs}
	}
	return nil
}
