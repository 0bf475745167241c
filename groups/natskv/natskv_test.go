package natskv_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/groups/natskv"
	"github.com/toolstream/toolstream/toolkit"
)

// process is one agent process: its own NATS connection, toolkit and group
// manager, sharing the key-value bucket with the others.
type process struct {
	tk *toolkit.Toolkit
	m  *groups.Manager
}

func newProcess(t *testing.T, bus *natsbus.Bus, pub bool) *process {
	t.Helper()
	nc, err := nats.Connect("", nats.InProcessServer(bus.Server()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store, err := natskv.New(context.Background(), js, "")
	if err != nil {
		t.Fatal(err)
	}
	var opts []toolkit.Option
	if pub {
		opts = append(opts, toolkit.WithInlineObserver(bus.Publisher()))
	}
	tk := toolkit.New(opts...)
	t.Cleanup(func() { tk.Close(context.Background()) })
	var gs []groups.Group
	for i := range 8 {
		name := fmt.Sprintf("tool%d", i)
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name}, func(ctx context.Context, _ struct{}) (string, error) { return name, nil }))
		gs = append(gs, groups.Group{Name: fmt.Sprintf("g%d", i), Description: fmt.Sprintf("group %d", i), Tools: []string{name}})
	}
	m, err := groups.Install(tk, groups.WithStore(store))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(gs...); err != nil {
		t.Fatal(err)
	}
	return &process{tk: tk, m: m}
}

// TestKVStoreSharedByTwoProcesses: two toolkits share group state through a
// JetStream key-value bucket; concurrent updates from both lose nothing, and
// what one process's model switches on, the other's session shows.
func TestKVStoreSharedByTwoProcesses(t *testing.T) {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	a, b := newProcess(t, bus, true), newProcess(t, bus, true)

	// Eight concurrent Activate calls, alternating between the processes,
	// all on one session: optimistic concurrency keeps every one.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := a
			if i%2 == 1 {
				p = b
			}
			if _, err := p.m.Activate(ctx, "shared", fmt.Sprintf("g%d", i)); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	for _, p := range []*process{a, b} {
		got, err := p.m.Active(ctx, "shared")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 8 {
			t.Fatalf("active groups %v: concurrent updates were lost", got)
		}
	}

	// The model in process A narrows the groups; process B's session shows it.
	sa, _ := a.tk.Session("shared")
	r := sa.Run(ctx, []toolkit.Call{{ID: "r", Name: "reset_tools", Args: []byte(`{"g3": true}`)}})[0]
	if r.State != events.StateSuccess {
		t.Fatalf("%s %q", r.State, r.Text())
	}
	sb, _ := b.tk.Session("shared")
	defs, err := sb.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var visible []string
	for _, d := range defs {
		visible = append(visible, d.Name)
	}
	if !slices.Equal(visible, []string{"tool3", "reset_tools"}) {
		t.Fatalf("process B sees %v", visible)
	}
	rs := sb.Run(ctx, []toolkit.Call{{ID: "1", Name: "tool3"}, {ID: "2", Name: "tool4"}})
	if rs[0].State != events.StateSuccess || rs[1].State != events.StateError {
		t.Fatalf("process B: tool3 %s, tool4 %s", rs[0].State, rs[1].State)
	}
}

// TestGroupEventsOnNATS: a change of active groups is a session-level event
// on NATS, like the other events.
func TestGroupEventsOnNATS(t *testing.T) {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	got := make(chan *events.Event, 8)
	sub, err := bus.Subscribe(bus.Subjects().Call("conv", "", groups.EventType), func(ev *events.Event) { got <- ev })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	bus.Conn().Flush()
	p := newProcess(t, bus, true)
	if _, err := p.m.Activate(ctx, "conv", "g1"); err != nil {
		t.Fatal(err)
	}
	s, _ := p.tk.Session("conv")
	s.Run(ctx, []toolkit.Call{{ID: "r", Name: "reset_tools", Args: []byte(`{"g2": true}`)}})
	bus.Conn().Flush()
	for _, want := range []string{`{"active":["g1"],"activated":["g1"],"by":"code"}`, `{"active":["g2"],"activated":["g2"],"deactivated":["g1"],"by":"model","call":"r"}`} {
		var ev *events.Event
		select {
		case ev = <-got:
		case <-time.After(10 * time.Second):
			t.Fatal("no groups event on NATS")
		}
		if ev.Type != groups.EventType || ev.Call != "" || string(ev.Data) != want {
			t.Fatalf("event %s %q: %s, want %s", ev.Type, ev.Call, ev.Data, want)
		}
	}
}

// TestCodeOnlyGroupShared: a CodeOnly group switched on by code in one
// process stays on through the model's reset_tools in another, through the
// shared bucket (the store keeps it as any group; the managers keep it out
// of the model's hands).
func TestCodeOnlyGroupShared(t *testing.T) {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer bus.Close(ctx)
	a, b := newProcess(t, bus, false), newProcess(t, bus, false)
	for _, p := range []*process{a, b} {
		if err := p.m.Update(groups.Group{Name: "g7", Description: "group 7", Tools: []string{"tool7"}, CodeOnly: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.m.Activate(ctx, "shared", "g7"); err != nil {
		t.Fatal(err)
	}
	sb, _ := b.tk.Session("shared")
	r := sb.Run(ctx, []toolkit.Call{{ID: "r", Name: "reset_tools", Args: []byte(`{"g3": true}`)}})[0]
	if r.State != events.StateSuccess || !strings.HasPrefix(r.Text(), "Active tool groups: g3.\nNow available: tool3.\n") {
		t.Fatalf("process B's reset_tools: %s %q", r.State, r.Text())
	}
	for _, p := range []*process{a, b} {
		if got, err := p.m.Active(ctx, "shared"); err != nil || !slices.Equal(got, []string{"g3", "g7"}) {
			t.Fatalf("active groups %v (%v), want [g3 g7]", got, err)
		}
	}
	sa, _ := a.tk.Session("shared")
	defs, err := sa.Definitions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var visible []string
	for _, d := range defs {
		visible = append(visible, d.Name)
	}
	if !slices.Equal(visible, []string{"tool3", "tool7", "reset_tools"}) {
		t.Fatalf("process A sees %v", visible)
	}
}
