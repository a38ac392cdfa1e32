package web

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cotrain/cotrain/watch"
)

// The metrics of /metrics. Each is read from the Recorder's Status at
// scrape time; docs/dashboard.md lists them with their meaning.
var (
	descIteration                      = prometheus.NewDesc("cotrain_iteration", "Iterations done.", nil, nil)
	descSamples                        = prometheus.NewDesc("cotrain_samples_total", "Samples merged since the run (or this process) started.", nil, nil)
	descRate                           = prometheus.NewDesc("cotrain_samples_per_second", "Samples merged per second since the first iteration opened.", nil, nil)
	descLoss                           = prometheus.NewDesc("cotrain_loss", "Training loss of the last iteration (sample-weighted mean over the workers).", nil, nil)
	descLR                             = prometheus.NewDesc("cotrain_learning_rate", "Learning rate of the last iteration.", nil, nil)
	descAccuracy                       = prometheus.NewDesc("cotrain_test_accuracy", "Test accuracy of the last evaluation (absent before the first).", nil, nil)
	descBytes                          = prometheus.NewDesc("cotrain_gradient_bytes_total", "Gradient payload bytes: pushes (up) and merged updates, every copy (down).", []string{"direction"}, nil)
	descWorkers                        = prometheus.NewDesc("cotrain_workers", "Workers by state.", []string{"state"}, nil)
	descWRate                          = prometheus.NewDesc("cotrain_worker_samples_per_second", "A worker's last batch over its last compute time.", []string{"worker", "name"}, nil)
	descWBatch                         = prometheus.NewDesc("cotrain_worker_batch", "A worker's batch in the next iteration.", []string{"worker", "name"}, nil)
	descWShare                         = prometheus.NewDesc("cotrain_worker_batch_share", "A worker's batch over the global batch.", []string{"worker", "name"}, nil)
	descWBytes                         = prometheus.NewDesc("cotrain_worker_gradient_bytes_total", "A worker's gradient payload bytes, up (its pushes) and down (its merged updates).", []string{"worker", "name", "direction"}, nil)
	descWLate                          = prometheus.NewDesc("cotrain_worker_late_total", "Deadlines a worker missed.", []string{"worker", "name"}, nil)
	descWSamples                       = prometheus.NewDesc("cotrain_worker_samples_total", "Samples a worker computed that were merged.", []string{"worker", "name"}, nil)
	descWPhase                         = prometheus.NewDesc("cotrain_worker_last_iteration_seconds", "Where a worker's last iteration went: compute, comm, wait.", []string{"worker", "name", "phase"}, nil)
	descDropped                        = prometheus.NewDesc("cotrain_watch_dropped_events_total", "Events the dashboard lost because its queue was full.", nil, nil)
	descClients                        = prometheus.NewDesc("cotrain_watch_clients", "Open /api/events streams.", nil, nil)
	workerStates                       = []string{"waiting", "training", "late", "parked", "left"}
	_             prometheus.Collector = collector{}
)

type collector struct{ r *watch.Recorder }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descIteration, descSamples, descRate, descLoss, descLR, descAccuracy, descBytes,
		descWorkers, descWRate, descWBatch, descWShare, descWBytes, descWLate, descWSamples, descWPhase, descDropped, descClients} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	st := c.r.Status()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	n := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g(descIteration, float64(st.Iteration))
	n(descSamples, float64(st.Samples))
	g(descRate, st.SamplesPerSec)
	g(descLoss, st.Loss)
	g(descLR, st.LR)
	if st.TestAccuracy >= 0 {
		g(descAccuracy, st.TestAccuracy)
	}
	n(descBytes, float64(st.BytesUp), "up")
	n(descBytes, float64(st.BytesDown), "down")
	count := map[string]int{}
	for _, w := range st.Workers {
		count[w.State]++
		g(descWRate, w.SamplesPerSec, w.ID, w.Name)
		g(descWBatch, float64(w.Batch), w.ID, w.Name)
		g(descWShare, w.Share, w.ID, w.Name)
		n(descWBytes, float64(w.BytesUp), w.ID, w.Name, "up")
		n(descWBytes, float64(w.BytesDown), w.ID, w.Name, "down")
		n(descWLate, float64(w.Late), w.ID, w.Name)
		n(descWSamples, float64(w.Samples), w.ID, w.Name)
		g(descWPhase, w.ComputeMS/1e3, w.ID, w.Name, "compute")
		g(descWPhase, w.CommMS/1e3, w.ID, w.Name, "comm")
		g(descWPhase, w.WaitMS/1e3, w.ID, w.Name, "wait")
	}
	for _, s := range workerStates {
		g(descWorkers, float64(count[s]), s)
	}
	n(descDropped, float64(st.Dropped))
	g(descClients, float64(st.Clients))
}

func metricsHandler(r *watch.Recorder) http.Handler {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(collector{r})
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
