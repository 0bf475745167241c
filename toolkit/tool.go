package toolkit

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/schema"
)

// Spec describes a tool to the model and to the engine.
type Spec struct {
	// Name is what the model calls: ^[a-zA-Z0-9_-]{1,64}$, the names OpenAI
	// and Anthropic accept.
	Name string
	// Description tells the model what the tool does and when to use it.
	Description string
	// ReadOnly marks tools that change nothing (permission rules use it).
	ReadOnly bool
	// ConcurrencySafe lets the engine run the call in parallel with its
	// concurrency-safe neighbours in a batch. Other calls run one at a time.
	ConcurrencySafe bool
	// External marks tools executed outside the process: their calls are
	// suspended until the result is submitted with [Session.Submit].
	External bool
	// Timeout bounds one call, including the time it waits for a slot. Zero
	// uses the toolkit default; a negative value means no timeout. For
	// external tools the toolkit default does not apply.
	Timeout time.Duration
	// Presets are arguments set by code. They are removed from the schema the
	// model sees and override whatever the model sends for them.
	Presets map[string]any

	// Annotations, as MCP names them: what the tool is like, for clients,
	// people and code (permission modes, retries); see [Spec.IsDestructive]
	// and [Definition.Annotations]. They are hints, not guarantees. The
	// three hints are *bool because "not given" must differ from false:
	// not given means MCP's default, which the Is... methods apply
	// (destructive true, idempotent false, open-world true). Set one with
	// new(false). Write them only before the tool is built: the tool keeps
	// its own copies, and Tool.Spec shares them with its callers.

	// Title is a human-readable name for UIs (MCP's title).
	Title string
	// Destructive says whether a tool that is not read-only may delete or
	// overwrite data (true) or only adds to it (false).
	Destructive *bool
	// Idempotent says whether calling a tool that is not read-only again
	// with the same arguments has no further effect.
	Idempotent *bool
	// OpenWorld says whether the tool reaches outside entities (the web,
	// other people's systems) rather than a closed domain.
	OpenWorld *bool
	// OutputSchema is the JSON Schema (an object schema) of a raw tool's
	// structured result: the last JSON part of a successful call's result,
	// which must be there and conform, or the call fails with the problems
	// (see [OutputError]). Typed tools get it from their output type (see
	// [NewTool]); setting it for one is an error.
	OutputSchema json.RawMessage

	// The tool's own permission check.

	// CheckPermission, if set, is consulted by the permission interceptor
	// before its rules, with the arguments the handler would receive; see
	// [PermissionCheck]. Nothing else calls it.
	CheckPermission PermissionCheck

	// The end of an agent loop.

	// ReturnDirect sends the tool's result straight to the user: a batch
	// whose calls all succeeded on return-direct tools ends the agent loop
	// ([Batch.Stop] reports [StopReturnDirect]) instead of going back to
	// the model. A failed call goes back to the model, which can fix it.
	ReturnDirect bool
}

// RawHandler runs a tool on validated JSON arguments. It returns the last
// piece of the model-visible result (the deltas the handler emitted come
// before it).
type RawHandler func(ctx context.Context, args json.RawMessage) ([]events.Part, error)

// Tool is a registered or registrable tool: a spec, an input schema and a
// handler. Tools are immutable and can be shared between toolkits.
type Tool struct {
	spec    Spec
	schema  *jsonschema.Schema // full input schema, presets included
	params  json.RawMessage    // what the model sees: presets removed
	args    *schema.Args       // prepares arguments in one pass
	handler RawHandler         // raw tools
	typed   typedHandler       // typed tools: run on the input the pass filled
	newIn   func() any         // typed tools: a new *In for the pass to fill
	presets bool               // the tool has presets

	annotations *Annotations  // nil when the spec declares none
	output      *outputSchema // nil without an output schema
	in          reflect.Type  // typed tools: In, for a copy with other presets
	presetVals  map[string]json.RawMessage
}

// typedHandler runs a typed tool on its input, a *In filled by the
// argument pass. Its output is one part (most outputs are, and then no
// slice is made) or several.
type typedHandler func(ctx context.Context, in any) (one events.Part, more []events.Part, err error)

// Spec returns the tool's spec.
func (t *Tool) Spec() Spec { return t.spec }

// Name returns the tool's name.
func (t *Tool) Name() string { return t.spec.Name }

