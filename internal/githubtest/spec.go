package githubtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// Spec is GitHub's REST API description, loaded for checking requests.
type Spec struct {
	doc    *openapi3.T
	router *router
}

var (
	specOnce sync.Once
	specVal  *Spec
	specErr  error
)

// LoadSpec returns GitHub's full REST API description (openapi/api.github.com.json),
// loaded once per test binary; it skips the test when ../shared/github is absent.
func LoadSpec(t testing.TB) *Spec {
	t.Helper()
	file := filepath.Join(SharedDir(t), "github", "openapi", "api.github.com.json")
	specOnce.Do(func() { specVal, specErr = loadSpecFile(file) })
	if specErr != nil {
		t.Fatalf("githubtest: %v", specErr)
	}
	return specVal
}

func loadSpecFile(file string) (*Spec, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read GitHub's OpenAPI description: %w", err)
	}
	return parseSpec(data)
}

func parseSpec(data []byte) (*Spec, error) {
	var generic map[string]any
	if err := json.Unmarshal(data, &generic); err != nil {
		return nil, fmt.Errorf("decode GitHub's OpenAPI description: %w", err)
	}
	prune(generic)
	trimmed, err := json.Marshal(generic)
	if err != nil {
		return nil, fmt.Errorf("encode trimmed OpenAPI description: %w", err)
	}
	// LoadFromData would read the JSON with a YAML parser (for origins,
	// unused here), which under -race costs a second or more of CPU per
	// test binary: decode it as JSON and resolve its references instead.
	doc := &openapi3.T{}
	if err := doc.UnmarshalJSON(trimmed); err != nil {
		return nil, fmt.Errorf("load GitHub's OpenAPI description: %w", err)
	}
	if err := openapi3.NewLoader().ResolveRefsIn(doc, nil); err != nil {
		return nil, fmt.Errorf("load GitHub's OpenAPI description: resolve references: %w", err)
	}
	if err := validateDoc(doc); err != nil {
		return nil, err
	}
	r, err := newRouter(doc)
	if err != nil {
		return nil, err
	}
	return &Spec{doc: doc, router: r}, nil
}

// Doc is the loaded description, for checks this package does not offer (a payload
// against a component schema, say). Responses, examples and schemas only responses use
// have been pruned from it.
func (s *Spec) Doc() *openapi3.T { return s.doc }

// Schema returns the component schema with the given name, or nil.
func (s *Spec) Schema(name string) *openapi3.Schema {
	ref := s.doc.Components.Schemas[name]
	if ref == nil {
		return nil
	}
	return ref.Value
}

// validateDoc checks the description's own soundness (schemas, parameters) so a broken
// file fails loudly here rather than as a puzzling request error. It skips the check of
// paths against each other: GitHub has templates kin-openapi calls conflicting
// (/orgs/{org}/attestations/{subject_digest} for GET and …/{attestation_id} for DELETE)
// that differ only in method.
func validateDoc(doc *openapi3.T) error {
	// GitHub's file has "value": null examples; they are pruned, but say so anyway so
	// examples left elsewhere cannot fail the load.
	ctx := openapi3.WithValidationOptions(context.Background(), openapi3.DisableExamplesValidation())
	if err := doc.Components.Validate(ctx); err != nil {
		return fmt.Errorf("GitHub's OpenAPI description: components: %w", err)
	}
	for template, item := range doc.Paths.Map() {
		if err := item.Validate(ctx); err != nil {
			return fmt.Errorf("GitHub's OpenAPI description: path %s: %w", template, err)
		}
	}
	return nil
}
