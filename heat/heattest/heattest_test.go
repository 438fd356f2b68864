package heattest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stackresources"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacks"
	"github.com/gophercloud/gophercloud/v2/openstack/orchestration/v1/stacktemplates"

	"github.com/mgmtkit/mgmtkit/heat/heattest"
)

// orchestration authenticates with opts and returns a Heat client.
func orchestration(t *testing.T, srv *heattest.Server, opts gophercloud.AuthOptions) *gophercloud.ServiceClient {
	t.Helper()
	pc, err := config.NewProviderClient(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewProviderClient: %v", err)
	}
	c, err := openstack.NewOrchestrationV1(pc, gophercloud.EndpointOpts{Region: srv.Region()})
	if err != nil {
		t.Fatalf("NewOrchestrationV1: %v", err)
	}
	return c
}

func listResources(t *testing.T, c *gophercloud.ServiceClient, name, id string, depth int) []stackresources.Resource {
	t.Helper()
	pages, err := stackresources.List(c, name, id, stackresources.ListOpts{Depth: depth}).AllPages(t.Context())
	if err != nil {
		t.Fatalf("list resources of %s: %v", name, err)
	}
	rs, err := stackresources.ExtractResources(pages)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func getResource(t *testing.T, c *gophercloud.ServiceClient, st *heattest.Stack, name string) *stackresources.Resource {
	t.Helper()
	r, err := stackresources.Get(t.Context(), c, st.Name(), st.ID(), name).Extract()
	if err != nil {
		t.Fatalf("get %s/%s: %v", st.Name(), name, err)
	}
	return r
}

func names(rs []stackresources.Resource) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

// firstIP returns fixed_ips[0].ip_address from port attributes.
func firstIP(t *testing.T, attrs map[string]any) string {
	t.Helper()
	ips, _ := attrs["fixed_ips"].([]any)
	if len(ips) == 0 {
		t.Fatalf("no fixed_ips in %v", attrs)
	}
	ip, _ := ips[0].(map[string]any)["ip_address"].(string)
	return ip
}

// buildVNF builds a top stack like Tacker's kubeadm sample: a master group
// with a port, a floating IP and a server per member, a worker group, a
// scaling policy, a storage server with a volume and a bare VIP port.
func buildVNF(srv *heattest.Server) (*heattest.Stack, *heattest.Group, *heattest.Group) {
	top := srv.CreateStack("vnf-k8s")
	top.AddPort("vip_CP", "10.10.0.100")
	masters := top.AddGroup("master_instance", heattest.GroupSpec{
		MinSize: 1, MaxSize: 3, Desired: 3,
		Member: func(m *heattest.Stack, i int) {
			m.AddPort("masterNode_CP1", fmt.Sprintf("10.10.0.%d", 11+i))
			m.AddFloatingIP("masterNode_FIP1", fmt.Sprintf("192.168.100.%d", 11+i), "masterNode_CP1")
			m.AddServer("masterNode", "masterNode_CP1")
		},
	})
	workers := top.AddGroup("worker_instance", heattest.GroupSpec{
		MinSize: 1, MaxSize: 4, Desired: 2, MinSizeParam: "worker_min",
		MemberType: "base_hot_nested_worker.yaml",
		Member: func(m *heattest.Stack, i int) {
			m.AddPort("workerNode_CP2", fmt.Sprintf("10.10.0.%d", 21+i))
			m.AddServer("workerNode", "workerNode_CP2")
		},
	})
	top.AddScalingPolicy("worker_instance_scale_out", "worker_instance", 1)
	top.AddPort("storage_server_CP", "10.10.0.50")
	top.AddServer("storage_server", "storage_server_CP")
	top.AddVolume("storage_server_volume", "storage_server", "/dev/vdb", 10)
	return top, masters, workers
}

func TestAuthVersionedAndVersionless(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	for _, url := range []string{srv.IdentityEndpoint(), srv.IdentityEndpoint() + "/", srv.VersionlessIdentityEndpoint(), srv.VersionlessIdentityEndpoint() + "/", srv.URL()} {
		t.Run(url, func(t *testing.T) {
			opts := srv.AuthOptions()
			opts.IdentityEndpoint = url
			c := orchestration(t, srv, opts)
			if want := srv.OrchestrationEndpoint() + "/"; c.Endpoint != want {
				t.Errorf("orchestration endpoint %q, want %q", c.Endpoint, want)
			}
		})
	}
	// The versionless URLs went through version discovery.
	var discovery int
	for _, r := range srv.Requests() {
		if r.Method == "GET" && (r.Path == "/identity/" || r.Path == "/") {
			discovery++
			if r.Status != http.StatusMultipleChoices {
				t.Errorf("version discovery answered %d", r.Status)
			}
		}
	}
	if discovery != 3 {
		t.Errorf("%d version discovery requests, want 3", discovery)
	}
}

func TestCloudsYAML(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{Username: "admin", Password: `p"a ss:#w`, ProjectName: "demo", Region: "RegionTwo"})
	srv.CreateStack("s1")
	yaml := srv.CloudsYAML("heattest")
	opts, eo, _, err := clouds.Parse(clouds.WithCloudsYAML(bytes.NewReader(yaml)), clouds.WithCloudName("heattest"))
	if err != nil {
		t.Fatalf("clouds.Parse: %v\n%s", err, yaml)
	}
	if opts.Password != `p"a ss:#w` || opts.Username != "admin" || eo.Region != "RegionTwo" || eo.Availability != gophercloud.AvailabilityPublic {
		t.Fatalf("parsed %+v %+v", opts, eo)
	}
	pc, err := config.NewProviderClient(t.Context(), opts)
	if err != nil {
		t.Fatalf("NewProviderClient: %v", err)
	}
	c, err := openstack.NewOrchestrationV1(pc, eo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := stacks.Find(t.Context(), c, "s1").Extract(); err != nil {
		t.Fatalf("Find through clouds.yaml client: %v", err)
	}
}

func TestAuthForms(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	srv.CreateStack("s1")
	base := gophercloud.AuthOptions{IdentityEndpoint: srv.IdentityEndpoint()}
	acID, acSecret := srv.ApplicationCredential()

	good := map[string]gophercloud.AuthOptions{
		"user id, project id": {UserID: srv.UserID(), Password: srv.Password(), Scope: &gophercloud.AuthScope{ProjectID: srv.ProjectID()}},
		"domain id":           {Username: srv.Username(), Password: srv.Password(), DomainID: srv.DomainID(), Scope: &gophercloud.AuthScope{ProjectName: srv.ProjectName(), DomainID: srv.DomainID()}},
		"tenant name":         {Username: srv.Username(), Password: srv.Password(), DomainName: srv.DomainName(), TenantName: srv.ProjectName()},
		"no scope":            {Username: srv.Username(), Password: srv.Password(), DomainName: srv.DomainName()},
		"app credential":      {ApplicationCredentialID: acID, ApplicationCredentialSecret: acSecret},
		"app credential name": {ApplicationCredentialName: "heattest", Username: srv.Username(), DomainName: srv.DomainName(), ApplicationCredentialSecret: acSecret},
	}
	for name, o := range good {
		t.Run(name, func(t *testing.T) {
			o.IdentityEndpoint = base.IdentityEndpoint
			c := orchestration(t, srv, o)
			if _, err := stacks.Find(t.Context(), c, "s1").Extract(); err != nil {
				t.Fatal(err)
			}
			// The token also authenticates a token-method login.
			tok, err := c.ProviderClient.GetAuthResult().(interface{ ExtractTokenID() (string, error) }).ExtractTokenID()
			if err != nil {
				t.Fatal(err)
			}
			orchestration(t, srv, gophercloud.AuthOptions{IdentityEndpoint: base.IdentityEndpoint, TokenID: tok, Scope: &gophercloud.AuthScope{ProjectID: srv.ProjectID()}})
		})
	}

	bad := map[string]gophercloud.AuthOptions{
		"wrong password":       {Username: srv.Username(), Password: "nope", DomainName: srv.DomainName()},
		"wrong user":           {Username: "bob", Password: srv.Password(), DomainName: srv.DomainName()},
		"wrong domain":         {Username: srv.Username(), Password: srv.Password(), DomainName: "Other"},
		"wrong project":        {Username: srv.Username(), Password: srv.Password(), DomainName: srv.DomainName(), Scope: &gophercloud.AuthScope{ProjectName: "other", DomainName: srv.DomainName()}},
		"domain scope":         {Username: srv.Username(), Password: srv.Password(), DomainName: srv.DomainName(), Scope: &gophercloud.AuthScope{DomainName: srv.DomainName()}},
		"wrong app credential": {ApplicationCredentialID: acID, ApplicationCredentialSecret: "nope"},
		"unknown token":        {TokenID: "gAAAAAnope", Scope: &gophercloud.AuthScope{ProjectID: srv.ProjectID()}},
	}
	for name, o := range bad {
		t.Run(name, func(t *testing.T) {
			o.IdentityEndpoint = base.IdentityEndpoint
			_, err := config.NewProviderClient(t.Context(), o)
			if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
				t.Fatalf("got %v, want a 401", err)
			}
		})
	}
}

