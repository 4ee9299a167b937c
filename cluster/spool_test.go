package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ripcord/ripcord/records"
)

func fact(n int) records.Fact {
	f := records.Fact{Source: records.SourceDeployment, Cluster: "prod-eu", Namespace: "shop", Name: "checkout",
		UID: "uid-1", Generation: int64(n), ObservedGeneration: int64(n), Phase: records.PhaseProgressing,
		ReleaseID: fmt.Sprintf("r%d", n), ObservedAt: t0}
	f.FactID = f.ID()
	return f
}

func generations(es []SpoolEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.Fact.Generation
	}
	return out
}

func TestSpoolKeepsOrderAcrossARestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, err := OpenSpool(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		if _, err := s.Append(fact(i)); err != nil {
			t.Fatal(err)
		}
	}
	first, _ := s.Peek(1)
	if err := s.Remove(first[0].Seq); err != nil {
		t.Fatal(err)
	}
	// A crash in the middle of an append leaves a temporary file behind.
	if err := os.WriteFile(filepath.Join(dir, ".tmp-123"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}

	again, err := OpenSpool(dir, 10)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := again.Append(fact(4)); err != nil {
		t.Fatal(err)
	}
	got, bad := again.Peek(10)
	if fmt.Sprint(generations(got)) != "[2 3 4]" || bad != 0 {
		t.Errorf("after a restart the spool holds generations %v (bad %d), want [2 3 4]: acknowledged facts gone, order kept, new ones last", generations(got), bad)
	}
	if _, err := os.Stat(filepath.Join(dir, ".tmp-123")); !os.IsNotExist(err) {
		t.Error("the half-written temporary file was not cleaned up")
	}
}

func TestSpoolPastItsBoundDropsTheOldest(t *testing.T) {
	t.Parallel()
	s, err := OpenSpool(t.TempDir(), 3)
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for i := 1; i <= 5; i++ {
		n, err := s.Append(fact(i))
		if err != nil {
			t.Fatal(err)
		}
		dropped += n
	}
	got, _ := s.Peek(10)
	if dropped != 2 || fmt.Sprint(generations(got)) != "[3 4 5]" || s.Len() != 3 {
		t.Errorf("dropped %d, kept %v (len %d); want 2 dropped and the newest [3 4 5] kept", dropped, generations(got), s.Len())
	}
}

func TestSpoolSkipsACorruptFileInsteadOfBlocking(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s, _ := OpenSpool(dir, 10)
	for i := 1; i <= 3; i++ {
		_, _ = s.Append(fact(i))
	}
	first, _ := s.Peek(1)
	if err := os.WriteFile(s.path(first[0].Seq), []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, bad := s.Peek(10)
	if bad != 1 || fmt.Sprint(generations(got)) != "[2 3]" || s.Len() != 2 {
		t.Errorf("peek = %v, bad %d, len %d; want the corrupt one dropped and [2 3]", generations(got), bad, s.Len())
	}
}

func TestDefaultSpoolHoldsAnHourOfFactsAtOnePerSecond(t *testing.T) {
	t.Parallel()
	if DefaultSpoolMax < 3600 {
		t.Errorf("DefaultSpoolMax %d holds less than an hour at one fact per second", DefaultSpoolMax)
	}
}

func BenchmarkSpoolAppendRemove(b *testing.B) {
	s, _ := OpenSpool(b.TempDir(), DefaultSpoolMax)
	f := fact(1)
	for b.Loop() {
		_, _ = s.Append(f)
		es, _ := s.Peek(1)
		_ = s.Remove(es[0].Seq)
	}
}
