package ui_test

import (
	"os"
	"strings"
	"testing"
)

// TestDocAccessExample: the example of docs/ui-protocols.md ("Who may
// call") is the code ExampleWithAuthorize compiles and runs, between its
// doc:begin and doc:end lines.
func TestDocAccessExample(t *testing.T) {
	src, err := os.ReadFile("access_example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../docs/ui-protocols.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(src), "// doc:begin")
	if ok {
		_, rest, ok = strings.Cut(rest, "\n")
	}
	frag, _, ok2 := strings.Cut(rest, "// doc:end")
	if !ok || !ok2 {
		t.Fatal("access_example_test.go has no doc:begin ... doc:end")
	}
	frag = strings.Trim(frag, "\n")
	if len(frag) < 500 || !strings.Contains(string(doc), "```go\n"+frag+"\n```") {
		t.Errorf("docs/ui-protocols.md does not show the example of access_example_test.go as it is: copy the lines between doc:begin and doc:end into its code block")
	}
}