func TestTokenExpiryReauth(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("s1")
	c := orchestration(t, srv, srv.AuthOptions())
	if _, err := stacks.Get(t.Context(), c, st.Name(), st.ID()).Extract(); err != nil {
		t.Fatal(err)
	}
	before := len(srv.Requests())
	srv.ExpireTokens()
	if _, err := stacks.Get(t.Context(), c, st.Name(), st.ID()).Extract(); err != nil {
		t.Fatalf("after ExpireTokens, with AllowReauth: %v", err)
	}
	var got []string
	for _, r := range srv.Requests()[before:] {
		got = append(got, fmt.Sprintf("%s %s %d", r.Method, r.Path, r.Status))
	}
	stackPath := "/heat/v1/" + srv.ProjectID() + "/stacks/s1/" + st.ID()
	want := []string{"GET " + stackPath + " 401", "POST /identity/v3/auth/tokens 201", "GET " + stackPath + " 200"}
	if !slices.Equal(got, want) {
		t.Errorf("requests after expiry:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// Without AllowReauth the 401 reaches the caller.
	opts := srv.AuthOptions()
	opts.AllowReauth = false
	c2 := orchestration(t, srv, opts)
	srv.ExpireTokens()
	_, err := stacks.Get(t.Context(), c2, st.Name(), st.ID()).Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusUnauthorized) {
		t.Fatalf("got %v, want 401", err)
	}
}

func TestStackFindAndGet(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{Start: time.Date(2030, 5, 6, 7, 8, 9, 0, time.UTC)})
	srv.CreateStack("other")
	st := srv.CreateStack("vnf-1")
	st.SetParameter("flavor", "m1.small")
	c := orchestration(t, srv, srv.AuthOptions())

	for _, key := range []string{"vnf-1", st.ID()} {
		got, err := stacks.Find(t.Context(), c, key).Extract()
		if err != nil {
			t.Fatalf("Find(%s): %v", key, err)
		}
		if got.ID != st.ID() || got.Name != "vnf-1" || got.Status != "CREATE_COMPLETE" || got.StatusReason != "Stack CREATE completed successfully" {
			t.Errorf("Find(%s) = %+v", key, got)
		}
		if want := time.Date(2030, 5, 6, 7, 8, 10, 0, time.UTC); !got.CreationTime.Equal(want) || !got.CreationTime.Equal(st.CreationTime()) {
			t.Errorf("CreationTime %v, want %v", got.CreationTime, want)
		}
		if !got.UpdatedTime.IsZero() {
			t.Errorf("UpdatedTime %v, want zero", got.UpdatedTime)
		}
		if got.Parameters["flavor"] != "m1.small" || got.Parameters["OS::stack_id"] != st.ID() || got.Parameters["OS::stack_name"] != "vnf-1" {
			t.Errorf("parameters %v", got.Parameters)
		}
		if len(got.Links) != 1 || got.Links[0].Href != srv.OrchestrationEndpoint()+"/stacks/vnf-1/"+st.ID() {
			t.Errorf("links %v", got.Links)
		}
	}
	// Find is a 302 to the canonical URL, which the client follows.
	var redirects int
	for _, r := range srv.Requests() {
		if r.Status == http.StatusFound {
			redirects++
		}
	}
	if redirects != 2 {
		t.Errorf("%d redirects, want 2", redirects)
	}

	// Name and id must match.
	if _, err := stacks.Get(t.Context(), c, "other", st.ID()).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("mismatched name and id: %v", err)
	}
	// Status changes are visible.
	st.SetStatus("UPDATE_IN_PROGRESS", "Stack UPDATE started")
	got, err := stacks.Get(t.Context(), c, st.Name(), st.ID()).Extract()
	if err != nil || got.Status != "UPDATE_IN_PROGRESS" || got.StatusReason != "Stack UPDATE started" {
		t.Errorf("after SetStatus: %+v, %v", got, err)
	}
	// The list shows top-level stacks.
	pages, err := stacks.List(c, nil).AllPages(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	listed, err := stacks.ExtractStacks(pages)
	if err != nil || len(listed) != 2 || listed[1].Name != "vnf-1" {
		t.Errorf("stacks.List = %+v, %v", listed, err)
	}
}

