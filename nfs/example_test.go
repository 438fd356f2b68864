package nfs_test

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"testing/fstest"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/nfs"
)

// A cluster driver embeds nfs.StorageParams in its parameter struct and
// decodes k8s_cluster_installation_param into it. The block below is the
// pv-k8s-cluster spec's sample, cut to the keys this package owns.
func ExampleStorageParams() {
	additionalParams := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "storage_server": {
	      "ssh_cp_name": "storage_server_CP",
	      "username": "ubuntu",
	      "password": "ubuntu",
	      "cinder_volume_setup_params": [
	        {"volume_resource_id": "storage_server_volume", "mount_to": "/volume"}
	      ],
	      "nfs_server_setup_params": [
	        {"export_dir": "/volume/nfs/pv1", "export_to": "10.10.0.0/24"},
	        {"export_dir": "/volume/nfs/pv2", "export_to": "10.10.0.0/24"}
	      ]
	    },
	    "pv_registration_params": [
	      {"pv_manifest_file_path": "Files/kubernetes/nfs-pv1.yaml", "nfs_server_cp": "storage_server_CP"},
	      {"pv_manifest_file_path": "./Files/kubernetes/nfs-pv2.yaml", "nfs_server_cp": "storage_server_CP"}
	    ]
	  }
	}`)
	// The VNF package; a driver opens the real one with lcm.OpenPackage.
	// Each manifest's spec.nfs.path must be one of the export_dirs.
	pv := func(name, dir string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte("apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name +
			"\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  nfs: {server: 0.0.0.0, path: " + dir + "}\n")}
	}
	pkg := lcm.NewPackage(fstest.MapFS{
		"Files/kubernetes/nfs-pv1.yaml": pv("nfs-pv1", "/volume/nfs/pv1"),
		"Files/kubernetes/nfs-pv2.yaml": pv("nfs-pv2", "/volume/nfs/pv2"),
	})

	var params struct {
		nfs.StorageParams
		// ... and the driver's other parts, like registry.TrustParams.
	}
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{Package: pkg},
		lcm.Param(nfs.ClusterParamKey, &params).Required())
	if err != nil {
		fmt.Println(err)
		return
	}
	s := params.StorageServer
	fmt.Println("storage server:", s.SSHCPName, s.Username, s.Password)
	for _, v := range s.CinderVolumeSetupParams {
		fmt.Println("mount", v.VolumeResourceID, "on", v.MountTo)
	}
	for _, e := range s.NFSServerSetupParams {
		fmt.Println("export", e.ExportDir, "to", e.ExportTo, "admits 10.10.0.7:", e.ExportTo.Contains(netip.MustParseAddr("10.10.0.7")))
	}
	for _, r := range params.PVRegistrationParams {
		fmt.Println("register", r.PVManifestFilePath, "with the address of", r.NFSServerCP)
	}
	// Output:
	// storage server: storage_server_CP ubuntu [REDACTED]
	// mount storage_server_volume on /volume
	// export /volume/nfs/pv1 to 10.10.0.0/24 admits 10.10.0.7: true
	// export /volume/nfs/pv2 to 10.10.0.0/24 admits 10.10.0.7: true
	// register Files/kubernetes/nfs-pv1.yaml with the address of storage_server_CP
	// register Files/kubernetes/nfs-pv2.yaml with the address of storage_server_CP
}

// Every problem is reported at once, each with its path, before anything
// runs.
func ExampleStorageParams_invalid() {
	additionalParams := json.RawMessage(`{
	  "k8s_cluster_installation_param": {
	    "storage_server": {
	      "ssh_cp_name": "storage_server_CP",
	      "username": "ubuntu",
	      "cinder_volume_setup_params": [
	        {"volume_resource_id": "storage_server_volume", "mount_to": "/volume"}
	      ],
	      "nfs_server_setup_params": [
	        {"export_dir": "/srv/nfs/pv1", "export_to": "10.10.0.0/24"},
	        {"export_dir": "/volume/nfs/pv2", "export_to": "0.0.0.0/0"}
	      ]
	    },
	    "pv_registration_params": [
	      {"pv_manifest_file_path": "/etc/kubernetes/nfs-pv1.yaml", "nfs_server_cp": "storage_server_CP"}
	    ]
	  }
	}`)
	var params struct{ nfs.StorageParams }
	err := lcm.DecodeParams(additionalParams, lcm.DecodeOptions{},
		lcm.Param(nfs.ClusterParamKey, &params).Required())
	fmt.Println(err)
	// Output:
	// k8s_cluster_installation_param.storage_server.password: is required
	// k8s_cluster_installation_param.storage_server.nfs_server_setup_params[0].export_dir: must lie on a volume, in one of the mount_to directories (/volume), got "/srv/nfs/pv1"
	// k8s_cluster_installation_param.storage_server.nfs_server_setup_params[1].export_to: must not be 0.0.0.0/0, every address: name the cluster's network
	// k8s_cluster_installation_param.pv_registration_params[0].pv_manifest_file_path: invalid VNF package path "/etc/kubernetes/nfs-pv1.yaml": it is absolute; it must be a relative path inside the VNF package, like Files/images/registry.tar
}

// export_to is an IP network or a single address; host bits are cleared.
func ExampleParseNetwork() {
	for _, s := range []string{"10.10.0.0/24", "10.10.0.5/24", "10.10.0.5", "node1.example.com"} {
		n, err := nfs.ParseNetwork(s)
		if err != nil {
			fmt.Println(err)
			continue
		}
		fmt.Println(n)
	}
	// Output:
	// 10.10.0.0/24
	// 10.10.0.0/24
	// 10.10.0.5/32
	// must be an IP network like 10.10.0.0/24 or an IP address (host names, wildcards and netgroups are not supported), got "node1.example.com"
}
