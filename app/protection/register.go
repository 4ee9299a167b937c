package protection

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"

	"github.com/ripcord/ripcord/app/configload"
	"github.com/ripcord/ripcord/app/pipeline"
)

// Register adds the review worker and returns the event handler.
func Register(d pipeline.Deps) []pipeline.EventHandler {
	reviews := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "ripcord_protection_reviews_total",
		Help: "Deployment protection rule requests answered, by state (approved, rejected).",
	}, []string{"state"})
	d.Registerer.MustRegister(reviews)
	river.AddWorker(d.Workers, &reviewWorker{deps: d, loader: configload.NewLoaderFor(d), reviews: reviews})
	return []pipeline.EventHandler{handler{deps: d}}
}
