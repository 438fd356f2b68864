package containers

// CheckInsecureRegistry is insecureRegistry's verdict, for tests.
func CheckInsecureRegistry(r string) error {
	_, err := insecureRegistry(r)
	return err
}

// ProxyAnswer is the head of a Proxy's refusal, for the test that gives
// the real apt-get the same answer.
func ProxyAnswer(status int) string { return proxyAnswer(status) }
