// Package skills loads agent skills: folders holding a SKILL.md file (YAML
// front matter plus markdown instructions) and optional resource files.
//
// A [Library] gathers the skills of several [Repository] values and reads
// their files with [Library.ReadResource], which never returns anything from
// outside the skill's own folder, whatever path or symbolic link it is given.
package skills

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// maxSkillFileBytes is the largest SKILL.md that [Parse] accepts.
const maxSkillFileBytes = 1 << 20

// maxFrontMatterBytes caps the YAML part: the YAML decoder checks for
// duplicate keys in quadratic time, and a full 1 MiB mapping takes seconds.
const maxFrontMatterBytes = 64 << 10

// skillFileName is the file that makes a folder a skill.
const skillFileName = "SKILL.md"

// Skill is one loaded skill. Values returned by a [Library] are shared and
// must not be modified.
type Skill struct {
	// Name is the front matter "name": the skill's id, what a model passes
	// as skillId.
	Name string
	// Description is the front matter "description", with surrounding
	// white space trimmed.
	Description string
	// Metadata holds every other front matter key, as YAML decoded it
	// (nested maps as map[string]any). It is never nil.
	Metadata map[string]any
	// Groups is the front matter "tool-groups": tool groups to activate when
	// the skill is loaded. It is not repeated in Metadata.
	Groups []string
	// Body is the markdown after the front matter, with CRLF line ends
	// turned into LF and surrounding blank lines trimmed.
	Body string
	// Repository is the name of the repository the skill came from.
	Repository string
	// Dir is the skill's folder inside the repository's file system, a slash
	// path ("." for the repository root).
	Dir string

	stamp stamp // SKILL.md's size and modification time when read (Library.Refresh)
}

