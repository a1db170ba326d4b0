//go:build !dra138

package main

// How the 1.36 and 1.37 builds hand slices and the allocated state to the allocator
// (features_138.go is the 1.38 side): NewAllocator takes the API's ResourceSlices, a share
// of a shared device is recorded with its share ID, and the claim tracker checks nothing
// about allocated claims.

import (
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
)

// allocatorSlice is what NewAllocator takes.
type allocatorSlice = resourceapi.ResourceSlice

func allocatorSlices(slices []*resourceapi.ResourceSlice) ([]*allocatorSlice, error) {
	return slices, nil
}

// sharedDeviceKey is the element type of AllocatedState.AllocatedSharedDeviceIDs.
type sharedDeviceKey = structured.SharedDeviceID

func sharedKey(id structured.DeviceID, shareID *types.UID) sharedDeviceKey {
	return structured.MakeSharedDeviceID(id, shareID)
}

func allocatedStateError([]*resourceapi.ResourceClaim, bool) error { return nil }