// Definition returns the tool as an LLM request expects it.
func (t *Tool) Definition() Definition {
	return Definition{Name: t.spec.Name, Description: t.spec.Description, Parameters: t.params,
		Annotations: t.annotations, OutputSchema: t.output.raw()}
}

// Definition is a tool as sent to a model: a name, a description and the
// JSON Schema of its parameters. It marshals to the common function shape
// {"name", "description", "parameters"}, plus MCP's "annotations" and
// "outputSchema" when the tool has them.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Parameters is the JSON Schema of the input the model sees (presets
	// removed).
	Parameters json.RawMessage `json:"parameters"`
	// Annotations are the tool's hints with MCP's defaults applied; nil
	// when its spec declares none (no title, not read-only, no hint), so
	// that such a tool's definition is what it always was.
	Annotations *Annotations `json:"annotations,omitempty"`
	// OutputSchema is the JSON Schema of the tool's structured result, if
	// it has one: inferred from a typed tool's result type when that is a
	// struct, a pointer to one or a map with string keys (text, bytes, parts
	// and values that marshal themselves have none); a raw tool's when its
	// spec declares one.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
}

// NewTool makes a tool from a typed function. The input schema is inferred
// from In (a struct): `json` tags name the properties and make them optional
// with omitempty, `jsonschema:"..."` tags describe them, and `tool:"..."` tags
// add enum, default, minimum, maximum, pattern and the other constraints
// listed in the package documentation.
//
// Out may be a string (text), []byte (binary), a [Part] or []Part, or any
// value encoding/json can marshal (a JSON part). When the function returns an
// error its Out is ignored and the error becomes the model-visible message.
//
// When Out is a struct, a pointer to one or a map with string keys, the tool
// publishes its JSON Schema as its output schema ([Definition].OutputSchema,
// MCP's outputSchema), inferred like the input's (tool tags constrain it
// too), and each value it returns is checked against it before the model
// sees it: one that does not conform fails the call with an [OutputError].
// A nil pointer or map returns no structured result and is not checked.
// Other outputs (text, bytes, parts, slices, values that marshal
// themselves) have no output schema.
func NewTool[In, Out any](spec Spec, fn func(ctx context.Context, in In) (Out, error)) (*Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("toolkit: tool %q: nil function", spec.Name)
	}
	s, err := schema.For[In]()
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: %w", spec.Name, err)
	}
	if len(spec.OutputSchema) > 0 {
		return nil, fmt.Errorf("toolkit: tool %q: a typed tool's output schema comes from its output type; leave Spec.OutputSchema empty", spec.Name)
	}
	out, err := typedOutputSchema[Out](spec.Name)
	if err != nil {
		return nil, err
	}
	convert := outputConverter[Out]()
	t, err := newTool(spec, s, nil, reflect.TypeFor[In]())
	if err != nil {
		return nil, err
	}
	t.output = out
	t.newIn = func() any { return new(In) }
	t.typed = func(ctx context.Context, in any) (events.Part, []events.Part, error) {
		out, err := fn(ctx, *in.(*In))
		if err != nil {
			return events.Part{}, nil, err
		}
		return convert(out)
	}
	return t, nil
}

// MustTool is like [NewTool] but panics on error. It is meant for tools
// declared at package level, whose errors are programming mistakes.
func MustTool[In, Out any](spec Spec, fn func(ctx context.Context, in In) (Out, error)) *Tool {
	t, err := NewTool(spec, fn)
	if err != nil {
		panic(err)
	}
	return t
}

// NewRawTool makes a tool from a JSON Schema and a handler over raw JSON, for
// tools known only at run time (MCP servers, remote workers). The schema must
// describe an object.
func NewRawTool(spec Spec, inputSchema json.RawMessage, h RawHandler) (*Tool, error) {
	if h == nil && !spec.External {
		return nil, fmt.Errorf("toolkit: tool %q: nil handler", spec.Name)
	}
	var s jsonschema.Schema
	if err := json.Unmarshal(inputSchema, &s); err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: input schema: %w", spec.Name, err)
	}
	return newTool(spec, &s, h, nil)
}

// NewExternalTool makes a tool that runs outside the process (in a browser, on
// another service, by a person). Its calls are validated, then suspended until
// the caller submits their result with [Session.Submit].
func NewExternalTool(spec Spec, inputSchema json.RawMessage) (*Tool, error) {
	spec.External = true
	return NewRawTool(spec, inputSchema, nil)
}

