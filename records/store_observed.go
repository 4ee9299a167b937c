package records

import (
	"context"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// Observed returns what the cluster sources report now on the workloads
// whose last fact named one of releaseIDs: one observation per workload. It
// answers "which of these releases runs?" as the cluster sees it. A
// workload the source reported deleted runs nothing: it is left out.
func (s *Store) Observed(ctx context.Context, releaseIDs []string) ([]Observation, error) {
	if len(releaseIDs) == 0 {
		return nil, nil
	}
	args := make([]any, len(releaseIDs))
	for i, id := range releaseIDs {
		args[i] = id
	}
	rows, err := s.db.Read.QueryContext(ctx, `SELECT body FROM observations WHERE release_id IN (`+placeholders(1, len(args))+`) ORDER BY key`, args...)
	if err != nil {
		return nil, fmt.Errorf("workloads running %d releases: %w", len(releaseIDs), err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("workloads running %d releases: %w", len(releaseIDs), err)
		}
		var o Observation
		if err := json.Unmarshal(body, &o); err != nil {
			return nil, fmt.Errorf("read observation: %w", err)
		}
		if o.Phase == PhaseDeleted {
			continue
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// Running returns the observations of cluster whose workload was not
// reported deleted: what the server believes runs there now, one per
// workload. The agent's inventory (app: POST /api/v1/facts/{cluster}/inventory)
// compares it with what the cluster holds.
func (s *Store) Running(ctx context.Context, cluster string) ([]Observation, error) {
	prefix := cluster + "/"
	// substr rather than a range or LIKE: no collation or wildcard in a
	// cluster's name can change what matches.
	rows, err := s.db.Read.QueryContext(ctx, `SELECT body FROM observations WHERE substr(key, 1, $1) = $2 ORDER BY key`,
		utf8.RuneCountInString(prefix), prefix)
	if err != nil {
		return nil, fmt.Errorf("workloads of cluster %s: %w", cluster, err)
	}
	defer rows.Close()
	var out []Observation
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			return nil, fmt.Errorf("workloads of cluster %s: %w", cluster, err)
		}
		var o Observation
		if err := json.Unmarshal(body, &o); err != nil {
			return nil, fmt.Errorf("read observation: %w", err)
		}
		if o.Phase == PhaseDeleted || o.Cluster != cluster {
			continue
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
