// Command schemafloor does with the pinned schema library
// (github.com/google/jsonschema-go) what the engine needs it for, and
// nothing else: infer a tool's input schema from a Go type, resolve it,
// validate one set of arguments, and show the schema as JSON. TestFootprint
// builds it beside testdata/embed: its size is the floor under any engine
// that uses the pinned library, before a line of toolstream.
package main

import (
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"
)

type greetIn struct {
	Name string `json:"name" jsonschema:"who to greet"`
}

func main() {
	s, err := jsonschema.For[greetIn](nil)
	if err != nil {
		panic(err)
	}
	rs, err := s.Resolve(nil)
	if err != nil {
		panic(err)
	}
	var args any
	if err := json.Unmarshal([]byte(`{"name":"Ada"}`), &args); err != nil {
		panic(err)
	}
	shown, err := json.Marshal(s)
	fmt.Println(rs.Validate(args), string(shown), err)
}
