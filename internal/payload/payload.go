// Package payload is how webhook payloads are stored: compressed with S2
// (Snappy's faster successor) behind a four-byte mark, or as they came
// when compression would not save an eighth.
//
// GitHub's payloads are JSON full of repeated URLs and names: the examples
// in ../shared shrink about five times, at some 10 µs per 12 kB. On SQLite
// every stored byte is written twice (the WAL, then the database) and a
// 12 kB payload takes four pages, so packing it is cheaper than storing it.
//
// The mark starts with a zero byte, which no JSON text starts with: a
// payload stored as it came (by an older version, or because it did not
// compress) is told apart by its first byte, without a column for it.
package payload

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/klauspost/compress/s2"
)

// mark starts a packed payload; the S2 block follows.
var mark = []byte{0, 'S', '2', 1}

// minSize is the smallest payload worth packing: below it the mark and the
// block's header eat what compression saves.
const minSize = 512

// Pack returns body as it is to be stored: packed when that saves at least
// an eighth, else body itself.
func Pack(body []byte) []byte { return PackInto(nil, body) }

// PackInto is Pack writing the packed payload into buf when it is large
// enough (the result then shares buf's memory), so that a caller can reuse
// one buffer for many payloads.
func PackInto(buf, body []byte) []byte {
	if len(body) < minSize {
		return body
	}
	if n := len(mark) + s2.MaxEncodedLen(len(body)); cap(buf) < n {
		buf = make([]byte, n)
	} else {
		buf = buf[:n]
	}
	copy(buf, mark)
	// Encode writes into buf after the mark, as it is large enough.
	out := append(buf[:len(mark)], s2.Encode(buf[len(mark):], body)...)
	if len(out) > len(body)-len(body)/8 {
		return body
	}
	return out
}

// Packed reports whether stored is a packed payload.
func Packed(stored []byte) bool { return bytes.HasPrefix(stored, mark) }

// Unpack returns the payload stored: unpacked, or stored itself when it was
// stored as it came.
func Unpack(stored []byte) ([]byte, error) {
	if !Packed(stored) {
		return stored, nil
	}
	block := stored[len(mark):]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("stored payload: %w", err)
	}
	if n > maxPayload {
		return nil, errTooLarge
	}
	out, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("stored payload: %w", err)
	}
	return out, nil
}

// maxPayload bounds what Unpack allocates: GitHub caps a payload at 25 MiB.
const maxPayload = 25 << 20

var errTooLarge = errors.New("stored payload: unpacks to more than 25 MiB")
