// Command oracle runs the upstream structured allocator
// (k8s.io/dynamic-resource-allocation/structured, called as kube-scheduler's
// DynamicResources plugin calls it) on dralloc's inputs, so dralloc's answers
// can be checked against upstream's:
//
//	oracle case [FILE|-]         one conformance case (YAML or JSON) -> one outcome (JSON)
//	oracle batch                 JSON lines: one case per input line -> one outcome per output line
//	oracle first-fit --dir DIR   the node-by-node protocol of the allocator benchmarks
//	oracle version               the allocator release built in
//
// Exit status: 0 when the command ran (whatever the allocator answered), 2 on
// bad usage or unreadable input.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"k8s.io/dynamic-resource-allocation/structured"
)

const usage = `usage:
  oracle case [--timeout D] [--allocator A] [FILE|-]
                                          one case (vector YAML or JSON) -> outcome JSON on stdout
  oracle batch [--timeout D] [-j N] [--allocator A]
                                          JSON lines: a case per stdin line -> an outcome per stdout line
      --allocator stable|incubating|experimental: only these implementations may be picked
      (comma-separated; default: the first that supports the features, as kube-scheduler)
  oracle first-fit --dir DIR [--placements-out FILE] [--cap D]
                                          place every unallocated claim of a workload directory
                                          (bench/workloads.py) first-fit, node by node; summary JSON
                                          on stdout, timing on stderr
  oracle version                          the k8s.io/dynamic-resource-allocation release built in
  oracle cel-symbols                      (1.38 build) the names cel-go's checker suggests from, JSON
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch cmd, args := os.Args[1], os.Args[2:]; cmd {
	case "case":
		err = cmdCase(args)
	case "batch":
		err = cmdBatch(args)
	case "first-fit":
		err = cmdFirstFit(args)
	case "cel-symbols":
		err = cmdCelSymbols()
	case "version":
		fmt.Printf(`{"dynamicResourceAllocation": %q, "go": %q}`+"\n", draVersion(), runtime.Version())
	case "-h", "--help", "help":
		fmt.Print(usage)
	default:
		err = fmt.Errorf("unknown command %q\n%s", cmd, usage)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "oracle: %v\n", err)
		os.Exit(2)
	}
}

// draVersion is the release of k8s.io/dynamic-resource-allocation linked in.
func draVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "k8s.io/dynamic-resource-allocation" {
				if dep.Replace != nil {
					return dep.Replace.Version
				}
				return dep.Version
			}
		}
	}
	return "unknown"
}

func cmdCase(args []string) error {
	fs := flag.NewFlagSet("case", flag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "cancel the search after this long (status timeout); 0: never")
	only := allocatorFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	onlyAllocators(*only)
	path := "-"
	switch fs.NArg() {
	case 0:
	case 1:
		path = fs.Arg(0)
	default:
		return fmt.Errorf("case: one FILE at most")
	}
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return err
	}
	c, err := parseCase(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	enc := json.NewEncoder(os.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(runCase(context.Background(), c, *timeout))
}

// cmdBatch answers JSON lines with JSON lines, in input order. A line that is
// not a case gets an input-error outcome; the batch goes on. With -j N cases
// run N at a time (answers still in input order).
func cmdBatch(args []string) error {
	fs := flag.NewFlagSet("batch", flag.ContinueOnError)
	timeout := fs.Duration("timeout", time.Minute, "cancel one case's search after this long (status timeout); 0: never")
	jobs := fs.Int("j", 1, "cases run at the same time")
	only := allocatorFlag(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	onlyAllocators(*only)
	if fs.NArg() > 0 {
		return fmt.Errorf("batch: reads stdin, takes no file")
	}
	in := bufio.NewReaderSize(os.Stdin, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	type slot struct{ done chan []byte }
	pending := make(chan slot, 4*max(*jobs, 1))
	sem := make(chan struct{}, max(*jobs, 1))
	var writeErr error
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the writer: answers in input order, flushed per line so a reader can stream
		defer wg.Done()
		for s := range pending {
			line := <-s.done
			if writeErr == nil {
				if _, writeErr = out.Write(line); writeErr == nil {
					writeErr = out.Flush()
				}
			}
		}
	}()
	var readErr error
	for {
		line, err := in.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s := slot{done: make(chan []byte, 1)}
			pending <- s
			sem <- struct{}{}
			go func(line []byte) {
				defer func() { <-sem }()
				s.done <- answerLine(line, *timeout)
			}(line)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			readErr = err
			break
		}
	}
	close(pending)
	wg.Wait()
	if readErr != nil {
		return readErr
	}
	return writeErr
}

func answerLine(line []byte, timeout time.Duration) []byte {
	var o Outcome
	if c, err := parseCase(line); err != nil {
		o = inputError(Outcome{Claims: []ClaimResult{}, Version: draVersion()}, err)
	} else {
		o = runCase(context.Background(), c, timeout)
	}
	data, err := json.Marshal(o)
	if err != nil {
		data, _ = json.Marshal(inputError(Outcome{Name: o.Name, Claims: []ClaimResult{}}, err))
	}
	return append(data, '\n')
}

func allocatorFlag(fs *flag.FlagSet) *string {
	return fs.String("allocator", "", "only these allocator implementations (comma-separated: stable, incubating, experimental)")
}

// onlyAllocators restricts NewAllocator's choice (structured.EnableAllocators), e.g. to
// ask the sorted incubating implementation about a case the stable one would get.
func onlyAllocators(list string) {
	if list != "" {
		structured.EnableAllocators(strings.Split(list, ",")...)
	}
}
