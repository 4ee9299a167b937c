package cluster

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/ripcord/ripcord/records"
)

// DefaultSpoolMax bounds the spool: 20,000 facts is five and a half hours of
// an outage at one fact per second (the requirement is one hour), about
// 80 MB on disk at one 4 KiB block per fact.
const DefaultSpoolMax = 20000

// Spool is the agent's on-disk queue of facts not yet delivered, one file
// per fact named by a sequence number, so the order survives a restart and
// an append or an acknowledgement is one atomic rename or remove.
//
// Past Max the oldest facts are dropped (and counted): the stream is
// level-triggered, so the next resync re-sends the current state of every
// tracked workload and the server still ends up knowing where each one is;
// what an overflow loses is the intermediate phases of the outage, and the
// server's stall alert covers a release that got no fact in the meantime.
type Spool struct {
	dir string
	max int

	mu   sync.Mutex
	seqs []uint64 // on disk, ascending
	next uint64
}

// SpoolEntry is one spooled fact and its place in the queue.
type SpoolEntry struct {
	Seq  uint64
	Fact records.Fact
}

const spoolSuffix = ".json"

// OpenSpool opens (or creates) the spool in dir, keeping what an earlier
// run left there; max <= 0 means DefaultSpoolMax.
func OpenSpool(dir string, max int) (*Spool, error) {
	if max <= 0 {
		max = DefaultSpoolMax
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("spool: create %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("spool: read %s: %w", dir, err)
	}
	s := &Spool{dir: dir, max: max, next: 1}
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".tmp-") {
			// An append that died before its rename never happened.
			_ = os.Remove(filepath.Join(dir, name))
			continue
		}
		seq, err := strconv.ParseUint(strings.TrimSuffix(name, spoolSuffix), 10, 64)
		if err != nil || !strings.HasSuffix(name, spoolSuffix) {
			continue
		}
		s.seqs = append(s.seqs, seq)
		s.next = max64(s.next, seq+1)
	}
	slices.Sort(s.seqs)
	return s, nil
}

func max64(a, b uint64) uint64 {
	if a > b {
		return a
	}
	return b
}

func (s *Spool) path(seq uint64) string {
	return filepath.Join(s.dir, fmt.Sprintf("%020d%s", seq, spoolSuffix))
}

// Append writes a fact durably at the end of the queue. It returns how many
// of the oldest facts it dropped to stay within the bound.
func (s *Spool) Append(f records.Fact) (dropped int, err error) {
	body, err := json.Marshal(f)
	if err != nil {
		return 0, fmt.Errorf("spool: encode fact %s: %w", f.FactID, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seq := s.next
	if err := writeFileAtomic(s.dir, filepath.Base(s.path(seq)), body); err != nil {
		return 0, fmt.Errorf("spool: %w", err)
	}
	s.next++
	s.seqs = append(s.seqs, seq)
	for len(s.seqs) > s.max {
		if err := os.Remove(s.path(s.seqs[0])); err != nil && !os.IsNotExist(err) {
			return dropped, fmt.Errorf("spool: drop the oldest fact: %w", err)
		}
		s.seqs = s.seqs[1:]
		dropped++
	}
	return dropped, nil
}

// writeFileAtomic writes name in dir through a synced temporary file and a
// rename, so a crash leaves either nothing or the whole file; the directory
// is synced after the rename, so the file is there after a power loss too
// (a rename is durable only once its directory is).
func writeFileAtomic(dir, name string, body []byte) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("create %s: %w", name, err)
	}
	_, werr := tmp.Write(body)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if werr != nil || serr != nil || cerr != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %v", name, firstErr(werr, serr, cerr))
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("rename %s: %w", name, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	serr = d.Sync()
	if cerr := d.Close(); serr == nil {
		serr = cerr
	}
	if serr != nil {
		return fmt.Errorf("sync %s after writing %s: %w", dir, name, serr)
	}
	return nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// Peek returns up to n of the oldest facts, oldest first. A file that can no
// longer be read as a fact is removed and counted in bad, so one corrupt
// file cannot block the queue.
func (s *Spool) Peek(n int) (out []SpoolEntry, bad int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var corrupt []uint64
	for i := 0; i < len(s.seqs) && len(out) < n; i++ {
		seq := s.seqs[i]
		body, err := os.ReadFile(s.path(seq))
		var f records.Fact
		if err == nil {
			err = json.Unmarshal(body, &f)
		}
		if err != nil {
			_ = os.Remove(s.path(seq))
			corrupt = append(corrupt, seq)
			continue
		}
		out = append(out, SpoolEntry{Seq: seq, Fact: f})
	}
	s.forget(corrupt)
	return out, len(corrupt)
}

// forget drops seqs from the index.
func (s *Spool) forget(seqs []uint64) {
	if len(seqs) == 0 {
		return
	}
	gone := make(map[uint64]bool, len(seqs))
	for _, q := range seqs {
		gone[q] = true
	}
	s.seqs = slices.DeleteFunc(s.seqs, func(q uint64) bool { return gone[q] })
}

// Remove acknowledges delivered (or rejected) facts.
func (s *Spool) Remove(seqs ...uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, seq := range seqs {
		if err := os.Remove(s.path(seq)); err != nil && !os.IsNotExist(err) {
			s.forget(seqs[:i])
			return fmt.Errorf("spool: remove fact %d: %w", seq, err)
		}
	}
	s.forget(seqs)
	return nil
}

// Newest is the sequence number of the last fact appended, 0 when none
// ever was.
func (s *Spool) Newest() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next - 1
}

// Holds reports whether a fact appended at or before seq still waits.
func (s *Spool) Holds(seq uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seqs) > 0 && s.seqs[0] <= seq
}

// Len is the number of facts waiting.
func (s *Spool) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seqs)
}
