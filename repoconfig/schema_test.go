package repoconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

const schemaFile = "../schema/ripcord.schema.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatalf("%s: %v", schemaFile, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	// Format assertions make "format: regex" check regexps with Go's engine,
	// the same one Load uses.
	c.AssertFormat()
	if err := c.AddResource("ripcord.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("ripcord.schema.json")
	if err != nil {
		t.Fatalf("compile %s: %v", schemaFile, err)
	}
	return sch
}

// yamlToJSON converts a config the way an editor's YAML language server does
// before applying the schema.
func yamlToJSON(t *testing.T, doc string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(doc), &v); err != nil {
		t.Fatalf("yaml: %v", err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("to json: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

func TestSchemaAndLoadAgreeOnValidFiles(t *testing.T) {
	sch := compileSchema(t)
	docs := map[string]string{
		"DESIGN.md example":   string(mustRead(t, "testdata/design-example.yml")),
		"every key":           string(mustRead(t, "testdata/full.yml")),
		"only the version":    "version: 1\n",
		"version written 1.0": "version: 1.0\n",
		"kubernetes rollback needs nothing but its mode": env("        rollback: {mode: kubernetes}\n"),
		"zero retries and zero initial backoff":          "version: 1\nrecovery: {max_retries: 0, initial_backoff: 0s}\n",
	}
	for name, doc := range docs {
		t.Run(name, func(t *testing.T) {
			if _, problems := Load([]byte(doc)); len(problems) > 0 {
				t.Errorf("Load rejects it: %v", problems)
			}
			if err := sch.Validate(yamlToJSON(t, doc)); err != nil {
				t.Errorf("the schema rejects it: %v", err)
			}
		})
	}
}

func TestSchemaAndLoadAgreeOnInvalidFiles(t *testing.T) {
	sch := compileSchema(t)
	for _, tt := range problemCases {
		if tt.schema == notJSON {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			if _, problems := Load([]byte(tt.doc)); len(problems) == 0 {
				t.Fatal("Load accepts it")
			}
			err := sch.Validate(yamlToJSON(t, tt.doc))
			switch tt.schema {
			case schemaRejects:
				if err == nil {
					t.Error("the schema accepts what Load rejects")
				}
			case schemaCannotSee:
				// Documented gap: if the schema learns this check, move the
				// case to schemaRejects.
				if err != nil {
					t.Errorf("the schema now rejects a Go-only case: %v", err)
				}
			}
		})
	}
}

// The schema's property lists and Load's key lists are written twice; this
// keeps them from drifting apart.
func TestSchemaKeysMatchLoadKeys(t *testing.T) {
	var schema map[string]any
	if err := json.Unmarshal(mustRead(t, schemaFile), &schema); err != nil {
		t.Fatal(err)
	}
	defs := schema["$defs"].(map[string]any)
	gates := defs["gates"].(map[string]any)["properties"].(map[string]any)
	process := gates["process"].(map[string]any)["properties"].(map[string]any)
	tests := []struct {
		name   string
		schema any
		goKeys []string
	}{
		{"top level", schema["properties"], topKeys},
		{"app", defs["app"].(map[string]any)["properties"], appKeys},
		{"environment", defs["environment"].(map[string]any)["properties"], environmentKeys},
		{"rollback", defs["rollback"].(map[string]any)["properties"], rollbackKeys},
		{"recovery", defs["recovery"].(map[string]any)["properties"], recoveryKeys},
		{"gates", gates, gateKeys},
		{"process", process, []string{"itsm", "qa", "policy_validation"}},
		{"oidc", defs["environment"].(map[string]any)["properties"].(map[string]any)["oidc"].(map[string]any)["properties"], oidcKeys},
	}
	for _, tt := range tests {
		var keys []string
		for k := range tt.schema.(map[string]any) {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		want := append([]string(nil), tt.goKeys...)
		sort.Strings(want)
		if !reflect.DeepEqual(keys, want) {
			t.Errorf("%s: schema has %v, Load allows %v", tt.name, keys, want)
		}
	}
}
