package main

import (
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"time"
)

// Param is a benchmark parameter as --list shows it.
type Param struct {
	Name        string   `json:"name"`
	Help        string   `json:"help"`
	Values      []string `json:"values"`
	QuickValues []string `json:"quick_values"`
	accepted    func(string) bool
	expected    string
}

// Benchmark is one entry of the catalog.
type Benchmark struct {
	Name     string
	Summary  string
	Quantity string
	Unit     string
	Metric   string
	Threads  int
	Params   []Param
	// Unsupported, when set, is why goroutines cannot perform the action.
	Unsupported string
	// Actions per sample for per-action benchmarks: normal and quick.
	Actions [2]int
	// AliveAtOnce: the count goroutines are alive together (memory check).
	AliveAtOnce bool
	Checks      []Check
	// sample measures once; it returns the sample (in Unit) or an error.
	sample func(p *point) (float64, error)
}

func (b *Benchmark) metric() string {
	if b.Metric == "" {
		return "time"
	}
	return b.Metric
}

// point is one data point being measured.
type point struct {
	params  map[string]string
	actions int
	// kernelPerThread: set by a sample that also measures kernel memory
	// (threads.capacity) when /proc/meminfo told it; nil otherwise.
	kernelPerThread *float64
}

func (p *point) int(name string) int {
	v, _ := strconv.Atoi(p.params[name])
	return v
}

func positive(limit int) func(string) bool {
	return func(s string) bool {
		v, err := strconv.Atoi(s)
		return err == nil && v >= 1 && v <= limit && strconv.Itoa(v) == s
	}
}

func oneOf(choices ...string) func(string) bool {
	return func(s string) bool {
		for _, c := range choices {
			if s == c {
				return true
			}
		}
		return false
	}
}

func countParam(normal, quick []string, help string) Param {
	return Param{Name: "count", Help: help, Values: normal, QuickValues: quick, accepted: positive(10000000),
		expected: "an integer from 1 to 10000000"}
}

var handoffCheck = Check{Name: "handoffs", OK: true,
	Detail: "every handoff carried the next sequence number and every one arrived (the benchmark fails otherwise)"}

var catalog = []*Benchmark{
	{
		Name:     "threads.instantiate",
		Summary:  "create COUNT thread objects without starting them (seed 003, Table 1)",
		Quantity: "time to create `count` unstarted thread objects", Unit: "s", Threads: 1,
		Params: []Param{countParam([]string{"100000"}, []string{"10000"}, "threads created per sample")},
		Unsupported: "goroutines cannot be created without being started: the go statement creates and " +
			"starts a goroutine in one step (see threads.start)",
	},
	{
		Name:     "threads.start",
		Summary:  "start COUNT goroutines that end at once; waiting for them is clean-up outside the measurement (seed 003, Table 2)",
		Quantity: "time to create and start `count` threads", Unit: "s", Threads: 1,
		Params: []Param{countParam([]string{"100000"}, []string{"10000"}, "goroutines started per sample")},
		sample: sampleStart,
	},
	{
		Name:     "threads.start_join",
		Summary:  "start COUNT goroutines, then wait for all of them (a WaitGroup; seed 003, Table 3)",
		Quantity: "time to start and join `count` threads", Unit: "s", Threads: 1,
		Params: []Param{countParam([]string{"10000"}, []string{"1000"}, "goroutines started and joined per sample")},
		sample: sampleStartJoin,
	},
	{
		Name: "threads.sleep_yield",
		Summary: "start COUNT goroutines that each sleep SLEEP_MS, yield (runtime.Gosched), sleep SLEEP_MS; joined=no: " +
			"waiting for them is clean-up outside the measurement (seed 003, Table 4); joined=yes: the measurement ends " +
			"when all have finished",
		Quantity: "time to start `count` sleeping threads (joined=yes: and join them all)", Unit: "s", Threads: 1,
		Params: []Param{
			countParam([]string{"100000"}, []string{"10000"}, "goroutines per sample (all alive at once)"),
			{Name: "sleep_ms", Help: "each sleep, in milliseconds", Values: []string{"100"}, QuickValues: []string{"100"},
				accepted: positive(60000), expected: "an integer from 1 to 60000"},
			{Name: "joined", Help: "whether the joins are measured (no: the seed's protocol)", Values: []string{"no", "yes"},
				QuickValues: []string{"no"}, accepted: oneOf("no", "yes"), expected: "no or yes"},
		},
		AliveAtOnce: true,
		sample:      sampleSleepYield,
	},
	{
		Name:     "threads.create_join",
		Summary:  "a goroutine starts a goroutine that ends at once and waits for it (a channel), OPS times per sample",
		Quantity: "time per create + start + join of one thread", Unit: "ns", Threads: 1,
		Actions: [2]int{20000, 5000},
		sample:  sampleCreateJoin,
	},
	{
		Name:     "threads.channel_pingpong",
		Summary:  "two goroutines pass a number back and forth through two unbuffered channels",
		Quantity: "time per one-way handoff (Go channel)", Unit: "ns", Threads: 2,
		Actions: [2]int{20000, 4000},
		Checks:  []Check{handoffCheck},
		sample:  sampleChannelPingPong,
	},
	{
		Name:     "threads.capacity",
		Summary:  "memory per suspended goroutine: start COUNT goroutines that block on a channel, compare the runtime's stack and heap in use (after a GC) with before",
		Quantity: "bytes per suspended thread (stack + heap in use)", Unit: "bytes", Metric: "memory_per_thread", Threads: 1,
		Params: []Param{countParam([]string{"10000", "100000"}, []string{"1000"},
			"goroutines alive at once (scaled down to the machine's memory)")},
		AliveAtOnce: true,
		sample:      sampleCapacity,
	},
}

