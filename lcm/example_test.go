package lcm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// node stands in for a remote host: anything with a Name.
type node struct{ name, ip string }

func (n node) Name() string { return n.name }

func ExampleOnHosts() {
	workers := []node{{"worker1", "10.0.0.11"}, {"worker2", "10.0.0.12"}, {"worker3", "10.0.0.13"}}

	// A step: converge one host, report what changed.
	installNFSClient := func(ctx context.Context, n node) (lcm.Result, error) {
		if n.name == "worker2" {
			return lcm.Unchanged, nil // already installed
		}
		return lcm.Changed("installed nfs-common"), nil
	}

	results, err := lcm.OnHosts(context.Background(), "install-nfs-client", workers, installNFSClient,
		lcm.Limit(5), lcm.WithPolicy(lcm.BestEffort))
	if err != nil {
		fmt.Println(err)
	}
	for _, r := range results {
		fmt.Printf("%s: %s\n", r.Host, r.Result)
	}
	fmt.Println("changed:", results.Changed())
	// Output:
	// worker1: changed: installed nfs-common
	// worker2: unchanged
	// worker3: changed: installed nfs-common
	// changed: true
}

func ExampleOnHosts_failFast() {
	masters := []node{{"master1", "10.0.0.1"}, {"master2", "10.0.0.2"}, {"master3", "10.0.0.3"}}
	errJoin := errors.New("kubeadm join: exit status 1")

	// Limit(1) joins the masters one at a time; the first failure stops the rest.
	results, err := lcm.OnHosts(context.Background(), "join-control-plane", masters,
		func(ctx context.Context, n node) (lcm.Result, error) {
			if n.name == "master2" {
				return lcm.Unchanged, errJoin
			}
			return lcm.Changed("joined"), nil
		}, lcm.Limit(1))

	fmt.Println(err)
	fmt.Println(errors.Is(err, errJoin))
	var he *lcm.HostError
	if errors.As(err, &he) {
		fmt.Println("failed on", he.Host)
	}
	for _, r := range results {
		fmt.Printf("%s skipped=%v\n", r.Host, r.Skipped)
	}
	// Output:
	// host "master2": step "join-control-plane": kubeadm join: exit status 1
	// true
	// failed on master2
	// master1 skipped=false
	// master2 skipped=false
	// master3 skipped=true
}

func ExampleDo() {
	// Log step events as text; drop the time and duration to keep the
	// example's output stable.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == lcm.AttrDuration {
				return slog.Attr{}
			}
			return a
		},
	}))
	ctx := lcm.WithHook(lcm.WithLogger(context.Background(), logger), lcm.InstantiateEnd)

	_, _ = lcm.Do(ctx, "configure-registry-trust", "worker1", func(ctx context.Context) (lcm.Result, error) {
		return lcm.Changed("wrote hosts.toml"), nil
	})
	// Output:
	// level=INFO msg="step finished" hook=instantiate_end step=configure-registry-trust host=worker1 changed=true detail="wrote hosts.toml"
}

// Give the SDK a logger through the context: every step that lcm.Do and
// lcm.OnHosts run emits one record per host, with the hook, the step,
// the host, whether it changed anything and the error. Here the records
// go out as JSON, as a VNFM would ship them, without the time and the
// duration so that the output is stable.
func ExampleWithLogger() {
	logger := slog.New(slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == lcm.AttrDuration {
				return slog.Attr{}
			}
			return a
		},
	}))
	ctx := lcm.WithLogger(context.Background(), logger)
	ctx = lcm.WithHook(ctx, lcm.ScaleEnd)

	workers := []node{{"worker3", "10.0.0.13"}, {"worker4", "10.0.0.14"}, {"worker5", "10.0.0.15"}}
	_, err := lcm.OnHosts(ctx, "join-worker", workers, func(ctx context.Context, n node) (lcm.Result, error) {
		if n.name == "worker4" {
			return lcm.Unchanged, errors.New("kubeadm join: exit status 1")
		}
		return lcm.Changed("joined the cluster"), nil
	}, lcm.Limit(1)) // one at a time, so the records come in order
	fmt.Println(err)
	// Output:
	// {"level":"INFO","msg":"step finished","hook":"scale_end","step":"join-worker","host":"worker3","changed":true,"detail":"joined the cluster"}
	// {"level":"ERROR","msg":"step failed","hook":"scale_end","step":"join-worker","host":"worker4","changed":false,"error":"kubeadm join: exit status 1"}
	// {"level":"WARN","msg":"step skipped","hook":"scale_end","step":"join-worker","host":"worker5","error":"not run: step \"join-worker\" failed on host \"worker4\""}
	// host "worker4": step "join-worker": kubeadm join: exit status 1
}

