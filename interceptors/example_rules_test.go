package interceptors_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/toolstream/toolstream/interceptors"
	"github.com/toolstream/toolstream/toolkit"
)

// Rules deny what the code forbids, whatever a person or the model says.
func ExampleWithRules() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	for _, name := range []string{"delete_file", "write_file"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name}, func(ctx context.Context, in struct {
			Path string `json:"path"`
		}) (string, error) {
			return name + " " + in.Path, nil
		}))
	}
	perms := interceptors.NewPermissions(
		interceptors.WithRules(
			interceptors.Rule{Tool: "delete_file", Decision: interceptors.Deny, Reason: "deleting is off in this workspace"},
			interceptors.Rule{Tool: "write_file", When: interceptors.ArgMatches("path", regexp.MustCompile(`^/etc/`)), Decision: interceptors.Deny},
		),
		interceptors.WithMode(interceptors.ReadOnly), // read-only tools run, the rest ask
	)
	tk.Use(perms.Interceptor())

	sess, _ := tk.Session("s")
	for _, r := range sess.Run(ctx, []toolkit.Call{
		{ID: "c1", Name: "delete_file", Args: json.RawMessage(`{"path":"notes.md"}`)},
		{ID: "c2", Name: "write_file", Args: json.RawMessage(`{"path":"/etc/hosts"}`)},
	}) {
		fmt.Println(r.State, r.Text())
	}
	// Output:
	// denied Error: permission denied: tool "delete_file" may not run here: deleting is off in this workspace. Do not call it again with these arguments; tell the user or find another way
	// denied Error: permission denied: tool "write_file" may not run here. Do not call it again with these arguments; tell the user or find another way
}

// A tool's own check denies what it knows to be dangerous; the preset
// rules make a person look at every touch of a secret.
func ExampleDangerousPath() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	spec := toolkit.Spec{Name: "delete_files", CheckPermission: func(ctx context.Context, args json.RawMessage) toolkit.Permission {
		var in struct{ Paths []string }
		json.Unmarshal(args, &in)
		for _, p := range in.Paths {
			if why, bad := interceptors.DangerousPath(p); bad {
				return toolkit.Permission{Decision: toolkit.PermissionDeny, Reason: why}
			}
		}
		if len(in.Paths) > 10 {
			return toolkit.Permission{Decision: toolkit.PermissionAsk, Reason: "deleting more than 10 files"}
		}
		return toolkit.Permission{} // no opinion: the toolkit's rules decide
	}}
	tk.Add(toolkit.MustTool(spec, func(ctx context.Context, in struct {
		Paths []string `json:"paths"`
	}) (string, error) {
		return fmt.Sprint("deleted ", in.Paths), nil
	}))
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "read_file", ReadOnly: true}, func(ctx context.Context, in struct {
		Path string `json:"path"`
	}) (string, error) {
		return "read " + in.Path, nil
	}))
	perms := interceptors.NewPermissions(interceptors.WithRules(interceptors.DangerousFiles()...))
	tk.Use(perms.Interceptor())

	sess, _ := tk.Session("s")
	run := sess.Start(ctx, []toolkit.Call{
		{ID: "c1", Name: "delete_files", Args: json.RawMessage(`{"paths":["build/out.o", ".env"]}`)},
		{ID: "c2", Name: "read_file", Args: json.RawMessage(`{"path":"README.md"}`)},
		{ID: "c3", Name: "read_file", Args: json.RawMessage(`{"path":"~/.ssh/id_rsa"}`)},
	})
	for r := range run.Results() {
		if !r.Final() { // the preset asks: a person says no
			for _, req := range perms.Pending("s") {
				fmt.Println(req.CallID, "asks:", req.Reason)
				perms.Reject("s", req.CallID, "not my keys")
			}
			continue
		}
		fmt.Println(r.Call.ID, r.State, r.Text())
	}
	// Unordered output:
	// c1 denied Error: permission denied: tool "delete_files" may not run here: the arguments name a file that usually holds secrets (.env, .netrc, credentials, ...). Do not call it again with these arguments; tell the user or find another way
	// c2 success read README.md
	// c3 asks: the arguments name a private key or certificate store (id_rsa, *.pem, *.key, ...)
	// c3 denied Error: the user rejected this call of "read_file": not my keys. Do not retry it as it was; follow the user's reason
}
