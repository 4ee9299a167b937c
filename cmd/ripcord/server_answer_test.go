package main

import (
	"context"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/ripcord/ripcord/internal/testnet"
)

// flagClient is the client a command builds from --server URL and a token,
// with no retries.
func flagClient(t *testing.T, server string) *apiClient {
	t.Helper()
	t.Setenv("RIPCORD_SERVER", "")
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	client := clientFlags(fs, "RIPCORD_API_TOKEN", "the server's api_token")
	if err := fs.Parse([]string{"--server", server, "--token", "t"}); err != nil {
		t.Fatal(err)
	}
	cl, err := client()
	if err != nil {
		t.Fatal(err)
	}
	cl.retries = 0
	return cl
}

// A --server that names another server (a typo'd port, a path too many, a
// proxy's error page) answered "server answered 404: 404 page not found",
// or a whole HTML page, and nothing said that the URL was what to check.
func TestAPIClientSaysAnAnswerIsNotRipcords(t *testing.T) {
	page := "<!DOCTYPE html>\n<html>\n<head><title>Not Found</title></head>\n<body>\n" +
		strings.Repeat("<p>This page is not here, nor anywhere else on this server.</p>\n", 10) + "</body></html>\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v1/releases":
			w.Header().Set("Content-Type", "text/html")
			w.Write([]byte(page))
		default:
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(page))
		}
	}))
	defer srv.Close()
	cases := []struct{ name, server, want string }{
		{"an error page", srv.URL + "/prefix", "server answered 404: <!DOCTYPE html> <html> <head><title>Not Found</title>"},
		{"a page that is not JSON", srv.URL, "the answer (200, <!DOCTYPE html>"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cl := flagClient(t, c.server)
			hint := "that is not ripcord's answer (ripcord answers JSON): check that " + c.server +
				", whose URL was given by flag --server, is a ripcord server's address"
			var out struct{}
			err := cl.do(context.Background(), "GET", "/api/v1/releases", nil, &out)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.Contains(msg, c.want) || !strings.HasSuffix(msg, hint) {
				t.Errorf("error %q;\nwant it to hold %q and end %q", msg, c.want, hint)
			}
			if strings.Contains(msg, "\n") || strings.Contains(msg, "</html>") {
				t.Errorf("error %q holds the whole page; want one line, cut", msg)
			}
		})
	}
}

// No server listening printed Go's error chain, `Get "http://…/api/v1/
// releases?limit=50": dial tcp 127.0.0.1:1: connect: connection refused`,
// on every retry and at the end: the reason, in words, is enough.
func TestAPIClientSaysWhyNoServerAnswered(t *testing.T) {
	closed := "http://" + testnet.RefusedAddr(t) // nothing listens there
	err := flagClient(t, closed).do(context.Background(), "GET", "/api/v1/releases?limit=50", nil, nil)
	want := "no server answered at " + closed + " (connection refused: nothing listens there), whose URL was given by flag --server"
	if err == nil || err.Error() != want {
		t.Errorf("error %v;\nwant %q", err, want)
	}
}
