package testutil_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/internal/leak"
	"github.com/toolstream/toolstream/internal/testutil"
	"github.com/toolstream/toolstream/stream"
	"github.com/toolstream/toolstream/toolkit"
)

func TestMain(m *testing.M) { leak.VerifyTestMain(m) }

// TestEngineEventsValidate: every event a toolkit makes, of every type and
// shape (reset deltas, failures, unknown tools, session-level and custom
// call-level events, dropped progress), validates against
// docs/events.schema.json once encoded, and so do the pieces of events too
// large for one message.
func TestEngineEventsValidate(t *testing.T) {
	rec := &testutil.Recorder{}
	tk := testutil.Kit(t, toolkit.WithInlineObserver(rec))
	type in struct {
		Fail bool `json:"fail"`
	}
	testutil.Add(t, tk,
		toolkit.MustTool(toolkit.Spec{Name: "work", ConcurrencySafe: true}, func(ctx context.Context, a in) (string, error) {
			em := stream.From(ctx)
			em.Progress("", -1)
			em.Step("step <1>", 1, 3)
			em.Report("counts", 0.5, map[string]int{"files": 3})
			em.Text("line \"1\"\n")
			if err := em.Part(events.Binary("image/png", []byte{1, 2, 3})); err != nil {
				return "", err
			}
			j, _ := events.JSON(map[string]any{"k": []int{1, 2}})
			if err := em.Part(j); err != nil {
				return "", err
			}
			em.SetMeta("files", 3)
			if a.Fail {
				return "", errors.New("disk full")
			}
			return "done", nil
		}),
	)
	retried := 0
	if err := tk.Use(toolkit.Interceptor{Name: "retry-once", Intercept: func(ctx context.Context, inv *toolkit.Invocation, next toolkit.Handler) toolkit.Outcome {
		if err := inv.Emit("approval", map[string]string{"status": "pending"}); err != nil {
			t.Error(err)
		}
		out := next(ctx, inv)
		if retried == 0 {
			retried++
			out = next(ctx, inv) // a second attempt: a reset delta goes out
		}
		return out
	}}); err != nil {
		t.Fatal(err)
	}
	sess := testutil.Session(t, tk, "schema")
	if err := sess.Emit(context.Background(), "groups", map[string]any{"active": []string{"files"}}); err != nil {
		t.Fatal(err)
	}
	rs := sess.Run(context.Background(), []toolkit.Call{
		testutil.Call("ok", "work", `{}`),
		testutil.Call("bad", "work", `{"fail":true}`),
		testutil.Call("args", "work", `{"fail":"no"}`),
		testutil.Call("unknown", "nope", `{}`),
		testutil.Call("", "", ``),
	})
	if len(rs) != 5 {
		t.Fatalf("%d results", len(rs))
	}
	types := map[string]bool{}
	resets := 0
	for _, ev := range rec.All() {
		types[string(ev.Type)] = true
		if ev.Reset {
			resets++
		}
		b := events.AppendJSON(nil, ev)
		if err := testutil.ValidateEvent(b); err != nil {
			t.Errorf("%s event: %v", ev.Type, err)
		}
		// The same event cut to fit small messages.
		pieces, _, err := events.Fit(ev, 600)
		if err != nil {
			continue // too large data events are not carried
		}
		for i := range pieces {
			pieces[i].Seq = uint64(i + 1)
			if err := testutil.ValidateEvent(events.AppendJSON(nil, &pieces[i])); err != nil {
				t.Errorf("piece of a %s event: %v", ev.Type, err)
			}
		}
	}
	for _, want := range []string{"start", "progress", "delta", "result", "groups", "approval"} {
		if !types[want] {
			t.Errorf("no %s event was made", want)
		}
	}
	if resets == 0 {
		t.Error("no reset delta was made")
	}
}

