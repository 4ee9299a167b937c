package deploy

import (
	"reflect"
	"testing"
)

// envOf returns a container's env as name → value (or "secret:NAME/KEY").
func envOf(c any) map[string]string {
	env := map[string]string{}
	for _, e := range get(c, "env").([]any) {
		name := get(e, "name").(string)
		if ref := get(e, "valueFrom", "secretKeyRef"); ref != nil {
			env[name] = "secret:" + get(ref, "name").(string) + "/" + get(ref, "key").(string)
			continue
		}
		env[name], _ = get(e, "value").(string)
	}
	return env
}

func volumesOf(d object) map[string]any {
	vols := map[string]any{}
	for _, v := range get(d, "spec", "template", "spec", "volumes").([]any) {
		vols[get(v, "name").(string)] = v
	}
	return vols
}

func serverDeployment(t *testing.T, objs []object) object {
	t.Helper()
	d, ok := find(objs, "Deployment")["ripcord"]
	if !ok {
		t.Fatalf("no Deployment ripcord in %v", kinds(objs))
	}
	return d
}

func TestServerProbesCallHealthzAndReadyz(t *testing.T) {
	t.Parallel()
	c := get(serverDeployment(t, mustRender(t, "")), "spec", "template", "spec", "containers", 0)
	for probe, want := range map[string]string{
		"livenessProbe":  "{path: /healthz, port: http}",
		"readinessProbe": "{path: /readyz, port: http}",
		"startupProbe":   "{path: /healthz, port: http}",
	} {
		if got := get(c, probe, "httpGet"); !reflect.DeepEqual(got, fromYAML(t, want)) {
			t.Errorf("%s.httpGet = %v; want %s", probe, got, want)
		}
	}
	if got := get(c, "ports", 0, "containerPort"); got != 8080 {
		t.Errorf("containerPort = %v; want 8080", got)
	}
}

func TestSQLiteDefaultIsOneReplicaOnAVolume(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "sqlite-default.yaml")
	d := serverDeployment(t, objs)
	if got := get(d, "spec", "replicas"); got != 1 {
		t.Errorf("replicas = %v; want 1", got)
	}
	if got := get(d, "spec", "strategy", "type"); got != "Recreate" {
		t.Errorf("strategy = %v; want Recreate, a rolling update would run two writers of one SQLite file", got)
	}
	env := envOf(get(d, "spec", "template", "spec", "containers", 0))
	for name, want := range map[string]string{
		"RIPCORD_LISTEN":                "0.0.0.0:8080",
		"RIPCORD_DATABASE":              "sqlite:///data/ripcord.db",
		"RIPCORD_GITHUB_PRIVATE_KEY":    "/etc/ripcord/github/private-key.pem",
		"RIPCORD_GITHUB_WEBHOOK_SECRET": "secret:ripcord/webhook-secret",
		"RIPCORD_API_TOKEN":             "secret:ripcord/api-token",
	} {
		if env[name] != want {
			t.Errorf("env %s = %q; want %q", name, env[name], want)
		}
	}
	vols := volumesOf(d)
	if got := get(vols["data"], "persistentVolumeClaim", "claimName"); got != "ripcord" {
		t.Errorf("data volume claim = %v; want ripcord", got)
	}
	if got := get(vols["github-private-key"], "secret", "items", 0); !reflect.DeepEqual(got, fromYAML(t, "{key: github-private-key, path: private-key.pem}")) {
		t.Errorf("private key volume item = %v", got)
	}
	if _, ok := find(objs, "PersistentVolumeClaim")["ripcord"]; !ok {
		t.Errorf("no PersistentVolumeClaim in %v", kinds(objs))
	}
	for _, kind := range []string{"ClusterRole", "Role", "ServiceMonitor", "Ingress"} {
		if got := find(objs, kind); len(got) > 0 {
			t.Errorf("%s rendered with the defaults; it is opt-in", kind)
		}
	}
}

