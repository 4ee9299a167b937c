package app

import (
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/testdb"
)

// A payload nested deeper than any JSON decoder should follow (a million
// arrays, 2 MB, under GitHub's cap) is refused as not JSON, even when it
// is signed, and the server goes on answering: a parser that recursed
// once per level would exhaust its goroutine's stack and take the whole
// process down with it.
func TestIntakeRefusesADeeplyNestedPayload(t *testing.T) {
	t.Parallel()
	const depth = 1 << 20
	body := []byte(`{"action":"created","x":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)
	ts := startServer(t, testdb.MigratedURL(t, "sqlite"), Options{})
	for _, event := range []string{"issue_comment", "an_event_ripcord_does_not_list"} {
		if code, resp := ts.deliver(t, event, "nested-"+event, body, githubtest.Sign(testSecret, body)); code != 400 {
			t.Errorf("%s: a payload nested %d deep: status %d (%s), want 400", event, depth, code, resp)
		}
	}
	if n := ts.countDeliveries(t); n != 0 {
		t.Errorf("%d deliveries stored, want 0", n)
	}
	ok := []byte(`{"zen":"Keep it logically awesome.","hook_id":1}`)
	if code, resp := ts.deliver(t, "ping", "after-nested", ok, githubtest.Sign(testSecret, ok)); code != 202 {
		t.Errorf("a delivery after the nested one: status %d (%s), want 202", code, resp)
	}
}
