package main

// `oracle first-fit`: the benchmark protocol of bench/workloads.py (protocol.yaml's
// "procedure"): for each unallocated claim in file order, one new allocator from
// the current allocated state, Allocate(node, [claim]) on every node in
// nodes.yaml order, the first success wins and its devices count as allocated.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/dynamic-resource-allocation/structured"
)

// protocol is the part of protocol.yaml the run needs.
type protocol struct {
	Workload        string         `json:"workload"`
	Mode            string         `json:"mode"`
	FeatureGatesOn  []string       `json:"featureGatesOn"`
	FeatureGatesOff []string       `json:"featureGatesOff"`
	CapSeconds      *float64       `json:"capSeconds"`
	Expected        map[string]any `json:"expected"`
}

// readAll decodes every document of a multi-document YAML (or JSON) file.
func readAll[T any](path string) ([]*T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(bufio.NewReaderSize(f, 1<<20), 1<<16)
	var out []*T
	for {
		obj := new(T)
		if err := dec.Decode(obj); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", path, len(out)+1, err)
		}
		out = append(out, obj)
	}
}

type unplacedClaim struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// firstFitReport is the summary printed on stdout (counts named as protocol.yaml's "expected").
type firstFitReport struct {
	Workload               string          `json:"workload"`
	Mode                   string          `json:"mode"`
	Version                string          `json:"version"`
	GoMaxProcs             int             `json:"gomaxprocs"`
	ClaimsPlaced           int             `json:"claimsPlaced"`
	ClaimsUnplaced         int             `json:"claimsUnplaced"`
	Errors                 int             `json:"errors"`
	AllocateCalls          int             `json:"allocateCalls"`
	SuccessfulCalls        int             `json:"successfulCalls"`
	FailedCalls            int             `json:"failedCalls"`
	Seconds                float64         `json:"seconds"`
	ClaimsPlacedPerSecond  float64         `json:"claimsPlacedPerSecond"`
	AllocateCallsPerSecond float64         `json:"allocateCallsPerSecond"`
	Steps                  int64           `json:"steps"`
	CapHit                 bool            `json:"capHit"`
	MatchesExpected        *bool           `json:"matchesExpected,omitempty"`
	Unplaced               []unplacedClaim `json:"unplaced"`
}

