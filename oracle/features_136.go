//go:build dra136

package main

// The 1.36 allocator has none of 1.37's alpha gates, and Nodes declare no features
// (features_137.go is the 1.37 side).

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
)

var releaseGateNames []string

func withReleaseGates(f structured.Features, _ sets.Set[string]) structured.Features {
	return f
}

func withDeclaredFeatures(n *v1.Node, declared []string) (*v1.Node, error) {
	if len(declared) > 0 {
		return nil, fmt.Errorf("node.declaredFeatures: Kubernetes 1.36 has no node declared features")
	}
	return n, nil
}
