//go:build !dra136 && !dra138

package main

// What only the 1.37 allocator knows: its alpha gates and the node's declared features.
// The 1.36 build (-tags dra136, `make oracle ORACLE_DRA_VERSION=v0.36`) uses features_136.go,
// the 1.38 build (-tags dra138) features_138.go.

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

// releaseGateNames are the gates of this release beyond gateNames.
var releaseGateNames = []string{
	"DRADeviceCompatibilityGroups", "DRAFractionalCapacityRange", "DRAOptionalNodeOperations", "DRADerivedAttributes",
}

// withReleaseGates sets the features only this release has.
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
