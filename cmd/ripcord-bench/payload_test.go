package main

import (
	"encoding/json"
	"regexp"
	"testing"

	"github.com/tidwall/gjson"
)

func TestBodyIsAValidDeliveryOfTheAskedSize(t *testing.T) {
	for _, n := range []int{8192, 12288, 65536} {
		b := body(n)
		if len(b) != n {
			t.Errorf("body(%d) is %d bytes", n, len(b))
		}
		if !json.Valid(b) {
			t.Fatalf("body(%d) is not valid JSON", n)
		}
		r := gjson.GetManyBytes(b, "action", "installation.id", "repository.full_name")
		if r[0].String() != "requested" || r[1].Int() != 1 || r[2].String() != "acme/checkout" {
			t.Errorf("body(%d) has action %q, installation %d, repository %q", n, r[0], r[1].Int(), r[2])
		}
	}
}

// The loader's delivery ids look like GitHub's GUIDs and do not repeat.
func TestDeliveryIDsAreGUIDs(t *testing.T) {
	guid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 10000 {
		id := deliveryID()
		if !guid.MatchString(id) {
			t.Fatalf("delivery id %q is not a GUID", id)
		}
		if seen[id] {
			t.Fatalf("delivery id %q repeated", id)
		}
		seen[id] = true
	}
}
