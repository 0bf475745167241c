package events_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/toolstream/toolstream/events"
)

func batchEndEvent(b *events.BatchEnd) *events.Event {
	return &events.Event{Version: events.Version, Type: events.TypeBatchEnd, Session: "s", Seq: 4,
		Time: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC), Data: events.AppendBatchEnd(nil, b)}
}

// TestAppendBatchEndMatchesMarshal: the hand-written encoder writes what
// json.Marshal writes, and DecodeBatchEnd reads it back.
func TestAppendBatchEndMatchesMarshal(t *testing.T) {
	cases := []events.BatchEnd{
		{Batch: "batch-x-1"},
		{Batch: "b", Calls: []events.BatchCall{}},
		{Batch: "b<&>", Calls: []events.BatchCall{{Call: "c1", Tool: "t", State: events.StateSuccess}, {Call: "c\"2", Tool: "t\u2028", State: events.StateError, Error: "bad\n<thing>"}},
			CallsOmitted: 3, ErrorsOmitted: true, Stop: &events.BatchStop{Reason: "call_limit", Detail: "too many", Call: "c1"}, DurationMS: 1.25e-7},
		{Batch: "b", Calls: []events.BatchCall{{Call: "c", Tool: "t", State: events.StateDenied}}, Stop: &events.BatchStop{Reason: "return_direct"}, DurationMS: 12.5},
	}
	for i, b := range cases {
		want, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		if got := events.AppendBatchEnd(nil, &b); string(got) != string(want) {
			t.Fatalf("case %d:\nAppendBatchEnd %s\njson.Marshal   %s", i, got, want)
		}
		ev, err := events.Decode(events.AppendJSON(nil, batchEndEvent(&b)))
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		back, err := events.DecodeBatchEnd(ev)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if again := events.AppendBatchEnd(nil, back); string(again) != string(want) {
			t.Fatalf("case %d: round trip\n%s\n%s", i, again, want)
		}
	}
}

// TestDecodeBatchEndRefuses: bodies that are not a batch end say why.
func TestDecodeBatchEndRefuses(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"calls":[]}`, "empty batch id"},
		{`{"batch":"b","calls":[{"call":"c","tool":"t","state":"suspended"}]}`, `state "suspended" is not a final state`},
		{`{"batch":"b","calls":[{"tool":"t","state":"success"}]}`, "empty call id"},
		{`{"batch":"b","stop":{}}`, "stop without a reason"},
		{`[1]`, "cannot unmarshal"},
	} {
		ev := &events.Event{Version: 1, Type: events.TypeBatchEnd, Session: "s", Data: json.RawMessage(tc.data)}
		if _, err := events.DecodeBatchEnd(ev); err == nil || !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.data, err, tc.want)
		}
	}
	if _, err := events.DecodeBatchEnd(&events.Event{Type: events.TypeBatchEnd, Call: "c", Data: json.RawMessage(`{"batch":"b"}`)}); err == nil {
		t.Error("a call-level batch_end was accepted")
	}
}

// TestFitBatchEnd: a batch_end too large for a message leaves the errors
// out, then calls from the end, and says so; what is left is valid.
func TestFitBatchEnd(t *testing.T) {
	b := &events.BatchEnd{Batch: "batch-1", DurationMS: 3}
	for i := range 400 {
		b.Calls = append(b.Calls, events.BatchCall{Call: fmt.Sprintf("call-%03d", i), Tool: "search", State: events.StateError, Error: strings.Repeat("x", 200)})
	}
	ev := batchEndEvent(b)
	widest := *ev
	widest.Seq = math.MaxUint64 // Fit leaves room for any sequence number
	full := len(events.AppendJSON(nil, &widest))
	for _, max := range []int{full, full - 1, 30000, 4000, 400} {
		out, lossy, err := events.Fit(ev, max)
		if err != nil {
			t.Fatalf("max %d: %v", max, err)
		}
		if len(out) != 1 || out[0].Seq != ev.Seq || lossy != (max < full) {
			t.Fatalf("max %d: %d events, lossy %v", max, len(out), lossy)
		}
		data := events.AppendJSON(nil, &out[0])
		if len(data) > max {
			t.Fatalf("max %d: %d bytes", max, len(data))
		}
		dec, err := events.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := events.DecodeBatchEnd(dec)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Calls)+got.CallsOmitted != 400 || lossy != got.ErrorsOmitted || (lossy && got.Calls[0].Error != "") {
			t.Fatalf("max %d: %d calls, %d omitted, errors omitted %v", max, len(got.Calls), got.CallsOmitted, got.ErrorsOmitted)
		}
		if max == 30000 && (got.CallsOmitted != 0) {
			t.Fatalf("max %d: calls omitted although they fit without errors", max)
		}
		if max == 4000 && (got.CallsOmitted == 0 || len(got.Calls) == 0) {
			t.Fatalf("max %d: %d calls kept, %d omitted", max, len(got.Calls), got.CallsOmitted)
		}
	}
	if _, _, err := events.Fit(ev, 100); !errors.Is(err, events.ErrTooLarge) {
		t.Fatalf("no room at all: %v", err)
	}
}

// FuzzDecodeBatchEnd: any data either is refused with ErrInvalidEvent or
// decodes to a body that writes and reads back the same.
func FuzzDecodeBatchEnd(f *testing.F) {
	f.Add(`{"batch":"b","calls":[{"call":"c","tool":"t","state":"success"}],"duration_ms":1}`)
	f.Add(`{"batch":"b","calls":null,"calls_omitted":2,"errors_omitted":true,"stop":{"reason":"return_direct"},"duration_ms":0}`)
	f.Add(`{"batch":"b","calls":[{"call":"c","tool":"t","state":"error","error":"x\u2028<"}],"stop":{"reason":"call_limit","detail":"d","call":"c"},"duration_ms":1e-7}`)
	f.Add(`{"batch":""}`)
	f.Add(`null`)
	f.Fuzz(func(t *testing.T, data string) {
		b, err := events.DecodeBatchEnd(&events.Event{Type: events.TypeBatchEnd, Data: json.RawMessage(data)})
		if err != nil {
			if !errors.Is(err, events.ErrInvalidEvent) {
				t.Fatalf("error without ErrInvalidEvent: %v", err)
			}
			return
		}
		out := events.AppendBatchEnd(nil, b)
		b2, err := events.DecodeBatchEnd(&events.Event{Type: events.TypeBatchEnd, Data: out})
		if err != nil {
			t.Fatalf("%s: written as %s, refused: %v", data, out, err)
		}
		if again := events.AppendBatchEnd(nil, b2); string(again) != string(out) {
			t.Fatalf("round trip differs:\n%s\n%s", out, again)
		}
	})
}
