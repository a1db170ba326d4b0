package main

// Running one case through the upstream allocator, and the outcome document.

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// Outcome is what `oracle case` prints. Status, Node, Claims and Message have
// the shape of `dralloc allocate -o json`; Expect has the shape of a vector's
// `expect` block, so an outcome can be compared with a vector or pasted into one.
type Outcome struct {
	Name string `json:"name,omitempty"`
	// allocated | unschedulable | error (the allocator failed) | timeout (the
	// search was cancelled at --timeout) | input-error (the case could not be read).
	Status  string        `json:"status"`
	Node    string        `json:"node"`
	Claims  []ClaimResult `json:"claims"`
	Message string        `json:"message"`
	// FailedOnNode: the error wraps ErrFailedAllocationOnNode, which
	// kube-scheduler treats as "this node does not fit" rather than a fatal error.
	FailedOnNode bool           `json:"failedOnNode,omitempty"`
	Expect       map[string]any `json:"expect,omitempty"`
	// Allocator is the implementation NewAllocator picked for the features
	// (stable, incubating, experimental); Steps its allocateOne invocations.
	Allocator string  `json:"allocator,omitempty"`
	Steps     int64   `json:"steps"`
	Seconds   float64 `json:"seconds"`
	Version   string  `json:"version"`
}

type ClaimResult struct {
	Namespace  string                        `json:"namespace"`
	Name       string                        `json:"name"`
	Allocation *resourceapi.AllocationResult `json:"allocation"`
}

type expectedResult struct {
	Claim      string                        `json:"claim"`
	Allocation *resourceapi.AllocationResult `json:"allocation"`
}

// celCaches holds one CEL cache per CEL feature set, shared by every case of a
// process: kube-scheduler keeps one (10 entries) for its whole life.
var celCaches = struct {
	sync.Mutex
	byFeatures map[cel.Features]*cel.Cache
}{byFeatures: map[cel.Features]*cel.Cache{}}

func celCacheFor(features structured.Features) *cel.Cache {
	key := cel.Features{
		EnableConsumableCapacity: features.ConsumableCapacity,
		EnableListTypeAttributes: features.ListTypeAttributes,
	}
	celCaches.Lock()
	defer celCaches.Unlock()
	c, ok := celCaches.byFeatures[key]
	if !ok {
		c = cel.NewCache(10, key)
		celCaches.byFeatures[key] = c
	}
	return c
}

// allocatorInfo names the implementation behind the public interface and
// reads its statistics, when it has them (incubating and experimental do).
func allocatorInfo(a structured.Allocator) (string, int64) {
	name := fmt.Sprintf("%T", a) // "*incubating.Allocator"
	name = strings.TrimSuffix(strings.TrimPrefix(name, "*"), ".Allocator")
	var steps int64
	if m := reflect.ValueOf(a).MethodByName("GetStats"); m.IsValid() && m.Type().NumIn() == 0 {
		if out := m.Call(nil); len(out) == 1 && out[0].Kind() == reflect.Struct {
			if f := out[0].FieldByName("NumAllocateOneInvocations"); f.IsValid() && f.CanInt() {
				steps = f.Int()
			}
		}
	}
	return name, steps
}

// runCase allocates the case's claims on its node, as the DynamicResources
// plugin does in PreFilter (allocator) and Filter (Allocate).
func runCase(ctx context.Context, c *Case, timeout time.Duration) Outcome {
	out := Outcome{Name: c.Name, Node: c.Node.Name, Claims: []ClaimResult{}, Version: draVersion()}
	features, err := featuresOf(c.Features)
	if err != nil {
		return inputError(out, err)
	}
	slices, err := allocatorSlices(c.Objects.ResourceSlices)
	if err != nil {
		return inputError(out, err)
	}
	if err := allocatedStateError(c.Objects.AllocatedClaims, features.ConsumableCapacity); err != nil {
		// PreFilter fails before it makes an allocator (1.38's claim tracker).
		out.Status, out.Message = "error", "gather allocation state: "+err.Error()
		out.Expect = map[string]any{"error": out.Message}
		return out
	}
	state := newAllocatedState()
	for _, claim := range c.Objects.AllocatedClaims {
		addAllocation(&state, claim.Status.Allocation, features.ConsumableCapacity)
	}
	claims := withDefaults(c.Objects.Claims)
	allocator, err := structured.NewAllocator(ctx, features, state, newClassLister(c.Objects.DeviceClasses),
		slices, celCacheFor(features))
	if err != nil {
		out.Status, out.Message = "error", err.Error()
		out.Expect = map[string]any{"error": err.Error()}
		return out
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	start := time.Now()
	n, err := withDeclaredFeatures(node(c.Node.Name, c.Node.Labels), c.Node.DeclaredFeatures)
	if err != nil {
		return inputError(out, err)
	}
	results, err := allocator.Allocate(ctx, n, claims)
	out.Seconds = time.Since(start).Seconds()
	out.Allocator, out.Steps = allocatorInfo(allocator)
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		out.Status, out.Message = "timeout", fmt.Sprintf("no answer within %s: %v", timeout, err)
	case err != nil:
		out.Status, out.Message = "error", err.Error()
		out.FailedOnNode = errors.Is(err, structured.ErrFailedAllocationOnNode)
		out.Expect = map[string]any{"error": err.Error()}
	case results == nil:
		out.Status = "unschedulable"
		out.Message = fmt.Sprintf("cannot allocate %d claim(s) on node %s", len(claims), c.Node.Name)
		out.Expect = map[string]any{"unschedulable": true}
	default:
		out.Status = "allocated"
		out.Message = fmt.Sprintf("allocated on node %s", c.Node.Name)
		expected := make([]expectedResult, 0, len(results))
		for i := range results {
			out.Claims = append(out.Claims, ClaimResult{claims[i].Namespace, claims[i].Name, &results[i]})
			expected = append(expected, expectedResult{claims[i].Name, &results[i]})
		}
		out.Expect = map[string]any{"results": expected}
	}
	return out
}

func inputError(out Outcome, err error) Outcome {
	out.Status, out.Message = "input-error", err.Error()
	return out
}
