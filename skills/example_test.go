package skills_test

import (
	"context"
	"fmt"
	"strings"
	"testing/fstest"

	"github.com/toolstream/toolstream/groups"
	"github.com/toolstream/toolstream/skills"
	"github.com/toolstream/toolstream/toolkit"
)

// A skill bound to a tool group: loading it gives the model its
// instructions and the tools they need.
func Example() {
	ctx := context.Background()
	tk := toolkit.New()
	defer tk.Close(ctx)
	tk.Add(toolkit.MustTool(toolkit.Spec{Name: "mean", Description: "Average of numbers."},
		func(ctx context.Context, in struct {
			X []float64 `json:"x"`
		}) (float64, error) {
			sum := 0.0
			for _, v := range in.X {
				sum += v
			}
			return sum / float64(len(in.X)), nil
		}))
	gm, _ := groups.Install(tk)
	gm.Add(groups.Group{Name: "stats", Description: "Statistics.", Tools: []string{"mean"}})

	lib, _ := skills.NewLibrary(skills.Repository{Name: "mine", FS: fstest.MapFS{
		"stats/SKILL.md": {Data: []byte("---\nname: stats\ndescription: Summarise numbers.\ntool-groups: [stats]\n---\nCall mean on the numbers.\n")},
	}})
	skills.Install(tk, lib, skills.WithGroups(gm))

	sess, _ := tk.Session("s")
	rs := sess.Run(ctx, []toolkit.Call{
		{ID: "1", Name: "load_skill_through_path", Args: []byte(`{"skillId":"stats","path":"SKILL.md"}`)},
		{ID: "2", Name: "mean", Args: []byte(`{"x":[1,2,3]}`)},
	})
	fmt.Println(rs[0].Text()[strings.Index(rs[0].Text(), "This skill"):])
	fmt.Println("mean:", rs[1].Text())
	// Output:
	// This skill switched on the tool group(s) stats. Now available: mean.
	// mean: 2
}
