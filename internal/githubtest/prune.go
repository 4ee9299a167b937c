package githubtest

import "strings"

// Loading GitHub's full description (13 MB) with kin-openapi takes about 5 s, most of it
// spent on parts that never take part in checking a request: response bodies, examples
// and the hundreds of schemas only responses use. prune removes them from the generically
// decoded document before kin-openapi sees it.

// keptSchemas are component schemas kept even though no request uses them, because tests
// validate payloads against them.
var keptSchemas = []string{"webhook-deployment-protection-rule-requested"}

// prune trims doc in place: responses keep only their description, examples go, and
// component schemas nothing reachable refers to go.
func prune(doc map[string]any) {
	delete(doc, "x-webhooks")
	paths, _ := doc["paths"].(map[string]any)
	for _, item := range paths {
		for _, op := range asMap(item) {
			if opMap, ok := op.(map[string]any); ok {
				trimResponses(asMap(opMap["responses"]))
			}
		}
	}
	components := asMap(doc["components"])
	trimResponses(asMap(components["responses"]))
	delete(components, "examples")
	dropExamples(doc, false)
	dropUnmappedDiscriminators(doc)
	dropUnreachableSchemas(doc, components)
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func trimResponses(responses map[string]any) {
	for code, r := range responses {
		resp := asMap(r)
		if resp == nil {
			continue
		}
		if ref, ok := resp["$ref"]; ok {
			responses[code] = map[string]any{"$ref": ref}
			continue
		}
		description, _ := resp["description"].(string)
		responses[code] = map[string]any{"description": description}
	}
}

// dropExamples removes "example" and "examples" keys, except where they are the names of
// properties (inside a "properties" map they name a field, not an example).
func dropExamples(v any, namesOnly bool) {
	switch node := v.(type) {
	case map[string]any:
		for key, child := range node {
			if !namesOnly && (key == "example" || key == "examples") {
				delete(node, key)
				continue
			}
			dropExamples(child, !namesOnly && key == "properties")
		}
	case []any:
		for _, child := range node {
			dropExamples(child, false)
		}
	}
}

// dropUnmappedDiscriminators removes discriminators that have no mapping. GitHub uses one
// on the check-run create body with inline oneOf alternatives, where it means no more than
// the oneOf itself; kin-openapi instead demands the property and a schema named after its
// value, rejecting bodies GitHub accepts (a check run created without "status").
func dropUnmappedDiscriminators(v any) {
	switch node := v.(type) {
	case map[string]any:
		if d := asMap(node["discriminator"]); d != nil && d["mapping"] == nil {
			delete(node, "discriminator")
		}
		for _, child := range node {
			dropUnmappedDiscriminators(child)
		}
	case []any:
		for _, child := range node {
			dropUnmappedDiscriminators(child)
		}
	}
}

const schemaRefPrefix = "#/components/schemas/"

func dropUnreachableSchemas(doc, components map[string]any) {
	schemas := asMap(components["schemas"])
	if schemas == nil {
		return
	}
	reached := map[string]bool{}
	var queue []string
	visit := func(v any) {
		collectRefs(v, func(ref string) {
			name, ok := strings.CutPrefix(ref, schemaRefPrefix)
			if ok && !reached[name] {
				reached[name] = true
				queue = append(queue, name)
			}
		})
	}
	for key, v := range doc {
		if key != "components" {
			visit(v)
		}
	}
	for key, v := range components {
		if key != "schemas" {
			visit(v)
		}
	}
	for _, name := range keptSchemas {
		visit(map[string]any{"$ref": schemaRefPrefix + name})
	}
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		visit(schemas[name])
	}
	for name := range schemas {
		if !reached[name] {
			delete(schemas, name)
		}
	}
}

func collectRefs(v any, found func(string)) {
	switch node := v.(type) {
	case map[string]any:
		if ref, ok := node["$ref"].(string); ok {
			found(ref)
		}
		for _, child := range node {
			collectRefs(child, found)
		}
	case []any:
		for _, child := range node {
			collectRefs(child, found)
		}
	}
}
