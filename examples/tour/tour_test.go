package main

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mgmtkit/mgmtkit/internal/sim"
	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/samples"
)

func runTour(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	code = run(ctx, args, &out, &errb)
	return code, out.String(), errb.String()
}

// TestTourRunsEveryScenario is the tour's default story, parsed from
// -json, with one worker per cluster (-workers 1) to keep it short under
// the race detector: every operation ok.
func TestTourRunsEveryScenario(t *testing.T) {
	code, out, stderr := runTour(t, "-json", "-workers", "1")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the -json output is not a report: %v\n%s", err, out)
	}
	if r.Failed != 0 || r.Skipped != 0 || r.Rejected != 0 || r.Passed != len(r.Operations) || len(r.Operations) == 0 {
		t.Errorf("%d operations, %d passed, %d failed, %d skipped; %d scenarios rejected", len(r.Operations), r.Passed, r.Failed, r.Skipped, r.Rejected)
	}
	if len(r.Scenarios) != len(scenarioNames()) {
		t.Errorf("%d scenarios reported, want %d", len(r.Scenarios), len(scenarioNames()))
	}
	for _, sc := range r.Scenarios {
		if sc.Status != StatusOK || sc.Error != "" {
			t.Errorf("scenario %+v", sc)
		}
	}
	hooks := map[string]bool{}
	scenarios := map[string]bool{}
	for _, op := range r.Operations {
		hooks[op.Hook] = true
		scenarios[op.Scenario] = true
		if op.Duration <= 0 || strings.Contains(op.What, "check") && op.Commands < len(op.Hosts) {
			t.Errorf("operation %s %s %s on %d hosts: %d commands in %s", op.Scenario, op.VNF, op.Hook, len(op.Hosts), op.Commands, op.Duration)
		}
	}
	for _, h := range []lcm.Hook{lcm.InstantiateEnd, lcm.ScaleStart, lcm.ScaleEnd, lcm.HealStart, lcm.HealEnd} {
		if !hooks[string(h)] {
			t.Errorf("no %s operation", h)
		}
	}
	for _, s := range scenarioNames() {
		if !scenarios[s] {
			t.Errorf("scenario %s ran no operation", s)
		}
	}
	// registry VDU; cir 3+1; pv 1+1+storage +1; kubespray 3+1+LB+Ansible +1 -1; scale 3+1+storage +2 -1.
	if n, want := len(r.World.Hosts), 1+4+4+6+6; n != want {
		t.Errorf("%d hosts in the world, want %d", n, want)
	}
	for _, h := range r.World.Hosts {
		if h.VNF == "" {
			t.Errorf("host %s belongs to no VNF", h.Resource)
		}
	}
	// The registry VM's heal; pv: the storage server's heal; kubespray:
	// one scale-in, a worker's heal, the entire heal's 5 (masters, the
	// worker, the load balancer); scale: one scale-in, a worker's and a
	// master's heal, the entire heal's 6 (the masters, the scale-out's
	// two workers less the scale-in's one, the storage server).
	if want := 1 + 1 + (1 + 1 + 5) + (1 + 2 + 6); r.World.Retired != want {
		t.Errorf("%d retired hosts, want %d", r.World.Retired, want)
	}
	// The cir scenario ends with every node pulling from both registries.
	var pulls int
	for _, op := range r.Operations {
		if op.Scenario == "cir" && op.Hook == "check" && strings.Contains(op.What, "pull") {
			pulls++
			if !op.OK || len(op.Hosts) != 4 {
				t.Errorf("cir pull check: ok %v on %d hosts (%s)", op.OK, len(op.Hosts), op.Error)
			}
		}
	}
	if pulls != 1 {
		t.Errorf("%d cir pull checks, want 1", pulls)
	}
}

func TestTourHumanOutput(t *testing.T) {
	code, out, stderr := runTour(t, "-scenario", "scale")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"=== scale", "→ [1] scale-cluster vim:", "scale-in targets:", "NAME", "heal targets:", "Summary:", "SCENARIO", "the entire VNF", "VIM kubernetes_vim"} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "check-node") {
		t.Errorf("each host's steps are printed without -v:\n%s", out)
	}
	// -v adds each host's steps; -masters 1 turns the master's heal into
	// the refusal a single master gets.
	code, out, stderr = runTour(t, "-scenario", "scale", "-v", "-masters", "1", "-workers", "1")
	if code != exitOK {
		t.Fatalf("-v -masters 1: exit %d\n%s\n%s", code, out, stderr)
	}
	for _, want := range []string{"check-node", "heal the only master's VNFC: refused", "heal the entire VNF instead"} {
		if !strings.Contains(out, want) {
			t.Errorf("-v -masters 1: the output lacks %q:\n%s", want, out)
		}
	}
}