func cmdFirstFit(args []string) error {
	fs := flag.NewFlagSet("first-fit", flag.ContinueOnError)
	dir := fs.String("dir", "", "workload directory written by bench/workloads.py (required)")
	placementsOut := fs.String("placements-out", "", "write one line per placed claim, as `dralloc simulate --placements-out` does")
	capFlag := fs.Duration("cap", 0, "cancel one Allocate call after this long (default: protocol.yaml capSeconds, else none)")
	limit := fs.Int("limit", 0, "place only the first N unallocated claims (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *dir == "" || fs.NArg() > 0 {
		return fmt.Errorf("first-fit: --dir DIR is required and nothing else may follow")
	}
	protos, err := readAll[protocol](filepath.Join(*dir, "protocol.yaml"))
	if err != nil {
		return err
	}
	if len(protos) != 1 {
		return fmt.Errorf("%s: want one protocol document, got %d", filepath.Join(*dir, "protocol.yaml"), len(protos))
	}
	proto := protos[0]
	features, err := featuresOf(proto.FeatureGatesOn)
	if err != nil {
		return fmt.Errorf("protocol.yaml featureGatesOn: %w", err)
	}
	classes, err := readAll[resourceapi.DeviceClass](filepath.Join(*dir, "deviceclasses.yaml"))
	if err != nil {
		return err
	}
	nodes, err := readAll[v1.Node](filepath.Join(*dir, "nodes.yaml"))
	if err != nil {
		return err
	}
	apiSlices, err := readAll[resourceapi.ResourceSlice](filepath.Join(*dir, "resourceslices.yaml"))
	if err != nil {
		return err
	}
	slices, err := allocatorSlices(apiSlices)
	if err != nil {
		return err
	}
	claims, err := readAll[resourceapi.ResourceClaim](filepath.Join(*dir, "resourceclaims.yaml"))
	if err != nil {
		return err
	}
	callCap := *capFlag
	if callCap == 0 && proto.CapSeconds != nil {
		callCap = time.Duration(*proto.CapSeconds * float64(time.Second))
	}

	if err := allocatedStateError(claims, features.ConsumableCapacity); err != nil {
		return fmt.Errorf("gather allocation state: %w", err)
	}
	state := newAllocatedState()
	var work []*resourceapi.ResourceClaim
	for _, c := range withDefaults(claims) {
		if c.Status.Allocation != nil {
			addAllocation(&state, c.Status.Allocation, features.ConsumableCapacity)
		} else if *limit == 0 || len(work) < *limit {
			work = append(work, c)
		}
	}
	lister := newClassLister(classes)
	cache := celCacheFor(features)
	ctx := context.Background()

	report := firstFitReport{Workload: proto.Workload, Mode: proto.Mode, Version: draVersion(),
		GoMaxProcs: runtime.GOMAXPROCS(0), Unplaced: []unplacedClaim{}}
	var placements []string
	start := time.Now()
	for _, claim := range work {
		allocator, err := structured.NewAllocator(ctx, features, state, lister, slices, cache)
		if err != nil {
			return fmt.Errorf("claim %s: NewAllocator: %w", claim.Name, err)
		}
		placed, fatal, reason := false, false, "no node fits"
		for _, n := range nodes {
			result, err := allocateCapped(ctx, allocator, n, claim, callCap)
			report.AllocateCalls++
			switch {
			case errors.Is(err, context.DeadlineExceeded):
				report.CapHit = true
				reason = fmt.Sprintf("cap of %s hit on node %s", callCap, n.Name)
			case errors.Is(err, structured.ErrFailedAllocationOnNode):
				reason = fmt.Sprintf("node %s: %v", n.Name, err)
			case err != nil:
				// kube-scheduler's DynamicResources plugin aborts the pod's cycle on such an error.
				reason, fatal = "error: "+err.Error(), true
				report.Errors++
			case result != nil:
				placed = true
				addAllocation(&state, &result[0], features.ConsumableCapacity)
				placements = append(placements, placementLine(claim.Name, n.Name, &result[0]))
			}
			if placed || fatal {
				break
			}
		}
		_, steps := allocatorInfo(allocator)
		report.Steps += steps
		if placed {
			report.ClaimsPlaced++
			report.SuccessfulCalls++
		} else {
			report.ClaimsUnplaced++
			report.Unplaced = append(report.Unplaced, unplacedClaim{claim.Name, reason})
		}
	}
	report.Seconds = time.Since(start).Seconds()
	report.FailedCalls = report.AllocateCalls - report.SuccessfulCalls
	if report.Seconds > 0 {
		report.ClaimsPlacedPerSecond = float64(report.ClaimsPlaced) / report.Seconds
		report.AllocateCallsPerSecond = float64(report.AllocateCalls) / report.Seconds
	}
	if *limit == 0 && proto.Expected != nil {
		report.MatchesExpected = matchesExpected(&report, proto.Expected)
	}

	if *placementsOut != "" {
		if err := os.WriteFile(*placementsOut, []byte(strings.Join(append(placements, ""), "\n")), 0o644); err != nil {
			return fmt.Errorf("--placements-out: %w", err)
		}
	}
	fmt.Fprintf(os.Stderr, "oracle first-fit %s (dynamic-resource-allocation %s, GOMAXPROCS=%d): placed %d of %d claims "+
		"(%d errors), %d Allocate calls (%d ok, %d failed), %d search steps, placement-only %.3f s: %.1f claims placed/s, %.0f calls/s\n",
		proto.Workload, report.Version, report.GoMaxProcs, report.ClaimsPlaced, len(work), report.Errors,
		report.AllocateCalls, report.SuccessfulCalls, report.FailedCalls, report.Steps, report.Seconds,
		report.ClaimsPlacedPerSecond, report.AllocateCallsPerSecond)
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(report)
}

func allocateCapped(ctx context.Context, a structured.Allocator, n *v1.Node, claim *resourceapi.ResourceClaim,
	callCap time.Duration) ([]resourceapi.AllocationResult, error) {
	if callCap > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, callCap)
		defer cancel()
	}
	return a.Allocate(ctx, n, []*resourceapi.ResourceClaim{claim})
}

// placementLine is `dralloc simulate --placements-out`'s line: the claim, the
// node, then request=driver/pool/device per result in result order (the
// driver too: two drivers often publish pools of the same name).
func placementLine(claim, node string, result *resourceapi.AllocationResult) string {
	parts := []string{claim, node}
	for _, r := range result.Devices.Results {
		parts = append(parts, fmt.Sprintf("%s=%s/%s/%s", r.Request, r.Driver, r.Pool, r.Device))
	}
	return strings.Join(parts, " ")
}

// matchesExpected compares the counts protocol.yaml expects (fill mode) with the run's.
func matchesExpected(r *firstFitReport, expected map[string]any) *bool {
	got := map[string]int{
		"claimsPlaced": r.ClaimsPlaced, "claimsUnplaced": r.ClaimsUnplaced, "allocateCalls": r.AllocateCalls,
		"successfulCalls": r.SuccessfulCalls, "failedCalls": r.FailedCalls,
	}
	compared, ok := false, true
	for key, want := range expected {
		n, isNumber := want.(float64)
		have, known := got[key]
		if !isNumber || !known {
			continue
		}
		compared = true
		ok = ok && int(n) == have
	}
	if !compared {
		return nil
	}
	return &ok
}