func TestPostgresRunsThreeReplicasWithoutAVolumeClaim(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "postgres-replicas-3.yaml")
	d := serverDeployment(t, objs)
	if got := get(d, "spec", "replicas"); got != 3 {
		t.Errorf("replicas = %v; want 3", got)
	}
	env := envOf(get(d, "spec", "template", "spec", "containers", 0))
	if env["RIPCORD_DATABASE"] != "secret:ripcord/database-url" {
		t.Errorf("RIPCORD_DATABASE = %q; want it from the Secret (it holds a password)", env["RIPCORD_DATABASE"])
	}
	if env["RIPCORD_GITHUB_APP_ID"] != "1234567" {
		t.Errorf("RIPCORD_GITHUB_APP_ID = %q; want 1234567, not a float", env["RIPCORD_GITHUB_APP_ID"])
	}
	if got := get(find(objs, "Secret")["ripcord"], "stringData", "database-url"); got != "postgres://ripcord:pw@db.example:5432/ripcord" {
		t.Errorf("Secret database-url = %v", got)
	}
	// Replicas without a lasting disk share the key of the App credentials
	// that /setup stores.
	if env["RIPCORD_SECRETS_KEY"] != "secret:ripcord/secrets-key" {
		t.Errorf("RIPCORD_SECRETS_KEY = %q; want it from the Secret", env["RIPCORD_SECRETS_KEY"])
	}
	if got := get(find(objs, "Secret")["ripcord"], "stringData", "secrets-key"); got != "c2l4dGVlbi1ieXRlcy1rZXkhc2l4dGVlbi1ieXRlcy0=" {
		t.Errorf("Secret secrets-key = %v", got)
	}
	if len(find(objs, "PersistentVolumeClaim")) != 0 {
		t.Error("a PersistentVolumeClaim rendered with postgres")
	}
	if got := get(find(objs, "ServiceMonitor")["ripcord"], "spec", "endpoints", 0); !reflect.DeepEqual(got, fromYAML(t, "{port: http, path: /metrics, interval: 30s}")) {
		t.Errorf("ServiceMonitor endpoint = %v", got)
	}
	if got := get(find(objs, "Ingress")["ripcord"], "spec", "rules", 0, "http", "paths", 0, "backend", "service"); !reflect.DeepEqual(got, fromYAML(t, "{name: ripcord, port: {name: http}}")) {
		t.Errorf("Ingress backend = %v", got)
	}
}

// The agent may read what it watches and patch Deployments (a rollback),
// nothing else.
const agentRules = `
- apiGroups: [apps]
  resources: [deployments, replicasets]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [pods]
  verbs: [get, list, watch]
- apiGroups: [argoproj.io]
  resources: [rollouts]
  verbs: [get, list, watch]
- apiGroups: [apps]
  resources: [deployments]
  verbs: [patch]
`

func TestAgentRBACIsExactlyWhatItUses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ values, role, binding, namespace string }{
		{"agent-enabled.yaml", "ClusterRole", "ClusterRoleBinding", ""},
		{"agent-namespaced.yaml", "Role", "RoleBinding", "ripcord"},
	} {
		t.Run(tc.values, func(t *testing.T) {
			objs := mustRender(t, tc.values)
			role, ok := find(objs, tc.role)["ripcord-agent"]
			if !ok {
				t.Fatalf("no %s ripcord-agent in %v", tc.role, kinds(objs))
			}
			if got := get(role, "rules"); !reflect.DeepEqual(got, fromYAML(t, agentRules)) {
				t.Errorf("rules = %v; want %v", got, fromYAML(t, agentRules))
			}
			if got, _ := get(role, "metadata", "namespace").(string); got != tc.namespace {
				t.Errorf("%s namespace = %q; want %q", tc.role, got, tc.namespace)
			}
			b := find(objs, tc.binding)["ripcord-agent"]
			if got := get(b, "subjects"); !reflect.DeepEqual(got, fromYAML(t, "[{kind: ServiceAccount, name: ripcord-agent, namespace: ripcord}]")) {
				t.Errorf("%s subjects = %v", tc.binding, got)
			}
			if got := get(b, "roleRef"); !reflect.DeepEqual(got, fromYAML(t, "{apiGroup: rbac.authorization.k8s.io, kind: "+tc.role+", name: ripcord-agent}")) {
				t.Errorf("%s roleRef = %v", tc.binding, got)
			}
		})
	}
}

