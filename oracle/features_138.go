//go:build dra138

package main

// The 1.38 build (-tags dra138, go.138.mod, `make oracle ORACLE_DRA_VERSION=v0.38`):
// k8s.io/dynamic-resource-allocation v0.38.0-beta.0, as kube-scheduler 1.38 calls it.
//
// The allocator's Features struct has the same fields as in 1.37, and kube-scheduler
// fills it from the same gates (AllocatorFeatures), so the gates map as in features_137.go.
// Several of them are GA in 1.38 (DRAConsumableCapacity, DRAFractionalCapacityRange) or
// GA and locked on (DRAPartitionableDevices, DRADeviceBindingConditions, DRADeviceTaints;
// DRAAdminAccess, DRAPrioritizedList and DRAResourceClaimDeviceStatus were already locked);
// the oracle still turns on only the gates a case lists, so a case can ask the library
// about a combination a 1.38 kube-scheduler no longer runs with.
//
// What is new for the caller in 1.38 (release_pre138.go is the 1.36/1.37 side):
//   - NewAllocator takes the library's own slice type (k8s.io/dynamic-resource-allocation/api,
//     interned strings); kube-scheduler's informer converts each ResourceSlice once.
//   - AllocatedState.AllocatedSharedDeviceIDs holds device IDs: the claim tracker drops the
//     share ID (GetDeviceID) before handing the state over.
//   - With DRAConsumableCapacity on, the claim tracker refuses to gather the allocated state
//     while an allocated claim has a negative consumed capacity (GatherAllocatedState returns
//     the error and PreFilter fails).

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	draapi "k8s.io/dynamic-resource-allocation/api"
	"k8s.io/dynamic-resource-allocation/structured"
)

// releaseGateNames are the gates of this release beyond gateNames.
var releaseGateNames = []string{
	"DRADeviceCompatibilityGroups", "DRAFractionalCapacityRange", "DRAOptionalNodeOperations", "DRADerivedAttributes",
}

// withReleaseGates sets the features gateNames does not cover.
func withReleaseGates(f structured.Features, on sets.Set[string]) structured.Features {
	f.CompatibilityGroups = on.Has("DRADeviceCompatibilityGroups")
	f.FractionalCapacityRange = on.Has("DRAFractionalCapacityRange")
	f.OptionalNodeOperations = on.Has("DRAOptionalNodeOperations")
	f.DerivedAttributes = on.Has("DRADerivedAttributes")
	return f
}

// withDeclaredFeatures sets node.status.declaredFeatures (what the kubelet says it supports).
func withDeclaredFeatures(n *v1.Node, declared []string) (*v1.Node, error) {
	n.Status.DeclaredFeatures = declared
	return n, nil
}

// allocatorSlice is what NewAllocator takes.
type allocatorSlice = draapi.ResourceSlice

// allocatorSlices converts the slices as kube-scheduler's ResourceSlice informer does.
func allocatorSlices(in []*resourceapi.ResourceSlice) ([]*allocatorSlice, error) {
	out := make([]*allocatorSlice, len(in))
	for i, s := range in {
		out[i] = new(draapi.ResourceSlice)
		if err := draapi.Convert_v1_ResourceSlice_To_api_ResourceSlice(s, out[i], nil); err != nil {
			return nil, fmt.Errorf("resourceSlices[%d] %s: %w", i, s.Name, err)
		}
	}
	return out, nil
}

// sharedDeviceKey is the element type of AllocatedState.AllocatedSharedDeviceIDs.
type sharedDeviceKey = structured.DeviceID

func sharedKey(id structured.DeviceID, _ *types.UID) sharedDeviceKey {
	return id
}

// allocatedStateError is the claim tracker's check on allocated claims with
// DRAConsumableCapacity on (consumedCapacityError and getCapacities in
// pkg/scheduler/framework/plugins/dynamicresources/allocateddevices.go): a negative
// consumed capacity in any result is an error; with several such claims the first
// message in sorted order is returned, with how many more there are.
func allocatedStateError(claims []*resourceapi.ResourceClaim, consumableCapacity bool) error {
	if !consumableCapacity {
		return nil
	}
	var errs []string
	for _, claim := range claims {
		if claim.Status.Allocation == nil {
			continue
		}
	results:
		for _, r := range claim.Status.Allocation.Devices.Results {
			for _, name := range slices.Sorted(maps.Keys(r.ConsumedCapacity)) {
				if q := r.ConsumedCapacity[name]; q.Sign() < 0 {
					ns := claim.Namespace
					if ns == "" {
						ns = "default"
					}
					errs = append(errs, fmt.Sprintf("claim %s/%s, device %s: consumed capacity %q must not be negative, got %s",
						ns, claim.Name, structured.MakeDeviceID(r.Driver, r.Pool, r.Device), name, q.String()))
					break results
				}
			}
		}
	}
	switch slices.Sort(errs); len(errs) {
	case 0:
		return nil
	case 1:
		return fmt.Errorf("%s", errs[0])
	default:
		return fmt.Errorf("%s (and %d more claims with invalid consumed capacity)", errs[0], len(errs)-1)
	}
}