var namePattern = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$`)

// Front matter keys with a meaning of their own; all others go to Metadata.
const (
	keyName        = "name"
	keyDescription = "description"
	keyGroups      = "tool-groups"
)

// Parse parses the contents of a SKILL.md file.
//
// The file may start with a UTF-8 byte order mark and may use CRLF or LF line
// ends. Its first line must be "---" (trailing spaces allowed); the front
// matter runs to the next line that is "---" (trailing spaces allowed) and
// must be a YAML mapping. "name" and "description" are required non-empty
// strings, and the name must match ^[a-zA-Z0-9][a-zA-Z0-9._-]{0,63}$.
// "tool-groups", if present, must be a list of non-empty strings. Line
// numbers in errors count lines of the whole file. The front matter itself
// may not exceed 64 KiB.
func Parse(data []byte) (*Skill, error) {
	if len(data) > maxSkillFileBytes {
		return nil, fmt.Errorf("SKILL.md is %d bytes, more than the limit of %d", len(data), maxSkillFileBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	if !utf8.Valid(data) {
		return nil, errors.New("SKILL.md is not valid UTF-8 text")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")

	first, rest, _ := strings.Cut(text, "\n")
	if !isDelimiter(first) {
		return nil, errors.New(`SKILL.md must start with a line "---" that opens the YAML front matter`)
	}
	// Find the closing delimiter line by line; the offset of the front
	// matter in the file (one line) is added to YAML line numbers.
	var front, body string
	closed := false
	for off := 0; off <= len(rest); {
		line, _, found := strings.Cut(rest[off:], "\n")
		if isDelimiter(line) {
			front = rest[:off]
			body = rest[min(off+len(line)+1, len(rest)):]
			closed = true
			break
		}
		if !found {
			break
		}
		off += len(line) + 1
	}
	if !closed {
		return nil, errors.New(`the front matter is not closed: no line "---" follows the opening one`)
	}

	if len(front) > maxFrontMatterBytes {
		return nil, fmt.Errorf("the front matter is %d bytes, more than the limit of %d", len(front), maxFrontMatterBytes)
	}
	fields, keyLines, err := decodeFrontMatter(front)
	if err != nil {
		return nil, err
	}
	s := &Skill{Metadata: map[string]any{}, Body: trimBlankLines(body)}
	for k, v := range fields {
		switch k {
		case keyName, keyDescription, keyGroups:
		default:
			s.Metadata[k] = normalizeYAML(v)
		}
	}
	at := func(key string) string {
		if l, ok := keyLines[key]; ok {
			return fmt.Sprintf("line %d: ", l+1)
		}
		return ""
	}

	s.Name, err = requiredString(fields, keyName)
	if err != nil {
		return nil, fmt.Errorf("%s%w", at(keyName), err)
	}
	if !namePattern.MatchString(s.Name) {
		return nil, fmt.Errorf("%sname %q is not valid: use 1 to 64 ASCII letters, digits, '.', '_' or '-', starting with a letter or digit", at(keyName), s.Name)
	}
	s.Description, err = requiredString(fields, keyDescription)
	if err != nil {
		return nil, fmt.Errorf("%s%w", at(keyDescription), err)
	}
	s.Description = strings.TrimSpace(s.Description)

	if g, ok := fields[keyGroups]; ok && g != nil {
		list, ok := g.([]any)
		if !ok {
			return nil, fmt.Errorf("%stool-groups must be a list of strings, not %s", at(keyGroups), describeYAML(g))
		}
		for i, item := range list {
			str, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("%stool-groups item %d must be a string, not %s", at(keyGroups), i+1, describeYAML(item))
			}
			if strings.TrimSpace(str) == "" {
				return nil, fmt.Errorf("%stool-groups item %d is empty", at(keyGroups), i+1)
			}
			s.Groups = append(s.Groups, str)
		}
	}
	return s, nil
}

// isDelimiter reports whether a line is "---" with optional trailing blanks.
func isDelimiter(line string) bool {
	return strings.TrimRight(line, " \t") == "---"
}

// decodeFrontMatter decodes the YAML between the delimiters into a map, and
// returns the (front matter) line of each top-level key for error messages.
func decodeFrontMatter(front string) (map[string]any, map[string]int, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(front), &doc); err != nil {
		return nil, nil, fmt.Errorf("the front matter is not valid YAML: %s", yamlMessage(err))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil, errors.New("the front matter is empty: it needs at least name and description")
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return nil, nil, fmt.Errorf("line %d: the front matter must be a YAML mapping of keys to values (like \"name: my-skill\"), not %s", root.Line+1, nodeKind(root))
	}
	keyLines := map[string]int{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		if k := root.Content[i]; k.Kind == yaml.ScalarNode {
			if _, dup := keyLines[k.Value]; !dup {
				keyLines[k.Value] = k.Line
			}
		}
	}
	var fields map[string]any
	if err := root.Decode(&fields); err != nil {
		return nil, nil, fmt.Errorf("the front matter is not valid: %s", yamlMessage(err))
	}
	return fields, keyLines, nil
}

var yamlLine = regexp.MustCompile(`line (\d+)`)

// yamlMessage strips the package prefix from a YAML error and shifts its line
// numbers by one so that they count lines of SKILL.md, not of the front
// matter.
func yamlMessage(err error) string {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: ")
	msg = strings.TrimPrefix(msg, "unmarshal errors:\n  ")
	msg = strings.ReplaceAll(msg, "\n  ", "; ")
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		n, err := strconv.Atoi(m[len("line "):])
		if err != nil {
			return m
		}
		return "line " + strconv.Itoa(n+1)
	})
}

func requiredString(fields map[string]any, key string) (string, error) {
	v, ok := fields[key]
	if !ok {
		return "", fmt.Errorf("the front matter has no %q: it is required", key)
	}
	s, ok := v.(string)
	if !ok {
		if v == nil {
			return "", fmt.Errorf("%q is empty: it is required", key)
		}
		return "", fmt.Errorf("%q must be a string, not %s", key, describeYAML(v))
	}
	if strings.TrimSpace(s) == "" {
		return "", fmt.Errorf("%q is empty: it is required", key)
	}
	return s, nil
}

func describeYAML(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case []any:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case string:
		return strconv.Quote(v)
	case bool:
		return fmt.Sprintf("the boolean %v (quote it to make a string)", v)
	case int, int64, uint64, float64:
		return fmt.Sprintf("the number %v (quote it to make a string)", v)
	default:
		return fmt.Sprintf("%T %v (quote it to make a string)", v, v)
	}
}

func nodeKind(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return "a single value"
	case yaml.AliasNode:
		return "an alias"
	default:
		return "something else"
	}
}

// normalizeYAML turns maps with non-string keys, which YAML decodes as
// map[any]any, into map[string]any so that Metadata has a single map type.
func normalizeYAML(v any) any {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			v[k] = normalizeYAML(e)
		}
		return v
	case map[any]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[fmt.Sprint(k)] = normalizeYAML(e)
		}
		return m
	case []any:
		for i, e := range v {
			v[i] = normalizeYAML(e)
		}
		return v
	default:
		return v
	}
}

// trimBlankLines drops blank lines at both ends but keeps the indentation of
// the first line, which matters in markdown (indented code).
func trimBlankLines(s string) string {
	for {
		line, rest, found := strings.Cut(s, "\n")
		if !found || strings.TrimSpace(line) != "" {
			break
		}
		s = rest
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return strings.TrimRight(s, " \t\n\r")
}