// newTool checks the schema and the presets and compiles the argument pass,
// which fills a value of type in (nil for raw tools).
func newTool(spec Spec, s *jsonschema.Schema, h RawHandler, in reflect.Type) (*Tool, error) {
	if err := CheckToolName(spec.Name); err != nil {
		return nil, err
	}
	if s.Type != "object" {
		return nil, fmt.Errorf("toolkit: tool %q: input schema must have \"type\": \"object\", got %q", spec.Name, schemaTypeName(s))
	}
	v, err := schema.Compile(s)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: input schema: %w", spec.Name, err)
	}
	spec.ownHints()
	t := &Tool{spec: spec, schema: s, handler: h}
	if a, ok := spec.Annotations(); ok {
		t.annotations = &a
	}
	if in == nil {
		if t.output, err = rawOutputSchema(&t.spec); err != nil {
			return nil, err
		}
	}
	t.spec.OutputSchema = slices.Clone(spec.OutputSchema)
	presets, err := t.setPresets(spec.Presets)
	if err != nil {
		return nil, err
	}
	if t.args, err = v.Args(in, presets); err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: %w", spec.Name, err)
	}
	t.presets = len(presets) > 0
	t.in, t.presetVals = in, presets
	t.spec.Presets = nil // kept in canonical form by the argument pass
	return t, nil
}

func schemaTypeName(s *jsonschema.Schema) string {
	if s.Type != "" {
		return s.Type
	}
	if len(s.Types) > 0 {
		return fmt.Sprint(s.Types)
	}
	return "(none)"
}

// setPresets checks each preset against its property schema, builds the
// model-visible schema without them and returns them as JSON.
func (t *Tool) setPresets(presets map[string]any) (map[string]json.RawMessage, error) {
	name := t.spec.Name
	visible := t.schema
	var out map[string]json.RawMessage
	if len(presets) > 0 {
		// Deep copy through JSON so the full schema stays untouched.
		full, err := json.Marshal(t.schema)
		if err != nil {
			return nil, fmt.Errorf("toolkit: tool %q: %w", name, err)
		}
		visible = new(jsonschema.Schema)
		if err := json.Unmarshal(full, visible); err != nil {
			return nil, fmt.Errorf("toolkit: tool %q: %w", name, err)
		}
		visible.PropertyOrder = slices.Clone(t.schema.PropertyOrder)
		out = make(map[string]json.RawMessage, len(presets))
		for k, val := range presets {
			prop, ok := t.schema.Properties[k]
			if !ok {
				return nil, fmt.Errorf("toolkit: tool %q: preset %q is not a property of its input schema", name, k)
			}
			raw, err := json.Marshal(val)
			if err != nil {
				return nil, fmt.Errorf("toolkit: tool %q: preset %q: %w", name, k, err)
			}
			pv, err := schema.Compile(prop)
			if err != nil {
				return nil, fmt.Errorf("toolkit: tool %q: preset %q: %w", name, k, err)
			}
			decoded, err := schema.Decode(raw)
			if err != nil {
				return nil, fmt.Errorf("toolkit: tool %q: preset %q: %w", name, k, err)
			}
			if probs := pv.Validate(decoded); len(probs) > 0 {
				return nil, fmt.Errorf("toolkit: tool %q: preset %q: %s", name, k, probs[0].Message)
			}
			out[k] = raw
			delete(visible.Properties, k)
			visible.Required = slices.DeleteFunc(visible.Required, func(r string) bool { return r == k })
			visible.PropertyOrder = slices.DeleteFunc(visible.PropertyOrder, func(r string) bool { return r == k })
		}
	}
	params, err := json.Marshal(visible)
	if err != nil {
		return nil, fmt.Errorf("toolkit: tool %q: %w", name, err)
	}
	t.params = params
	return out, nil
}

// CheckToolName reports whether name is a valid tool name:
// ^[a-zA-Z0-9_-]{1,64}$.
func CheckToolName(name string) error {
	if name == "" {
		return fmt.Errorf("%w: empty name", ErrInvalidName)
	}
	if len(name) > 64 {
		return fmt.Errorf("%w: %q is %d bytes long, at most 64 allowed", ErrInvalidName, truncate(name, 70), len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			continue
		}
		return fmt.Errorf("%w: %q has %q at byte %d; use only letters, digits, '_' and '-'", ErrInvalidName, name, rune(c), i)
	}
	return nil
}