// ------------------------------------------------------------- measurements

func noop(wg *sync.WaitGroup) { wg.Done() }

func sampleStart(p *point) (float64, error) {
	n := p.int("count")
	var wg sync.WaitGroup
	wg.Add(n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go noop(&wg)
	}
	elapsed := time.Since(t0)
	wg.Wait() // clean-up, outside the measurement
	return elapsed.Seconds(), nil
}

func sampleStartJoin(p *point) (float64, error) {
	n := p.int("count")
	var wg sync.WaitGroup
	wg.Add(n)
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go noop(&wg)
	}
	wg.Wait()
	return time.Since(t0).Seconds(), nil
}

func sampleSleepYield(p *point) (float64, error) {
	n := p.int("count")
	sleep := time.Duration(p.int("sleep_ms")) * time.Millisecond
	joined := p.params["joined"] == "yes"
	var wg sync.WaitGroup
	wg.Add(n)
	body := func() {
		time.Sleep(sleep)
		runtime.Gosched()
		time.Sleep(sleep)
		wg.Done()
	}
	t0 := time.Now()
	for i := 0; i < n; i++ {
		go body()
	}
	if joined {
		wg.Wait()
	}
	elapsed := time.Since(t0)
	wg.Wait()
	return elapsed.Seconds(), nil
}

func sampleCreateJoin(p *point) (float64, error) {
	ops := p.actions
	done := make(chan struct{})
	child := func() { done <- struct{}{} }
	t0 := time.Now()
	for i := 0; i < ops; i++ {
		go child()
		<-done
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(ops), nil
}

func sampleChannelPingPong(p *point) (float64, error) {
	rounds := p.actions / 2
	there, back := make(chan int), make(chan int)
	failure := make(chan error, 2)
	var wg sync.WaitGroup
	wg.Add(2)
	t0 := time.Now()
	go func() { // ping
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			there <- i
			if answer := <-back; answer != i+1 {
				failure <- fmt.Errorf("ping expected %d, received %d", i+1, answer)
				close(there)
				return
			}
		}
	}()
	go func() { // pong
		defer wg.Done()
		for i := 0; i < rounds; i++ {
			value, ok := <-there
			if !ok {
				return
			}
			if value != i {
				failure <- fmt.Errorf("pong expected %d, received %d", i, value)
				close(back)
				return
			}
			back <- value + 1
		}
	}()
	wg.Wait()
	elapsed := time.Since(t0)
	select {
	case err := <-failure:
		return 0, fmt.Errorf("check failed: %v", err)
	default:
	}
	return float64(elapsed.Nanoseconds()) / float64(2*rounds), nil
}

func inUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.StackInuse + m.HeapAlloc
}

func sampleCapacity(p *point) (float64, error) {
	n := p.int("count")
	release := make(chan struct{})
	var blocked, finished sync.WaitGroup
	blocked.Add(n)
	finished.Add(n)
	before := inUse()
	kernelBefore, kernelKnown := kernelMemory()
	for i := 0; i < n; i++ {
		go func() {
			blocked.Done()
			<-release
			finished.Done()
		}()
	}
	blocked.Wait()
	during := inUse()
	kernelDuring, kernelStillKnown := kernelMemory()
	close(release)
	finished.Wait()
	if kernelKnown && kernelStillKnown {
		p.kernelPerThread = ptr(float64(kernelDuring-kernelBefore) / float64(n))
	}
	return (float64(during) - float64(before)) / float64(n), nil
}
