package main

import (
	"encoding/json"
	"regexp"
	"sync"
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

// The loader's delivery ids look like GitHub's version-1 GUIDs and do not
// repeat, even when made at once by many goroutines.
func TestDeliveryIDsAreGUIDs(t *testing.T) {
	guid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-1[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	if !guid.MatchString("0b989ba4-242f-11e5-81e1-c7b6966d2516") {
		t.Fatal("the pattern does not match the delivery id in GitHub's description")
	}
	var mu sync.Mutex
	all := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ids := make([]string, 5000)
			for i := range ids {
				ids[i] = deliveryID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range ids {
				if all[id] {
					t.Errorf("delivery id %q repeated", id)
				}
				all[id] = true
			}
		})
	}
	wg.Wait()
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
