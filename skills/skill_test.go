package skills

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	s, err := Parse([]byte("---\nname: pdf-tools\ndescription: Work with PDF files.\n---\n\n# PDF\n\nUse it.\n\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "pdf-tools" || s.Description != "Work with PDF files." {
		t.Errorf("got name %q description %q", s.Name, s.Description)
	}
	if s.Body != "# PDF\n\nUse it." {
		t.Errorf("body = %q", s.Body)
	}
	if s.Metadata == nil || len(s.Metadata) != 0 || s.Groups != nil {
		t.Errorf("metadata %v groups %v", s.Metadata, s.Groups)
	}
}

func TestParseErrors(t *testing.T) {
	big := "---\nname: x\ndescription: y\n---\n" + strings.Repeat("a", maxSkillFileBytes)
	cases := []struct {
		name, in string
		want     []string // all must appear in the error
	}{
		{"missing name", "---\ndescription: d\n---\n", []string{`no "name"`, "required"}},
		{"missing description", "---\nname: n\n---\n", []string{`no "description"`}},
		{"empty name", "---\nname:\ndescription: d\n---\n", []string{"line 2", `"name" is empty`}},
		{"blank description", "---\nname: n\ndescription: '  '\n---\n", []string{"line 3", `"description" is empty`}},
		{"number name", "---\nname: 123\ndescription: d\n---\n", []string{"line 2", `"name" must be a string`, "number 123"}},
		{"list name", "---\nname: [a]\ndescription: d\n---\n", []string{`"name" must be a string, not a list`}},
		{"map description", "---\nname: n\ndescription: {a: b}\n---\n", []string{`"description" must be a string, not a mapping`}},
		{"bad name chars", "---\nname: my skill\ndescription: d\n---\n", []string{"line 2", `name "my skill" is not valid`}},
		{"name leading dash", "---\nname: -x\ndescription: d\n---\n", []string{`name "-x" is not valid`}},
		{"name too long", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", []string{"is not valid", "1 to 64"}},
		{"malformed yaml", "---\nname: n\ndescription: d\n  bad: indent\n---\n", []string{"not valid YAML", "line 4"}},
		{"tab indent", "---\nname: n\nx:\n\ty: 1\ndescription: d\n---\n", []string{"not valid YAML", "line 4"}},
		{"duplicate key", "---\nname: n\ndescription: d\nname: m\n---\n", []string{"line 4", `"name" already defined at line 2`}},
		{"not a mapping", "---\n- a\n- b\n---\n", []string{"must be a YAML mapping", "not a list"}},
		{"empty front matter", "---\n---\nbody\n", []string{"front matter is empty"}},
		{"no front matter", "# Title\nname: x\n", []string{`must start with a line "---"`}},
		{"front matter not first", "\n---\nname: n\ndescription: d\n---\n", []string{`must start with a line "---"`}},
		{"unterminated", "---\nname: n\ndescription: d\n", []string{"not closed"}},
		{"only opening", "---", []string{"not closed"}},
		{"four dashes", "----\nname: n\n----\n", []string{`must start`}},
		{"groups not list", "---\nname: n\ndescription: d\ntool-groups: web\n---\n", []string{"line 4", "tool-groups must be a list of strings"}},
		{"groups item number", "---\nname: n\ndescription: d\ntool-groups: [a, 1]\n---\n", []string{"tool-groups item 2 must be a string"}},
		{"groups item empty", "---\nname: n\ndescription: d\ntool-groups: [a, '']\n---\n", []string{"tool-groups item 2 is empty"}},
		{"oversize", big, []string{"more than the limit of 1048576"}},
		{"oversize front matter", "---\nname: n\ndescription: d\nx: " + strings.Repeat("y", 64<<10) + "\n---\n", []string{"front matter is", "more than the limit of 65536"}},
		{"invalid utf8", "---\nname: n\ndescription: d\n---\n\xff\n", []string{"not valid UTF-8"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := Parse([]byte(c.in))
			if err == nil {
				t.Fatalf("no error, got %+v", s)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestParseCRLFAndBOM(t *testing.T) {
	in := "\xef\xbb\xbf---  \r\nname: n\r\ndescription: d\r\n--- \r\n\r\nline one\r\nline two\r\n\r\n"
	s, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "n" || s.Description != "d" {
		t.Errorf("got %q %q", s.Name, s.Description)
	}
	if s.Body != "line one\nline two" {
		t.Errorf("body = %q", s.Body)
	}
}

func TestParseMetadataAndGroups(t *testing.T) {
	in := `---
name: n
description: |
  Multi line
  description.
license: MIT
version: 2
tags: [a, b]
author:
  name: Ann
  links: {home: "https://x"}
  ids: {1: one}
tool-groups: [web, files]
---
    indented code first
`
	s, err := Parse([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"license": "MIT",
		"version": 2,
		"tags":    []any{"a", "b"},
		"author": map[string]any{
			"name":  "Ann",
			"links": map[string]any{"home": "https://x"},
			"ids":   map[string]any{"1": "one"},
		},
	}
	if !reflect.DeepEqual(s.Metadata, want) {
		t.Errorf("metadata = %#v", s.Metadata)
	}
	if !reflect.DeepEqual(s.Groups, []string{"web", "files"}) {
		t.Errorf("groups = %v", s.Groups)
	}
	if _, ok := s.Metadata["tool-groups"]; ok {
		t.Error("tool-groups kept in Metadata")
	}
	if s.Description != "Multi line\ndescription." {
		t.Errorf("description = %q", s.Description)
	}
	if s.Body != "    indented code first" {
		t.Errorf("body = %q", s.Body)
	}
}

func TestParseEmptyBodyAndNullGroups(t *testing.T) {
	for _, in := range []string{
		"---\nname: n\ndescription: d\ntool-groups:\n---",
		"---\nname: n\ndescription: d\ntool-groups: []\n---\n",
		"---\nname: n\ndescription: d\n---\n\n \n\t\n",
	} {
		s, err := Parse([]byte(in))
		if err != nil {
			t.Fatalf("%q: %v", in, err)
		}
		if s.Body != "" || len(s.Groups) != 0 || len(s.Metadata) != 0 {
			t.Errorf("%q: body %q groups %v metadata %v", in, s.Body, s.Groups, s.Metadata)
		}
	}
}

func TestParseDelimiterInBody(t *testing.T) {
	s, err := Parse([]byte("---\nname: n\ndescription: d\n---\nabove\n---\nbelow\n"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Body != "above\n---\nbelow" {
		t.Errorf("body = %q", s.Body)
	}
}

func TestParseSizeLimitExact(t *testing.T) {
	head := "---\nname: n\ndescription: d\n---\n"
	in := head + strings.Repeat("a", maxSkillFileBytes-len(head))
	if _, err := Parse([]byte(in)); err != nil {
		t.Errorf("file of exactly maxSkillFileBytes refused: %v", err)
	}
}
