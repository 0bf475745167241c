// Package toolkit registers an agent's tools and runs a model's tool calls.
//
// A [Tool] is a [Spec] (name, description, flags), an input JSON Schema and a
// handler. [NewTool] infers the schema from a typed Go function's input
// struct; [NewRawTool] takes a schema and a handler over raw JSON for tools
// known only at run time; [NewExternalTool] declares a tool that runs outside
// the process. A [Toolkit] holds the registered tools and serves many
// [Session]s at once.
//
// A batch of calls from one model turn is a [Batch]:
//
//	sess, _ := tk.Session("conversation-42")
//	batch := sess.Start(ctx, calls)
//	for res := range batch.Results() { ... } // as each call finishes
//	results := batch.Wait()                  // all of them, in call order
//
// Contiguous calls of concurrency-safe tools run in parallel under a cap;
// other calls run one at a time, in order. Every call ends with exactly one
// final [Result], whatever happens: unknown tools, invalid arguments, handler
// errors, panics, timeouts and cancellation all become error results that tell
// the model what went wrong, and one bad call never affects the others.
//
// After a batch, [Batch.Stop] says whether the agent loop must end there
// instead of asking the model again: every call succeeded on a tool with
// Spec.ReturnDirect (its results are the answer for the user), or a call
// limit or an interceptor said so. An interceptor's BeforeBatch and AfterBatch
// see whole batches before and after they run; a [ToolResolver] and interceptors with Interceptor.Unknown
// handle calls of tools nobody registered.
//
// Arguments are validated against the tool's schema before the handler runs;
// problems are reported to the model one per line as "path: message". Optional
// properties sent as null are dropped first, and schema defaults are filled in.
//
// # Progress and results
//
// A running tool writes to the [stream.Emitter] in its context: progress for
// the people watching and result deltas for the model. The model-visible
// content of a result is exactly the concatenation of the call's deltas; what
// the handler returns is appended as the last delta, and for failures the
// error message is. Progress never becomes part of a result. [Observer]s
// receive every event of every call (package events describes them).
//
// # Struct tags for typed tools
//
// The input type's `json` tags name the properties; a field without
// omitempty or omitzero is required. `jsonschema:"..."` is the property's
// description. `tool:"..."` adds constraints, comma-separated:
//
//	enum=a|b|c           allowed values (for a slice: of its items)
//	default=V            value used when the property is missing
//	minimum=N maximum=N exclusiveMinimum=N exclusiveMaximum=N
//	minLength=N maxLength=N minItems=N maxItems=N uniqueItems
//	format=F             a format annotation such as date-time
//	required, optional   override what omitempty implies
//	pattern=RE           a regular expression; must come last (may hold commas)
//
// For example:
//
//	type In struct {
//		Path  string `json:"path" jsonschema:"folder to scan"`
//		Depth int    `json:"depth,omitempty" tool:"minimum=0,maximum=10,default=3"`
//		Mode  string `json:"mode,omitempty" tool:"enum=fast|thorough"`
//	}
package toolkit
