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
