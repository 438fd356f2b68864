package kubeadm

// HAProxyCfgForTest renders lb's haproxy.cfg, defaults filled in, for
// the external tests, which check it with the real haproxy.
func HAProxyCfgForTest(lb APIServerLB) ([]byte, error) {
	if err := lb.check(false); err != nil {
		return nil, err
	}
	return haproxyCfg(lb)
}

// KeepalivedConfForTest renders lb's keepalived.conf (lb.Interface
// given) for the real keepalived.
func KeepalivedConfForTest(lb APIServerLB) ([]byte, error) {
	if err := lb.check(true); err != nil {
		return nil, err
	}
	return keepalivedConf(lb)
}
