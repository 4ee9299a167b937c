package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"strings"
)

func readAll(r *http.Request) ([]byte, error) { return io.ReadAll(r.Body) }

func validHMAC(header string, body []byte) bool {
	got, err := hex.DecodeString(strings.TrimPrefix(header, "sha256="))
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(benchSecret))
	mac.Write(body)
	return hmac.Equal(got, mac.Sum(nil))
}
