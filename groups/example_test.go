package groups_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/toolkit"
)

// A model switches tool groups with reset_tools; the session's tool list
// follows.
func Example() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	for _, name := range []string{"read_file", "web_get", "now"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name, Description: "The " + name + " tool."},
			func(ctx context.Context, _ struct{}) (string, error) { return name + " ran", nil }))
	}
	m, _ := groups.Install(tk)
	m.Add(
		groups.Group{Name: "files", Description: "Read local files.", Instructions: "Paths are relative to the project.", Tools: []string{"read_file"}},
		groups.Group{Name: "web", Description: "Fetch web pages.", Tools: []string{"web_get"}, Active: true},
	)
	sess, _ := tk.Session("conversation-1")
	show := func() {
		defs, _ := sess.Definitions(ctx)
		var names []string
		for _, d := range defs {
			names = append(names, d.Name)
		}
		fmt.Println(strings.Join(names, " "))
	}
	show()
	// The model asks for the files group only (replace semantics: web goes off).
	r := sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "reset_tools", Args: []byte(`{"files": true}`)}})[0]
	fmt.Println(r.Text())
	show()
	// Output:
	// web_get now reset_tools
	// Active tool groups: files.
	// Now available: read_file.
	// No longer available: web_get.
	// <tool-instructions>
	// The groups you activated, and how to use their tools:
	// <group name="files">
	// <description>Read local files.</description>
	// <instructions>
	// Paths are relative to the project.
	// </instructions>
	// </group>
	// </tool-instructions>
	// read_file now reset_tools
}

// A CodeOnly group is switched by code, for example by the user's plan:
// the model never sees it in reset_tools and cannot switch it off, but
// sees its tools while it is on.
func ExampleGroup_codeOnly() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	for _, name := range []string{"read_file", "refund"} {
		tk.Add(toolkit.MustTool(toolkit.Spec{Name: name, Description: "The " + name + " tool."},
			func(ctx context.Context, _ struct{}) (string, error) { return name + " ran", nil }))
	}
	m, _ := groups.Install(tk)
	m.Add(
		groups.Group{Name: "files", Description: "Read local files.", Tools: []string{"read_file"}},
		groups.Group{Name: "billing", Tools: []string{"refund"}, CodeOnly: true},
	)
	sess, _ := tk.Session("conversation-1")
	show := func() {
		defs, _ := sess.Definitions(ctx)
		var names []string
		for _, d := range defs {
			names = append(names, d.Name)
		}
		fmt.Println(strings.Join(names, " "))
	}
	m.Activate(ctx, sess.ID(), "billing") // the user's plan includes refunds
	show()
	// The model's complete new state leaves billing as code set it...
	fmt.Println(sess.Run(ctx, []toolkit.Call{{ID: "c1", Name: "reset_tools", Args: []byte(`{"files": true}`)}})[0].Text())
	show()
	// ...and naming billing is refused as naming a group that does not exist.
	fmt.Println(sess.Run(ctx, []toolkit.Call{{ID: "c2", Name: "reset_tools", Args: []byte(`{"billing": false}`)}})[0].Text())
	active, _ := m.Active(ctx, sess.ID())
	fmt.Println(active)
	// Output:
	// refund reset_tools
	// Active tool groups: files.
	// Now available: read_file.
	// <tool-instructions>
	// The groups you activated, and how to use their tools:
	// <group name="files">
	// <description>Read local files.</description>
	// </group>
	// </tool-instructions>
	// read_file refund reset_tools
	// Error: invalid arguments for tool "reset_tools":
	// - billing: is not an allowed property; allowed: files
	// [billing files]
}