// The agent's pods share one agent id and take turns through a Lease in
// the release's namespace, whatever namespace the agent watches: without
// the right to it, an agent falls back to an id of its own per state
// folder, and a new pod cannot finish what the one before it claimed.
func TestAgentMayTakeTurnsThroughItsLease(t *testing.T) {
	t.Parallel()
	for _, values := range []string{"agent-enabled.yaml", "agent-namespaced.yaml"} {
		t.Run(values, func(t *testing.T) {
			objs := mustRender(t, values)
			role, ok := find(objs, "Role")["ripcord-agent-lease"]
			if !ok {
				t.Fatalf("no Role ripcord-agent-lease in %v", kinds(objs))
			}
			want := "[{apiGroups: [coordination.k8s.io], resources: [leases], verbs: [get, create, update]}]"
			if got := get(role, "rules"); !reflect.DeepEqual(got, fromYAML(t, want)) {
				t.Errorf("rules = %v; want %v", got, fromYAML(t, want))
			}
			if got := get(role, "metadata", "namespace"); got != "ripcord" {
				t.Errorf("lease Role in namespace %v; want the release's, ripcord, the agent pod's own", got)
			}
			b := find(objs, "RoleBinding")["ripcord-agent-lease"]
			if got := get(b, "subjects"); !reflect.DeepEqual(got, fromYAML(t, "[{kind: ServiceAccount, name: ripcord-agent, namespace: ripcord}]")) {
				t.Errorf("lease RoleBinding subjects = %v", got)
			}
			if got := get(b, "roleRef"); !reflect.DeepEqual(got, fromYAML(t, "{apiGroup: rbac.authorization.k8s.io, kind: Role, name: ripcord-agent-lease}")) {
				t.Errorf("lease RoleBinding roleRef = %v", got)
			}
		})
	}
}

// The agent's state folder is an emptyDir unless agent.stateClaim names a
// PersistentVolumeClaim, which keeps the spool of unsent facts across pods.
func TestAgentStateIsAnEmptyDirOrTheClaimGiven(t *testing.T) {
	t.Parallel()
	for values, want := range map[string]string{
		"agent-enabled.yaml":     "{name: state, emptyDir: {sizeLimit: 256Mi}}",
		"agent-state-claim.yaml": "{name: state, persistentVolumeClaim: {claimName: ripcord-agent-state}}",
	} {
		d := find(mustRender(t, values), "Deployment")["ripcord-agent"]
		if got := volumesOf(d)["state"]; !reflect.DeepEqual(got, fromYAML(t, want)) {
			t.Errorf("%s: state volume = %v; want %v", values, got, fromYAML(t, want))
		}
	}
}

func TestAgentTalksToTheReleaseServer(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "agent-enabled.yaml")
	d, ok := find(objs, "Deployment")["ripcord-agent"]
	if !ok {
		t.Fatalf("no agent Deployment in %v", kinds(objs))
	}
	pod := get(d, "spec", "template", "spec")
	want := fromYAML(t, `[agent, --cluster=prod-eu, --server=http://ripcord:8080, --token-file=/etc/ripcord-agent/cluster-token,
  --state-dir=/state, --listen=:9090, --rollouts=auto]`)
	if got := get(pod, "containers", 0, "args"); !reflect.DeepEqual(got, want) {
		t.Errorf("agent args = %v; want %v", got, want)
	}
	if got := get(pod, "serviceAccountName"); got != "ripcord-agent" {
		t.Errorf("serviceAccountName = %v", got)
	}
	// An agent that waits for Argo Rollouts (--rollouts=on) or lists a big
	// cluster is not ready, and must not be restarted for it: readiness
	// asks /healthz, liveness only that the process answers.
	if got := get(pod, "containers", 0, "readinessProbe", "httpGet"); !reflect.DeepEqual(got, fromYAML(t, "{path: /healthz, port: http}")) {
		t.Errorf("agent readinessProbe = %v", got)
	}
	if got := get(pod, "containers", 0, "livenessProbe"); get(got, "httpGet") != nil || !reflect.DeepEqual(get(got, "tcpSocket"), fromYAML(t, "{port: http}")) {
		t.Errorf("agent livenessProbe = %v; want a TCP check of port http, not /healthz, which is not OK until the agent is ready", got)
	}
	if got := get(find(objs, "Secret")["ripcord-agent"], "stringData", "cluster-token"); got != "cluster-token" {
		t.Errorf("agent Secret cluster-token = %v", got)
	}
	if got := get(volumesOf(d)["token"], "secret", "secretName"); got != "ripcord-agent" {
		t.Errorf("token volume secret = %v", got)
	}
}

