package kubeapi

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// ObjectNameProblem says what is wrong with name as the name of a
// Kubernetes object such as a Node, a PersistentVolume or a Secret, ""
// if nothing: it must be a DNS subdomain (RFC 1123: lower-case letters,
// digits, '-' and '.', starting and ending with a letter or digit, at
// most 253 characters), as the API server requires of most kinds
// (ValidateNodeName and NameIsDNSSubdomain in
// pkg/apis/core/validation/validation.go, with
// k8s.io/apimachinery/pkg/util/validation's IsDNS1123Subdomain, which
// this calls). The same rule keeps a name from being read by kubectl as
// an option.
func ObjectNameProblem(name string) string {
	if name == "" {
		return "must not be empty"
	}
	if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
		return fmt.Sprintf("%q is not a Kubernetes object name: %s", clip(name), strings.Join(errs, "; "))
	}
	return ""
}

// CheckObjectName returns an *lcm.ParamsError whose problem is at path
// when name is not an object name (see [ObjectNameProblem]), nil
// otherwise.
func CheckObjectName(path, name string) error {
	if msg := ObjectNameProblem(name); msg != "" {
		return optProblem(path, "%s", msg)
	}
	return nil
}

// namespaceMsg says what is wrong with ns as a namespace's name (a DNS
// label, RFC 1123: ValidateNamespaceName in
// k8s.io/apimachinery/pkg/api/validation), "" if nothing.
func namespaceMsg(ns string) string {
	if ns == "" {
		return "must not be empty"
	}
	if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
		return fmt.Sprintf("%q is not a namespace name: %s", clip(ns), strings.Join(errs, "; "))
	}
	return ""
}

// labelMsg says what is wrong with s as a DNS label (RFC 1123, a
// container's name), "" if nothing.
func labelMsg(s string) string {
	if errs := validation.IsDNS1123Label(s); len(errs) > 0 {
		return fmt.Sprintf("%q is not a DNS label: %s", clip(s), strings.Join(errs, "; "))
	}
	return ""
}

// kindRe is a resource type as kubectl takes it: a kind or resource name
// ("Node", "nodes", "pv"), optionally dotted with a version and group
// ("deployments.apps", "deployments.v1.apps"); never TYPE/NAME, and
// never starting with '-'.
var kindRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// kindMsg says what is wrong with kind as kubectl's resource type, "" if
// nothing.
func kindMsg(kind string) string {
	switch {
	case kind == "":
		return "must not be empty"
	case len(kind) > 253 || !kindRe.MatchString(kind):
		return fmt.Sprintf("%q is not a resource type (a kind or resource name, optionally .group: \"node\", \"configmaps\", \"deployments.apps\")", clip(kind))
	}
	return ""
}

// optProblem is the *lcm.ParamsError of one bad option.
func optProblem(path, format string, args ...any) error {
	return &lcm.ParamsError{Problems: []lcm.Problem{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// optProblems collects what is wrong with a step's options, by field
// path, before any remote command runs.
type optProblems []lcm.Problem

// addf adds the problem at path.
func (p *optProblems) addf(path, format string, args ...any) {
	*p = append(*p, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as an *lcm.ParamsError, nil if there are none.
func (p optProblems) err() error {
	if len(p) == 0 {
		return nil
	}
	return &lcm.ParamsError{Problems: p}
}

// clip cuts s to 100 bytes for a message, as lcm's messages do.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + "…"
}

// NodeName returns the Kubernetes node name, which is also the host name,
// of the node of role whose cluster (NIC) address is nicAddress:
// "master-10-0-0-5", "worker-10-0-0-12"; an IPv6 address has its colons
// written as dashes ("worker-fd00--12"). Unlike the reference's
// master<last octet>, the name is unique per address, so two nodes in
// different /24s never collide.
//
// A valid address is written in its canonical form (netip), so
// "10.0.0.05" and "10.0.0.5" give one name; an IPv4-mapped IPv6 address
// is written as its IPv4 address. Anything else is used as given, lower
// case, with every character that a host name cannot hold replaced by a
// dash: NodeName never fails, and callers pass addresses Heat reported.
// kubeadm's and kubespray's clusters name their nodes so.
func NodeName(role lcm.Role, nicAddress string) string {
	addr := nicAddress
	if a, err := netip.ParseAddr(nicAddress); err == nil {
		addr = a.Unmap().WithZone("").String()
	}
	var b strings.Builder
	b.WriteString(string(role))
	b.WriteByte('-')
	for _, r := range strings.ToLower(addr) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	return strings.TrimRight(b.String(), "-")
}