// errorBody decodes the Heat error body of a gophercloud error.
func errorBody(t *testing.T, err error) map[string]any {
	t.Helper()
	var e gophercloud.ErrUnexpectedResponseCode
	if !errors.As(err, &e) {
		t.Fatalf("%v is not an unexpected response code", err)
	}
	var body map[string]any
	if err := json.Unmarshal(e.Body, &body); err != nil {
		t.Fatalf("error body %q: %v", e.Body, err)
	}
	return body
}

func TestNotFoundBodies(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("vnf-1")
	c := orchestration(t, srv, srv.AuthOptions())

	_, err := stacks.Find(t.Context(), c, "nope").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("Find(nope): %v", err)
	}
	body := errorBody(t, err)
	inner, _ := body["error"].(map[string]any)
	if body["code"] != 404.0 || body["title"] != "Not Found" || body["explanation"] != "The resource could not be found." ||
		inner["type"] != "EntityNotFound" || inner["message"] != "The Stack (nope) could not be found." || inner["traceback"] != nil {
		t.Errorf("stack 404 body %v", body)
	}

	_, err = stackresources.Get(t.Context(), c, st.Name(), st.ID(), "missing").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Fatalf("Get(missing): %v", err)
	}
	inner, _ = errorBody(t, err)["error"].(map[string]any)
	if inner["type"] != "ResourceNotFound" || inner["message"] != "The Resource (missing) could not be found in Stack vnf-1." {
		t.Errorf("resource 404 error %v", inner)
	}

	_, err = stackresources.Find(t.Context(), c, "nope").Extract()
	if !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("resources of unknown stack: %v", err)
	}
	if _, err := c.Get(t.Context(), c.ServiceURL("resource_types"), nil, nil); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("unmodelled endpoint: %v", err)
	}
	if _, err := c.Delete(t.Context(), c.ServiceURL("stacks", st.Name(), st.ID()), nil); !gophercloud.ResponseCodeIs(err, http.StatusMethodNotAllowed) {
		t.Errorf("DELETE: %v", err)
	}
}

func TestAuthorizationOfHeatRequests(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("vnf-1")
	c := orchestration(t, srv, srv.AuthOptions())
	tok := c.Token()

	get := func(path, token string) (*http.Response, map[string]any) {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL()+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("X-Auth-Token", token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp, body
	}
	path := "/heat/v1/" + srv.ProjectID() + "/stacks/vnf-1/" + st.ID()
	if resp, _ := get(path, tok); resp.StatusCode != http.StatusOK {
		t.Errorf("with token: %d", resp.StatusCode)
	}
	resp, body := get(path, "")
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), srv.VersionlessIdentityEndpoint()) {
		t.Errorf("without token: %d %v", resp.StatusCode, resp.Header)
	}
	if inner, _ := body["error"].(map[string]any); inner["code"] != 401.0 {
		t.Errorf("401 body %v", body)
	}
	if resp, _ := get(path, "forged"); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged token: %d", resp.StatusCode)
	}
	if resp, body := get("/heat/v1/0123456789abcdef0123456789abcdef/stacks/vnf-1/"+st.ID(), tok); resp.StatusCode != http.StatusForbidden || body["code"] != 403.0 {
		t.Errorf("other project: %d %v", resp.StatusCode, body)
	}
	// Keystone validates its own tokens.
	req, _ := http.NewRequestWithContext(t.Context(), "GET", srv.IdentityEndpoint()+"/auth/tokens", nil)
	req.Header.Set("X-Auth-Token", tok)
	req.Header.Set("X-Subject-Token", tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Subject-Token") != tok {
		t.Errorf("token validation: %d", resp.StatusCode)
	}
}