// outputConverter picks, once per tool, how a typed handler's output becomes
// content: one part, or several.
func outputConverter[Out any]() func(Out) (events.Part, []events.Part, error) {
	switch reflect.TypeFor[Out]() {
	case reflect.TypeFor[string]():
		return func(o Out) (events.Part, []events.Part, error) { return events.Text(any(o).(string)), nil, nil }
	case reflect.TypeFor[[]events.Part]():
		return func(o Out) (events.Part, []events.Part, error) { return events.Part{}, any(o).([]events.Part), nil }
	case reflect.TypeFor[events.Part]():
		return func(o Out) (events.Part, []events.Part, error) { return any(o).(events.Part), nil, nil }
	case reflect.TypeFor[[]byte]():
		return func(o Out) (events.Part, []events.Part, error) {
			if b := any(o).([]byte); len(b) > 0 {
				return events.Binary("", b), nil, nil
			}
			return events.Part{}, nil, nil
		}
	case reflect.TypeFor[struct{}]():
		return func(Out) (events.Part, []events.Part, error) { return events.Part{}, nil, nil }
	}
	return func(o Out) (events.Part, []events.Part, error) {
		parts, err := convertAny(o)
		return events.Part{}, parts, err
	}
}

// convertAny converts a dynamically typed output.
func convertAny(o any) ([]events.Part, error) {
	switch v := o.(type) {
	case nil:
		return nil, nil
	case string:
		if v == "" {
			return nil, nil
		}
		return []events.Part{events.Text(v)}, nil
	case []events.Part:
		return v, nil
	case events.Part:
		return []events.Part{v}, nil
	case []byte:
		if len(v) == 0 {
			return nil, nil
		}
		return []events.Part{events.Binary("", v)}, nil
	case json.RawMessage:
		if len(v) == 0 {
			return nil, nil
		}
		if !json.Valid(v) {
			return nil, fmt.Errorf("tool returned invalid JSON")
		}
		return []events.Part{{Type: events.PartJSON, JSON: v}}, nil
	}
	if rv := reflect.ValueOf(o); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return nil, nil
	}
	p, err := events.JSON(o)
	if err != nil {
		return nil, fmt.Errorf("encoding the tool's output as JSON: %w", err)
	}
	return []events.Part{p}, nil
}

// Annotations are a tool's hints as MCP's ToolAnnotations name them, with
// MCP's defaults applied: what [Definition.Annotations] carries. Like MCP's,
// they are hints for clients and people, not promises a client may rely
// on for its safety.
type Annotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint"`
	DestructiveHint bool   `json:"destructiveHint"`
	IdempotentHint  bool   `json:"idempotentHint"`
	OpenWorldHint   bool   `json:"openWorldHint"`
}

// destructive reports whether the tool may delete or overwrite data:
// false for a read-only tool, else Destructive, true when not given (MCP's
// default).
func (s Spec) destructive() bool {
	if s.ReadOnly {
		return false
	}
	return s.Destructive == nil || *s.Destructive
}

// idempotent reports whether calling the tool again with the same
// arguments has no further effect: true for a read-only tool (it has no
// effect at all), else Idempotent, false when not given (MCP's default).
func (s Spec) idempotent() bool {
	if s.ReadOnly {
		return true
	}
	return s.Idempotent != nil && *s.Idempotent
}

// openWorld reports whether the tool reaches outside entities:
// OpenWorld, true when not given (MCP's default).
func (s Spec) openWorld() bool { return s.OpenWorld == nil || *s.OpenWorld }

// Annotations returns the spec's hints with MCP's defaults applied, and
// whether the spec declares any (a title, read-only or a hint):
// DestructiveHint is false for a read-only tool, else Destructive, true
// when not given; IdempotentHint is true for a read-only tool, else
// Idempotent, false when not given; OpenWorldHint is OpenWorld, true when
// not given.
func (s Spec) Annotations() (Annotations, bool) {
	declared := s.Title != "" || s.ReadOnly || s.Destructive != nil || s.Idempotent != nil || s.OpenWorld != nil
	return Annotations{
		Title: s.Title, ReadOnlyHint: s.ReadOnly, DestructiveHint: s.destructive(),
		IdempotentHint: s.idempotent(), OpenWorldHint: s.openWorld(),
	}, declared
}

// ownHints gives the spec copies of its hints, so that the caller's
// variables cannot change a built tool.
func (s *Spec) ownHints() {
	for _, p := range []**bool{&s.Destructive, &s.Idempotent, &s.OpenWorld} {
		if *p != nil {
			*p = new(**p)
		}
	}
}
