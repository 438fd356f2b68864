// Command tour runs mgmtkit's LCM operations end to end against the
// simulated cloud (package internal/sim): an OpenStack tenant whose Heat
// is a fake over real HTTP and whose VMs are fake Ubuntu hosts reached over
// real SSH on loopback addresses.
//
//	go run ./examples/tour                      # every scenario
//	go run ./examples/tour -scenario scale      # one spec's operations
//	go run ./examples/tour -request req.json    # your InstantiateVnfRequest
//	go run ./examples/tour -package ./my-csar   # your VNF package directory
//	go run ./examples/tour -json                # a machine-readable report
//	go run ./examples/tour -workers 5 -masters 1  # other cluster sizes
//	go run ./examples/tour -v                   # each host's steps too
//	go run ./examples/tour -plan                # each hook's dry run first, checked against the run
//
// For each scenario it builds the VNFs the spec describes from the spec's
// sample request, prints the topology Heat reports, and runs the
// operations: each hook resolves its targets through package heat and acts
// on them over SSH. It prints progress per host and step and a summary.
//
// Before a scenario runs anything, it validates every request body the
// scenario uses, with the drivers' decoders and for what the scenario
// needs (the cir scenario, for one, needs
// k8s_cluster_installation_param.private_registry_connection_info). The
// exit status is 0 only when every operation of every scenario chosen ran
// and passed; 1 when an operation failed (the scenario's later operations
// are reported as skipped); 2 on bad flags or input, or when validation
// rejected a scenario (each problem with its path; nothing ran on that
// scenario's VNFs), or when a hook refused the parameters once it saw
// the VMs, before changing anything (a Service network holding the
// nodes' addresses, a kubernetes_version the package repository lacks:
// each problem with its path; the scenario's later operations are
// reported as skipped).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// Exit statuses.
const (
	exitOK     = 0 // every operation of every scenario chosen ran and passed
	exitFailed = 1 // an operation failed (and those after it were skipped)
	// exitUsage is bad flags or an unreadable input: nothing ran.
	exitUsage = 2
	// exitRejected is a request body that lacks what a scenario needs or
	// that its drivers reject, before anything ran on that scenario's VNFs
	// or in a hook before it changed anything (and no operation of
	// another scenario failed).
	exitRejected = 2
)

// options are the parsed flags.
type options struct {
	scenarios []string
	request   string
	pkgDir    string
	json      bool
	verbose   bool
	plan      bool
	// workers and masters replace each cluster's own numbers when not 0.
	workers, masters int
	timeout          time.Duration
}

// maxWorkers bounds -workers: every worker is a fake VM with its own SSH
// server; the tour's pod network (the sample package's flannel, a /16)
// would hold 256 nodes.
const maxWorkers = 20

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fset := flag.NewFlagSet("tour", flag.ContinueOnError)
	fset.SetOutput(stderr)
	scenario := fset.String("scenario", "all", "which spec's operations to run: "+strings.Join(scenarioNames(), ", ")+", or all")
	fset.StringVar(&o.request, "request", "", "a SOL003 InstantiateVnfRequest JSON `file` whose additionalParams drive the Kubernetes cluster instantiate (default: the spec's sample)")
	fset.StringVar(&o.pkgDir, "package", "", "a VNF package `directory` (default: the sample package embedded in the tour)")
	fset.IntVar(&o.workers, "workers", 0, fmt.Sprintf("`N` workers in every Kubernetes cluster, 1 to %d (default: each scenario's, 2)", maxWorkers))
	fset.IntVar(&o.masters, "masters", 0, "1 or 3 masters in every Kubernetes cluster (default: each scenario's: 3, and the pv sample's 1)")
	fset.BoolVar(&o.json, "json", false, "print a machine-readable JSON report instead of progress")
	fset.BoolVar(&o.plan, "plan", false, "before each hook runs, print its dry run (lcm.Plan: per host and step, what it would change; only read-only commands run), then check that it changed nothing and that the run agreed with it")
	fset.BoolVar(&o.verbose, "v", false, "also print each host's steps as they finish")
	fset.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up after this long")
	fset.Usage = func() {
		fmt.Fprintf(stderr, "usage: go run ./examples/tour [flags]\n\nRuns mgmtkit's LCM operations against the simulated cloud.\n\n")
		fset.PrintDefaults()
	}
	if err := fset.Parse(args); err != nil {
		return o, err
	}
	if fset.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fset.Arg(0))
	}
	if o.workers != 0 && (o.workers < 1 || o.workers > maxWorkers) {
		return o, fmt.Errorf("-workers: %d, want 1 to %d", o.workers, maxWorkers)
	}
	if o.masters != 0 && o.masters != 1 && o.masters != 3 {
		return o, fmt.Errorf("-masters: %d, want 1 or 3 (etcd needs an odd number; mgmtkit's HA control plane is three masters)", o.masters)
	}
	if *scenario == "all" {
		o.scenarios = scenarioNames()
	} else {
		for _, s := range strings.Split(*scenario, ",") {
			if !slices.Contains(scenarioNames(), s) {
				return o, fmt.Errorf("-scenario: unknown scenario %q (want %s or all)", s, strings.Join(scenarioNames(), ", "))
			}
			o.scenarios = append(o.scenarios, s)
		}
	}
	return o, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return exitUsage
	}
	in, err := loadInputs(o)
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return exitUsage
	}
	defer in.pkg.Close()
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()

	t, err := newTour(ctx, o, in, stdout)
	if err != nil {
		fmt.Fprintln(stderr, "tour:", err)
		return exitFailed
	}
	defer t.close()
	for _, name := range o.scenarios {
		t.runScenario(ctx, name)
	}
	t.finish()
	if o.json {
		if err := t.writeJSON(stdout); err != nil {
			fmt.Fprintln(stderr, "tour:", err)
			return exitFailed
		}
	}
	return t.report.exitCode()
}

// inputs are the request bodies and the VNF package the tour runs with.
type inputs struct {
	pkg *lcm.Package
	// clusterRequest is the InstantiateVnfRequest of the Kubernetes
	// cluster, from -request or nil for each scenario's sample.
	clusterRequest *lcm.InstantiateVnfRequest
	clusterFile    string
}

func loadInputs(o options) (inputs, error) {
	var in inputs
	if o.request != "" {
		b, err := os.ReadFile(o.request)
		if err != nil {
			return in, fmt.Errorf("-request: %w", err)
		}
		req, err := decodeInstantiate(b)
		if err != nil {
			return in, fmt.Errorf("-request %s: %w", o.request, err)
		}
		in.clusterRequest, in.clusterFile = req, o.request
	}
	in.pkg = lcm.NewPackage(samples.VNFPackage())
	if o.pkgDir != "" {
		var err error
		if in.pkg, err = lcm.OpenPackage(o.pkgDir); err != nil {
			return in, fmt.Errorf("-package: %w", err)
		}
	}
	return in, nil
}

// decodeInstantiate decodes an InstantiateVnfRequest body and checks that
// it has what the tour needs: Kubernetes cluster additionalParams.
func decodeInstantiate(b []byte) (*lcm.InstantiateVnfRequest, error) {
	var req lcm.InstantiateVnfRequest
	if err := json.Unmarshal(b, &req); err != nil {
		return nil, err
	}
	if len(req.AdditionalParams) == 0 {
		return nil, errors.New("additionalParams is missing")
	}
	return &req, nil
}