func TestResourcesAndAttributes(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, masters, _ := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())

	rs := listResources(t, c, top.Name(), top.ID(), 0)
	wantNames := []string{"vip_CP", "master_instance", "worker_instance", "worker_instance_scale_out", "storage_server_CP", "storage_server", "storage_server_volume"}
	if got := names(rs); !slices.Equal(got, wantNames) {
		t.Fatalf("resources %v, want %v", got, wantNames)
	}
	byName := map[string]stackresources.Resource{}
	for _, r := range rs {
		byName[r.Name] = r
		if r.Attributes != nil {
			t.Errorf("%s: list carries attributes", r.Name)
		}
		if r.LogicalID != r.Name || r.Status != "CREATE_COMPLETE" || r.CreationTime.IsZero() || !r.UpdatedTime.Equal(r.CreationTime) {
			t.Errorf("%s: %+v", r.Name, r)
		}
		if len(r.Links) < 2 || r.Links[0].Rel != "self" || r.Links[1].Rel != "stack" {
			t.Errorf("%s: links %v", r.Name, r.Links)
		}
	}
	group := byName["master_instance"]
	if group.Type != "OS::Heat::AutoScalingGroup" || group.PhysicalID != masters.NestedStack().ID() || len(group.Links) != 3 || group.Links[2].Rel != "nested" ||
		!strings.HasSuffix(group.Links[2].Href, "/stacks/"+masters.NestedStack().Name()+"/"+masters.NestedStack().ID()) {
		t.Errorf("group resource %+v", group)
	}
	if !strings.HasPrefix(masters.NestedStack().Name(), "vnf-k8s-master_instance-") || len(masters.NestedStack().Name()) != len("vnf-k8s-master_instance-")+12 {
		t.Errorf("nested stack name %q", masters.NestedStack().Name())
	}
	if got := byName["worker_instance"].RequiredBy; len(got) != 1 || got[0] != "worker_instance_scale_out" {
		t.Errorf("group required_by %v", got)
	}

	// Ports: Neutron's port, used by the server.
	server := getResource(t, c, top, "storage_server")
	port := getResource(t, c, top, "storage_server_CP")
	pa := port.Attributes
	if firstIP(t, pa) != "10.10.0.50" || pa["id"] != port.PhysicalID || pa["device_id"] != server.PhysicalID || pa["device_owner"] != "compute:nova" ||
		!strings.HasPrefix(pa["mac_address"].(string), "fa:16:3e:") || pa["network_id"] == "" || !slices.Equal(port.RequiredBy, []any{"storage_server"}) {
		t.Errorf("port %+v", port)
	}
	if pairs, ok := pa["allowed_address_pairs"].([]any); !ok || len(pairs) != 0 {
		t.Errorf("allowed_address_pairs %v", pa["allowed_address_pairs"])
	}
	if sub := pa["fixed_ips"].([]any)[0].(map[string]any)["subnet_id"]; sub == "" || sub == nil {
		t.Errorf("subnet_id %v", sub)
	}
	vip := getResource(t, c, top, "vip_CP")
	if vip.Attributes["device_id"] != "" || vip.Attributes["network_id"] != pa["network_id"] {
		t.Errorf("vip port %v", vip.Attributes)
	}

	// Servers: Nova's server plus Heat's networks.
	sa := server.Attributes
	if sa["id"] != server.PhysicalID || !strings.HasPrefix(sa["OS-EXT-SRV-ATTR:host"].(string), "compute-") || sa["status"] != "ACTIVE" {
		t.Errorf("server %v", sa)
	}
	nets, _ := sa["networks"].(map[string]any)
	if ips, _ := nets["net0"].([]any); len(ips) != 1 || ips[0] != "10.10.0.50" {
		t.Errorf("networks %v", nets)
	}
	if ips, _ := nets[pa["network_id"].(string)].([]any); len(ips) != 1 {
		t.Errorf("networks by id %v", nets)
	}
	if groups, ok := sa["server_groups"].([]any); !ok || len(groups) != 0 {
		t.Errorf("server_groups %v", sa["server_groups"])
	}

	// Volumes: Cinder's volume, attachments as a list.
	vol := getResource(t, c, top, "storage_server_volume")
	va := vol.Attributes
	if va["status"] != "in-use" || va["size"] != 10.0 || !slices.Equal(vol.RequiredBy, []any{"storage_server"}) {
		t.Errorf("volume %+v", vol)
	}
	for _, key := range []string{"attachments", "attachments_list"} {
		atts, _ := va[key].([]any)
		if len(atts) != 1 {
			t.Fatalf("%s %v", key, va[key])
		}
		a := atts[0].(map[string]any)
		if a["device"] != "/dev/vdb" || a["server_id"] != server.PhysicalID || a["volume_id"] != vol.PhysicalID || a["attachment_id"] == "" {
			t.Errorf("%s[0] %v", key, a)
		}
	}
	if vols, _ := sa["os-extended-volumes:volumes_attached"].([]any); len(vols) != 1 || vols[0].(map[string]any)["id"] != vol.PhysicalID {
		t.Errorf("volumes_attached %v", sa["os-extended-volumes:volumes_attached"])
	}

	// Floating IPs: Neutron's floating IP, following the port.
	m := masters.Members()[1]
	fip := getResource(t, c, m.Stack, "masterNode_FIP1")
	mport := getResource(t, c, m.Stack, "masterNode_CP1")
	fa := fip.Attributes
	if fa["floating_ip_address"] != "192.168.100.12" || fa["fixed_ip_address"] != "10.10.0.12" || fa["port_id"] != mport.PhysicalID || fa["floating_network_id"] == nil {
		t.Errorf("floating IP %v", fa)
	}
	if fip.ParentResource != m.Name || mport.ParentResource != m.Name {
		t.Errorf("parent_resource %q, %q, want %q", fip.ParentResource, mport.ParentResource, m.Name)
	}
	mserver := getResource(t, c, m.Stack, "masterNode")
	addrs, _ := mserver.Attributes["networks"].(map[string]any)["net0"].([]any)
	if !slices.Equal(addrs, []any{"10.10.0.12", "192.168.100.12"}) {
		t.Errorf("member server networks %v", mserver.Attributes["networks"])
	}

	// SetAttribute overrides, Attributes copies.
	top.Resource("vip_CP").SetAttribute("allowed_address_pairs", []any{map[string]any{"ip_address": "10.10.0.100"}})
	if got := getResource(t, c, top, "vip_CP").Attributes["allowed_address_pairs"].([]any); len(got) != 1 {
		t.Errorf("SetAttribute not served: %v", got)
	}
	local := top.Resource("vip_CP").Attributes()
	local["allowed_address_pairs"].([]any)[0].(map[string]any)["ip_address"] = "changed"
	if top.Resource("vip_CP").Attributes()["allowed_address_pairs"].([]any)[0].(map[string]any)["ip_address"] != "10.10.0.100" {
		t.Error("Attributes shares state with the server")
	}

	// A generic resource has exactly its attributes.
	sg := top.AddResource("srvgroup", "OS::Nova::ServerGroup", map[string]any{"policy": "anti-affinity", "name": "sg"})
	if got := getResource(t, c, top, "srvgroup"); got.Attributes["policy"] != "anti-affinity" || len(got.Attributes) != 2 || got.PhysicalID != sg.PhysicalID() {
		t.Errorf("server group %+v", got)
	}
}

