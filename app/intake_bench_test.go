package app

import (
	"encoding/json"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/ripcord/ripcord/internal/githubtest"
	"github.com/ripcord/ripcord/internal/jsonvalid"
)

// BenchmarkPayloadValidation compares JSON validators on a real webhook
// payload from ../shared: the intake validates every delivery on the
// request path.
func BenchmarkPayloadValidation(b *testing.B) {
	payload := githubtest.LoadPayload(b, "workflow_run", "completed.payload.json")
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonvalid", jsonvalid.Valid}, {"gjson", gjson.ValidBytes}, {"encoding-json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(payload)))
			for b.Loop() {
				if !v.valid(payload) {
					b.Fatal("payload refused")
				}
			}
		})
	}
}

// BenchmarkParseMeta compares reading the intake's three columns in the
// validation's pass with validating and then searching the payload once
// per column, on a real payload.
func BenchmarkParseMeta(b *testing.B) {
	payload := githubtest.LoadPayload(b, "workflow_run", "completed.payload.json")
	b.Run("one-pass", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if _, err := parseMeta(payload); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("validate-then-search", func(b *testing.B) {
		b.SetBytes(int64(len(payload)))
		for b.Loop() {
			if !jsonvalid.Valid(payload) {
				b.Fatal("refused")
			}
			gjson.GetManyBytes(payload, "action", "installation.id", "repository.full_name")
		}
	})
}
