package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Goroutines are not kernel tasks: only memory bounds how many can be
// alive at once.  The rules follow python/threadlab/producers/limits.py:
// at most half the available memory, a generous 8 KiB per goroutine, the
// count rounded down to two significant digits, unsupported below 1000.
const (
	goroutineBytes = 8 * 1024
	memoryShare    = 0.5
	minimumCount   = 1000
)

type limits struct {
	MemAvailableBytes *int64 `json:"mem_available_bytes"`
}

// readMeminfo: the "Name: N kB" lines of /proc/meminfo, in bytes, by name;
// empty when it cannot be read.
func readMeminfo() map[string]int64 {
	values := map[string]int64{}
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return values
	}
	defer f.Close()
	scanner := bufio.NewScanner(f)
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) == 3 && strings.HasSuffix(fields[0], ":") && fields[2] == "kB" {
			if kb, err := strconv.ParseInt(fields[1], 10, 64); err == nil {
				values[strings.TrimSuffix(fields[0], ":")] = kb * 1024
			}
		}
	}
	return values
}

// kernelMemory: KernelStack + PageTables from /proc/meminfo (machine-wide),
// and false when either is missing, so an unknown is never reported as 0.
func kernelMemory() (int64, bool) {
	meminfo := readMeminfo()
	stacks, haveStacks := meminfo["KernelStack"]
	tables, haveTables := meminfo["PageTables"]
	return stacks + tables, haveStacks && haveTables
}

func readLimits() limits {
	var l limits
	if available, ok := readMeminfo()["MemAvailable"]; ok {
		l.MemAvailableBytes = ptr(available)
	}
	// For the tests: $THREADLAB_TEST_LIMITS replaces what was read.
	if text := os.Getenv("THREADLAB_TEST_LIMITS"); text != "" {
		var override map[string]json.RawMessage
		if json.Unmarshal([]byte(text), &override) == nil {
			if raw, ok := override["mem_available_bytes"]; ok {
				var v int64
				if json.Unmarshal(raw, &v) == nil {
					l.MemAvailableBytes = ptr(v)
				}
			}
		}
	}
	return l
}

func roundDown(n int) int {
	if n < 100 {
		return n
	}
	scale := 1
	for m := n; m >= 100; m /= 10 {
		scale *= 10
	}
	return n / scale * scale
}

func commas(n int) string {
	s := strconv.Itoa(n)
	out := ""
	for len(s) > 3 {
		out = "," + s[len(s)-3:] + out
		s = s[:len(s)-3]
	}
	return s + out
}

// safeCount: the count to use, why it was lowered, or why nothing fits.
func safeCount(requested int, l limits) (int, string, string) {
	if l.MemAvailableBytes == nil {
		return requested, "", ""
	}
	fit := int(float64(*l.MemAvailableBytes) * memoryShare / goroutineBytes)
	if requested <= fit {
		return requested, "", ""
	}
	why := fmt.Sprintf("%.1f GiB of available memory at %d KiB per goroutine leaves room for about %s goroutines",
		float64(*l.MemAvailableBytes)/(1<<30), goroutineBytes/1024, commas(fit))
	floor := requested
	if floor > minimumCount {
		floor = minimumCount
	}
	if fit < floor {
		return requested, "", fmt.Sprintf("%s goroutines alive at once do not fit on this machine, not even %s: %s",
			commas(requested), commas(floor), why)
	}
	return roundDown(fit), fmt.Sprintf("%s goroutines alive at once do not fit: %s", commas(requested), why), ""
}