func TestTemplate(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, masters, _ := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())

	decode := func(st *heattest.Stack) map[string]any {
		b, err := stacktemplates.Get(t.Context(), c, st.Name(), st.ID()).Extract()
		if err != nil {
			t.Fatal(err)
		}
		var tmpl map[string]any
		if err := json.Unmarshal(b, &tmpl); err != nil {
			t.Fatal(err)
		}
		return tmpl
	}
	tmpl := decode(top)
	res := tmpl["resources"].(map[string]any)
	props := func(name string) map[string]any {
		r, _ := res[name].(map[string]any)
		p, _ := r["properties"].(map[string]any)
		return p
	}
	if res["master_instance"].(map[string]any)["type"] != "OS::Heat::AutoScalingGroup" {
		t.Errorf("group type %v", res["master_instance"])
	}
	if p := props("master_instance"); p["min_size"] != 1.0 || p["max_size"] != 3.0 || p["desired_capacity"] != 3.0 ||
		p["resource"].(map[string]any)["type"] != "master_instance.hot.yaml" {
		t.Errorf("master group %v", p)
	}
	if p := props("worker_instance"); p["min_size"].(map[string]any)["get_param"] != "worker_min" || p["desired_capacity"] != 2.0 ||
		p["resource"].(map[string]any)["type"] != "base_hot_nested_worker.yaml" {
		t.Errorf("worker group %v", p)
	}
	if tmpl["parameters"].(map[string]any)["worker_min"].(map[string]any)["type"] != "number" {
		t.Errorf("parameters %v", tmpl["parameters"])
	}
	if p := props("worker_instance_scale_out"); p["adjustment_type"] != "change_in_capacity" || p["scaling_adjustment"] != 1.0 ||
		p["auto_scaling_group_id"].(map[string]any)["get_resource"] != "worker_instance" {
		t.Errorf("policy %v", p)
	}
	p := props("storage_server")
	if nets := p["networks"].([]any); len(nets) != 1 || nets[0].(map[string]any)["port"].(map[string]any)["get_resource"] != "storage_server_CP" {
		t.Errorf("server networks %v", p["networks"])
	}
	bdm := p["block_device_mapping_v2"].([]any)[0].(map[string]any)
	if bdm["device_name"] != "vdb" || bdm["volume_id"].(map[string]any)["get_resource"] != "storage_server_volume" || bdm["boot_index"] != -1.0 {
		t.Errorf("block_device_mapping_v2 %v", bdm)
	}
	if props("storage_server_volume")["size"] != 10.0 {
		t.Errorf("volume %v", props("storage_server_volume"))
	}

	// The group's nested stack template lists the members.
	nested := decode(masters.NestedStack())
	if len(nested["resources"].(map[string]any)) != 3 || nested["heat_template_version"] != "2015-04-30" {
		t.Errorf("nested template %v", nested)
	}

	// A member stack's template holds its resources; SetProperty overrides.
	m := masters.Members()[0].Stack
	m.Resource("masterNode").SetProperty("flavor", "m1.large")
	member := decode(m)["resources"].(map[string]any)
	if member["masterNode"].(map[string]any)["properties"].(map[string]any)["flavor"] != "m1.large" ||
		member["masterNode_FIP1"].(map[string]any)["properties"].(map[string]any)["port_id"].(map[string]any)["get_resource"] != "masterNode_CP1" {
		t.Errorf("member template %v", member)
	}
}

// TestGroupWalk follows Tacker's manual walk: top stack, group resource,
// nested stack, members, member stacks, ports.
func TestGroupWalk(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, masters, _ := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())

	ctx := t.Context()
	groupRes, err := stackresources.Get(ctx, c, top.Name(), top.ID(), "master_instance").Extract()
	if err != nil {
		t.Fatal(err)
	}
	members, err := stackresources.Find(ctx, c, groupRes.PhysicalID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if len(members) != 3 {
		t.Fatalf("%d members", len(members))
	}
	var ips []string
	for i, m := range members {
		want := masters.Members()[i]
		if m.Name != want.Name || m.Type != "master_instance.hot.yaml" || m.PhysicalID != want.Stack.ID() || m.ParentResource != "master_instance" || !m.CreationTime.Equal(want.CreatedAt) {
			t.Errorf("member %d: %+v, want %+v", i, m, want)
		}
		if len(m.Name) != 12 || strings.Trim(m.Name, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Errorf("member name %q is not a Heat short id", m.Name)
		}
		ms, err := stacks.Find(ctx, c, m.PhysicalID).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if ms.Name != want.Stack.Name() || !strings.HasPrefix(ms.Name, masters.NestedStack().Name()+"-"+m.Name+"-") {
			t.Errorf("member stack name %q", ms.Name)
		}
		port, err := stackresources.Get(ctx, c, ms.Name, ms.ID, "masterNode_CP1").Extract()
		if err != nil {
			t.Fatal(err)
		}
		ips = append(ips, firstIP(t, port.Attributes))
	}
	if !slices.Equal(ips, []string{"10.10.0.11", "10.10.0.12", "10.10.0.13"}) {
		t.Errorf("member IPs %v", ips)
	}

	// nested_depth lists the nested resources after their parent, with
	// parent_resource set.
	all := listResources(t, c, top.Name(), top.ID(), 2)
	if len(all) != 7+3+3*3+2+2*2 {
		t.Fatalf("%d resources at depth 2: %v", len(all), names(all))
	}
	if all[1].Name != "master_instance" || all[2].Name != members[0].Name || all[2].ParentResource != "master_instance" || all[3].Name != "masterNode_CP1" || all[3].ParentResource != members[0].Name {
		t.Errorf("depth-2 order: %v", names(all[:6]))
	}
	if d1 := listResources(t, c, top.Name(), top.ID(), 1); len(d1) != 7+3+2 {
		t.Errorf("%d resources at depth 1", len(d1))
	}
	// Creation times are strictly increasing in creation order.
	for i := 1; i < len(all); i++ {
		if !all[i].CreationTime.After(all[i-1].CreationTime) {
			t.Errorf("%s created %v, not after %s %v", all[i].Name, all[i].CreationTime, all[i-1].Name, all[i-1].CreationTime)
		}
	}
}

