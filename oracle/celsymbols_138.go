//go:build dra138

package main

// `oracle cel-symbols`: the names cel-go v0.33's checker suggests from when a selector names
// something undeclared ("did you mean 'format.date'?"). cel.Env builds that catalog from its
// functions, the standard library's types, its macros and its config's variables, container
// and imports (cel/env.go initChecker); here the same lists are read from the environment the
// DRA allocator compiles selectors in (stored expressions, all features on), so that dralloc
// can word the message as 1.38 does.

import (
	"encoding/json"
	"os"
	"sort"

	"cel.dev/cel-go/common/stdlib"
	dracel "k8s.io/dynamic-resource-allocation/cel"
)

func cmdCelSymbols() error {
	features := dracel.Features{EnableConsumableCapacity: true, EnableListTypeAttributes: true}
	compiled := dracel.GetCompiler(features).CompileCELExpression("true", dracel.Options{})
	if compiled.Error != nil {
		return compiled.Error
	}
	env := compiled.Environment
	names := map[string]string{}
	conf, err := env.ToConfig("")
	if err != nil {
		return err
	}
	for _, v := range conf.Variables {
		names[v.Name] = "variable"
	}
	for _, f := range conf.Functions {
		names[f.Name] = "function"
	}
	if conf.Container != "" {
		names[conf.Container] = "namespace"
	}
	for _, imp := range conf.Imports {
		names[imp.Name] = "namespace"
	}
	for name := range env.Functions() {
		names[name] = "function"
	}
	for _, t := range stdlib.Types() {
		names[t.Name()] = "type"
	}
	for _, m := range env.Macros() {
		names[m.Function()] = "macro"
	}
	list := make([]map[string]string, 0, len(names))
	for name, kind := range names {
		list = append(list, map[string]string{"name": name, "kind": kind})
	}
	sort.Slice(list, func(i, j int) bool { return list[i]["name"] < list[j]["name"] })
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", " ")
	return enc.Encode(map[string]any{"dynamicResourceAllocation": draVersion(), "symbols": list})
}
