// threadlab-bench-go: threadlab's Go suite.  Goroutines measured with the
// shared benchmark names of docs/thread-models.md (model "goroutine"), speaking
// the native protocol of docs/native-protocol.md:
//
//	threadlab-bench-go --list
//	threadlab-bench-go --env
//	threadlab-bench-go --run NAME [--placement unbound] [--param NAME=VALUE]...
//	                   [--quick] [--warmup N] [--iterations N]
//
// Each sample is one timed iteration (time.Now/time.Since: the monotonic
// clock); the method is the seed's: 1 warm-up and 30 measured iterations
// (1 and 5 with --quick).  Standard library only.  See docs/go.md.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

const (
	model     = "goroutine"
	suite     = "go"
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

var defaults = map[bool]map[string]int{
	false: {"warmup": 1, "iterations": 30},
	true:  {"warmup": 1, "iterations": 5},
}

type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

type options struct {
	list, env, quick   bool
	run, placement     string
	clock              string
	params             []string
	warmup, iterations int
}

func parseArgs(args []string) (*options, error) {
	o := &options{placement: "unbound", warmup: -1, iterations: -1}
	value := func(i *int, name string) (string, error) {
		if *i+1 >= len(args) {
			return "", usageError{name + ": a value is required"}
		}
		*i++
		return args[*i], nil
	}
	number := func(i *int, name string, low, high int) (int, error) {
		text, err := value(i, name)
		if err != nil {
			return 0, err
		}
		n, convErr := strconv.Atoi(text)
		if convErr != nil || n < low || n > high {
			return 0, usageError{fmt.Sprintf("%s %s: expected an integer from %d to %d", name, text, low, high)}
		}
		return n, nil
	}
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if eq := strings.IndexByte(arg, '='); eq > 0 && strings.HasPrefix(arg, "--") {
			args = append(args[:i], append([]string{arg[:eq], arg[eq+1:]}, args[i+1:]...)...)
			arg = args[i]
		}
		var err error
		switch arg {
		case "--list":
			o.list = true
		case "--env":
			o.env = true
		case "--quick":
			o.quick = true
		case "--run":
			o.run, err = value(&i, arg)
		case "--placement":
			o.placement, err = value(&i, arg)
		case "--param":
			var p string
			p, err = value(&i, arg)
			o.params = append(o.params, p)
		case "--warmup":
			o.warmup, err = number(&i, arg, 0, 1000)
		case "--iterations":
			o.iterations, err = number(&i, arg, 1, 100000)
		case "--clock":
			// threadlab asks every program's --env with the run's --clock; Go
			// reads its own monotonic clock, so it is accepted there and ignored.
			o.clock, err = value(&i, arg)
		case "--rule", "--target", "--min-timings", "--max-timings", "--min-timing-ms", "--max-seconds", "--forks":
			err = usageError{arg + ": the Go suite runs a fixed number of iterations; accepted: --quick, --warmup N, --iterations N"}
		case "-h", "--help":
			err = usageError{"usage: threadlab-bench-go --list | --env | --run NAME [--placement unbound] [--param NAME=VALUE]... [--quick] [--warmup N] [--iterations N]"}
		default:
			err = usageError{"unknown option " + arg}
		}
		if err != nil {
			return nil, err
		}
	}
	actions := 0
	for _, set := range []bool{o.list, o.env, o.run != ""} {
		if set {
			actions++
		}
	}
	if actions != 1 {
		return nil, usageError{"exactly one of --list, --env, --run NAME is required"}
	}
	if o.clock != "" && !o.env {
		return nil, usageError{"--clock: the Go suite reads Go's monotonic clock; accepted: --quick, --warmup N, --iterations N"}
	}
	if o.warmup < 0 {
		o.warmup = defaults[o.quick]["warmup"]
	}
	if o.iterations < 0 {
		o.iterations = defaults[o.quick]["iterations"]
	}
	return o, nil
}

func listEntry(b *Benchmark) map[string]interface{} {
	params := b.Params
	if params == nil {
		params = []Param{}
	}
	return map[string]interface{}{
		"benchmark": b.Name, "model": model, "suite": suite, "summary": b.Summary, "quantity": b.Quantity,
		"unit": b.Unit, "threads": b.Threads, "placements": []string{"unbound"},
		"default_placements": []string{"unbound"}, "params": params,
	}
}

func envObject() map[string]interface{} {
	return map[string]interface{}{
		"producer": "threadlab-bench-go", "suite": suite, "model": model,
		"go_version": runtime.Version(), "compiler": runtime.Compiler + " " + runtime.Version(),
		"goos": runtime.GOOS, "goarch": runtime.GOARCH, "gomaxprocs": runtime.GOMAXPROCS(0),
		"num_cpu":  runtime.NumCPU(),
		"defaults": map[string]interface{}{"normal": defaults[false], "quick": defaults[true]},
		"limits":   readLimits(),
	}
}

