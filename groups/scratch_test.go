package groups_test

import "testing"

func TestScratchArgs(t *testing.T) {
	f := newFixture(t)
	for _, a := range []string{`{"files": true, "files": false}`, `{"files": false, "files": true}`, `{"files": true, "files": "x"}`, `null`, `{}`, `[]`, `{"files": null}`, `{"basic": true}`, `{"files":true}garbage`, `{"__proto__": true}`, `{"files": 1}`, `{"files": "x", "files": true}`, `{"web": null}`} {
		r := f.run(t, "s", call("m", "reset_tools", a))[0]
		t.Logf("%s -> %s %q", a, r.State, r.Text())
	}
}
