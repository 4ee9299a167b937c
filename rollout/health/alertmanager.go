package health

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/ripcord/ripcord/internal/outbound"
	"github.com/ripcord/ripcord/rollout"
)

// amAlert is the part of Alertmanager's v2 gettableAlert the gate reads.
type amAlert struct {
	Labels   map[string]string `json:"labels"`
	StartsAt time.Time         `json:"startsAt"`
	Status   struct {
		State string `json:"state"` // active | suppressed | unprocessed
	} `json:"status"`
}

// alertsPath and alertsQuery ask Alertmanager for the alerts that page
// someone: active, neither silenced nor inhibited.
const alertsPath = "/api/v2/alerts"

var alertsQuery = url.Values{"active": {"true"}, "silenced": {"false"}, "inhibited": {"false"}}

func (r Reader) alerts(ctx context.Context, s Scope) []AlertResult {
	if r.Health.Alerts == nil || len(r.Health.Alerts.BlockOn) == 0 {
		return nil
	}
	type blocker struct {
		text string
		sel  rollout.Selector
	}
	var blockers []blocker
	for _, b := range r.Health.Alerts.BlockOn {
		sel, err := rollout.ParseSelector(b)
		if err != nil {
			return []AlertResult{failed(fmt.Errorf("block_on %q: %w", b, err))}
		}
		blockers = append(blockers, blocker{b, sel})
	}
	active, err := r.activeAlerts(ctx)
	if err != nil {
		return []AlertResult{failed(err)}
	}
	var out []AlertResult
	for _, a := range active {
		if a.Status.State != "" && a.Status.State != "active" {
			continue
		}
		if !Concerns(a.Labels, s) {
			continue
		}
		for _, b := range blockers {
			if b.sel.Matches(a.Labels) {
				name := a.Labels["alertname"]
				out = append(out, AlertResult{
					Name: name, Labels: a.Labels, BlockOn: b.text, StartsAt: a.StartsAt,
					Reason: fmt.Sprintf("alert %s%s firing: matches block_on %q", name, s.where(), b.text),
				})
				break
			}
		}
	}
	return out
}

// Concerns reports whether an alert is about the scope: its application
// (label application, else app), region and az labels equal the scope's.
// A label the alert does not carry concerns every scope, as the seed says,
// and so does a scope that does not name a value.
func Concerns(labels map[string]string, s Scope) bool {
	app, ok := labels["application"]
	if !ok {
		app, ok = labels["app"]
	}
	if ok && s.Application != "" && app != s.Application {
		return false
	}
	for key, want := range map[string]string{rollout.LabelRegion: s.Region, rollout.LabelAZ: s.AZ} {
		if got, ok := labels[key]; ok && want != "" && got != want {
			return false
		}
	}
	return true
}

func failed(err error) AlertResult {
	return AlertResult{Error: err.Error(), Reason: "alerts: " + err.Error()}
}

func (r Reader) activeAlerts(ctx context.Context) ([]amAlert, error) {
	if r.AlertmanagerURL == "" {
		return nil, fmt.Errorf("no alertmanager_url is set, so block_on cannot be checked")
	}
	endpoint, err := apiURL(r.AlertmanagerURL, alertsPath, alertsQuery)
	if err != nil {
		return nil, fmt.Errorf("alertmanager_url: %w", err)
	}
	resp, cancel, err := r.get(ctx, r.client(), endpoint)
	if err != nil {
		return nil, fmt.Errorf("list Alertmanager alerts: %w", requestError(err, "alertmanager_url"))
	}
	defer cancel()
	defer resp.Body.Close()
	if why := outbound.Redirect(resp); why != "" {
		return nil, fmt.Errorf("the Alertmanager API answered %s, %s", resp.Status, why)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAPIBody+1))
	if err != nil {
		return nil, fmt.Errorf("read Alertmanager's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || len(body) > maxAPIBody {
		return nil, fmt.Errorf("the Alertmanager API answered %s", r.unexpected("Alertmanager", resp, body, maxAPIBody+1))
	}
	var alerts []amAlert
	if err := json.Unmarshal(body, &alerts); err != nil {
		return nil, fmt.Errorf("read Alertmanager alerts: %w", err)
	}
	return alerts, nil
}
