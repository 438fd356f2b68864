module github.com/mgmtkit/mgmtkit

go 1.26.0

require (
	al.essio.dev/pkg/shellescape v1.6.1
	github.com/distribution/reference v0.6.0
	github.com/gliderlabs/ssh v0.3.8
	github.com/gophercloud/gophercloud/v2 v2.15.0
	github.com/opencontainers/go-digest v1.0.0
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/pkg/sftp v1.13.12
	golang.org/x/crypto v0.58.0
	golang.org/x/sync v0.24.0
	mvdan.cc/sh/v3 v3.14.1
)

require (
	github.com/anmitsu/go-shlex v0.0.0-20200514113438-38f4b401e2be // indirect
	github.com/kr/fs v0.1.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/term v0.47.0 // indirect
	gopkg.in/yaml.v2 v2.4.0 // indirect
)
