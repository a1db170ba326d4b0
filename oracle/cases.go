package main

// One conformance case (tests/conformance/README.md's vector format) and what
// the allocator needs from it: features from gate names, the allocated state
// from already-allocated claims, a class lister, the node.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	"sigs.k8s.io/yaml"
)

// Case is one vector. Top-level fields the oracle does not use (description,
// upstream, tags, versions, expect, anything a tool adds) are ignored, so a
// vector file can be passed as it is; inside node and objects an unknown field
// is an input error, which catches misspelled object fields instead of
// silently dropping them.
type Case struct {
	Name     string   `json:"name"`
	Features []string `json:"features"`
	Node     struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
		// DeclaredFeatures is node.status.declaredFeatures (1.37; e.g. DRAOptionalNodeOperations).
		DeclaredFeatures []string `json:"declaredFeatures,omitempty"`
	} `json:"node"`
	Objects struct {
		DeviceClasses   []*resourceapi.DeviceClass   `json:"deviceClasses"`
		ResourceSlices  []*resourceapi.ResourceSlice `json:"resourceSlices"`
		AllocatedClaims []*resourceapi.ResourceClaim `json:"allocatedClaims"`
		Claims          []*resourceapi.ResourceClaim `json:"claims"`
	} `json:"objects"`
}

// parseCase reads one case from YAML or JSON (a vector file is one YAML
// document that starts with "---").
func parseCase(data []byte) (*Case, error) {
	data = bytes.TrimPrefix(bytes.TrimSpace(data), []byte("---\n"))
	asJSON, err := yaml.YAMLToJSON(data)
	if err != nil {
		return nil, err
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(asJSON, &top); err != nil {
		return nil, err
	}
	var c Case
	for key, into := range map[string]any{"name": &c.Name, "features": &c.Features, "node": &c.Node, "objects": &c.Objects} {
		raw, ok := top[key]
		if !ok {
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(into); err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
	}
	if c.Node.Name == "" {
		return nil, fmt.Errorf("node.name: required")
	}
	return &c, nil
}

// gates maps the vectors' gate names to the allocator's features, built as
// kube-scheduler's AllocatorFeatures builds them from its feature gates
// (DeviceBindingAndStatus needs both of its gates).
var gateNames = []string{
	"DRAAdminAccess", "DRAPrioritizedList", "DRAPartitionableDevices", "DRADeviceTaints",
	"DRAConsumableCapacity", "DRADeviceBindingConditions", "DRAResourceClaimDeviceStatus",
	"DRAListTypeAttributes",
}

// featuresOf returns the features with exactly the named gates on.
func featuresOf(enabled []string) (structured.Features, error) {
	on := sets.New(enabled...)
	known := append(append([]string{}, gateNames...), releaseGateNames...)
	if unknown := on.Difference(sets.New(known...)); unknown.Len() > 0 {
		return structured.Features{}, fmt.Errorf("unknown feature gate(s) %v; known: %v", sets.List(unknown), known)
	}
	return withReleaseGates(structured.Features{
		AdminAccess:            on.Has("DRAAdminAccess"),
		PrioritizedList:        on.Has("DRAPrioritizedList"),
		PartitionableDevices:   on.Has("DRAPartitionableDevices"),
		DeviceTaints:           on.Has("DRADeviceTaints"),
		DeviceBindingAndStatus: on.Has("DRADeviceBindingConditions") && on.Has("DRAResourceClaimDeviceStatus"),
		ConsumableCapacity:     on.Has("DRAConsumableCapacity"),
		ListTypeAttributes:     on.Has("DRAListTypeAttributes"),
	}, on), nil
}

// newAllocatedState is the empty state kube-scheduler starts from.
func newAllocatedState() structured.AllocatedState {
	return structured.AllocatedState{
		AllocatedDevices:         sets.New[structured.DeviceID](),
		AllocatedSharedDeviceIDs: sets.New[sharedDeviceKey](),
		AggregatedCapacity:       structured.NewConsumedCapacityCollection(),
	}
}

// addAllocation records one allocation's devices the way kube-scheduler's
// claim tracker does: admin-access results are not "in use"; with consumable
// capacity on, a result with a shareID is one share of a shared device (its
// consumed capacity is added to the device's total); every other result makes
// the device exclusively in use. With the gate off every result is exclusive.
// (1.38 keeps the shared device's ID without the share ID: sharedKey.)
func addAllocation(state *structured.AllocatedState, allocation *resourceapi.AllocationResult, consumableCapacity bool) {
	if allocation == nil {
		return
	}
	for _, r := range allocation.Devices.Results {
		if r.AdminAccess != nil && *r.AdminAccess {
			continue
		}
		id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
		if consumableCapacity && r.ShareID != nil {
			state.AllocatedSharedDeviceIDs.Insert(sharedKey(id, r.ShareID))
			if r.ConsumedCapacity != nil {
				state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
			}
			continue
		}
		state.AllocatedDevices.Insert(id)
	}
}

// classLister serves DeviceClasses from memory, answering NotFound as the
// scheduler's informer-backed lister does.
type classLister struct {
	byName map[string]*resourceapi.DeviceClass
	sorted []*resourceapi.DeviceClass
}

func newClassLister(classes []*resourceapi.DeviceClass) *classLister {
	l := &classLister{byName: map[string]*resourceapi.DeviceClass{}}
	for _, c := range classes {
		l.byName[c.Name] = c
	}
	for _, c := range l.byName {
		l.sorted = append(l.sorted, c)
	}
	sort.Slice(l.sorted, func(i, j int) bool { return l.sorted[i].Name < l.sorted[j].Name })
	return l
}

func (l *classLister) List() ([]*resourceapi.DeviceClass, error) { return l.sorted, nil }

func (l *classLister) Get(name string) (*resourceapi.DeviceClass, error) {
	if c, ok := l.byName[name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: "resource.k8s.io", Resource: "deviceclasses"}, name)
}

// node builds the Node object the allocator matches slices against.
func node(name string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// withDefaults gives claims what the API server would: the default namespace
// and a UID (the scheduler's claims always have one; the allocator only logs it).
func withDefaults(claims []*resourceapi.ResourceClaim) []*resourceapi.ResourceClaim {
	for _, c := range claims {
		if c.Namespace == "" {
			c.Namespace = "default"
		}
		if c.UID == "" {
			c.UID = types.UID("uid-" + c.Namespace + "-" + c.Name)
		}
	}
	return claims
}