// RegistryConnection is one element of private_registry_connection_info, as
// a domain package would declare it.
type RegistryConnection struct {
	ConnectionType  lcm.Int       `json:"connection_type" params:"required"`
	Server          string        `json:"server" params:"required"`
	Username        string        `json:"username"`
	Password        remote.Secret `json:"password"`
	CertificatePath string        `json:"certificate_path"`
}

// Validate checks what the JSON types cannot express.
func (c *RegistryConnection) Validate(v *lcm.Validator) {
	if c.ConnectionType != 0 && c.ConnectionType != 1 {
		v.At("connection_type").Errorf(`must be "0" (HTTP) or "1" (HTTPS)`)
	}
	if c.CertificatePath != "" {
		if p, ok := v.PackageFile("certificate_path", c.CertificatePath); ok {
			c.CertificatePath = p // canonical package path
		}
	}
}

// ClusterParams is a subset of k8s_cluster_installation_param.
type ClusterParams struct {
	VimName     string               `json:"vim_name"`
	Registries  []RegistryConnection `json:"private_registry_connection_info"`
	HelmVersion string               `json:"helm_version"`
}

func ExampleDecodeParams() {
	pkg := lcm.NewPackage(fstest.MapFS{"Files/registries/ca.crt": {Data: []byte("PEM")}})
	raw := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "vim_name": "kubernetes_vim",
	    "private_registry_connection_info": [
	      {"connection_type": "0", "server": "192.168.0.10:5000"},
	      {"connection_type": "1", "server": "registry.example.com",
	       "username": "user01", "password": "user01", "certificate_path": "./Files/registries/ca.crt"}
	    ]
	  },
	  "lcm-operation-user-data": "./UserData/k8s_cluster_user_data.py"
	}`)

	var cluster ClusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{Package: pkg},
		lcm.Param("k8s_cluster_installation_param", &cluster).Required())
	if err != nil {
		fmt.Println(err)
		return
	}
	r := cluster.Registries[1]
	fmt.Println(r.ConnectionType, r.Server, r.Password, r.CertificatePath)
	// Output:
	// 1 registry.example.com [REDACTED] Files/registries/ca.crt
}

func ExampleDecodeParams_problems() {
	raw := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "vim_nme": "kubernetes_vim",
	    "private_registry_connection_info": [
	      {"connection_type": "0", "server": "192.168.0.10:5000"},
	      {"connection_type": "2", "server": "registry.example.com", "certificate_path": "/etc/ssl/ca.crt"},
	      {"connection_type": "0", "password": 1234}
	    ]
	  }
	}`)
	var cluster ClusterParams
	err := lcm.DecodeParams(raw, lcm.DecodeOptions{},
		lcm.Param("k8s_cluster_installation_param", &cluster).Required())
	fmt.Println(err)
	// Output:
	// k8s_cluster_installation_param.vim_nme: unknown key (did you mean "vim_name"?)
	// k8s_cluster_installation_param.private_registry_connection_info[1].connection_type: must be "0" (HTTP) or "1" (HTTPS)
	// k8s_cluster_installation_param.private_registry_connection_info[1].certificate_path: invalid VNF package path "/etc/ssl/ca.crt": it is absolute; it must be a relative path inside the VNF package, like Files/images/registry.tar
	// k8s_cluster_installation_param.private_registry_connection_info[2].password: expected a string, got a number
	// k8s_cluster_installation_param.private_registry_connection_info[2].server: is required
}

