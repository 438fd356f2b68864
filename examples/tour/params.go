package main

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mgmtkit/mgmtkit/heat"
	"github.com/mgmtkit/mgmtkit/lcm"
)

// login is a role's SSH account from additionalParams.
type login struct{ user, password string }

// heatRefs name the cluster address and volume resources in
// additionalParams.
type heatRefs struct {
	cp, fip string
	volumes []string
}

// readParams reads, from a VNF's additionalParams, where Heat keeps each
// kind of node and how to log in to it: the rows of the specs' tables that
// the Heat resolution needs. (The domain packages own the full typed
// parameters; the tour reads only these until they land.)
func readParams(raw json.RawMessage) (groups []heat.Group, logins map[lcm.Role]login, master heat.Group, refs heatRefs, err error) {
	type node struct {
		AspectID   string `json:"aspect_id"`
		SSHCP      string `json:"ssh_cp_name"`
		NICCP      string `json:"nic_cp_name"`
		User       string `json:"username"`
		Password   string `json:"password"`
		ClusterCP  string `json:"cluster_cp_name"`
		ClusterFIP string `json:"cluster_fip_name"`
	}
	var p struct {
		Registry *struct {
			SSHCP    string `json:"ssh_cp_name"`
			User     string `json:"ssh_username"`
			Password string `json:"ssh_password"`
		} `json:"private_registry_installation_param"`
		Cluster *struct {
			Master  *node `json:"master_node"`
			Worker  *node `json:"worker_node"`
			Storage *struct {
				node
				Volumes []struct {
					Resource string `json:"volume_resource_id"`
				} `json:"cinder_volume_setup_params"`
			} `json:"storage_server"`
			LB *struct {
				SSHCP    string `json:"ssh_cp_name"`
				User     string `json:"ssh_username"`
				Password string `json:"ssh_password"`
			} `json:"external_lb_param"`
			Ansible *struct {
				User     string `json:"username"`
				Password string `json:"password"`
			} `json:"ansible"`
		} `json:"k8s_cluster_installation_param"`
	}
	if err = json.Unmarshal(raw, &p); err != nil {
		return nil, nil, master, refs, fmt.Errorf("additionalParams: %w", err)
	}
	logins = map[lcm.Role]login{}
	add := func(role lcm.Role, aspect, ssh, nic, user, password string) heat.Group {
		g := heat.Group{Role: role, AspectID: aspect, SSHCP: ssh, NICCP: nic}
		groups = append(groups, g)
		logins[role] = login{user, password}
		return g
	}
	if r := p.Registry; r != nil {
		add(lcm.RoleRegistry, "", r.SSHCP, "", r.User, r.Password)
	}
	if c := p.Cluster; c != nil {
		if c.Master == nil {
			return nil, nil, master, refs, errors.New("additionalParams: k8s_cluster_installation_param.master_node is missing")
		}
		m := c.Master
		master = add(lcm.RoleMaster, m.AspectID, m.SSHCP, m.NICCP, m.User, m.Password)
		refs.cp, refs.fip = m.ClusterCP, m.ClusterFIP
		if w := c.Worker; w != nil {
			add(lcm.RoleWorker, w.AspectID, w.SSHCP, w.NICCP, w.User, w.Password)
		}
		if s := c.Storage; s != nil {
			add(lcm.RoleStorage, "", s.SSHCP, s.NICCP, s.User, s.Password)
			for _, v := range s.Volumes {
				refs.volumes = append(refs.volumes, v.Resource)
			}
		}
		if lb := c.LB; lb != nil {
			add(lcm.RoleLoadBalancer, "", lb.SSHCP, "", lb.User, lb.Password)
		}
		if a := c.Ansible; a != nil { // not in Heat: a login only
			logins[lcm.RoleAnsible] = login{a.User, a.Password}
		}
	}
	if len(groups) == 0 {
		return nil, nil, master, refs, errors.New("additionalParams: neither k8s_cluster_installation_param nor private_registry_installation_param")
	}
	return groups, logins, master, refs, nil
}
