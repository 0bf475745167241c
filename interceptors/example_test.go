package interceptors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// A person approves a call with edited arguments. Read-only tools run;
// write_note is not read-only, so it waits for a decision.
func ExamplePermissions() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_note"}, func(ctx context.Context, in struct {
		Title string `json:"title"`
	}) (string, error) {
		return "saved " + in.Title, nil
	}))
	perms := interceptors.NewPermissions(interceptors.WithMode(interceptors.ReadOnly))
	tk.Use(perms.Interceptor())

	sess, _ := tk.Session("s")
	run := sess.Start(context.Background(), []toolkit.Call{{ID: "c1", Name: "write_note", Args: json.RawMessage(`{"title":"draft"}`)}})
	for res := range run.Results() {
		if !res.Final() { // suspended: waiting for a person
			req := perms.Pending("s")[0]
			fmt.Printf("%s wants %s %s\n", req.CallID, req.Tool, req.Args)
			perms.Approve("s", req.CallID, interceptors.WithArgs(json.RawMessage(`{"title":"final"}`)))
			continue
		}
		fmt.Println(res.State, res.Text())
	}
	// Output:
	// c1 wants write_note {"title":"draft"}
	// success saved final
}

// A person approves a write with the suggested rule "paths under
// ./notes": the next write inside notes runs without asking.
func ExampleWithSuggestion() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "write_file"}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "wrote " + in.Path, nil
	}))
	perms := interceptors.NewPermissions()
	tk.Use(perms.Interceptor())

	sess, _ := tk.Session("s")
	run := sess.Start(context.Background(), []toolkit.Call{{ID: "c1", Name: "write_file", Args: json.RawMessage(`{"path":"./notes/a.md"}`)}})
	for res := range run.Results() {
		if !res.Final() {
			req := perms.Pending("s")[0]
			for _, s := range req.Suggestions {
				fmt.Println("offered:", s.Label)
				if s.Grant.Under != "" {
					perms.Approve("s", req.CallID, interceptors.WithSuggestion(s.ID))
				}
			}
			continue
		}
		fmt.Println(res.State, res.Text())
	}
	res := sess.Run(context.Background(), []toolkit.Call{{ID: "c2", Name: "write_file", Args: json.RawMessage(`{"path":"notes/b.md"}`)}})
	fmt.Println(res[0].State, res[0].Text())
	// Output:
	// offered: Allow write_file again with exactly these arguments
	// offered: Allow write_file on paths under ./notes in this session
	// offered: Always allow write_file in this session
	// success wrote ./notes/a.md
	// success wrote notes/b.md
}

// memBackend keeps evicted results in memory (a real one would write to
// a database or a bucket).
type memBackend struct {
	mu   sync.Mutex
	data map[string][]byte
}

func (m *memBackend) Put(ctx context.Context, name string, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[name] = data
	return "mem://" + name, nil
}

// A result over the limit is stored and replaced by where it is and its
// first lines.
func ExampleEvict() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "dump"}, func(ctx context.Context, _ struct{}) (string, error) {
		var b strings.Builder
		for i := range 1000 {
			fmt.Fprintf(&b, "row %d\n", i)
		}
		return b.String(), nil
	}))
	store := &memBackend{data: map[string][]byte{}}
	tk.Use(interceptors.Evict(interceptors.EvictLimit(1024), interceptors.EvictPreview(2, 80), interceptors.EvictBackend(store)))

	sess, _ := tk.Session("s")
	r := sess.Run(context.Background(), []toolkit.Call{{ID: "c1", Name: "dump"}})[0]
	first, _, _ := strings.Cut(r.Text(), " It was saved")
	fmt.Println(first)
	fmt.Println(strings.Contains(r.Text(), "mem://dump-"), len(store.data))
	_, preview, _ := strings.Cut(r.Text(), "\n\n")
	fmt.Print(preview)
	// Output:
	// The result is too large to show here (7890 bytes, 1000 lines).
	// true 1
	// First 2 lines:
	//      1	row 0
	//      2	row 1
	// Last line (1000):
	//   1000	row 999
}

// Secrets are redacted in what streams and in the result.
func ExampleSanitize() {
	tk := toolkit.New()
	defer tk.Close(context.Background())
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "whoami"}, func(ctx context.Context, _ struct{}) (string, error) {
		return "user: ada@example.com, key: sk-proj-abcdefghijklmnopqrstuvwx", nil
	}))
	tk.Use(interceptors.Sanitize(interceptors.RedactEmails(), interceptors.RedactAPIKeys()))

	sess, _ := tk.Session("s")
	fmt.Println(sess.Run(context.Background(), []toolkit.Call{{ID: "c1", Name: "whoami"}})[0].Text())
	// Output: user: [redacted email], key: [redacted API key]
}
