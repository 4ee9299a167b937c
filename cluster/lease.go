package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// DefaultAgentID is the agent's id towards the server when it is given
// none: the same for every pod of one deployment of the agent (its
// cluster and the namespace it watches, "" for all), so a pod that
// replaces another (a rescheduled pod, a new version, its state folder
// lost with its emptyDir) asks for the actions its predecessor claimed
// and finishes or gives them back, where a new random id left them
// claimed until the server failed them (claim_expired, an hour later).
// The pods of one id take turns through a Lease (runActions): the
// server hands an id's claims to whichever of them asks.
func DefaultAgentID(cluster, namespace string) string {
	scope := namespace
	if scope == "" {
		scope = "all"
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(cluster + "\x00" + namespace))
	// The hash tells apart what sanitizing or cutting made alike
	// (prod.eu and prod-eu).
	return sanitizeIDTo(cluster+"-"+scope, 80) + "-" + hex.EncodeToString(h.Sum(nil))
}

// leaseName is the name of the Lease the agents of one id take turns
// through: a DNS label, whatever the id.
func leaseName(id string) string {
	h := fnv.New32a()
	_, _ = h.Write([]byte(id))
	b := []byte(strings.ToLower(id))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	if len(b) > 30 {
		b = b[:30]
	}
	return "ripcord-agent-" + strings.Trim(string(b), "-") + "-" + hex.EncodeToString(h.Sum(nil))
}

// Lease timing: a pod that stops gives the Lease up once its actions are
// given back or left for the next holder; one that dies holds it for
// leaseDuration at most.
const (
	leaseDuration = 15 * time.Second
	leaseRenew    = 10 * time.Second
	leaseRetry    = 2 * time.Second
)

// runActions carries out the cluster's actions while this process holds
// the Lease of its agent id, so that two processes with one id (the old
// and the new pod of a rolling update, a second replica, an agent run by
// hand with the same --cluster) never both ask for that id's claims: the
// server hands them to any poll with the id. The actions stop when the
// Lease is lost; on stop the Lease is given up only once the actions in
// flight were given back or left for the next holder, which resumes them
// (a patch that landed is found by its ActionAnnotation).
//
// Without the right to read Leases (an older RBAC), the agent takes a
// random id kept in its state folder, as agents before this one did: two
// processes then never share an id, and a replacement pod with a new
// state folder cannot finish its predecessor's claims.
func (a *Agent) runActions(ctx context.Context, log *slog.Logger) {
	leases := a.kube.CoordinationV1().Leases(a.leaseNS)
	name := leaseName(a.ID())
	if _, err := leases.Get(ctx, name, metav1.GetOptions{}); apierrors.IsForbidden(err) {
		if a.withoutLease(log, name, err) {
			a.actions.run(ctx)
		}
		return
	}
	holder := a.ID()
	if host, err := os.Hostname(); err == nil {
		holder = sanitizeID(host)
	}
	var raw [6]byte
	_, _ = rand.Read(raw[:])
	holder += "-" + hex.EncodeToString(raw[:])
	log = log.With("lease", a.leaseNS+"/"+name, "holder", holder)
	lock := &leaseLock{Interface: &resourcelock.LeaseLock{LeaseMeta: metav1.ObjectMeta{Namespace: a.leaseNS, Name: name},
		Client: a.kube.CoordinationV1(), LockConfig: resourcelock.ResourceLockConfig{Identity: holder}},
		namespace: a.leaseNS, name: name, state: &a.lease, log: log}
	for ctx.Err() == nil {
		log.Info("waiting for the lease of the agent id before asking for cluster actions", "agent", a.ID())
		if !a.leadActions(ctx, log, lock) {
			return
		}
	}
}

// leadActions takes part in one election: it waits for the Lease, carries
// out actions while it holds it and gives it up once they stopped. false
// when the election could not be set up.
func (a *Agent) leadActions(ctx context.Context, log *slog.Logger, lock resourcelock.Interface) bool {
	elect, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	var (
		mu      sync.Mutex
		leading bool
	)
	ran := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{Lock: lock,
		LeaseDuration: leaseDuration, RenewDeadline: leaseRenew, RetryPeriod: leaseRetry, ReleaseOnCancel: true,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lead context.Context) {
				defer close(ran)
				mu.Lock()
				leading = true
				mu.Unlock()
				log.Info("holding the lease: asking for cluster actions")
				run, cancel := context.WithCancel(ctx)
				stop := context.AfterFunc(lead, cancel)
				a.actions.run(run)
				stop()
				cancel()
				// Given up only now: the next holder resumes what is left.
				stopElect()
			},
			OnStoppedLeading: func() {},
		}})
	if err != nil {
		log.Error("cannot take part in the lease's election; not asking for cluster actions", "err", err)
		return false
	}
	// Waiting for the Lease ends with ctx; holding it, once the actions
	// stopped (OnStartedLeading).
	stop := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			stopElect()
		}
	})
	defer stop()
	le.Run(elect)
	mu.Lock()
	led := leading
	mu.Unlock()
	if led {
		<-ran
		if ctx.Err() == nil {
			log.Warn("lost the lease: stopped asking for cluster actions until it is held again")
		}
	}
	return true
}

// withoutLease falls back to a random id kept in the state folder when the
// agent may not read its Lease; false when it cannot keep one.
func (a *Agent) withoutLease(log *slog.Logger, name string, err error) bool {
	if a.explicitID {
		log.Warn(fmt.Sprintf("cannot read Lease %s/%s (grant get, create and update on leases.coordination.k8s.io there): "+
			"carrying out actions as %s without it; two agents run with that id at once could both work one action", a.leaseNS, name, a.ID()),
			"err", err)
		return true
	}
	id, idErr := agentID(a.cfg.StateDir)
	if idErr != nil {
		log.Error("cannot keep an agent id in the state folder; not asking for cluster actions", "err", idErr)
		return false
	}
	log.Warn(fmt.Sprintf("cannot read Lease %s/%s (grant get, create and update on leases.coordination.k8s.io there): "+
		"taking the id %s kept in the state folder instead of %s; a pod that replaces this one cannot finish the actions it claimed", a.leaseNS, name, id, a.ID()),
		"err", err)
	a.mu.Lock()
	a.id = id
	a.mu.Unlock()
	a.actions.agent = id
	return true
}
