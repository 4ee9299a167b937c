package main

import (
	"encoding/json"
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
