package toolkit_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// FuzzToolName: name validation agrees with the documented pattern, and an
// unknown name of any shape yields a clean error result.
func FuzzToolName(f *testing.F) {
	for _, s := range []string{"", "a", "search_text", "serch_text", "a.b", "日本", strings.Repeat("x", 65), "\x00", "count"} {
		f.Add(s)
	}
	tk := toolkit.New()
	defer tk.Close(context.Background())
	for _, name := range []string{"search_text", "count_lines", "hash_files"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name}, func(ctx context.Context, _ struct{}) (string, error) { return "", nil }))
	}
	sess, _ := tk.Session("fuzz")
	f.Fuzz(func(t *testing.T, name string) {
		err := toolkit.CheckToolName(name)
		if (err == nil) != namePattern.MatchString(name) {
			t.Fatalf("CheckToolName(%q) = %v, pattern says %v", name, err, namePattern.MatchString(name))
		}
		if err != nil && !errors.Is(err, toolkit.ErrInvalidName) {
			t.Fatalf("error %v is not ErrInvalidName", err)
		}
		r := sess.Run(context.Background(), []toolkit.Call{{ID: "1", Name: name}})[0]
		if slices.Contains([]string{"search_text", "count_lines", "hash_files"}, name) {
			if r.State != events.StateSuccess {
				t.Fatalf("%q: %s", name, r.Text())
			}
			return
		}
		var ue *toolkit.UnknownToolError
		if r.State != events.StateError || !errors.As(r.Err, &ue) || ue.Name != name {
			t.Fatalf("%q: %s %v", name, r.State, r.Err)
		}
		if len(ue.Suggestions) > 3 || !strings.Contains(r.Text(), "Available tools: search_text, count_lines, hash_files") {
			t.Fatalf("%q: %q", name, r.Text())
		}
	})
}

type fuzzIn struct {
	Path  string            `json:"path"`
	Limit int               `json:"limit,omitempty" tool:"minimum=1,maximum=100,default=10"`
	Mode  string            `json:"mode,omitempty" tool:"enum=fast|slow"`
	Tags  []string          `json:"tags,omitempty" tool:"maxItems=3"`
	Opts  *struct{ N int }  `json:"opts,omitempty"`
	Meta  map[string]string `json:"meta,omitempty"`
}

// FuzzPrepareArgs: any bytes as arguments either pass (and then decode into
// the input type and re-validate) or fail with an *ArgumentError whose
// message has one "path: message" line per problem. Never a panic.
func FuzzPrepareArgs(f *testing.F) {
	for _, s := range []string{``, `{}`, `{"path":"/"}`, `{"path":"/","limit":0}`, `{"path":null,"limit":null}`,
		`{"path":"/","tags":["a","b","c","d"]}`, `{"path":"/","opts":{"N":1.5}}`, `[]`, `"x"`, `{"path":"/"} x`,
		`{"path":"\ud800"}`, `{"path":"/","meta":{"a":1}}`, `{"path":"/","mode":"fast","limit":1e2}`} {
		f.Add([]byte(s))
	}
	tool := toolkit.MustTool(toolkit.Spec{Name: "fuzz"}, func(ctx context.Context, in fuzzIn) (string, error) { return "", nil })
	f.Fuzz(func(t *testing.T, args []byte) {
		out, err := tool.PrepareArgs(args)
		if err != nil {
			var ae *toolkit.ArgumentError
			if !errors.As(err, &ae) {
				t.Fatalf("error %T %v is not an ArgumentError", err, err)
			}
			msg := ae.Error()
			if ae.Err == nil {
				lines := strings.Split(msg, "\n")
				if len(ae.Problems) == 0 || len(lines) != len(ae.Problems)+1 {
					t.Fatalf("problems %v, message %q", ae.Problems, msg)
				}
				for _, l := range lines[1:] {
					if !strings.HasPrefix(l, "- ") || !strings.Contains(l, ": ") {
						t.Fatalf("line %q is not '- path: message'", l)
					}
				}
			}
			return
		}
		var in fuzzIn
		if err := json.Unmarshal(out, &in); err != nil {
			t.Fatalf("validated args %s do not decode: %v", out, err)
		}
		if in.Limit < 1 || in.Limit > 100 || len(in.Tags) > 3 || (in.Mode != "" && in.Mode != "fast" && in.Mode != "slow") {
			t.Fatalf("validated args break the schema: %+v", in)
		}
		again, err := tool.PrepareArgs(out)
		if err != nil || string(again) != string(out) {
			t.Fatalf("not idempotent: %s -> %s, %v", out, again, err)
		}
	})
}

// FuzzDeltas: whatever a tool streams, the deltas add up to the result.
func FuzzDeltas(f *testing.F) {
	f.Add("a|b||c", true, "tail")
	f.Add("", false, "")
	f.Add("x|{json}|y", true, "")
	rec := &testutil.Recorder{}
	tk := toolkit.New(toolkit.WithObserver(rec))
	defer tk.Close(context.Background())
	sess, _ := tk.Session("fuzz")
	n := 0
	f.Fuzz(func(t *testing.T, chunks string, withJSON bool, tail string) {
		n++
		name := "t"
		tk.Replace(toolkit.MustTool(toolkit.Spec{Name: name}, func(ctx context.Context, _ struct{}) (string, error) {
			em := stream.From(ctx)
			for i, c := range strings.Split(chunks, "|") {
				if withJSON && i%2 == 1 {
					em.Data(c)
				} else {
					em.Text(c)
				}
				em.Progress(c, 0.5)
			}
			return tail, nil
		}))

		id := "c" + strings.Repeat("x", n%7) + string(rune('a'+n%26))
		r := sess.Run(context.Background(), []toolkit.Call{{ID: id, Name: name}})[0]
		got := testutil.Deltas(rec.Of(id))
		if !events.EqualContent(got, r.Content) {
			t.Fatalf("deltas %+v != result %+v", got, r.Content)
		}
		if !events.EqualContent(events.Concat(r.Content...), r.Content) {
			t.Fatalf("result content is not in canonical form: %+v", r.Content)
		}
		rec.Reset()
	})
}
