package registry

import (
	"context"

	"github.com/mgmtkit/mgmtkit/lcm"
	"github.com/mgmtkit/mgmtkit/remote"
)

// StepTrust is the step name TrustNodes reports under.
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