func ExampleOpenPackage() {
	// An extracted CSAR directory (a .zip or .csar file works the same way).
	dir, err := os.MkdirTemp("", "csar")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	_ = os.MkdirAll(filepath.Join(dir, "Scripts"), 0o755)
	_ = os.WriteFile(filepath.Join(dir, "Scripts", "install_k8s_cluster.sh"), []byte("#!/bin/bash\n"), 0o644)

	pkg, err := lcm.OpenPackage(dir)
	if err != nil {
		panic(err)
	}
	defer pkg.Close()

	script, err := pkg.ReadFile("./Scripts/install_k8s_cluster.sh")
	fmt.Printf("%q %v\n", script, err)

	_, err = pkg.ReadFile("../../etc/passwd")
	fmt.Println(err)
	// Output:
	// "#!/bin/bash\n" <nil>
	// invalid VNF package path "../../etc/passwd": it leaves the package root; it must be a relative path inside the VNF package, like Files/images/registry.tar
}

func ExamplePackage_Resolve() {
	pkg := lcm.NewPackage(fstest.MapFS{})
	for _, p := range []string{"Files/images/registry.tar", "./Scripts/install.sh", "Files/../Scripts/install.sh", `Files\ca.crt`} {
		rel, err := pkg.Resolve(p)
		fmt.Printf("%q %v\n", rel, err)
	}
	// Output:
	// "Files/images/registry.tar" <nil>
	// "Scripts/install.sh" <nil>
	// "" invalid VNF package path "Files/../Scripts/install.sh": it contains a ".." element; it must be a relative path inside the VNF package, like Files/images/registry.tar
	// "" invalid VNF package path "Files\\ca.crt": it contains a backslash (separate directories with "/"); it must be a relative path inside the VNF package, like Files/images/registry.tar
}

// clusterDriver installs a cluster in instantiate_end; NopDriver supplies
// the other seven hooks.
type clusterDriver struct {
	lcm.NopDriver
	nodes []node // in a real driver: resolved from Heat
}

func (d *clusterDriver) InstantiateEnd(ctx context.Context, op *lcm.InstantiateOp) (*lcm.HookResult, error) {
	var params ClusterParams
	if err := lcm.DecodeParams(op.Request.AdditionalParams, lcm.DecodeOptions{Package: op.Package},
		lcm.Param("k8s_cluster_installation_param", &params).Required()); err != nil {
		return nil, err // before any remote command
	}
	res := &lcm.HookResult{}
	hosts, err := lcm.OnHosts(ctx, "install-kubernetes", d.nodes, func(ctx context.Context, n node) (lcm.Result, error) {
		return lcm.Changed("installed kubelet on " + n.ip), nil
	})
	res.Add("install-kubernetes", hosts)
	if err != nil {
		return res, err
	}
	res.AddVimConnections = append(res.AddVimConnections, lcm.VimConnectionInfo{
		ID:            "kubernetes-" + op.Instance.ID,
		VimType:       "kubernetes",
		InterfaceInfo: map[string]any{"endpoint": "https://10.0.0.1:6443"},
		AccessInfo:    lcm.AccessInfo{"bearer_token": "token-from-the-cluster"},
	})
	return res, nil
}

func ExampleInvoke() {
	d := &clusterDriver{nodes: []node{{"master1", "10.0.0.1"}, {"worker1", "10.0.0.11"}}}
	op := &lcm.InstantiateOp{
		Instance: &lcm.VnfInstance{ID: "a7f3a6b5"},
		Request: &lcm.InstantiateVnfRequest{
			FlavourID:        "simple",
			AdditionalParams: json.RawMessage(`{"k8s_cluster_installation_param": {"vim_name": "kubernetes_vim"}}`),
		},
		Package: lcm.NewPackage(fstest.MapFS{}),
	}

	res, err := lcm.Invoke(context.Background(), d, lcm.InstantiateEnd, op)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Hook, res.Changed())
	for _, s := range res.Steps {
		for _, h := range s.Hosts {
			fmt.Printf("%s %s: %s\n", s.Step, h.Host, h.Result)
		}
	}
	vim := res.AddVimConnections[0]
	fmt.Println("persist:", vim.ID, vim.VimType, vim.AccessInfo)

	// A hook the driver does not implement does nothing.
	res, err = lcm.Invoke(context.Background(), d, lcm.ScaleStart, &lcm.ScaleOp{})
	fmt.Println(res.Hook, res.Changed(), err)
	// Output:
	// instantiate_end true
	// install-kubernetes master1: changed: installed kubelet on 10.0.0.1
	// install-kubernetes worker1: changed: installed kubelet on 10.0.0.11
	// persist: kubernetes-a7f3a6b5 kubernetes map[bearer_token:[REDACTED]]
	// scale_start false <nil>
}
