package cluster

import (
	"strings"
	"testing"
)

func TestAppContainer(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		deployment, named string
		containers        []string
		want              int
		wantErr           string
	}{
		"named like the Deployment among sidecars": {deployment: "checkout", containers: []string{"istio-proxy", "checkout", "log"}, want: 1},
		"the only container, whatever its name":    {deployment: "checkout", containers: []string{"app"}, want: 0},
		"named by the action":                      {deployment: "checkout", named: "app", containers: []string{"proxy", "app"}, want: 1},
		"named by the action beats the Deployment's name": {deployment: "checkout", named: "app",
			containers: []string{"checkout", "app"}, want: 1},
		"two containers, none named like the Deployment, is never guessed": {deployment: "checkout",
			containers: []string{"proxy", "app"}, wantErr: "none is named like it"},
		"named container missing fails and lists what is there": {deployment: "checkout", named: "api",
			containers: []string{"proxy", "app"}, wantErr: `no container "api" (it has proxy, app)`},
		"no containers at all": {deployment: "checkout", containers: nil, wantErr: "has 0 containers (none)"},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := AppContainer(tc.deployment, tc.named, tc.containers)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("AppContainer = %d, %v; want an error with %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("AppContainer = %d, %v; want %d", got, err, tc.want)
			}
		})
	}
}