func find(name string) *Benchmark {
	for _, b := range catalog {
		if b.Name == name {
			return b
		}
	}
	return nil
}

func parseParams(b *Benchmark, given []string, quick bool) (map[string]string, error) {
	values := map[string]string{}
	for _, p := range b.Params {
		if quick {
			values[p.Name] = p.QuickValues[0]
		} else {
			values[p.Name] = p.Values[0]
		}
	}
	for _, item := range given {
		eq := strings.IndexByte(item, '=')
		var param *Param
		if eq > 0 {
			for i := range b.Params {
				if b.Params[i].Name == item[:eq] {
					param = &b.Params[i]
				}
			}
		}
		if param == nil {
			names := []string{}
			for _, p := range b.Params {
				names = append(names, p.Name)
			}
			if len(names) == 0 {
				names = []string{"none"}
			}
			return nil, usageError{fmt.Sprintf("--param %s: %s has no such parameter (parameters: %s)", item, b.Name, strings.Join(names, ", "))}
		}
		if !param.accepted(item[eq+1:]) {
			return nil, usageError{fmt.Sprintf("--param %s: expected %s", item, param.expected)}
		}
		values[param.Name] = item[eq+1:]
	}
	return values, nil
}

func measure(b *Benchmark, o *options, params map[string]string) *Record {
	if b.Unsupported != "" {
		return notMeasured(b, params, "unsupported", b.Unsupported)
	}
	if o.placement != "unbound" {
		return notMeasured(b, params, "unsupported", "placement "+o.placement+
			": the Go suite runs unbound only (the Go scheduler places goroutines on its Ps and threads)")
	}
	extra := map[string]interface{}{"gomaxprocs": runtime.GOMAXPROCS(0), "go_version": runtime.Version()}
	if b.AliveAtOnce {
		requested, _ := strconv.Atoi(params["count"])
		count, because, unsupported := safeCount(requested, readLimits())
		if unsupported != "" {
			r := notMeasured(b, params, "unsupported", unsupported)
			r.Extra = extra
			return r
		}
		if count != requested {
			params["count"] = strconv.Itoa(count)
			extra["scaled_from"] = requested
			extra["scaled_because"] = because
		}
	}
	p := &point{params: params}
	iterations := 1
	if b.Actions[0] > 0 {
		p.actions = b.Actions[0]
		if o.quick {
			p.actions = b.Actions[1]
		}
		iterations = p.actions
	}
	started := time.Now()
	samples := make([]float64, 0, o.iterations)
	kernel := make([]float64, 0, o.iterations)
	for i := 0; i < o.warmup+o.iterations; i++ {
		p.kernelPerThread = nil
		value, err := b.sample(p)
		if err != nil {
			r := notMeasured(b, params, "failed", err.Error())
			r.Extra = extra
			return r
		}
		if i >= o.warmup {
			samples = append(samples, value)
			if p.kernelPerThread != nil {
				kernel = append(kernel, *p.kernelPerThread)
			}
		}
	}
	// Only when every measured sample had it: a median of some would pass
	// for one of all.
	if len(kernel) > 0 && len(kernel) == len(samples) {
		extra["kernel_memory_per_thread"] = summarize(kernel).Median
	}
	r := newRecord(b, params)
	if b.metric() == "time" {
		r.Clock = ptr("monotonic (Go runtime nanotime)")
	}
	r.setSamples(samples, iterations, o.warmup, time.Since(started).Seconds())
	r.Checks = append(r.Checks, b.Checks...)
	r.Extra = extra
	return r
}

func run(args []string) int {
	o, err := parseArgs(args)
	if err != nil {
		fmt.Fprintln(os.Stderr, "threadlab-bench-go: usage error:", err)
		return exitUsage
	}
	out := json.NewEncoder(os.Stdout)
	switch {
	case o.list:
		for _, b := range catalog {
			_ = out.Encode(listEntry(b))
		}
		return exitOK
	case o.env:
		_ = out.Encode(envObject())
		return exitOK
	}
	b := find(o.run)
	if b == nil {
		names := []string{}
		for _, c := range catalog {
			names = append(names, c.Name)
		}
		fmt.Fprintf(os.Stderr, "threadlab-bench-go: usage error: --run %s: no such benchmark; valid: %s\n", o.run, strings.Join(names, ", "))
		return exitUsage
	}
	params, err := parseParams(b, o.params, o.quick)
	if err != nil {
		fmt.Fprintln(os.Stderr, "threadlab-bench-go: usage error:", err)
		return exitUsage
	}
	r := measure(b, o, params)
	fmt.Println(r.JSON())
	if r.Status == "failed" {
		return exitFail
	}
	return exitOK
}

func main() {
	os.Exit(run(os.Args[1:]))
}