func TestTourInputs(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"flavourId": "simple"}`), 0o644)
	for _, args := range [][]string{
		{"-scenario", "nope"},
		{"-workers", "21"},
		{"-workers", "-1"},
		{"-masters", "2"},
		{"-request", filepath.Join(dir, "missing.json")},
		{"-request", bad},
		{"-package", filepath.Join(dir, "no-such-package")},
		{"extra"},
	} {
		if code, _, stderr := runTour(t, args...); code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q; want %d and a message", args, code, stderr, exitUsage)
		}
	}

	// A request from a file drives the cluster; a package from a directory.
	req, err := sim.WorkingRequest(samples.InstantiatePVCluster, "")
	if err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(dir, "req.json")
	os.WriteFile(good, req, 0o644)
	pkgDir := filepath.Join(dir, "package")
	if err := os.CopyFS(pkgDir, samples.VNFPackage()); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runTour(t, "-scenario", "pv", "-request", good, "-package", pkgDir, "-json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	storage := 0
	for _, h := range r.World.Hosts {
		if h.Role == lcm.RoleStorage {
			storage++
		}
	}
	if storage != 1 {
		t.Errorf("the pv cluster from the request has %d storage servers, want 1", storage)
	}
}

func TestAFailedOperationFailsTheTour(t *testing.T) {
	var out bytes.Buffer
	tr, err := newTour(context.Background(), options{}, inputs{}, &out)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.close()
	tr.operation(context.Background(), "x", "vnf", lcm.HealEnd, "fail", func(context.Context) ([]string, []string, error) {
		return []string{"a"}, nil, errors.New("boom")
	})
	if tr.report.Failed != 1 || tr.report.Operations[0].OK || tr.report.Operations[0].Status != StatusFailed || tr.report.Operations[0].Error != "boom" {
		t.Errorf("report %+v", tr.report)
	}
	if !strings.Contains(out.String(), "FAILED: boom") {
		t.Errorf("output %q", out.String())
	}
}

// decodeReport decodes the -json output and checks what every report
// must hold: each operation that is not ok says why, in its error, and its
// status is failed or skipped (skipped only after a failure in its
// scenario); the counts add up.
func decodeReport(t *testing.T, out string) Report {
	t.Helper()
	var r Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("the -json output is not a report: %v\n%s", err, out)
	}
	counts := map[string]int{}
	failedIn := map[string]bool{}
	for _, op := range r.Operations {
		counts[op.Status]++
		switch {
		case op.OK != (op.Status == StatusOK):
			t.Errorf("%s %s %s: ok %v, status %q", op.Scenario, op.VNF, op.Hook, op.OK, op.Status)
		case op.Status == StatusOK:
		case op.Status != StatusFailed && op.Status != StatusSkipped && op.Status != StatusRejected:
			t.Errorf("%s %s %s: status %q", op.Scenario, op.VNF, op.Hook, op.Status)
		case op.Error == "":
			t.Errorf("%s %s %s is %s without an error", op.Scenario, op.VNF, op.Hook, op.Status)
		case op.Status == StatusSkipped && (!failedIn[op.Scenario] || !strings.HasPrefix(op.Error, "not run: ")):
			t.Errorf("%s %s %s skipped with reason %q after no failure", op.Scenario, op.VNF, op.Hook, op.Error)
		case op.Status == StatusRejected && len(op.HostsChanged) != 0:
			t.Errorf("%s %s %s rejected after changing %v", op.Scenario, op.VNF, op.Hook, op.HostsChanged)
		}
		if op.Status == StatusFailed || op.Status == StatusRejected {
			failedIn[op.Scenario] = true
		}
	}
	if counts[StatusOK] != r.Passed || counts[StatusFailed] != r.Failed || counts[StatusSkipped] != r.Skipped {
		t.Errorf("statuses %v; report counts %d passed, %d failed, %d skipped", counts, r.Passed, r.Failed, r.Skipped)
	}
	return r
}

// TestTourNeverPassesSilently runs each sample request body as -request
// with each scenario, in both output modes. A body that lacks what the
// scenario needs is rejected before anything runs on the scenario's VNFs,
// with the missing path, and the tour exits 2; only a scenario whose every
// operation ran and passed exits 0.
func TestTourNeverPassesSilently(t *testing.T) {
	const k8s = "k8s_cluster_installation_param"
	for _, tc := range []struct {
		body, scenario string
		want           int
		// paths each name a problem the rejection must report.
		paths []string
	}{
		// The registry VNF's body has no cluster at all.
		{"instantiate_cir_registry.json", "cir", exitRejected, []string{k8s + ": is required", "private_registry_installation_param: unknown key"}},
		{"instantiate_cir_registry.json", "pv", exitRejected, []string{k8s + ": is required"}},
		{"instantiate_cir_registry.json", "kubespray", exitRejected, []string{k8s + ": is required"}},
		{"instantiate_cir_registry.json", "scale", exitRejected, []string{k8s + ": is required"}},
		// Cluster bodies without what the scenario does.
		{"instantiate_pv_k8s_cluster.json", "cir", exitRejected, []string{k8s + ".private_registry_connection_info: is missing"}},
		{"instantiate_pv_k8s_cluster.json", "kubespray", exitRejected, []string{k8s + ".ansible: is missing", k8s + ".external_lb_param: is missing"}},
		{"instantiate_pv_k8s_cluster.json", "scale", exitRejected, []string{k8s + ".private_registry_connection_info: is missing"}},
		{"instantiate_kubespray.json", "cir", exitRejected, []string{k8s + ".private_registry_connection_info: is missing"}},
		{"instantiate_kubespray.json", "pv", exitRejected, []string{k8s + ".storage_server: is missing"}},
		{"instantiate_kubespray.json", "scale", exitRejected, []string{k8s + ".private_registry_connection_info: is missing"}},
		{"instantiate_cir_k8s_cluster.json", "pv", exitRejected, []string{k8s + ".storage_server: is missing"}},
		{"instantiate_cir_k8s_cluster.json", "kubespray", exitRejected, []string{k8s + ".ansible: is missing"}},
		// Bodies that have what the scenario needs.
		{"instantiate_pv_k8s_cluster.json", "pv", exitOK, nil},
		{"instantiate_kubespray.json", "kubespray", exitOK, nil},
	} {
		t.Run(strings.TrimSuffix(tc.body, ".json")+"/"+tc.scenario, func(t *testing.T) {
			body := sampleFile(t, tc.body, tc.scenario)
			code, out, stderr := runTour(t, "-scenario", tc.scenario, "-request", body, "-json")
			if code != tc.want {
				t.Fatalf("-json: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, stderr)
			}
			r := decodeReport(t, out)
			if len(r.Scenarios) != 1 || r.Scenarios[0].Name != tc.scenario {
				t.Fatalf("scenarios %+v", r.Scenarios)
			}
			sc := r.Scenarios[0]
			if tc.want == exitOK {
				if sc.Status != StatusOK || r.Passed == 0 || r.Passed != len(r.Operations) {
					t.Errorf("scenario %+v; %d of %d operations passed", sc, r.Passed, len(r.Operations))
				}
			} else {
				// Rejected: nothing ran, on any VNF.
				if sc.Status != StatusRejected || r.Rejected != 1 || len(r.Operations) != 0 || len(r.World.Hosts) != 0 {
					t.Errorf("scenario %+v, %d rejected; %d operations ran; %d VMs built", sc, r.Rejected, len(r.Operations), len(r.World.Hosts))
				}
				if !strings.Contains(sc.Error, body) {
					t.Errorf("the rejection does not name the body %s: %q", body, sc.Error)
				}
				for _, p := range tc.paths {
					if !strings.Contains(sc.Error, p) {
						t.Errorf("the rejection lacks %q: %q", p, sc.Error)
					}
				}
			}

			code, out, stderr = runTour(t, "-scenario", tc.scenario, "-request", body)
			if code != tc.want {
				t.Fatalf("human: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.want, out, stderr)
			}
			if tc.want != exitOK && !strings.Contains(out, "rejected, nothing ran: -request "+body) {
				t.Errorf("the human output does not say the scenario was rejected:\n%s", out)
			}
			if strings.Contains(out, "scenario stopped") {
				t.Errorf("the human output says %q:\n%s", "scenario stopped", out)
			}
		})
	}

	// Bodies that are no InstantiateVnfRequest at all are bad input.
	for _, body := range []string{samples.ScaleIn, samples.ScaleOut} {
		code, out, stderr := runTour(t, "-scenario", "scale", "-request", sampleFile(t, body, "scale"), "-json")
		if code != exitUsage || !strings.Contains(stderr, "additionalParams is missing") {
			t.Errorf("%s: exit %d, stderr %q; want %d and the missing additionalParams\n%s", body, code, stderr, exitUsage, out)
		}
	}
}

// sampleFile writes the sample request name, its placeholders made to
// work in the simulated cloud, to a file and returns its path, for
// -request with scenario.
func sampleFile(t *testing.T, name, scenario string) string {
	t.Helper()
	// For the kubespray scenario ansible.ip_address keeps the spec
	// sample's placeholder, which the tour points at its simulated
	// Ansible server; for the others any address does (they are
	// rejected for what they lack before anything connects).
	ansible := "127.0.0.1"
	if scenario == "kubespray" {
		ansible = "0.0.0.0"
	}
	b, err := sim.WorkingRequest(name, ansible)
	if err != nil {
		t.Fatal(err)
	}
	return writeRequest(t, name, b)
}

// writeRequest writes a request body to a file named name and returns its
// path.
func writeRequest(t *testing.T, name string, b []byte) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestTourReportsSkippedOperations corrupts the layer of the registry
// image in a copy of the sample package. Validation reads the archive's
// manifest and config but not its layer bodies, so it passes; docker load
// then refuses the layer, whose digest no longer matches the config's
// diffID (as moby's image/tarexport/load.go does), the registry VNF's
// instantiate_end fails, and every later operation of the cir scenario is
// reported as skipped, with that failure as the reason; the tour exits 1.
func TestTourReportsSkippedOperations(t *testing.T) {
	pkg := filepath.Join(t.TempDir(), "package")
	if err := os.CopyFS(pkg, samples.VNFPackage()); err != nil {
		t.Fatal(err)
	}
	corruptLayers(t, filepath.Join(pkg, "Files/images/private_registry.tar"))
	code, out, stderr := runTour(t, "-scenario", "cir", "-package", pkg, "-json")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFailed, out, stderr)
	}
	r := decodeReport(t, out)
	if r.Failed != 1 || r.Skipped == 0 || len(r.Scenarios) != 1 || r.Scenarios[0].Status != StatusFailed || !strings.Contains(r.Scenarios[0].Error, "invalid diffID") {
		t.Fatalf("%d failed, %d skipped; scenarios %+v", r.Failed, r.Skipped, r.Scenarios)
	}
	var failed Operation
	for i, op := range r.Operations {
		if op.Status == StatusFailed {
			failed = op
			if op.VNF != "registry" || op.Hook != string(lcm.InstantiateEnd) || !strings.Contains(op.Error, "load-image") {
				t.Errorf("failed %+v", op)
			}
			if n := len(r.Operations) - i - 1; n != r.Skipped {
				t.Errorf("%d operations after the failure, %d skipped", n, r.Skipped)
			}
			continue
		}
		if failed.Status == "" {
			continue
		}
		if op.Status != StatusSkipped || op.Commands != 0 || len(op.Hosts) != 0 || !strings.Contains(op.Error, failed.What) {
			t.Errorf("after the failure: %+v", op)
		}
	}
	// The cluster VNF was never built.
	for _, h := range r.World.Hosts {
		if h.VNF != "registry" {
			t.Errorf("host %s of %s was built after the failure", h.Resource, h.VNF)
		}
	}
}

// corruptLayers rewrites the docker save archive at path with one byte of
// every layer.tar flipped, keeping every size and name.
func corruptLayers(t *testing.T, path string) {
	t.Helper()
	in, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	tr, tw := tar.NewReader(bytes.NewReader(in)), tar.NewWriter(&out)
	flipped := 0
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasSuffix(hdr.Name, "/layer.tar") && len(body) > 0 {
			body[len(body)-1] ^= 0xff
			flipped++
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if flipped == 0 {
		t.Fatalf("%s has no layer.tar to corrupt", path)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTourRejectsTheSpecsPlaceholders passes each spec's sample request as
// printed, placeholders included, as -request: the scenario is rejected
// before anything runs, naming every placeholder, and no secret of the
// proxy URLs is echoed.
func TestTourRejectsTheSpecsPlaceholders(t *testing.T) {
	for name, scenario := range map[string]string{
		samples.InstantiateCIRCluster: "cir",
		samples.InstantiatePVCluster:  "pv",
		samples.InstantiateKubespray:  "kubespray",
	} {
		t.Run(scenario, func(t *testing.T) {
			raw, err := samples.Request(name)
			if err != nil {
				t.Fatal(err)
			}
			code, out, stderr := runTour(t, "-scenario", scenario, "-request", writeRequest(t, name, raw), "-json")
			if code != exitRejected {
				t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRejected, out, stderr)
			}
			r := decodeReport(t, out)
			if len(r.Operations) != 0 || len(r.World.Hosts) != 0 {
				t.Errorf("%d operations ran, %d VMs built", len(r.Operations), len(r.World.Hosts))
			}
			msg := r.Scenarios[0].Error
			for _, p := range samples.Placeholders(name) {
				// The tour itself points ansible.ip_address at its server.
				if strings.HasSuffix(p, ".ansible.ip_address") {
					continue
				}
				if !strings.Contains(msg, strings.TrimPrefix(p, "additionalParams.")+": ") {
					t.Errorf("the rejection does not name the placeholder %s:\n%s", p, msg)
				}
			}
			if strings.Contains(msg, "password1") || strings.Contains(msg, "host1") {
				t.Errorf("the rejection echoes a proxy URL:\n%s", msg)
			}
		})
	}
}

// TestTourReportsAHookRejection gives the cir scenario a cluster request
// whose kubernetes_version the package repository does not have, which
// only the cluster's instantiate_end can tell (validation passes; the
// hook reads the repository's index on a node). The hook refuses it
// before changing anything; the tour reports that as it reports a
// rejection by validation: the scenario rejected with the field's path,
// the operations after it skipped, exit 2.
func TestTourReportsAHookRejection(t *testing.T) {
	const field = "k8s_cluster_installation_param.kubernetes_version"
	b, err := sim.WorkingRequest(samples.InstantiateCIRCluster, "127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if b, err = samples.Patch(b, map[string]any{"additionalParams." + field: "1.36.99"}); err != nil {
		t.Fatal(err)
	}
	body := writeRequest(t, samples.InstantiateCIRCluster, b)
	code, out, stderr := runTour(t, "-scenario", "cir", "-request", body, "-json")
	if code != exitRejected {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRejected, out, stderr)
	}
	r := decodeReport(t, out)
	if len(r.Scenarios) != 1 || r.Rejected != 1 || r.Failed != 0 {
		t.Fatalf("scenarios %+v, %d rejected, %d failed", r.Scenarios, r.Rejected, r.Failed)
	}
	sc := r.Scenarios[0]
	if sc.Status != StatusRejected || sc.RejectedBy != "cir-cluster "+string(lcm.InstantiateEnd) || !strings.Contains(sc.Error, field) || !strings.Contains(sc.Error, "1.36.99") {
		t.Errorf("scenario %+v, want it rejected by cir-cluster's instantiate_end at %s", sc, field)
	}
	var rejected []Operation
	for _, op := range r.Operations {
		if op.Status == StatusRejected {
			rejected = append(rejected, op)
		}
	}
	if len(rejected) != 1 || rejected[0].VNF != "cir-cluster" || rejected[0].Hook != string(lcm.InstantiateEnd) || len(rejected[0].HostsChanged) != 0 {
		t.Errorf("rejected operations %+v, want cir-cluster's instantiate_end, no host changed", rejected)
	}
	if r.Skipped == 0 || r.Passed+r.Skipped+1 != len(r.Operations) {
		t.Errorf("%d operations: %d passed, %d skipped; want every one after the rejection skipped", len(r.Operations), r.Passed, r.Skipped)
	}
	// Nothing was installed on the cluster's VMs.
	for _, h := range r.World.Hosts {
		if h.VNF == "cir-cluster" && slices.ContainsFunc(h.Active, func(s string) bool { return strings.HasPrefix(s, "containerd") || strings.HasPrefix(s, "kubelet") }) {
			t.Errorf("%s runs %v", h.Resource, h.Active)
		}
	}

	code, out, stderr = runTour(t, "-scenario", "cir", "-request", body)
	if code != exitRejected || !strings.Contains(out, "rejected, no change made: ") || !strings.Contains(out, "rejected by cir-cluster instantiate_end, no change made: ") {
		t.Errorf("human: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
}

// TestTourKeepsARequestsExports: a -request body keeps its values; the
// spec's export_to (10.10.0.0/24, the spec's node network) admits none
// of the simulated nodes, which only Heat can tell: the storage
// extension's check refuses it in instantiate_end before any command,
// with the field's path, and the tour exits 2.
func TestTourKeepsARequestsExports(t *testing.T) {
	const field = "k8s_cluster_installation_param.storage_server.nfs_server_setup_params[0].export_to"
	b, err := sim.SpecRequest(samples.InstantiatePVCluster, "")
	if err != nil {
		t.Fatal(err)
	}
	if b, err = samples.Patch(b, map[string]any{
		"additionalParams.k8s_cluster_installation_param.cni_manifest_path":    sim.SampleCNIManifest,
		"additionalParams.k8s_cluster_installation_param.master_node.pod_cidr": sim.SamplePodCIDR,
	}); err != nil {
		t.Fatal(err)
	}
	body := writeRequest(t, samples.InstantiatePVCluster, b)
	code, out, stderr := runTour(t, "-scenario", "pv", "-request", body, "-json")
	if code != exitRejected {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitRejected, out, stderr)
	}
	r := decodeReport(t, out)
	sc := r.Scenarios[0]
	if sc.RejectedBy != "pv-cluster "+string(lcm.InstantiateEnd) || !strings.Contains(sc.Error, field+": 10.10.0.0/24 admits none of the cluster's nodes") {
		t.Errorf("scenario %+v, want it rejected by pv-cluster's instantiate_end at %s", sc, field)
	}
	for _, op := range r.Operations {
		if op.Status == StatusRejected && op.Commands != 0 {
			t.Errorf("the rejected %s %s ran %d commands", op.VNF, op.Hook, op.Commands)
		}
	}
}

// TestTourPlanIsTruthful runs the whole story with -plan: before every
// hook of every scenario (instantiate, the reruns, scale, heal of every
// kind, terminate, on both drivers) its dry run, which must change
// nothing in the simulated cloud (a snapshot of every host and cluster
// before and after it), and then the hook itself, which must agree with
// the plan: every step the plan said would change did, every step the run
// changed was in the plan.
func TestTourPlanIsTruthful(t *testing.T) {
	code, out, stderr := runTour(t, "-plan", "-json", "-workers", "1")
	if code != exitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	r := decodeReport(t, out)
	var plans, changes, fresh, converged int
	for _, op := range r.Operations {
		// The tour's own checks of the VMs at instantiate_end run no
		// driver hook.
		if !slices.Contains(lcm.Hooks(), lcm.Hook(op.Hook)) || strings.Contains(op.What, "check each") || strings.HasPrefix(op.What, "check ") {
			continue
		}
		p := op.Plan
		if p == nil {
			t.Errorf("%s %s (%s): no plan", op.VNF, op.Hook, op.What)
			continue
		}
		plans++
		changes += len(p.Changes)
		if !p.ReadOnly || !p.Truthful || len(p.Problems) > 0 {
			t.Errorf("%s %s (%s): read-only %v, truthful %v: %v", op.VNF, op.Hook, op.What, p.ReadOnly, p.Truthful, p.Problems)
		}
		switch {
		case len(op.HostsChanged) > 0 && len(p.Changes) == 0:
			t.Errorf("%s %s (%s) changed %v, and its plan listed nothing", op.VNF, op.Hook, op.What, op.HostsChanged)
		case len(op.HostsChanged) > 0:
			fresh++
		case strings.Contains(op.What, "nothing to change") && len(p.Changes) == 0:
			converged++
		}
	}
	// Every hook is planned; the reruns of the registry VNF and both
	// clusters' instantiate_end plan no change.
	if plans < 30 || changes < 100 || fresh < 20 || converged < 3 {
		t.Errorf("%d hooks planned, %d planned changes, %d plans of hooks that changed something, %d converged plans", plans, changes, fresh, converged)
	}
}