func TestScaleOutAndIn(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, _, workers := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())
	nested := workers.NestedStack()
	initial := workers.Members()
	memberNames := func() []string {
		return names(listResources(t, c, nested.Name(), nested.ID(), 0))
	}
	desired := func() any {
		b, err := stacktemplates.Get(t.Context(), c, top.Name(), top.ID()).Extract()
		if err != nil {
			t.Fatal(err)
		}
		var tmpl map[string]any
		_ = json.Unmarshal(b, &tmpl)
		return tmpl["resources"].(map[string]any)["worker_instance"].(map[string]any)["properties"].(map[string]any)["desired_capacity"]
	}

	srv.Advance(time.Hour)
	before := srv.Now()
	added, err := workers.ScaleOut(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 2 || added[0].Index != 2 || added[1].Index != 3 || !added[0].CreatedAt.Before(added[1].CreatedAt) || added[0].CreatedAt.Before(before) {
		t.Fatalf("added %+v", added)
	}
	if got := memberNames(); len(got) != 4 || got[2] != added[0].Name || got[3] != added[1].Name {
		t.Errorf("members after scale-out %v", got)
	}
	if ip := firstIP(t, getResource(t, c, added[1].Stack, "workerNode_CP2").Attributes); ip != "10.10.0.24" {
		t.Errorf("new member IP %s", ip)
	}
	if desired() != 4.0 {
		t.Errorf("desired_capacity %v", desired())
	}
	g := getResource(t, c, top, "worker_instance")
	st, err := stacks.Get(t.Context(), c, top.Name(), top.ID()).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if g.Status != "UPDATE_COMPLETE" || !g.UpdatedTime.After(added[1].CreatedAt) || st.Status != "UPDATE_COMPLETE" || !st.UpdatedTime.Equal(g.UpdatedTime) {
		t.Errorf("after scale-out: group %s %v, stack %s %v", g.Status, g.UpdatedTime, st.Status, st.UpdatedTime)
	}
	if g.Attributes["current_size"] != 4.0 {
		t.Errorf("current_size %v", g.Attributes["current_size"])
	}

	if _, err := workers.ScaleOut(1); !errors.Is(err, heattest.ErrGroupSize) {
		t.Errorf("beyond max_size: %v", err)
	}
	if len(workers.Members()) != 4 {
		t.Error("a refused scale-out changed the group")
	}

	// Scale-in removes the oldest.
	removed, err := workers.ScaleIn(2)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 2 || removed[0] != initial[0] || removed[1] != initial[1] {
		t.Errorf("removed %v, want the initial members", removed)
	}
	if got := memberNames(); !slices.Equal(got, []string{added[0].Name, added[1].Name}) {
		t.Errorf("members after scale-in %v", got)
	}
	if _, err := stacks.Find(t.Context(), c, initial[0].Stack.ID()).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
		t.Errorf("removed member's stack: %v", err)
	}
	if !initial[0].Stack.Deleted() || srv.Stack(initial[0].Stack.ID()) != nil {
		t.Error("removed member stack still known")
	}
	if desired() != 2.0 {
		t.Errorf("desired_capacity %v", desired())
	}

	// Below min_size is refused; the minimum follows its parameter.
	if _, err := workers.ScaleIn(2); !errors.Is(err, heattest.ErrGroupSize) {
		t.Errorf("below min_size: %v", err)
	}
	top.SetParameter("worker_min", "2")
	if workers.MinSize() != 2 {
		t.Errorf("MinSize %d after parameter change", workers.MinSize())
	}
	if _, err := workers.ScaleIn(1); !errors.Is(err, heattest.ErrGroupSize) {
		t.Errorf("below parameter min_size: %v", err)
	}
	top.SetParameter("worker_min", "1")

	// RemoveMembers by name, as Tacker's removal_policies do.
	more, err := workers.ScaleOut(1)
	if err != nil {
		t.Fatal(err)
	}
	if more[0].Index != 4 {
		t.Errorf("index after scale-in %d, want 4 (indexes never repeat)", more[0].Index)
	}
	if _, err := workers.RemoveMembers("nosuchmember"); err == nil {
		t.Error("unknown member removed")
	}
	gone, err := workers.RemoveMembers(more[0].Name, added[0].Name)
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 2 || gone[0] != more[0] || gone[1] != added[0] {
		t.Errorf("RemoveMembers returned %v", gone)
	}
	if got := memberNames(); !slices.Equal(got, []string{added[1].Name}) {
		t.Errorf("members after RemoveMembers %v", got)
	}
	if _, err := workers.RemoveMembers(added[1].Name); !errors.Is(err, heattest.ErrGroupSize) {
		t.Errorf("RemoveMembers below min: %v", err)
	}
}

func TestReplaceServer(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, masters, _ := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())
	m := masters.Members()[2]
	old := getResource(t, c, m.Stack, "masterNode")

	srv.Advance(24 * time.Hour)
	now := srv.Now()
	oldID, newID := m.Stack.ReplaceServer("masterNode")
	if oldID != old.PhysicalID || newID == oldID || len(newID) != 36 {
		t.Fatalf("ReplaceServer = %s, %s (old %s)", oldID, newID, old.PhysicalID)
	}
	got := getResource(t, c, m.Stack, "masterNode")
	if got.PhysicalID != newID || got.Attributes["id"] != newID || got.Status != "CREATE_COMPLETE" || !got.CreationTime.Equal(now) || !got.UpdatedTime.Equal(now) {
		t.Errorf("replaced server %+v", got)
	}
	if got.Attributes["OS-EXT-SRV-ATTR:host"] == old.Attributes["OS-EXT-SRV-ATTR:host"] {
		t.Error("replaced server on the same host")
	}
	if port := getResource(t, c, m.Stack, "masterNode_CP1"); port.Attributes["device_id"] != newID {
		t.Errorf("port device_id %v", port.Attributes["device_id"])
	}
	// The update propagates: member resource, group stack, group, top.
	memberRes := getResource(t, c, masters.NestedStack(), m.Name)
	group := getResource(t, c, top, "master_instance")
	topStack, err := stacks.Get(t.Context(), c, top.Name(), top.ID()).Extract()
	if err != nil {
		t.Fatal(err)
	}
	for what, st := range map[string]struct {
		status  string
		updated time.Time
	}{
		"member resource": {memberRes.Status, memberRes.UpdatedTime},
		"group resource":  {group.Status, group.UpdatedTime},
		"top stack":       {topStack.Status, topStack.UpdatedTime},
	} {
		if st.status != "UPDATE_COMPLETE" || !st.updated.Equal(now) {
			t.Errorf("%s: %s %v, want UPDATE_COMPLETE %v", what, st.status, st.updated, now)
		}
	}
	if other := getResource(t, c, masters.Members()[0].Stack, "masterNode"); other.Status != "CREATE_COMPLETE" {
		t.Errorf("untouched member server %s", other.Status)
	}

	// A storage server heal moves its volume.
	oldVol := getResource(t, c, top, "storage_server_volume").Attributes["attachments"].([]any)[0].(map[string]any)
	_, sid := top.ReplaceServer("storage_server")
	vol := getResource(t, c, top, "storage_server_volume").Attributes["attachments"].([]any)[0].(map[string]any)
	if vol["server_id"] != sid || vol["attachment_id"] == oldVol["attachment_id"] || vol["device"] != "/dev/vdb" {
		t.Errorf("volume attachment after heal %v (before %v)", vol, oldVol)
	}

	// A heal that re-creates the volume: a new volume, attached to the
	// same server and device; attachments and attachments_list agree.
	oldVolID, newVolID := top.ReplaceVolume("storage_server_volume")
	res := getResource(t, c, top, "storage_server_volume")
	if oldVolID != oldVol["volume_id"] || newVolID == oldVolID || res.PhysicalID != newVolID || res.Status != "CREATE_COMPLETE" {
		t.Errorf("ReplaceVolume: %s -> %s, resource %s %s", oldVolID, newVolID, res.PhysicalID, res.Status)
	}
	for _, key := range []string{"attachments", "attachments_list"} {
		att := res.Attributes[key].([]any)[0].(map[string]any)
		if att["volume_id"] != newVolID || att["server_id"] != sid || att["device"] != "/dev/vdb" || att["attachment_id"] == vol["attachment_id"] {
			t.Errorf("%s after ReplaceVolume: %v", key, att)
		}
	}
}

