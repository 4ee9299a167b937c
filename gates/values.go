package gates

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	"gopkg.in/yaml.v3"

	"github.com/ripcord/ripcord/repoconfig"
)

// Values checks the release file against a JSON Schema: the one the
// configuration names (values.schema, read by the caller from the default
// branch, so that a pull request cannot loosen the schema it is judged by)
// or, when none is configured, a built-in one requiring the configured
// fields with a well-formed digest. Each violation is a finding on the
// file's line.
type Values struct {
	// SchemaPath is values.schema; empty means the built-in schema.
	SchemaPath string
	// Schema is the schema file's content; SchemaErr is why it could not
	// be read. Both are ignored when SchemaPath is empty.
	Schema    []byte
	SchemaErr error
	Fields    repoconfig.Fields
}

// Name, Class and Evaluate implement Gate.
func (Values) Name() string { return NameValues }
func (Values) Class() Class { return Integrity }
func (g Values) Evaluate(_ context.Context, s Subject) Verdict {
	sch, err := g.compile()
	if err != nil {
		return Errored(err.Error())
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(s.ReleaseFileContent, &doc); err != nil {
		return Failed("the release file is not valid YAML", Finding{Message: err.Error(), Path: s.ReleaseFile, Line: yamlErrorLine(err)})
	}
	inst, err := instance(&doc)
	if err != nil {
		return Failed(fmt.Sprintf("the release file cannot be read as JSON values: %v", err), Finding{Message: err.Error(), Path: s.ReleaseFile, Line: 1})
	}
	verr := sch.Validate(inst)
	var conflict []Finding
	if c := s.DigestConflict(); c != "" {
		line := 1
		if n := Lookup(&doc, g.Fields.Digest); n != nil {
			line = n.Line
		}
		conflict = []Finding{{Message: c, Path: s.ReleaseFile, Line: line}}
	}
	if verr == nil {
		if conflict != nil {
			return Failed(fmt.Sprintf("%s is valid against %s but %s", s.ReleaseFile, g.schemaName(), conflict[0].Message), conflict...)
		}
		return Passed(fmt.Sprintf("%s is valid against %s", s.ReleaseFile, g.schemaName()))
	}
	ve, ok := verr.(*jsonschema.ValidationError)
	if !ok {
		return Errored(fmt.Sprintf("validate %s: %v", s.ReleaseFile, verr))
	}
	fs := append(violations(ve, &doc, s.ReleaseFile), conflict...)
	return Failed(fmt.Sprintf("%s has %d schema violation(s) against %s", s.ReleaseFile, len(fs)-len(conflict), g.schemaName()), fs...)
}

func (g Values) schemaName() string {
	if g.SchemaPath == "" {
		return "the built-in release schema"
	}
	return g.SchemaPath
}

func (g Values) compile() (*jsonschema.Schema, error) {
	var raw any
	if g.SchemaPath == "" {
		raw = builtinSchema(g.Fields)
	} else {
		if g.SchemaErr != nil {
			return nil, fmt.Errorf("values.schema %s could not be read: %v", g.SchemaPath, g.SchemaErr)
		}
		var err error
		if raw, err = jsonschema.UnmarshalJSON(bytes.NewReader(g.Schema)); err != nil {
			return nil, fmt.Errorf("values.schema %s is not JSON: %v", g.SchemaPath, err)
		}
	}
	c := jsonschema.NewCompiler()
	const url = "ripcord:///release.schema.json"
	if err := c.AddResource(url, raw); err != nil {
		return nil, fmt.Errorf("values.schema %s: %v", g.schemaName(), err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("values.schema %s is not a valid JSON Schema: %v", g.schemaName(), err)
	}
	return sch, nil
}

// builtinSchema requires each configured field as a non-empty string, and
// the digest field as "sha256:<64 hex>".
func builtinSchema(f repoconfig.Fields) map[string]any {
	root := map[string]any{"type": "object"}
	add := func(path string, leaf map[string]any) {
		if path == "" {
			return
		}
		node := root
		keys := strings.Split(path, ".")
		for i, k := range keys {
			props, _ := node["properties"].(map[string]any)
			if props == nil {
				props = map[string]any{}
				node["properties"] = props
			}
			req, _ := node["required"].([]any)
			if !slices.Contains(req, any(k)) {
				node["required"] = append(req, k)
			}
			next, _ := props[k].(map[string]any)
			if next == nil {
				next = map[string]any{"type": "object"}
				props[k] = next
			}
			if i == len(keys)-1 {
				props[k] = leaf
				return
			}
			node = next
		}
	}
	add(f.Image, map[string]any{"type": "string", "minLength": 1})
	add(f.ReleaseID, map[string]any{"type": "string", "minLength": 1})
	add(f.Digest, map[string]any{"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"})
	return root
}

// instance turns the YAML document into the values JSON Schema validates.
func instance(doc *yaml.Node) (any, error) {
	var v any
	if err := doc.Decode(&v); err != nil {
		return nil, err
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(raw))
}

var printer = message.NewPrinter(language.English)

// violations flattens the error tree to its leaves, each placed on the line
// of the value it is about.
func violations(ve *jsonschema.ValidationError, doc *yaml.Node, path string) []Finding {
	var out []Finding
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, Finding{
				Severity: "error", ID: loc, Path: path, Line: lineOf(doc, e.InstanceLocation),
				Message: fmt.Sprintf("%s: %s", loc, e.ErrorKind.LocalizedString(printer)),
			})
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Line < out[j].Line })
	return out
}

// lineOf finds the line of the value at a JSON pointer's tokens; the
// nearest existing ancestor's when the value is missing (a required key).
func lineOf(doc *yaml.Node, tokens []string) int {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := max(n.Line, 1)
	for _, t := range tokens {
		var next *yaml.Node
		switch n.Kind {
		case yaml.MappingNode:
			next = child(n, t)
		case yaml.SequenceNode:
			var i int
			if _, err := fmt.Sscanf(t, "%d", &i); err == nil && i >= 0 && i < len(n.Content) {
				next = n.Content[i]
			}
		}
		if next == nil {
			return line
		}
		n, line = next, next.Line
	}
	return line
}

func yamlErrorLine(err error) int {
	var line int
	if _, e := fmt.Sscanf(strings.TrimPrefix(err.Error(), "yaml: "), "line %d:", &line); e == nil && line > 0 {
		return line
	}
	return 1
}
