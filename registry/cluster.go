package registry

import (
	"context"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/plumbing"
	"github.com/mgmtkit/mgmtkit/remote"
)

// StepTrust is the step name TrustNodes and the cluster extension
// ([TrustParams.Extensions]) report under.
const StepTrust = "registry-trust"

// TrustNodes runs [ConfigureRegistryTrust] on every host, at most
// [lcm.DefaultLimit] at a time (fanout: [lcm.Limit], [lcm.WithPolicy]),
// and returns one result per host, in order. It is what a Kubernetes
// cluster driver calls, with the hosts its plumbing connected for the
// hook, for the nodes an operation created: every master and worker at
// instantiate_end and after an entire heal, the new workers at scale_end,
// the healed node at heal_end.
func TrustNodes[H remote.Host](ctx context.Context, hosts []H, conns []Connection, opts TrustOptions, fanout ...lcm.Option) (lcm.Results, error) {
	return lcm.OnHosts(ctx, StepTrust, hosts, func(ctx context.Context, h H) (lcm.Result, error) {
		return ConfigureRegistryTrust(ctx, h, conns, opts)
	}, fanout...)
}

// Extensions returns registry trust as an extension of a Kubernetes
// cluster's hooks (kubeadm's, kubespray's; see [plumbing.Extension]):
// every node that joins trusts and logs in to the registries of
// private_registry_connection_info ([ConfigureRegistryTrust], with the
// certificates read from pkg) before it joins, so that it can pull from
// them from its first pod on, and reaches them without the proxy. No
// registries: no extension.
func (p TrustParams) Extensions(pkg *lcm.Package) plumbing.Extensions {
	conns := p.PrivateRegistryConnectionInfo
	if len(conns) == 0 {
		return nil
	}
	var direct []string
	for _, c := range conns {
		direct = append(direct, c.Host())
	}
	return plumbing.Extensions{{
		Name:    StepTrust,
		NoProxy: direct,
		BeforeJoin: func(ctx context.Context, _ lcm.Node, h remote.Host) (lcm.Result, error) {
			return ConfigureRegistryTrust(ctx, h, conns, TrustOptions{Package: pkg})
		},
	}}
}
