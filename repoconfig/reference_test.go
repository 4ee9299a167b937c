package repoconfig

import (
	"flag"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite docs/ripcord-yml.md from Reference")

const referenceFile = "../docs/ripcord-yml.md"

// TestRipcordYMLReference keeps docs/ripcord-yml.md equal to Reference.
func TestRipcordYMLReference(t *testing.T) {
	want := ReferenceMarkdown()
	if *update {
		if err := os.MkdirAll("../docs", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(referenceFile, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	got, err := os.ReadFile(referenceFile)
	if err != nil || string(got) != want {
		t.Errorf("%s is stale (%v): run go test ./repoconfig -run TestRipcordYMLReference -update", referenceFile, err)
	}
}

func TestEveryDocumentedKeyHasTypeAndMeaning(t *testing.T) {
	for _, r := range ReferenceRows() {
		if r.Type == "" || r.Meaning == "" {
			t.Errorf("%s: type %q, meaning %q; both are needed", r.Path, r.Type, r.Meaning)
		}
	}
}

// probeKey is a key no schema has and no suggestion comes near.
const probeKey = "zzzzprobe"

var allowedLists = []*regexp.Regexp{
	regexp.MustCompile(`\(allowed: ([^)]*)\)$`), // repoconfig's decoder
	regexp.MustCompile(`valid keys are (.*)$`),  // rollout's decoder
}

// TestReferenceListsExactlyTheKeysLoadAccepts asks Load itself which keys
// each mapping accepts — an unknown key's problem lists them — and
// compares with Reference, level by level. A key added to the decoder and
// not to Reference fails here, and so does a documented key Load refuses.
func TestReferenceListsExactlyTheKeysLoadAccepts(t *testing.T) {
	var walk func(trail []KeyDoc, keys []KeyDoc)
	probed := 0
	walk = func(trail []KeyDoc, keys []KeyDoc) {
		documented := make([]string, 0, len(keys))
		for _, k := range keys {
			documented = append(documented, k.Name)
		}
		accepted, where, err := acceptedKeys(trail)
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		probed++
		for _, k := range accepted {
			if !slices.Contains(documented, k) {
				t.Errorf("%s: Load accepts %q, which Reference does not document; add it to repoconfig/reference.go and run go test ./repoconfig -run TestRipcordYMLReference -update", where, k)
			}
		}
		for _, k := range documented {
			if !slices.Contains(accepted, k) {
				t.Errorf("%s: Reference documents %q, which Load refuses", where, k)
			}
		}
		for _, k := range keys {
			switch k.Shape {
			case Mapping, Items:
				walk(append(slices.Clone(trail), k), k.Keys)
			case Named:
				entry := k.Keys[0]
				walk(append(slices.Clone(trail), k, entry), entry.Keys)
			}
		}
	}
	walk(nil, Reference)
	if probed < 30 {
		t.Errorf("probed %d mappings; the walk lost its way", probed)
	}
}

// acceptedKeys loads a file that reaches the mapping at the end of trail
// and puts an unknown key there, and returns the keys the problem lists.
func acceptedKeys(trail []KeyDoc) (keys []string, where string, err error) {
	doc := map[string]any{"version": 1}
	cur, path := doc, ""
	for i, k := range trail {
		name := k.Name
		if i > 0 && trail[i-1].Shape == Named { // a name of the test's for <app>, <env>
			name = strings.Trim(name, "<>") + "1"
		}
		path = join(path, name)
		next := map[string]any{}
		if k.Shape == Items {
			cur[name] = []any{next}
			path += "[0]"
		} else {
			cur[name] = next
		}
		if k.Name == "<env>" {
			// A rollout is only read with targets to roll out over.
			next["targets"] = []any{map[string]any{"host": "probe-host"}}
		}
		cur = next
	}
	cur[probeKey] = 1
	data, err := yaml.Marshal(doc)
	if err != nil {
		return nil, path, err
	}
	_, problems := Load(data)
	for _, p := range problems {
		if p.Path != join(path, probeKey) {
			continue
		}
		for _, re := range allowedLists {
			if m := re.FindStringSubmatch(p.Message); m != nil {
				return strings.Split(m[1], ", "), path, nil
			}
		}
		return nil, path, fmt.Errorf("the unknown key's problem lists no keys: %s", p.Message)
	}
	return nil, path, fmt.Errorf("Load did not report the unknown key %s; problems: %v\n%s", probeKey, problems, data)
}
