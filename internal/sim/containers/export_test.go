package containers

// CheckInsecureRegistry is insecureRegistry's verdict, for tests.
func CheckInsecureRegistry(r string) error {
	_, err := insecureRegistry(r)
	return err
}
