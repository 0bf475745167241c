package mcpbridge_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// srvContactSchema is the output schema of srvContactTool: each field is
// bound by a keyword that a redacted value ("[redacted email]") breaks.
const srvContactSchema = `{"type":"object","properties":{
	"email":{"type":"string","pattern":"^[^@\\s]+@[^@\\s]+$"},
	"owner":{"type":"string","enum":["ana@example.com","bo@example.com"]},
	"short":{"type":"string","maxLength":15}
},"required":["email"]}`

// srvContactTool is a raw tool with an output schema that returns e-mail
// addresses in fields whose schema a redaction breaks; the field named by
// the argument "field" holds one, the others are left out.
func srvContactTool(t testing.TB) *toolkit.Tool {
	t.Helper()
	tool, err := toolkit.NewRawTool(toolkit.Spec{Name: "contact", Description: "A contact's address.", OutputSchema: json.RawMessage(srvContactSchema)},
		json.RawMessage(`{"type":"object","properties":{"field":{"type":"string"}}}`),
		func(ctx context.Context, args json.RawMessage) ([]events.Part, error) {
			var in struct{ Field string }
			if err := json.Unmarshal(args, &in); err != nil {
				return nil, err
			}
			out := map[string]string{"email": "x@y"}
			switch in.Field {
			case "email":
				out["email"] = "ana.secret@example.com"
			case "owner":
				out["owner"] = "bo@example.com"
			case "short":
				out["short"] = "bo@example.com"
			}
			p, err := events.JSON(out)
			return []events.Part{p}, err
		})
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

// srvRedactedContact adds the contact tool to tk, Sanitize (e-mails) for
// it, and inside Sanitize an interceptor that adds an owner's address to
// its structured result when the argument "field" is "add-owner", after
// the engine checked the result against the output schema.
func srvRedactedContact(t testing.TB, tk *toolkit.Toolkit) {
	t.Helper()
	if err := tk.Add(srvContactTool(t)); err != nil {
		t.Fatal(err)
	}
	san := interceptors.Sanitize(interceptors.RedactEmails())
	san.Tools = []string{"contact"}
	tk.Use(san, toolkit.Interceptor{Name: "owner", Tools: []string{"contact"},
		Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Result {
			out := next(ctx, inv)
			if n := len(out.Content); n > 0 && out.State == events.StateSuccess && strings.Contains(string(inv.Call.Args), "add-owner") {
				var m map[string]any
				if err := json.Unmarshal(out.Content[n-1].JSON, &m); err != nil {
					t.Error(err)
				}
				m["owner"] = "bo@example.com"
				p, _ := events.JSON(m)
				out.Content[n-1] = p
			}
			return out
		}})
}

// TestServerRedactedStructuredContent: a redaction (Sanitize) changes a
// structured result after the engine checked it against the tool's output
// schema (here: an interceptor inside Sanitize adds an owner, a value the
// schema's enum allows, which Sanitize then redacts), so that the value no
// longer conforms. The client must get neither the secret nor
// structuredContent that breaks the schema it was given (the TypeScript
// SDK's client throws on that: "Structured content does not match the
// tool's output schema"): the result is isError, says why, and carries the
// redacted content. Before, the server sent {"email":"x@y","owner":
// "[redacted email]"} as structuredContent, which the reference validator
// refuses (enum). Redactions the engine's check sees (a secret the tool
// returned, redacted as it streams) fail the call with an error that
// withholds the result; no secret and no nonconforming value either.
func TestServerRedactedStructuredContent(t *testing.T) {
	var schema jsonschema.Schema
	if err := json.Unmarshal([]byte(srvContactSchema), &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range srvVersions {
		t.Run("version="+v, func(t *testing.T) {
			tk := srvToolkit(t)
			srvRedactedContact(t, tk)
			cs := srvConnect(t, srvNew(t, tk), nil, v)
			for _, field := range []string{"add-owner", "email", "short"} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{"field": field}})
				if err != nil {
					t.Fatal(err)
				}
				all, _ := json.Marshal(res)
				if strings.Contains(string(all), "@example.com") {
					t.Errorf("%s: the secret reached the client: %s", field, all)
				}
				if res.StructuredContent != nil {
					b, _ := json.Marshal(res.StructuredContent)
					var inst any
					_ = json.Unmarshal(b, &inst)
					if err := resolved.Validate(inst); err != nil {
						t.Errorf("%s: structuredContent %s does not match the listed output schema: %v", field, b, err)
					}
				}
				text := srvText(res)
				if !res.IsError {
					t.Errorf("%s: not isError: %q", field, text)
				}
				if field == "add-owner" && (!strings.Contains(text, `tool "contact"`) || !strings.Contains(text, "does not conform to the tool's output schema") ||
					!strings.Contains(text, "output schema at owner:") || !strings.Contains(text, `"owner":"[redacted email]"`)) {
					t.Errorf("%s: text %q", field, text)
				}
			}
			// A structured result that conforms goes as it did.
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "contact", Arguments: map[string]any{}})
			if err != nil || res.IsError || res.StructuredContent == nil {
				t.Fatalf("clean contact: %+v %v", res, err)
			}
			res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "weather", Arguments: map[string]any{"city": "Lima"}})
			if err != nil || res.IsError || res.StructuredContent == nil {
				t.Fatalf("weather: %+v %v", res, err)
			}
		})
	}
}