// TestSchemaRejects: the schema is strict enough to catch what the bugs of
// the protocol looked like.
func TestSchemaRejects(t *testing.T) {
	const head = `{"v":1,"session":"s","call":"c","tool":"t","seq":2,"time":"2026-01-02T03:04:05.5Z",`
	good := []string{
		head + `"type":"delta","delta":{"type":"text","text":""},"reset":true}`,
		head + `"type":"delta","chunk":{"index":0,"count":2,"data":"{\"type\":"},"reset":true}`,
		head + `"type":"result","result":{"state":"success","content_omitted":true,"content_size":12,"content_parts":1,"duration_ms":1.5}}`,
		head + `"type":"approval","data":{"status":"pending"}}`,
		head + `"type":"args","data":{"args":{"path":"/tmp/x"}}}`,
		head + `"type":"args","data":{"args_omitted":true}}`,
		`{"v":1,"type":"groups","session":"s","seq":1,"time":"2026-01-02T03:04:05+01:00","data":null}`,
	}
	for _, g := range good {
		if err := testutil.ValidateEvent([]byte(g)); err != nil {
			t.Errorf("valid event refused: %v", err)
		}
	}
	bad := map[string]string{
		"reset delta without text":       head + `"type":"delta","delta":{"type":"text"},"reset":true}`,
		"delta and chunk":                head + `"type":"delta","delta":{"type":"text","text":"x"},"chunk":{"index":0,"count":1,"data":""}}`,
		"reset on a later chunk":         head + `"type":"delta","chunk":{"index":1,"count":2,"data":""},"reset":true}`,
		"content and content_omitted":    head + `"type":"result","result":{"state":"success","content":[],"content_omitted":true,"content_size":1,"content_parts":1,"duration_ms":1}}`,
		"no content":                     head + `"type":"result","result":{"state":"success","duration_ms":1}}`,
		"body of another type":           head + `"type":"start","start":{"index":0},"progress":{}}`,
		"time with a trailing zero":      strings.Replace(head, "05.5Z", "05.50Z", 1) + `"type":"start","start":{"index":0}}`,
		"no seq":                         `{"v":1,"type":"groups","session":"s","time":"2026-01-02T03:04:05Z","data":{}}`,
		"version 2":                      strings.Replace(head, `"v":1`, `"v":2`, 1) + `"type":"start","start":{"index":0}}`,
		"unknown part type":              head + `"type":"delta","delta":{"type":"image","text":"x"}}`,
		"lifecycle event without call":   `{"v":1,"type":"start","session":"s","seq":1,"time":"2026-01-02T03:04:05Z","start":{"index":0}}`,
		"binary data that is not base64": head + `"type":"delta","delta":{"type":"binary","data":"!!"}}`,
		"args event without call":        `{"v":1,"type":"args","session":"s","seq":1,"time":"2026-01-02T03:04:05Z","data":{"args":{}}}`,
		"args event without args":        head + `"type":"args","data":{}}`,
		"args and args_omitted":          head + `"type":"args","data":{"args":{},"args_omitted":true}}`,
	}
	for name, b := range bad {
		if err := testutil.ValidateEvent([]byte(b)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestDocExamplesValidate: every complete event shown in docs/events.md
// validates, so that the page and the schema agree.
func TestDocExamplesValidate(t *testing.T) {
	doc, err := os.ReadFile("../../docs/events.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```json\n(.*?)```").FindAllSubmatch(doc, -1)
	n := 0
	for _, b := range blocks {
		text := strings.TrimSpace(string(b[1]))
		if !strings.HasPrefix(text, `{"v":`) {
			continue
		}
		n++
		if !json.Valid([]byte(text)) {
			t.Errorf("not JSON in the doc: %s", text)
			continue
		}
		if err := testutil.ValidateEvent([]byte(text)); err != nil {
			t.Errorf("a doc example does not validate: %v", err)
		}
		if _, err := events.Decode([]byte(text)); err != nil {
			t.Errorf("a doc example does not decode: %v", err)
		}
	}
	if n < 4 {
		t.Fatalf("only %d complete events in docs/events.md", n)
	}
}
