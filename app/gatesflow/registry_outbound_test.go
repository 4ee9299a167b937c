package gatesflow

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ripcord/ripcord/app/config"
	"github.com/ripcord/ripcord/gates/attest"
)

// An image names its registry, and a release file or a release's body
// chooses the image, so the registry gates must not reach addresses the
// outbound rules refuse. 0.0.0.0 stands for them here: the rules refuse it
// as unspecified, and Linux would connect it to this machine, where a
// registry listens, so the test sends nothing off loopback either way and
// fails if the request is made.
func TestRegistriesAreReachedUnderTheOutboundRules(t *testing.T) {
	t.Parallel()
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		http.NotFound(w, r)
	}))
	defer srv.Close()
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	digest := "@sha256:" + strings.Repeat("a", 64)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	policy := attest.Policy{Keys: []attest.Key{{Source: "test", PEM: pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})}}}
	for _, host := range []string{"0.0.0.0:" + port, "127.0.0.1:" + port} {
		v := newRegistry(&config.Config{Registries: config.Registries{Insecure: []string{host}}})
		_, err := v.Verify(context.Background(), host+"/shop/checkout"+digest, policy)
		refused := err != nil && strings.Contains(err.Error(), "the address 0.0.0.0") &&
			strings.Contains(err.Error(), "is unspecified: ripcord does not call it")
		if want := strings.HasPrefix(host, "0.0.0.0"); refused != want {
			t.Errorf("%s: err %v; want refused by the outbound rules: %v", host, err, want)
		}
	}
	if n := asked.Load(); n == 0 {
		t.Error("the loopback registry was never asked: the test proves nothing about 0.0.0.0")
	}
	before := asked.Load()
	v := newRegistry(&config.Config{Registries: config.Registries{Insecure: []string{"0.0.0.0:" + port}}})
	_, _ = v.Verify(context.Background(), "0.0.0.0:"+port+"/shop/other"+digest, policy)
	if n := asked.Load() - before; n != 0 {
		t.Errorf("the registry at 0.0.0.0 was asked %d times, want none", n)
	}
}
