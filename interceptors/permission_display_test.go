package interceptors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// hiddenRunes are characters that change how text reads without showing
// themselves: bidirectional controls (Trojan Source), zero-width and other
// invisible format characters, line breaks, a tag character, a space
// that is not one, a C0 and a C1 control.
var hiddenRunes = []rune{
	'\u202a', '\u202b', '\u202c', '\u202d', '\u202e', '\u2066', '\u2067', '\u2068', '\u2069',
	'\u200e', '\u200f', '\u061c', '\u200b', '\u200d', '\u2060', '\ufeff', '\u00ad', '\u180e',
	'\n', '\r', '\t', '\u2028', '\u2029', '\u0085', '\u001b', '\u009b', '\u007f', '\U000e0041', '\u00a0', '\u3164', '\ufe0f',
}

// shownPlainly fails the test if s, text a person reads, holds a hidden
// character.
func shownPlainly(t *testing.T, what, s string) {
	t.Helper()
	for _, r := range s {
		for _, h := range hiddenRunes {
			if r == h {
				t.Errorf("%s shows %U as it is, not escaped: %q", what, r, s)
				return
			}
		}
	}
}

// shownRequest checks every text of a request that a person reads.
func shownRequest(t *testing.T, req interceptors.ApprovalRequest) {
	t.Helper()
	shownPlainly(t, req.Status+" request's tool", req.Tool)
	shownPlainly(t, req.Status+" request's reason", req.Reason)
	shownPlainly(t, req.Status+" request's note", req.Note)
	shownPlainly(t, req.Status+" request's arguments as JSON text", string(req.Args))
	for _, s := range req.Suggestions {
		shownPlainly(t, req.Status+" request's suggestion label", s.Label)
	}
	for _, c := range req.Calls {
		shownRequest(t, c)
	}
}

// sameJSON reports whether a and b decode to the same value.
func sameJSON(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// TestApprovalShowsHiddenCharacters: an approval request shows a person
// text the model wrote: the command in a suggestion's label, a folder in
// another's, a tool's own reason naming a path, the arguments. A
// right-to-left override (U+202E) or another invisible character there
// would make a label read differently from what it grants ("Trojan
// Source"): "Allow this exact command for run: echo hi \u202e~ fr- mr"
// reads "echo hi rm -rf ~" backwards, and a newline shown as a space makes
// "echo hi\nrm -rf ~" read as one harmless echo. Every text a person
// reads, as a UI gets it from NATS, shows such characters escaped
// (\u202e, \n); the arguments are the same JSON value, and the tool runs
// with exactly the model's arguments.
func TestApprovalShowsHiddenCharacters(t *testing.T) {
	f := newPermFixture(t, interceptors.WithApprovalTimeout(5*time.Second))
	ran := make(chan string, 4)
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "run"}, func(ctx context.Context, in struct {
		Command string `json:"command"`
	}) (string, error) {
		ran <- in.Command
		return "ok", nil
	}))
	f.tk.Add(toolkit.MustTool(toolkit.Spec{Name: "del", CheckPermission: func(ctx context.Context, args json.RawMessage) toolkit.Permission {
		var in struct{ Path string }
		_ = json.Unmarshal(args, &in)
		return toolkit.Permission{Decision: toolkit.PermissionAsk, Reason: "deleting " + in.Path}
	}}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		ran <- in.Path
		return "ok", nil
	}))

	for _, h := range hiddenRunes {
		t.Run(fmt.Sprintf("%U", h), func(t *testing.T) {
			cmd := "echo hi " + string(h) + "~ fr- mr"
			args, _ := json.Marshal(map[string]string{"command": cmd})
			b := f.start("s", toolkit.Call{ID: "c", Name: "run", Args: args})
			req := f.nextAsk(t)
			shownRequest(t, req)
			if !sameJSON(t, req.Args, args) {
				t.Errorf("the request's arguments %s are not the call's %s", req.Args, args)
			}
			want := fmt.Sprintf(`\u%04x`, h)
			if h > 0xffff {
				want = fmt.Sprintf(`\U%08x`, h)
			}
			if !strings.Contains(req.Suggestions[0].Label, want) {
				t.Errorf("label %q does not show %s", req.Suggestions[0].Label, want)
			}
			if err := f.perms.Approve("s", "c", interceptors.WithSuggestion(req.Suggestions[0].ID)); err != nil {
				t.Fatal(err)
			}
			if r := b.Wait()[0]; r.State != events.StateSuccess {
				t.Fatalf("approved, the call ended %s %q", r.State, r.Text())
			}
			if got := <-ran; got != cmd {
				t.Errorf("the tool ran %q, want the model's %q", got, cmd)
			}
			waitStatus(t, f, "approved", "allowed for the rest of the session: run with exactly these arguments")
		})
	}

	// A folder in a path suggestion's label and in the note of the
	// approval that accepts it; the tool's own reason.
	dir := "notes\u202etxt.exe"
	args, _ := json.Marshal(map[string]string{"path": dir + "/a.md"})
	b := f.start("s2", toolkit.Call{ID: "d", Name: "del", Args: args})
	req := f.nextAsk(t)
	shownRequest(t, req)
	if !strings.Contains(req.Reason, `notes\u202etxt.exe/a.md`) {
		t.Errorf("reason %q", req.Reason)
	}
	var path interceptors.Suggestion
	for _, s := range req.Suggestions {
		if s.Grant.Under != "" {
			path = s
		}
	}
	if path.Grant.Under != dir || !strings.Contains(path.Label, `./notes\u202etxt.exe`) {
		t.Fatalf("path suggestion %+v", path)
	}
	if err := f.perms.Approve("s2", "d", interceptors.WithSuggestion(path.ID)); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	if got := <-ran; got != dir+"/a.md" {
		t.Errorf("the tool ran with %q", got)
	}
	for req := range f.all {
		if req.Status == "approved" {
			shownRequest(t, req)
			if !strings.Contains(req.Note, `under ./notes\u202etxt.exe`) {
				t.Errorf("note %q", req.Note)
			}
			break
		}
	}

	// A batch's request.
	if err := f.tk.Use(f.perms.BatchApproval()); err != nil {
		t.Fatal(err)
	}
	sess, _ := f.tk.Session("s3")
	b = sess.Start(context.Background(), []toolkit.Call{
		{ID: "x\u202e1", Name: "del", Args: args},
		{ID: "x2", Name: "write", Args: json.RawMessage(`{"path":"a\u2066b"}`)},
	})
	req = f.nextAsk(t)
	shownRequest(t, req)
	if len(req.Calls) != 2 || !strings.Contains(req.Reason, `x\u202e1`) {
		t.Fatalf("batch request %+v", req)
	}
	if err := f.perms.Approve("s3", b.ID()); err != nil {
		t.Fatal(err)
	}
	for _, r := range b.Wait() {
		if r.State != events.StateSuccess {
			t.Errorf("%q ended %s %q", r.Call.ID, r.State, r.Text())
		}
	}
	<-ran
	if w := f.writes(); len(w) != 1 || w[0] != "a\u2066b" {
		t.Errorf("writes %q", w)
	}
}