// mountOf returns a container's volume mount by name.
func mountOf(c any, name string) any {
	for _, m := range get(c, "volumeMounts").([]any) {
		if get(m, "name") == name {
			return m
		}
	}
	return nil
}

// The cluster tokens reach the server as files it reads again when they
// change (token_file, README "Rotating a cluster's token"), mounted from a
// Secret of their own without subPath, so the kubelet updates them in
// place; not as RIPCORD_CLUSTERS from the Secret, which only a restart
// reads again.
func TestClusterTokensAreFilesTheServerReadsAgain(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "agent-enabled.yaml")
	d := serverDeployment(t, objs)
	c := get(d, "spec", "template", "spec", "containers", 0)
	if got := envOf(c)["RIPCORD_CLUSTERS"]; got != "prod-eu=@/etc/ripcord/clusters/prod-eu" {
		t.Errorf("RIPCORD_CLUSTERS = %q; want prod-eu's token file", got)
	}
	if got := mountOf(c, "cluster-tokens"); !reflect.DeepEqual(got, fromYAML(t, "{name: cluster-tokens, mountPath: /etc/ripcord/clusters, readOnly: true}")) {
		t.Errorf("cluster-tokens mount = %v; want /etc/ripcord/clusters, read-only, without subPath", got)
	}
	want := fromYAML(t, "{secretName: ripcord-clusters, defaultMode: 0440, items: [{key: prod-eu, path: prod-eu}]}")
	if got := get(volumesOf(d)["cluster-tokens"], "secret"); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster-tokens volume = %v; want %v", got, want)
	}
	if got := get(find(objs, "Secret")["ripcord-clusters"], "stringData"); !reflect.DeepEqual(got, fromYAML(t, `{prod-eu: "cluster-token\n"}`)) {
		t.Errorf("Secret ripcord-clusters = %v; want prod-eu's token as a file", got)
	}
	if got := get(find(objs, "Secret")["ripcord"], "stringData", "clusters"); got != nil {
		t.Errorf("the server's Secret still holds clusters = %v, in its checksum", got)
	}
}

// A token rotation (secrets.clusters lists prod-eu twice) changes the
// token file's Secret and nothing of the server's pods: no rollout, the
// running server reads the new file.
func TestATokenRotationRollsNoServerPod(t *testing.T) {
	t.Parallel()
	before, during := mustRender(t, "agent-enabled.yaml"), mustRender(t, "agent-token-rotation.yaml")
	if a, b := serverDeployment(t, before), serverDeployment(t, during); !reflect.DeepEqual(a, b) {
		t.Errorf("the server Deployment changed with the tokens, which rolls its pods:\nbefore %v\nduring %v",
			get(a, "spec", "template"), get(b, "spec", "template"))
	}
	got := get(find(during, "Secret")["ripcord-clusters"], "stringData")
	if !reflect.DeepEqual(got, fromYAML(t, `{prod-eu: "cluster-token\nnew-token\n"}`)) {
		t.Errorf("Secret ripcord-clusters during the rotation = %v; want both tokens, one per line", got)
	}
}

// Tokens in a Secret the operator manages (one key per cluster) are
// mounted the same way; the chart makes no Secret of its own for them.
func TestClusterTokensFromASecretYouManage(t *testing.T) {
	t.Parallel()
	objs := mustRender(t, "cluster-tokens-secret.yaml")
	d := serverDeployment(t, objs)
	if got := envOf(get(d, "spec", "template", "spec", "containers", 0))["RIPCORD_CLUSTERS"]; got != "prod-eu=@/etc/ripcord/clusters/prod-eu,prod-us=@/etc/ripcord/clusters/prod-us" {
		t.Errorf("RIPCORD_CLUSTERS = %q", got)
	}
	want := fromYAML(t, "{secretName: ripcord-cluster-tokens, defaultMode: 0440, items: [{key: prod-eu, path: prod-eu}, {key: prod-us, path: prod-us}]}")
	if got := get(volumesOf(d)["cluster-tokens"], "secret"); !reflect.DeepEqual(got, want) {
		t.Errorf("cluster-tokens volume = %v; want %v", got, want)
	}
	if _, ok := find(objs, "Secret")["ripcord-clusters"]; ok {
		t.Error("the chart made a Secret ripcord-clusters beside the one you manage")
	}
}
