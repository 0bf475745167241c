package stream_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/stream"
)

type sink struct {
	progress []events.Progress
	deltas   []events.Part
	meta     map[string]any
	err      error
}

func (s *sink) Progress(message string, fraction float64, data json.RawMessage) {
	p := events.Progress{Message: message, Data: data}
	if fraction >= 0 {
		p.Fraction = &fraction
	}
	s.progress = append(s.progress, p)
}
func (s *sink) Delta(p events.Part) error {
	if s.err != nil {
		return s.err
	}
	s.deltas = append(s.deltas, p)
	return nil
}
func (s *sink) SetMeta(k string, v any) {
	if s.meta == nil {
		s.meta = map[string]any{}
	}
	s.meta[k] = v
}

func TestEmitter(t *testing.T) {
	s := &sink{}
	ctx := stream.NewContext(context.Background(), stream.NewEmitter(s, true))
	em := stream.From(ctx)
	em.Progress("a", 0.25)
	em.Progress("b", -1)
	em.Step("c", 3, 4)
	em.Step("d", 9, 0)
	em.Report("e", 2, map[string]int{"n": 1})
	em.Report("f", 0.5, make(chan int)) // unmarshalable data is dropped, the message kept
	em.Text("x")
	fmt.Fprint(em, "y")
	if err := em.Data([]int{1}); err != nil {
		t.Fatal(err)
	}
	if err := em.Data(make(chan int)); err == nil {
		t.Fatal("Data(chan) succeeded")
	}
	em.SetMeta("k", 1)

	fr := func(i int) string {
		if s.progress[i].Fraction == nil {
			return "nil"
		}
		return fmt.Sprint(*s.progress[i].Fraction)
	}
	wantFr := []string{"0.25", "nil", "0.75", "nil", "nil", "0.5"}
	for i, w := range wantFr {
		if fr(i) != w {
			t.Errorf("progress %d fraction %s, want %s", i, fr(i), w)
		}
	}
	if string(s.progress[4].Data) != `{"n":1}` || s.progress[5].Data != nil || s.progress[5].Message != "f" {
		t.Errorf("report data: %+v %+v", s.progress[4], s.progress[5])
	}
	if len(s.deltas) != 3 || s.deltas[0].Text != "x" || s.deltas[1].Text != "y" || string(s.deltas[2].JSON) != "[1]" {
		t.Errorf("deltas %+v", s.deltas)
	}
	if s.meta["k"] != 1 {
		t.Error("meta")
	}
	s.err = stream.ErrCallFinished
	if _, err := em.Write([]byte("z")); !errors.Is(err, stream.ErrCallFinished) {
		t.Errorf("Write after close: %v", err)
	}
}

func TestNotListening(t *testing.T) {
	s := &sink{}
	em := stream.NewEmitter(s, false)
	em.Progress("a", 1)
	em.Step("b", 1, 2)
	em.Report("c", 1, 1)
	if em.Listening() || len(s.progress) != 0 {
		t.Fatal("progress delivered without listeners")
	}
	if err := em.Text("still a delta"); err != nil || len(s.deltas) != 1 {
		t.Fatal("deltas must flow without listeners: they are the result")
	}
}

func TestNilEmitter(t *testing.T) {
	em := stream.From(context.Background())
	if em != nil || em.Listening() {
		t.Fatal("emitter outside a call")
	}
	em.Progress("x", 1)
	em.Step("x", 1, 1)
	em.Report("x", 1, nil)
	em.SetMeta("k", 1)
	if err := em.Text("x"); err != nil {
		t.Fatal(err)
	}
	if err := em.Data(1); err != nil {
		t.Fatal(err)
	}
	if err := em.Part(events.Text("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := em.Write([]byte("abc")); n != 3 || err != nil {
		t.Fatal(n, err)
	}
}

// TestWriteHoldsACutCharacter: Write holds back the first bytes of a
// character its input cuts, and sends them with the bytes that complete
// it; text, a part of another kind, Flush and Reset each deal with what is
// held, so that every delta carries whole characters and, in order, they
// add up to every byte written.
func TestWriteHoldsACutCharacter(t *testing.T) {
	s := &resetSink{}
	em := stream.NewEmitter(s, false)
	em.Write([]byte("caf\xc3"))
	em.Write([]byte("\xa9 \xf0\x9f"))
	em.Write([]byte("\x98"))
	em.Write([]byte("\x80!\xe6"))
	em.Text("\x97\xa5")           // text completes it too
	em.Write([]byte("a\xe6\x97")) // held, then a JSON part comes
	em.Data(1)
	em.Write([]byte("\xff\x80")) // not the start of a character: sent as is
	em.Write([]byte("\xe6"))
	em.Flush()
	em.Flush() // nothing left
	em.Write([]byte("x\xe6"))
	em.Reset() // voids what is held with the rest
	em.Write([]byte("\x97"))
	var got []string
	for _, p := range s.deltas {
		if p.Type == events.PartText && !utf8.ValidString(p.Text) && strings.ContainsAny(p.Text, "é😀日") {
			t.Errorf("a delta with a cut character: %q", p.Text)
		}
		got = append(got, p.String())
	}
	want := []string{"caf", "é ", "😀!", "日", "a", "\xe6\x97", "1", "\xff\x80", "\xe6", "x", "RESET", "\x97"}
	if !slices.Equal(got, want) {
		t.Fatalf("deltas %q, want %q", got, want)
	}
}

type resetSink struct{ sink }

func (s *resetSink) Reset() error {
	s.deltas = append(s.deltas, events.Text("RESET"))
	return nil
}
