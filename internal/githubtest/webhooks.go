package githubtest

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// AppID is the GitHub App id the fake server and the deliveries built here speak for.
const AppID int64 = 424242

// Sign returns the X-Hub-Signature-256 value GitHub sends for body under secret:
// "sha256=" and the hex HMAC-SHA256 of the raw body.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// signSHA1 is the legacy X-Hub-Signature GitHub still sends next to the SHA-256 one.
func signSHA1(secret string, body []byte) string {
	mac := hmac.New(sha1.New, []byte(secret))
	mac.Write(body)
	return "sha1=" + hex.EncodeToString(mac.Sum(nil))
}

// Payload is one example webhook payload published by Octokit.
type Payload struct {
	Event string // the X-GitHub-Event value, e.g. "workflow_run"
	Name  string // the file name, e.g. "completed.payload.json"
	Body  []byte
}

// Payloads lists every example payload under github/webhooks/<event>/, sorted by event
// and name.
func Payloads(t testing.TB) []Payload {
	t.Helper()
	root := filepath.Join(SharedDir(t), "github", "webhooks")
	files, err := filepath.Glob(filepath.Join(root, "*", "*.json"))
	if err != nil {
		t.Fatalf("githubtest: list webhook payloads: %v", err)
	}
	var payloads []Payload
	for _, file := range files {
		event := filepath.Base(filepath.Dir(file))
		if event == "payload-schemas" {
			continue
		}
		body, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("githubtest: read webhook payload: %v", err)
		}
		payloads = append(payloads, Payload{Event: event, Name: filepath.Base(file), Body: body})
	}
	sort.Slice(payloads, func(i, j int) bool {
		if payloads[i].Event != payloads[j].Event {
			return payloads[i].Event < payloads[j].Event
		}
		return payloads[i].Name < payloads[j].Name
	})
	return payloads
}

// LoadPayload returns one example payload, e.g. LoadPayload(t, "workflow_run",
// "completed.payload.json"); it fails the test when there is no such file.
func LoadPayload(t testing.TB, event, name string) []byte {
	t.Helper()
	file := filepath.Join(SharedDir(t), "github", "webhooks", event, name)
	body, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("githubtest: webhook payload %s/%s: %v", event, name, err)
	}
	return body
}

// NewDelivery builds the POST GitHub makes to a GitHub App's webhook URL: the body as
// given, signed with secret, with the headers GitHub sends (a fresh X-GitHub-Delivery
// GUID each time; set the header yourself to model a redelivery, which reuses it).
func NewDelivery(t testing.TB, url, secret, event string, body []byte) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatalf("githubtest: new delivery to %q: %v", url, err)
	}
	h := req.Header
	h.Set("Content-Type", "application/json")
	h.Set("User-Agent", "GitHub-Hookshot/githubtest")
	h.Set("X-GitHub-Event", event)
	h.Set("X-GitHub-Delivery", NewGUID(t))
	h.Set("X-GitHub-Hook-ID", "1")
	h.Set("X-GitHub-Hook-Installation-Target-Type", "integration")
	h.Set("X-GitHub-Hook-Installation-Target-ID", strconv.FormatInt(AppID, 10))
	h.Set("X-Hub-Signature-256", Sign(secret, body))
	h.Set("X-Hub-Signature", signSHA1(secret, body))
	return req
}

// NewGUID returns a random GUID in the form GitHub uses for X-GitHub-Delivery.
func NewGUID(t testing.TB) string {
	t.Helper()
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("githubtest: random delivery id: %v", err)
	}
	b[6] = b[6]&0x0f | 0x40 // version 4
	b[8] = b[8]&0x3f | 0x80 // RFC 4122 variant
	h := hex.EncodeToString(b[:])
	return strings.Join([]string{h[0:8], h[8:12], h[12:16], h[16:20], h[20:32]}, "-")
}

// String names the payload as "event/name", for test messages.
func (p Payload) String() string { return fmt.Sprintf("%s/%s", p.Event, p.Name) }
