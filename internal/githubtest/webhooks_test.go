package githubtest

import (
	"encoding/json"
	"io"
	"regexp"
	"testing"

	"github.com/google/go-github/v66/github"
)

func TestSignMatchesGitHubsVector(t *testing.T) {
	cases := []struct {
		name, secret, body, want string
	}{
		{"GitHub's documented example", "It's a Secret to Everybody", "Hello, World!",
			"sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
		{"another secret gives another signature", "It's a secret to nobody", "Hello, World!",
			"!sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Sign(c.secret, []byte(c.body))
			if want, negate := c.want, c.want[0] == '!'; negate {
				if got == want[1:] {
					t.Errorf("Sign(%q) = %s for a different secret", c.secret, got)
				}
			} else if got != want {
				t.Errorf("Sign(%q, %q) = %s, want %s", c.secret, c.body, got, want)
			}
		})
	}
}

func TestPayloadsListsEveryExample(t *testing.T) {
	payloads := Payloads(t)
	if len(payloads) != 89 {
		t.Errorf("Payloads() has %d files, want the 89 Octokit examples", len(payloads))
	}
	events := map[string]int{}
	for _, p := range payloads {
		events[p.Event]++
		if !json.Valid(p.Body) {
			t.Errorf("%s is not JSON", p)
		}
		// The event must be GitHub's event name, which go-github knows the payload type of.
		// (Parsing is not asserted: two check_run examples carry "2018-04-25 20:42:10",
		// which is not RFC 3339 and which go-github refuses.)
		if github.EventForType(p.Event) == nil {
			t.Errorf("%s: %q is not an event name go-github knows", p, p.Event)
		}
	}
	for _, event := range []string{"workflow_run", "check_run", "issue_comment", "pull_request", "deployment_status", "installation"} {
		if events[event] == 0 {
			t.Errorf("no %s payloads", event)
		}
	}
	if events["payload-schemas"] != 0 {
		t.Errorf("schema files were listed as payloads")
	}
}

var guid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestNewDeliveryIsSignedAsGitHubSigns(t *testing.T) {
	body := LoadPayload(t, "workflow_run", "completed.payload.json")
	req := NewDelivery(t, "http://127.0.0.1:1/api/github/hook", "s3cret", "workflow_run", body)

	got, err := github.ValidatePayload(req, []byte("s3cret"))
	if err != nil {
		t.Fatalf("go-github rejects the delivery's signature: %v", err)
	}
	if string(got) != string(body) {
		t.Errorf("the delivery's body differs from the payload")
	}
	if github.WebHookType(req) != "workflow_run" {
		t.Errorf("X-GitHub-Event = %q", github.WebHookType(req))
	}
	if !guid.MatchString(github.DeliveryID(req)) {
		t.Errorf("X-GitHub-Delivery = %q, not a GUID", github.DeliveryID(req))
	}
	for header, want := range map[string]string{
		"X-GitHub-Hook-Installation-Target-Type": "integration",
		"X-GitHub-Hook-Installation-Target-ID":   "424242",
		"Content-Type":                           "application/json",
		"X-Hub-Signature-256":                    Sign("s3cret", body),
	} {
		if v := req.Header.Get(header); v != want {
			t.Errorf("%s = %q, want %q", header, v, want)
		}
	}
}

func TestDeliveryWithAnotherSecretIsRejected(t *testing.T) {
	body := LoadPayload(t, "ping", "payload.json")
	req := NewDelivery(t, "http://127.0.0.1:1/hook", "the sender's secret", "ping", body)
	if _, err := github.ValidatePayload(req, []byte("the receiver's secret")); err == nil {
		t.Errorf("a delivery signed with another secret validated")
	}
}

func TestEachDeliveryHasItsOwnID(t *testing.T) {
	body := []byte(`{}`)
	a := NewDelivery(t, "http://127.0.0.1:1/hook", "s", "ping", body)
	b := NewDelivery(t, "http://127.0.0.1:1/hook", "s", "ping", body)
	if a.Header.Get("X-GitHub-Delivery") == b.Header.Get("X-GitHub-Delivery") {
		t.Errorf("two deliveries share X-GitHub-Delivery %s", a.Header.Get("X-GitHub-Delivery"))
	}
	if got, _ := io.ReadAll(a.Body); string(got) != "{}" {
		t.Errorf("body = %q", got)
	}
}
