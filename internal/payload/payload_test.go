package payload

import (
	"bytes"
	"crypto/rand"
	"testing"

	"github.com/ripcord/ripcord/internal/githubtest"
)

// Every example payload of GitHub's comes back byte for byte, and the big
// ones are stored packed, in less than half their size together.
func TestGitHubPayloadsComeBackAsTheyCame(t *testing.T) {
	var raw, stored int
	for _, p := range githubtest.Payloads(t) {
		s := Pack(p.Body)
		if len(p.Body) >= 4096 && !Packed(s) {
			t.Errorf("%s/%s (%d bytes) was not packed", p.Event, p.Name, len(p.Body))
		}
		got, err := Unpack(s)
		if err != nil {
			t.Fatalf("%s/%s: %v", p.Event, p.Name, err)
		}
		if !bytes.Equal(got, p.Body) {
			t.Fatalf("%s/%s: unpacked payload differs from the one packed", p.Event, p.Name)
		}
		raw, stored = raw+len(p.Body), stored+len(s)
	}
	if stored*2 > raw {
		t.Errorf("GitHub's payloads stored in %d of %d bytes, want less than half", stored, raw)
	}
	t.Logf("GitHub's payloads: %d bytes stored as %d (%.1f×)", raw, stored, float64(raw)/float64(stored))
}

// A payload that compression would not shrink by an eighth, or a small one,
// is stored as it came, and reads back as itself: so do the payloads older
// versions stored.
func TestPayloadsNotWorthPackingAreStoredAsTheyCame(t *testing.T) {
	noise := make([]byte, 8192)
	_, _ = rand.Read(noise)
	noise[0] = '"' // any first byte but the mark's
	small := []byte(`{"zen":"Design for failure."}`)
	for name, body := range map[string][]byte{"random bytes": noise, "a small payload": small} {
		s := Pack(body)
		if Packed(s) || !bytes.Equal(s, body) {
			t.Errorf("%s: stored packed (%d bytes), want as it came", name, len(s))
		}
		if got, err := Unpack(s); err != nil || !bytes.Equal(got, body) {
			t.Errorf("%s: Unpack = %d bytes, %v; want the payload", name, len(got), err)
		}
	}
}

// A packed payload that was cut or damaged is an error, never a wrong
// payload handed on.
func TestDamagedPackedPayloadIsAnError(t *testing.T) {
	body := bytes.Repeat([]byte(`{"repository":{"full_name":"acme/checkout"}},`), 200)
	s := Pack(body)
	if !Packed(s) {
		t.Fatal("a repetitive payload was not packed")
	}
	for name, bad := range map[string][]byte{
		"cut in half":    s[:len(s)/2],
		"only the mark":  s[:len(mark)],
		"length garbled": append(append([]byte{}, mark...), 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f),
	} {
		if got, err := Unpack(bad); err == nil {
			t.Errorf("%s: Unpack returned %d bytes and no error", name, len(got))
		}
	}
}

func FuzzPackUnpack(f *testing.F) {
	f.Add([]byte(`{"action":"completed"}`))
	f.Add(bytes.Repeat([]byte("abc"), 400))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 0 && body[0] == 0 {
			return // not JSON, and not a payload GitHub sends
		}
		got, err := Unpack(Pack(body))
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("round trip of %d bytes: %d bytes, %v", len(body), len(got), err)
		}
	})
}

func BenchmarkPack(b *testing.B) {
	p := benchPayload(b)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		Pack(p)
	}
}

func BenchmarkUnpack(b *testing.B) {
	p := benchPayload(b)
	s := Pack(p)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		if _, err := Unpack(s); err != nil {
			b.Fatal(err)
		}
	}
}

// benchPayload is the largest of GitHub's example payloads.
func benchPayload(b *testing.B) []byte {
	var p []byte
	for _, e := range githubtest.Payloads(b) {
		if len(e.Body) > len(p) {
			p = e.Body
		}
	}
	return p
}
