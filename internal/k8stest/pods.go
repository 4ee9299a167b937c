package k8stest

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"
)

// podAddresses is how many of kwok's pod addresses ServePods listens on.
const podAddresses = 100

// ServePods serves handler on one port of 127.0.0.1 … 127.0.0.100, the
// addresses kwok gives pods, so a health check that calls
// http://<pod-ip>:<port>/… reaches the test. It returns the port.
func ServePods(t testing.TB, handler http.Handler) int {
	t.Helper()
	for attempt := 0; attempt < 20; attempt++ {
		lns, port, err := listenAll()
		if err != nil {
			continue
		}
		for _, ln := range lns {
			srv := &http.Server{Handler: handler, ReadHeaderTimeout: time.Second}
			go func() { _ = srv.Serve(ln) }()
			t.Cleanup(func() { _ = srv.Close() })
		}
		return port
	}
	t.Fatal("k8stest: no port is free on every pod address")
	return 0
}

func listenAll() ([]net.Listener, int, error) {
	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, 0, err
	}
	port := first.Addr().(*net.TCPAddr).Port
	lns := []net.Listener{first}
	for i := 2; i <= podAddresses; i++ {
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.%d:%d", i, port))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, 0, err
		}
		lns = append(lns, ln)
	}
	return lns, port, nil
}
