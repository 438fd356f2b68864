package system

import (
	"bytes"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// ContainerdConfigFile is containerd's configuration file (containerd's
// default --config, defaults/defaults_unix.go DefaultConfigPath).
const ContainerdConfigFile = "/etc/containerd/config.toml"

// containerdCRIPlugins are the names disabled_plugins can turn
// containerd's CRI off by: its plugin ID, which a version 1 file uses
// ("cri", as containerd.io ships it: docker/containerd-packaging
// common/containerd.toml); its URI in versions 2 and 3; and containerd
// 2's image and runtime plugins, without which the CRI service does not
// load (containerd services/server/config V1DisabledFilter and
// V2DisabledFilter; v2.2.0 cmd/containerd/server/config/config.go
// v1MigratePluginName).
func containerdCRIPlugins() []string {
	return []string{"cri", "io.containerd.grpc.v1.cri", "io.containerd.cri.v1.images", "io.containerd.cri.v1.runtime"}
}

// ContainerdSettings are the settings of containerd's config.toml that
// mgmtkit owns, for [ContainerdConfig.Edit]. The zero value of each
// leaves the file as it is there.
type ContainerdSettings struct {
	// EnableCRI takes the CRI plugins out of disabled_plugins (Docker
	// CE's containerd.io ships disabled_plugins = ["cri"]).
	EnableCRI bool
	// SystemdCgroup gives the runc runtime runtime_type
	// "io.containerd.runc.v2" and SystemdCgroup = true, the cgroup driver
	// the kubelet's must agree with (kubernetes.io docs "Container
	// Runtimes", containerd).
	SystemdCgroup bool
	// SandboxImage is the pod sandbox (pause) image: sandbox_image of the
	// CRI plugin in a version 2 file, pinned_images.sandbox of the images
	// plugin in a version 3 one (containerd docs/cri/config.md).
	SandboxImage string
	// RegistryConfigPath is the registry config_path (the directory of
	// hosts.toml files) set when the file names none; one that names
	// another is kept ([ContainerdConfig.RegistryConfigPath] says which
	// applies). The legacy registry settings containerd refuses beside
	// config_path are refused: registry.mirrors, and
	// registry.configs.HOST.tls in a version 2 file (containerd 1.6 and
	// 1.7 pkg/cri/config/config.go ValidatePluginConfig; 2.x's
	// ValidateImageConfig has no TLS field left to check,
	// internal/cri/config/config.go). Credentials alone
	// (registry.configs.HOST.auth) are kept: the CRI still sends them.
	RegistryConfigPath string
}

// ContainerdConfig is containerd's config.toml, decoded as TOML, for
// editing by its settings: an edit changes the keys it names and keeps
// every other one, whoever wrote it. A version 2 file (containerd 1.x)
// holds the CRI's settings under plugins."io.containerd.grpc.v1.cri", a
// version 3 file (containerd 2.x) under plugins."io.containerd.cri.v1.runtime"
// and "io.containerd.cri.v1.images" (containerd docs/cri/config.md);
// a versionless file (schema version 1) is refused. Comments are lost
// when the file is encoded again, so write it only when an edit changed
// it.
type ContainerdConfig struct {
	tree map[string]any
}

// ParseContainerdConfig decodes config.toml's content; empty content (a
// missing file) has no settings.
func ParseContainerdConfig(content []byte) (*ContainerdConfig, error) {
	c := &ContainerdConfig{tree: map[string]any{}}
	if len(bytes.TrimSpace(content)) > 0 {
		if err := toml.Unmarshal(content, &c.tree); err != nil {
			return nil, fmt.Errorf("%s is not valid TOML (%v): fix it by hand; mgmtkit will not overwrite it", ContainerdConfigFile, err)
		}
	}
	return c, nil
}

// Empty reports whether the file holds no setting (it is missing, empty
// or all comments).
func (c *ContainerdConfig) Empty() bool { return len(c.tree) == 0 }

// Version returns the file's schema version: 2 for containerd 1.x, 3 for
// 2.x, 0 without one.
func (c *ContainerdConfig) Version() int64 {
	v, _ := c.tree["version"].(int64)
	return v
}

// DisabledCRI returns the names of the CRI plugins disabled_plugins
// lists: a containerd so configured serves no kubelet.
func (c *ContainerdConfig) DisabledCRI() []string {
	list, _ := c.tree["disabled_plugins"].([]any)
	var out []string
	for _, v := range list {
		if name, ok := v.(string); ok && slices.Contains(containerdCRIPlugins(), name) {
			out = append(out, name)
		}
	}
	return out
}

// RegistryConfigPath returns the registry config_path the file names, ""
// when none (or the file has no version to say where it is).
func (c *ContainerdConfig) RegistryConfigPath() string {
	v, _ := lookup(c.tree, "plugins", c.imagesPlugin(), "registry", "config_path").(string)
	return v
}

// imagesPlugin is the plugin that holds the image settings in the file's
// version; "" when it has none.
func (c *ContainerdConfig) imagesPlugin() string {
	switch c.Version() {
	case 2:
		return "io.containerd.grpc.v1.cri"
	case 3:
		return "io.containerd.cri.v1.images"
	}
	return ""
}

// runtimePlugin is the plugin that holds the runtimes in the file's
// version.
func (c *ContainerdConfig) runtimePlugin() string {
	if c.Version() == 3 {
		return "io.containerd.cri.v1.runtime"
	}
	return "io.containerd.grpc.v1.cri"
}

// Edit makes the file hold s and returns what it changed (nil: nothing).
// A file without a setting gets the version of the installed containerd
// (3 from containerd 2.0), which major answers; major is asked only then,
// or to give a versionless file's refusal a hint that fits the release.
// Refused, before any change: a version no containerd reads, a
// versionless file with settings, a key on the way to a setting that is
// not a table, and legacy registry settings beside s.RegistryConfigPath.
func (c *ContainerdConfig) Edit(s ContainerdSettings, major func() (int, error)) ([]string, error) {
	var changes []string
	if s.EnableCRI {
		if list, ok := c.tree["disabled_plugins"].([]any); ok {
			kept := slices.DeleteFunc(slices.Clone(list), func(v any) bool {
				name, _ := v.(string)
				return slices.Contains(containerdCRIPlugins(), name)
			})
			if len(kept) != len(list) {
				changes = append(changes, "CRI plugin enabled")
				if len(kept) == 0 {
					delete(c.tree, "disabled_plugins")
				} else {
					c.tree["disabled_plugins"] = kept
				}
			}
		}
	}
	version := c.Version()
	switch {
	case version > 3:
		return nil, fmt.Errorf("%s has version %d, which no containerd reads: fix it by hand", ContainerdConfigFile, version)
	case version < 2 && !c.Empty():
		// containerd.io's packaged file (disabled_plugins = ["cri"] and
		// nothing else) was emptied above: that one is rewritten.
		m, err := major()
		if err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%s has no version (schema version 1), which mgmtkit does not edit: %s", ContainerdConfigFile, containerdMigrateHint(m))
	case version < 2:
		m, err := major()
		if err != nil {
			return nil, err
		}
		version = 2
		if m >= 2 {
			version = 3
		}
		c.tree["version"] = version
		changes = append(changes, "version "+strconv.FormatInt(version, 10))
	}
	type setting struct {
		keys []string
		val  any
		what string
	}
	var set []setting
	if s.SystemdCgroup {
		runc := []string{"plugins", c.runtimePlugin(), "containerd", "runtimes", "runc"}
		set = append(set,
			setting{append(slices.Clone(runc), "runtime_type"), "io.containerd.runc.v2", "runc runtime"},
			setting{append(slices.Clone(runc), "options", "SystemdCgroup"), true, "SystemdCgroup = true"})
	}
	if s.SandboxImage != "" {
		keys := []string{"plugins", c.imagesPlugin(), "sandbox_image"}
		if version == 3 {
			keys = []string{"plugins", c.imagesPlugin(), "pinned_images", "sandbox"}
		}
		set = append(set, setting{keys, s.SandboxImage, "sandbox image " + s.SandboxImage})
	}
	if s.RegistryConfigPath != "" {
		if err := c.checkLegacyRegistry(); err != nil {
			return nil, err
		}
		if c.RegistryConfigPath() == "" {
			set = append(set, setting{[]string{"plugins", c.imagesPlugin(), "registry", "config_path"}, s.RegistryConfigPath, "config_path " + s.RegistryConfigPath})
		}
	}
	for _, s := range set {
		changed, err := setKey(c.tree, s.val, s.keys...)
		if err != nil {
			return nil, err
		}
		if changed {
			changes = append(changes, s.what)
		}
	}
	return changes, nil
}

// Encode returns the file's content.
func (c *ContainerdConfig) Encode() ([]byte, error) { return toml.Marshal(c.tree) }

// checkLegacyRegistry refuses the legacy registry settings that
// containerd refuses beside config_path, with its reason (see
// [ContainerdSettings.RegistryConfigPath]).
func (c *ContainerdConfig) checkLegacyRegistry() error {
	plugin := c.imagesPlugin()
	reg, _ := lookup(c.tree, "plugins", plugin, "registry").(map[string]any)
	if v, ok := reg["mirrors"]; ok && !isEmptyTable(v) {
		return fmt.Errorf("%s sets plugins.%q.registry.mirrors, which containerd refuses beside config_path (\"`mirrors` cannot be set when `config_path` is provided\"): move them to hosts.toml files and remove them, then run again", ContainerdConfigFile, plugin)
	}
	if c.Version() != 2 {
		return nil
	}
	configs, _ := reg["configs"].(map[string]any)
	for _, host := range slices.Sorted(maps.Keys(configs)) {
		if t, ok := configs[host].(map[string]any); ok && t["tls"] != nil {
			return fmt.Errorf("%s sets plugins.%q.registry.configs.%q.tls, which containerd refuses beside config_path (\"`configs.tls` cannot be set when `config_path` is provided\"): move it to that registry's hosts.toml (ca, skip_verify) and remove it, then run again", ContainerdConfigFile, plugin, host)
		}
	}
	return nil
}

// containerdMigrateHint says how to turn a versionless config.toml into
// one mgmtkit edits, for a containerd of a major version.
func containerdMigrateHint(major int) string {
	if major >= 2 {
		return "convert it with `containerd config migrate` (it prints a version 3 config), then run again"
	}
	return "containerd 1.x has no command that migrates it: add `version = 2` at its top and name the plugin tables by URI (plugins.cri becomes plugins.\"io.containerd.grpc.v1.cri\"), or start from `containerd config default`, then run again"
}

func isEmptyTable(v any) bool {
	t, ok := v.(map[string]any)
	return ok && len(t) == 0
}

// lookup returns the value at the dotted keys of a TOML tree, nil when a
// key on the way is missing or not a table.
func lookup(tree map[string]any, keys ...string) any {
	var v any = tree
	for _, k := range keys {
		t, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = t[k]
	}
	return v
}

// setKey sets the value at the dotted keys of tree, creating tables, and
// reports whether it differed. A key on the way that is not a table is
// an error: mgmtkit does not replace what it does not understand.
func setKey(tree map[string]any, val any, keys ...string) (bool, error) {
	t := tree
	for i, k := range keys[:len(keys)-1] {
		switch next := t[k].(type) {
		case map[string]any:
			t = next
		case nil:
			n := map[string]any{}
			t[k] = n
			t = n
		default:
			return false, fmt.Errorf("%s: %s is a %T, not a table: fix it by hand", ContainerdConfigFile, strings.Join(keys[:i+1], "."), next)
		}
	}
	last := keys[len(keys)-1]
	if reflect.DeepEqual(t[last], val) {
		return false, nil
	}
	t[last] = val
	return true, nil
}
