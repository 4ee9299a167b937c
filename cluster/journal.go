package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/ripcord/ripcord/cluster/actionapi"
)

// journal is the agent's local record of the actions it started, one file
// per action, written (and synced) before the agent touches the cluster and
// again with the result before it reports. After a restart an action found
// here is never started afresh: a finished one has its result reported
// again, a started one is resumed (Rollbacker.Rollback reads
// ActionAnnotation to tell whether its patch landed).
type journal struct{ dir string }

// journalEntry is one action as the journal keeps it.
type journalEntry struct {
	Action    actionapi.Action  `json:"action"`
	StartedAt time.Time         `json:"started_at"`
	Result    *actionapi.Result `json:"result,omitempty"`
}

// journalKeep is how long a reported action's file is kept.
const journalKeep = 7 * 24 * time.Hour

var actionIDPattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,100}$`)

func openJournal(dir string) (*journal, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: create %s: %w", dir, err)
	}
	return &journal{dir: dir}, nil
}

func (j *journal) path(id string) (string, error) {
	if !actionIDPattern.MatchString(id) {
		return "", fmt.Errorf("journal: action id %q is not [A-Za-z0-9_-]", id)
	}
	return filepath.Join(j.dir, id+".json"), nil
}

// get returns the entry of an action, if the agent ever started it.
func (j *journal) get(id string) (journalEntry, bool, error) {
	p, err := j.path(id)
	if err != nil {
		return journalEntry{}, false, err
	}
	body, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return journalEntry{}, false, nil
	}
	if err != nil {
		return journalEntry{}, false, fmt.Errorf("journal: read %s: %w", p, err)
	}
	var e journalEntry
	if err := json.Unmarshal(body, &e); err != nil {
		return journalEntry{}, false, fmt.Errorf("journal: %s: %w", p, err)
	}
	return e, true, nil
}

// put writes an entry durably.
func (j *journal) put(e journalEntry) error {
	p, err := j.path(e.Action.ID)
	if err != nil {
		return err
	}
	body, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("journal: encode action %s: %w", e.Action.ID, err)
	}
	if err := writeFileAtomic(j.dir, filepath.Base(p), body); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return nil
}

// prune removes the files of actions started more than journalKeep ago:
// the server hands out an action for at most its claim timeout, so a file
// that old can no longer matter.
func (j *journal) prune(now time.Time) {
	entries, err := os.ReadDir(j.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		info, err := e.Info()
		if err == nil && strings.HasSuffix(e.Name(), ".json") && now.Sub(info.ModTime()) > journalKeep {
			_ = os.Remove(filepath.Join(j.dir, e.Name()))
		}
	}
}

// agentID is this agent's stable identity, kept in the state folder: the
// server hands an action it claimed for an agent to that agent only.
func agentID(stateDir string) (string, error) {
	p := filepath.Join(stateDir, "agent-id")
	if b, err := os.ReadFile(p); err == nil && actionIDPattern.MatchString(strings.TrimSpace(string(b))) {
		return strings.TrimSpace(string(b)), nil
	}
	var raw [12]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("agent id: %w", err)
	}
	host, _ := os.Hostname()
	id := sanitizeID(host) + "-" + hex.EncodeToString(raw[:])
	if err := os.MkdirAll(stateDir, 0o700); err != nil {
		return "", fmt.Errorf("agent id: create %s: %w", stateDir, err)
	}
	if err := writeFileAtomic(stateDir, "agent-id", []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("agent id: %w", err)
	}
	return id, nil
}

func sanitizeID(s string) string { return sanitizeIDTo(s, 40) }

// sanitizeIDTo is s with what an id may not hold replaced by '-', cut to
// n bytes.
func sanitizeIDTo(s string, n int) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			b[i] = '-'
		}
	}
	if len(b) > n {
		b = b[:n]
	}
	if len(b) == 0 {
		return "agent"
	}
	return string(b)
}
