package natsbus_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/toolstream/toolstream/events"
	"github.com/toolstream/toolstream/events/natsbus"
	"github.com/toolstream/toolstream/toolkit"
)

// echo is a tool that answers with its argument.
var echo = toolkit.MustTool(toolkit.Spec{Name: "echo"}, func(ctx context.Context, in struct {
	Text string `json:"text"`
}) (string, error) {
	return in.Text, nil
})

// A toolkit publishes every call's events on NATS (here a server embedded in
// the process: Open without a URL); a watcher follows a session live.
func Example() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx)
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(ctx)
	tk.Add(echo)

	got := make(chan *events.Event, 16)
	sub, err := bus.Subscribe(bus.Subjects().Session("s"), func(ev *events.Event) { got <- ev })
	if err != nil {
		panic(err)
	}
	defer sub.Unsubscribe()

	sess, _ := tk.Session("s")
	sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}})
	for ev := range got {
		fmt.Println(ev.Seq, ev.Type, ev.Call, ev.Tool)
		if ev.Type == events.TypeResult {
			fmt.Println(events.ContentText(ev.Result.Content))
			break
		}
	}
	// Output:
	// 1 start c1 echo
	// 2 delta c1 echo
	// 3 result c1 echo
	// hello
}

// A durable bus keeps the events, so that a browser (EventSource) can watch
// a session with Server-Sent Events and resume where it was after a
// reconnection (Last-Event-ID).
func ExampleBus_SSEHandler() {
	ctx := context.Background()
	bus, err := natsbus.Open(ctx, natsbus.WithDurable(natsbus.Durable{Memory: true}))
	if err != nil {
		panic(err)
	}
	defer bus.Close(ctx)
	tk := toolkit.New(toolkit.WithInlineObserver(bus.Publisher()))
	defer tk.Close(ctx)
	tk.Add(echo)
	sess, _ := tk.Session("s")
	sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "echo", Args: json.RawMessage(`{"text":"hello"}`)}})

	srv := httptest.NewServer(bus.SSEHandler())
	defer srv.Close()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	req, _ := http.NewRequestWithContext(rctx, "GET", srv.URL+"?session=s", nil)
	req.Header.Set("Last-Event-ID", "1") // seen: the start event
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	for lines := bufio.NewScanner(resp.Body); lines.Scan(); {
		if line := lines.Text(); strings.HasPrefix(line, "id:") || strings.HasPrefix(line, "event:") {
			fmt.Println(line)
			if line == "event: result" {
				break
			}
		}
	}
	// Output:
	// id: 2
	// event: delta
	// id: 3
	// event: result
}