func TestSetFixedIPsAndStatus(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	_, masters, _ := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())
	m := masters.Members()[0]

	port := m.Stack.Resource("masterNode_CP1")
	port.SetFixedIPs("10.10.0.91")
	if got := port.FixedIPs(); !slices.Equal(got, []string{"10.10.0.91"}) {
		t.Errorf("FixedIPs %v", got)
	}
	p := getResource(t, c, m.Stack, "masterNode_CP1")
	if firstIP(t, p.Attributes) != "10.10.0.91" || p.Status != "UPDATE_COMPLETE" {
		t.Errorf("port after SetFixedIPs %+v", p)
	}
	if fip := getResource(t, c, m.Stack, "masterNode_FIP1"); fip.Attributes["fixed_ip_address"] != "10.10.0.91" {
		t.Errorf("floating IP fixed_ip_address %v", fip.Attributes["fixed_ip_address"])
	}
	if nets := getResource(t, c, m.Stack, "masterNode").Attributes["networks"].(map[string]any); nets["net0"].([]any)[0] != "10.10.0.91" {
		t.Errorf("server networks %v", nets)
	}

	srvRes := m.Stack.Resource("masterNode")
	srvRes.SetStatus("CHECK_FAILED", "Server is down")
	got := getResource(t, c, m.Stack, "masterNode")
	if got.Status != "CHECK_FAILED" || got.StatusReason != "Server is down" || srvRes.Status() != "CHECK_FAILED" {
		t.Errorf("after SetStatus %s %q", got.Status, got.StatusReason)
	}

	// A removed port leaves its floating IP unbound.
	m.Stack.RemoveResource("masterNode_CP1")
	if m.Stack.Resource("masterNode_CP1") != nil {
		t.Fatal("port still there")
	}
	if fip := getResource(t, c, m.Stack, "masterNode_FIP1"); fip.Attributes["port_id"] != nil || fip.Attributes["fixed_ip_address"] != nil {
		t.Errorf("floating IP of a removed port %v", fip.Attributes)
	}
	m.Stack.RemoveResource("masterNode_CP1") // no-op
}

// DeleteStack deletes a top-level stack and its nested stacks, as a
// terminate's stack delete does: Heat no longer finds any of them.
func TestDeleteStack(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, masters, _ := buildVNF(srv)
	member := masters.Members()[0].Stack
	c := orchestration(t, srv, srv.AuthOptions())
	if srv.DeleteStack(member.ID()) {
		t.Error("DeleteStack deleted a nested stack")
	}
	if !srv.DeleteStack(top.ID()) {
		t.Fatal("DeleteStack found no stack")
	}
	for _, st := range []*heattest.Stack{top, member} {
		if _, err := stacks.Find(t.Context(), c, st.ID()).Extract(); !gophercloud.ResponseCodeIs(err, http.StatusNotFound) {
			t.Errorf("find %s after the delete: %v", st.Name(), err)
		}
		if !st.Deleted() || srv.Stack(st.ID()) != nil || srv.StackByName(st.Name()) != nil {
			t.Errorf("%s: Deleted %v, still served %v", st.Name(), st.Deleted(), srv.Stack(st.ID()) != nil)
		}
	}
	if srv.DeleteStack(top.ID()) {
		t.Error("a second DeleteStack deleted it again")
	}
}

func TestFailRequests(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("s1")
	srv.FailRequests(2, http.StatusServiceUnavailable)
	c := orchestration(t, srv, srv.AuthOptions()) // Keystone is not affected
	for i := range 2 {
		_, err := stacks.Get(t.Context(), c, st.Name(), st.ID()).Extract()
		if !gophercloud.ResponseCodeIs(err, http.StatusServiceUnavailable) {
			t.Fatalf("request %d: %v", i, err)
		}
		if body := errorBody(t, err); body["code"] != 503.0 || body["title"] != "Service Unavailable" {
			t.Errorf("503 body %v", body)
		}
	}
	if _, err := stacks.Get(t.Context(), c, st.Name(), st.ID()).Extract(); err != nil {
		t.Fatalf("third request: %v", err)
	}
	var statuses []int
	for _, r := range srv.Requests() {
		if strings.HasPrefix(r.Path, "/heat/") {
			statuses = append(statuses, r.Status)
		}
	}
	if !slices.Equal(statuses, []int{503, 503, 200}) {
		t.Errorf("heat statuses %v", statuses)
	}
}

func TestDeterministicIDs(t *testing.T) {
	build := func(seed uint64) (ids []string, password string) {
		srv := heattest.Start(t, heattest.Config{Seed: seed})
		top, masters, _ := buildVNF(srv)
		ids = append(ids, srv.ProjectID(), top.ID(), masters.NestedStack().Name())
		for _, m := range masters.Members() {
			ids = append(ids, m.Name, m.Stack.ID(), m.Stack.Resource("masterNode").PhysicalID())
		}
		return ids, srv.Password()
	}
	a, pa := build(7)
	b, pb := build(7)
	d, _ := build(8)
	if !slices.Equal(a, b) {
		t.Errorf("same seed, different ids:\n%v\n%v", a, b)
	}
	if slices.Equal(a, d) {
		t.Error("different seeds, same ids")
	}
	if pa == pb || len(pa) < 16 {
		t.Errorf("passwords %q and %q: want random", pa, pb)
	}
}

