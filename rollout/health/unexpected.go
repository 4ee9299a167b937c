package health

import (
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"strings"
	"unicode/utf8"
)

// excerptLen is how much of an unexpected answer the server's log keeps.
const excerptLen = 200

// unexpected describes an answer of Prometheus or Alertmanager that is not
// the API's, for the gate's reason. The reason is shown in check runs that
// whoever reads the repository sees, and the body of such an answer can be
// anything the upstream (or whatever stands at its URL) returns: a login
// page, an error with internal host names, text that mentions people. So
// the reason says only what ripcord can vouch for, the status code, the
// media type and the size, and the excerpt goes to the server's log, where
// operators look.
func (r Reader) unexpected(what string, resp *http.Response, body []byte, limit int) string {
	mt := mediaType(resp.Header.Get("Content-Type"))
	size := fmt.Sprintf("%d bytes", len(body))
	if len(body) >= limit {
		size = fmt.Sprintf("more than %d bytes", limit-1)
	}
	r.log().Warn(what+" answered something that is not its API's answer; the gate shows no part of it",
		"status", resp.Status, "content_type", resp.Header.Get("Content-Type"), "bytes", len(body),
		"excerpt", excerpt(body, excerptLen))
	return fmt.Sprintf("%d %s, %s, %s; ripcord's log has an excerpt", resp.StatusCode, http.StatusText(resp.StatusCode), mt, size)
}

func (r Reader) log() *slog.Logger {
	if r.Log == nil {
		return slog.Default()
	}
	return r.Log
}

// mediaType is the media type of a Content-Type header, without its
// parameters, when it is made of the characters media types are made of:
// anything else is the upstream's text and is not repeated.
func mediaType(ct string) string {
	if ct == "" {
		return "no content type"
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil || strings.IndexFunc(mt, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || strings.ContainsRune("/.+-_", c))
	}) >= 0 {
		return "an unreadable content type"
	}
	return mt
}

// excerpt is the first n bytes of body, cut at a character boundary.
func excerpt(body []byte, n int) string {
	if len(body) <= n {
		return string(body)
	}
	for n > 0 && !utf8.RuneStart(body[n]) {
		n--
	}
	return string(body[:n]) + "…"
}
