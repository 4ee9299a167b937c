package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// helmVersion is the helm scripts/helm.sh installs.
const helmVersion = "v3.22.0"

const (
	chartDir         = "helm/ripcord"
	releaseName      = "ripcord"
	releaseNamespace = "ripcord"
)

// helmBin returns the helm scripts/helm.sh installed; without it the test
// is skipped, or fails when CI=true so CI cannot pass without the chart tests.
func helmBin(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RIPCORD_HELM_BIN")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".cache", "ripcord", "helm-"+helmVersion)
	}
	bin := filepath.Join(dir, "helm")
	if st, err := os.Stat(bin); err == nil && st.Mode()&0o111 != 0 {
		return bin
	}
	msg := fmt.Sprintf("helm missing in %s: run scripts/helm.sh (builds helm %s from the Go module proxy once)", dir, helmVersion)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// helm runs helm with its caches in a temporary HOME so nothing outside the
// test is read or written.
func helm(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := exec.Command(helmBin(t), args...)
	home := t.TempDir()
	cmd.Env = append(os.Environ(), "HOME="+home, "HELM_CACHE_HOME="+home+"/cache",
		"HELM_CONFIG_HOME="+home+"/config", "HELM_DATA_HOME="+home+"/data")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}

// object is one rendered Kubernetes object.
type object = map[string]any

// render runs helm template with a values file from testdata ("" for the
// defaults) and decodes every document.
func render(t *testing.T, values string) ([]object, error) {
	t.Helper()
	args := []string{"template", releaseName, chartDir, "--namespace", releaseNamespace}
	if values != "" {
		args = append(args, "--values", filepath.Join("testdata", values))
	}
	out, stderr, err := helm(t, args...)
	if err != nil {
		return nil, fmt.Errorf("helm template %s: %w: %s", values, err, stderr)
	}
	var objs []object
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var o object
		if err := dec.Decode(&o); errors.Is(err, io.EOF) {
			return objs, nil
		} else if err != nil {
			t.Fatalf("helm template %s: rendered YAML does not parse: %v\n%s", values, err, out)
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
}

func mustRender(t *testing.T, values string) []object {
	t.Helper()
	objs, err := render(t, values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// get walks a path of map keys and list indexes.
func get(o any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := o.(map[string]any)
			if !ok {
				return nil
			}
			o = m[k]
		case int:
			l, ok := o.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			o = l[k]
		}
	}
	return o
}

// find returns the objects of a kind, by name.
func find(objs []object, kind string) map[string]object {
	found := map[string]object{}
	for _, o := range objs {
		if o["kind"] == kind {
			found[get(o, "metadata", "name").(string)] = o
		}
	}
	return found
}

func kinds(objs []object) []string {
	var ks []string
	for _, o := range objs {
		ks = append(ks, fmt.Sprintf("%s/%s", o["kind"], get(o, "metadata", "name")))
	}
	return ks
}

// fromYAML decodes a literal the way rendered objects are decoded, so the
// two compare with reflect.DeepEqual.
func fromYAML(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestHelmLint(t *testing.T) {
	t.Parallel()
	for _, values := range []string{"", "sqlite-default.yaml", "postgres-replicas-3.yaml", "agent-enabled.yaml", "agent-namespaced.yaml", "cluster-tokens-secret.yaml"} {
		args := []string{"lint", "--strict", chartDir}
		if values != "" {
			args = append(args, "--values", filepath.Join("testdata", values))
		}
		if out, stderr, err := helm(t, args...); err != nil {
			t.Errorf("helm lint %s: %v\n%s%s", values, err, out, stderr)
		}
	}
}

func TestChartRefusesValuesThatBreakTheRelease(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ values, want string }{
		{"sqlite-replicas-3.yaml", "replicaCount: 3 replicas cannot share one SQLite file"},
		{"postgres-without-url.yaml", "database.postgresURL: required"},
		{"agent-without-cluster.yaml", "agent.cluster: required"},
		{"cluster-tokens-secret-without-names.yaml", "secrets.clusterNames: required"},
	} {
		t.Run(tc.values, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err == nil {
				t.Fatalf("rendered %v; want an error with %q", kinds(objs), tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v; want it to contain %q", err, tc.want)
			}
		})
	}
}

// Every container of every Deployment runs non-root on a read-only root
// filesystem, with /tmp (and /data for the server) as volumes.
func TestEveryContainerIsLockedDown(t *testing.T) {
	t.Parallel()
	wantContainer := fromYAML(t, `
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
capabilities: {drop: [ALL]}
`)
	for _, values := range []string{"sqlite-default.yaml", "postgres-replicas-3.yaml", "agent-enabled.yaml"} {
		deployments := find(mustRender(t, values), "Deployment")
		if len(deployments) == 0 {
			t.Fatalf("%s: no Deployment rendered", values)
		}
		for name, d := range deployments {
			pod := get(d, "spec", "template", "spec")
			if get(pod, "securityContext", "runAsNonRoot") != true || get(pod, "securityContext", "runAsUser") != 65532 {
				t.Errorf("%s %s: pod securityContext = %v; want runAsNonRoot and uid 65532", values, name, get(pod, "securityContext"))
			}
			for _, c := range get(pod, "containers").([]any) {
				if got := get(c, "securityContext"); !reflect.DeepEqual(got, wantContainer) {
					t.Errorf("%s %s/%s: securityContext = %v; want %v", values, name, get(c, "name"), got, wantContainer)
				}
				mounts := map[string]bool{}
				for _, m := range get(c, "volumeMounts").([]any) {
					mounts[get(m, "mountPath").(string)] = true
				}
				if !mounts["/tmp"] {
					t.Errorf("%s %s: /tmp is not a volume, the read-only root filesystem has no temp dir", values, name)
				}
			}
		}
	}
}
