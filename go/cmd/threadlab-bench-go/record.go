package main

import (
	"encoding/json"
	"math"
	"sort"
)

// Record is one threadlab.record/1 data point (docs/record-schema.md).
type Record struct {
	Schema              string                 `json:"schema"`
	Benchmark           string                 `json:"benchmark"`
	Model               string                 `json:"model"`
	Metric              string                 `json:"metric"`
	Params              map[string]string      `json:"params"`
	Placement           string                 `json:"placement"`
	CPUs                []*int                 `json:"cpus"`
	Unit                string                 `json:"unit"`
	Quantity            string                 `json:"quantity"`
	Status              string                 `json:"status"`
	Reason              *string                `json:"reason"`
	Clock               *string                `json:"clock"`
	Iterations          *int                   `json:"iterations"`
	ActionsPerIteration *float64               `json:"actions_per_iteration"`
	Warmup              int                    `json:"warmup"`
	OverheadNs          *float64               `json:"overhead_ns"`
	Samples             []float64              `json:"samples"`
	Summary             *Summary               `json:"summary"`
	Stop                *Stop                  `json:"stop"`
	Derived             *struct{}              `json:"derived"`
	Checks              []Check                `json:"checks"`
	Extra               map[string]interface{} `json:"extra"`
}

// Summary of the samples; spreads are null for a single sample.
type Summary struct {
	N      int      `json:"n"`
	Mean   float64  `json:"mean"`
	SD     *float64 `json:"sd"`
	RSD    *float64 `json:"rsd"`
	SE     *float64 `json:"se"`
	RSE    *float64 `json:"rse"`
	Median float64  `json:"median"`
	Min    float64  `json:"min"`
	Max    float64  `json:"max"`
}

// Stop says how the number of timings was decided: fixed here.
type Stop struct {
	Rule       string   `json:"rule"`
	Target     *float64 `json:"target"`
	Reason     string   `json:"reason"`
	MinTimings *int     `json:"min_timings"`
	MaxTimings *int     `json:"max_timings"`
	ElapsedS   *float64 `json:"elapsed_s"`
}

// Check is something the benchmark verified.
type Check struct {
	Name   string   `json:"name"`
	OK     bool     `json:"ok"`
	Value  *float64 `json:"value"`
	Detail string   `json:"detail"`
}

func ptr[T any](v T) *T { return &v }

func summarize(samples []float64) *Summary {
	n := len(samples)
	if n == 0 {
		return nil
	}
	sum := 0.0
	for _, v := range samples {
		sum += v
	}
	mean := sum / float64(n)
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	median := sorted[n/2]
	if n%2 == 0 {
		median = (sorted[n/2-1] + sorted[n/2]) / 2
	}
	s := &Summary{N: n, Mean: mean, Median: median, Min: sorted[0], Max: sorted[n-1]}
	if n > 1 {
		ss := 0.0
		for _, v := range samples {
			ss += (v - mean) * (v - mean)
		}
		sd := math.Sqrt(ss / float64(n-1))
		se := sd / math.Sqrt(float64(n))
		s.SD, s.SE = ptr(sd), ptr(se)
		if mean != 0 {
			s.RSD, s.RSE = ptr(sd/math.Abs(mean)), ptr(se/math.Abs(mean))
		}
	}
	return s
}

func newRecord(b *Benchmark, params map[string]string) *Record {
	return &Record{
		Schema:    "threadlab.record/1",
		Benchmark: b.Name,
		Model:     model,
		Metric:    b.metric(),
		Params:    params,
		Placement: "unbound",
		CPUs:      []*int{nil},
		Unit:      b.Unit,
		Quantity:  b.Quantity,
		Status:    "ok",
		Samples:   []float64{},
		Checks:    []Check{},
		Extra:     map[string]interface{}{},
	}
}

func notMeasured(b *Benchmark, params map[string]string, status, reason string) *Record {
	r := newRecord(b, params)
	r.Status = status
	r.Reason = ptr(reason)
	return r
}

func (r *Record) setSamples(samples []float64, iterations, warmup int, elapsedS float64) {
	r.Samples = samples
	r.Summary = summarize(samples)
	r.Iterations = ptr(iterations)
	r.ActionsPerIteration = ptr(1.0)
	r.Warmup = warmup
	r.Stop = &Stop{Rule: "fixed", Reason: "fixed", MinTimings: ptr(len(samples)), MaxTimings: ptr(len(samples)),
		ElapsedS: ptr(math.Round(elapsedS*1000) / 1000)}
}

func (r *Record) JSON() string {
	data, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return string(data)
}