func TestBuilderPanics(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("s1")
	st.AddPort("p", "10.0.0.1")
	for name, f := range map[string]func(){
		"duplicate stack":      func() { srv.CreateStack("s1") },
		"duplicate resource":   func() { st.AddPort("p", "10.0.0.2") },
		"bad IP":               func() { st.AddPort("q", "10.0.0.300") },
		"missing port":         func() { st.AddFloatingIP("f", "192.168.0.1", "nope") },
		"server on non-port":   func() { st.AddServer("s", "p", "nope") },
		"volume of non-server": func() { st.AddVolume("v", "p", "/dev/vdb", 1) },
		"replace non-server":   func() { st.ReplaceServer("p") },
		"bad group spec":       func() { st.AddGroup("g", heattest.GroupSpec{MinSize: 2, Desired: 1}) },
		"slash in a name":      func() { st.AddPort("a/b", "10.0.0.3") },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			f()
		})
	}
}

// TestPathDecoding: the server decodes the path before it splits it, as
// Heat's WSGI server and routes do. An escaped "?" is part of a name, an
// unescaped one starts the query; "%2F" separates segments, so no name
// holds a "/"; dot segments are not resolved.
func TestPathDecoding(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	st := srv.CreateStack("s1")
	st.AddPort("my_CP", "10.0.0.1")
	st.AddPort("my_CP?x=1", "10.0.0.2")
	st.AddPort("a b%", "10.0.0.3")
	c := orchestration(t, srv, srv.AuthOptions())
	get := func(name string) (string, int) {
		r, err := stackresources.Get(t.Context(), c, st.Name(), st.ID(), name).Extract()
		var code gophercloud.ErrUnexpectedResponseCode
		switch {
		case err == nil && r == nil:
			return "(no resource)", 200
		case err == nil:
			return r.Name, 200
		case errors.As(err, &code):
			return "", code.Actual
		}
		t.Fatalf("get %q: %v", name, err)
		return "", 0
	}
	for _, tt := range []struct {
		segment, name string
		status        int
		rawPath       string // suffix of the request's raw path
	}{
		{url.PathEscape("my_CP?x=1"), "my_CP?x=1", 200, "/resources/my_CP%3Fx=1"},
		{"my_CP?x=1", "my_CP", 200, "/resources/my_CP"}, // what an unescaped name does
		{url.PathEscape("a b%"), "a b%", 200, "/resources/a%20b%25"},
		{url.PathEscape("../my_CP"), "", 404, "/resources/..%2Fmy_CP"},
		{"../my_CP", "", 404, "/resources/../my_CP"},
		{"..", "", 404, "/resources/.."},
		{"x/../my_CP", "", 404, "/resources/x/../my_CP"}, // a server that cleaned paths would find my_CP
		{"my%2FCP", "", 404, "/resources/my%2FCP"},
	} {
		before := len(srv.Requests())
		name, status := get(tt.segment)
		reqs := srv.Requests()[before:]
		if name != tt.name || status != tt.status || len(reqs) != 1 || !strings.HasSuffix(reqs[0].RawPath, tt.rawPath) {
			t.Errorf("segment %q: got %q (%d), requests %+v; want %q (%d), raw path ...%s", tt.segment, name, status, reqs, tt.name, tt.status, tt.rawPath)
		}
	}
}

func TestClockAndRequests(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	if !srv.Now().Equal(heattest.DefaultStart) {
		t.Errorf("Now %v", srv.Now())
	}
	a := srv.CreateStack("a")
	srv.Advance(90 * time.Second)
	b := srv.CreateStack("b")
	if !a.CreationTime().Equal(heattest.DefaultStart) || !b.CreationTime().Equal(heattest.DefaultStart.Add(91*time.Second)) {
		t.Errorf("creation times %v %v", a.CreationTime(), b.CreationTime())
	}
	c := orchestration(t, srv, srv.AuthOptions())
	if _, err := stacks.Find(t.Context(), c, "b").Extract(); err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	want := []heattest.Request{
		{Method: "POST", Path: "/identity/v3/auth/tokens", RawPath: "/identity/v3/auth/tokens", Status: 201},
		{Method: "GET", Path: "/heat/v1/" + srv.ProjectID() + "/stacks/b", RawPath: "/heat/v1/" + srv.ProjectID() + "/stacks/b", Status: 302},
		{Method: "GET", Path: "/heat/v1/" + srv.ProjectID() + "/stacks/b/" + b.ID(), RawPath: "/heat/v1/" + srv.ProjectID() + "/stacks/b/" + b.ID(), Status: 200},
	}
	if !slices.Equal(reqs, want) {
		t.Errorf("requests %+v, want %+v", reqs, want)
	}
}

// TestConcurrency scales groups while clients walk them; run with -race.
func TestConcurrency(t *testing.T) {
	srv := heattest.Start(t, heattest.Config{})
	top, _, workers := buildVNF(srv)
	c := orchestration(t, srv, srv.AuthOptions())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	var wg sync.WaitGroup
	var reads atomic.Int64
	started := make(chan struct{})
	var once sync.Once
	for range 4 {
		wg.Go(func() {
			defer once.Do(func() { close(started) })
			for ctx.Err() == nil {
				pages, err := stackresources.List(c, top.Name(), top.ID(), stackresources.ListOpts{Depth: 2}).AllPages(ctx)
				if err != nil {
					if ctx.Err() == nil {
						t.Error(err)
					}
					return
				}
				if _, err := stackresources.ExtractResources(pages); err != nil {
					t.Error(err)
					return
				}
				reads.Add(1)
				once.Do(func() { close(started) })
			}
		})
	}
	// Builders of separate stacks run in parallel too.
	for i := range 4 {
		wg.Go(func() {
			st := srv.CreateStack(fmt.Sprintf("side-%d", i))
			for j := range 20 {
				p := st.AddPort(fmt.Sprintf("p%d", j), fmt.Sprintf("10.%d.%d.1", 20+i, j))
				st.AddServer(fmt.Sprintf("s%d", j), p.Name())
				_ = p.Attributes()
			}
		})
	}
	<-started
	for i := range 20 {
		if i%2 == 0 {
			if _, err := workers.ScaleOut(2); err != nil {
				t.Error(err)
			}
		} else {
			if _, err := workers.ScaleIn(2); err != nil {
				t.Error(err)
			}
		}
		_ = workers.Members()
		srv.ExpireTokens()
	}
	cancel()
	wg.Wait()
	if reads.Load() == 0 {
		t.Error("no walk completed")
	}
	if n := len(workers.Members()); n != 2 {
		t.Errorf("%d workers at the end", n)
	}
}
