package lcm

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mgmtkit/mgmtkit/remote"
)

// VimConnectionInfo is SOL003's VimConnectionInfo: how to reach one VIM
// (an OpenStack cloud, or the Kubernetes cluster a VNF installed).
//
// AccessInfo holds credentials. It is redacted when printed or logged but
// encoded in full, because the VNFM must persist it. Extra is not redacted
// when printed: keep credentials out of it (Tacker's kubeadm driver stored a
// Helm password there; mgmtkit does not).
type VimConnectionInfo struct {
	ID            string         `json:"id"`
	VimID         string         `json:"vimId,omitempty"`
	VimType       string         `json:"vimType"`
	InterfaceInfo map[string]any `json:"interfaceInfo,omitempty"`
	AccessInfo    AccessInfo     `json:"accessInfo,omitempty"`
	Extra         map[string]any `json:"extra,omitempty"`
}

// LogValue logs the connection with AccessInfo redacted and without Extra,
// which may hold credentials too (Tacker stores a Helm password there).
func (c VimConnectionInfo) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("id", c.ID),
		slog.String("vimId", c.VimID),
		slog.String("vimType", c.VimType),
		slog.Any("accessInfo", c.AccessInfo),
	)
}

// VimConnections is a vimConnectionInfo list. It decodes from the SOL003
// v2 form, an array of VimConnectionInfo, and from the v3 form, an object
// that maps each connection's ID to the connection (whose "id" may then be
// omitted; if given it must equal the key). The v3 form keeps the order of
// the document. It always encodes as the v2 array.
type VimConnections []VimConnectionInfo

// UnmarshalJSON accepts an array, an object keyed by connection ID, or null.
func (vs *VimConnections) UnmarshalJSON(b []byte) error {
	switch jsonKindOf(b) {
	case "null":
		*vs = nil
		return nil
	case "an array":
		var list []VimConnectionInfo
		if err := json.Unmarshal(b, &list); err != nil {
			return err
		}
		*vs = list
		return nil
	case "an object":
		members, err := objectMembers(b)
		if err != nil {
			return err
		}
		list := make(VimConnections, 0, len(members))
		for _, m := range members {
			var c VimConnectionInfo
			if err := json.Unmarshal(m.value, &c); err != nil {
				return fmt.Errorf("vimConnectionInfo[%q]: %w", m.key, err)
			}
			if c.ID != "" && c.ID != m.key {
				return fmt.Errorf("vimConnectionInfo[%q]: id %q differs from its key", m.key, c.ID)
			}
			if _, dup := list.ByID(m.key); dup {
				return fmt.Errorf("vimConnectionInfo: duplicate key %q", m.key)
			}
			c.ID = m.key
			list = append(list, c)
		}
		*vs = list
		return nil
	}
	return fmt.Errorf("vimConnectionInfo: expected an array or an object, got %s", jsonKindOf(b))
}

// ByID returns the connection with the given ID.
func (vs VimConnections) ByID(id string) (VimConnectionInfo, bool) {
	for _, c := range vs {
		if c.ID == id {
			return c, true
		}
	}
	return VimConnectionInfo{}, false
}

// LogValue logs the connections keyed by ID, each as
// [VimConnectionInfo.LogValue] does.
func (vs VimConnections) LogValue() slog.Value {
	attrs := make([]slog.Attr, len(vs))
	for i, c := range vs {
		attrs[i] = slog.Any(c.ID, c)
	}
	return slog.GroupValue(attrs...)
}

// AccessInfo is the accessInfo of a VIM connection: user names, passwords,
// bearer tokens, CA certificates.
//
// Printed with any fmt verb, or logged with log/slog, it shows only its keys
// (sorted) with every value replaced by [remote.Redacted]. Encoding to and
// decoding from JSON keep the full values, because the VNFM persists them;
// never log the JSON.
type AccessInfo map[string]any

// String returns the sorted keys with redacted values, like
// "map[password:[REDACTED] username:[REDACTED]]".
func (a AccessInfo) String() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, k := range a.keys() {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(k)
		b.WriteByte(':')
		b.WriteString(remote.Redacted)
	}
	b.WriteByte(']')
	return b.String()
}

// GoString returns a redacted Go-syntax form.
func (a AccessInfo) GoString() string {
	var b strings.Builder
	b.WriteString("lcm.AccessInfo{")
	for i, k := range a.keys() {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.Quote(k))
		b.WriteByte(':')
		b.WriteString(strconv.Quote(remote.Redacted))
	}
	b.WriteByte('}')
	return b.String()
}

// Format prints the redacted form for every verb: %#v uses GoString, %q
// quotes String, every other verb prints String.
func (a AccessInfo) Format(f fmt.State, verb rune) {
	switch {
	case verb == 'v' && f.Flag('#'):
		fmt.Fprint(f, a.GoString())
	case verb == 'q':
		fmt.Fprint(f, strconv.Quote(a.String()))
	default:
		fmt.Fprint(f, a.String())
	}
}

// LogValue logs a group of the sorted keys, each with a redacted value.
func (a AccessInfo) LogValue() slog.Value {
	keys := a.keys()
	attrs := make([]slog.Attr, len(keys))
	for i, k := range keys {
		attrs[i] = slog.String(k, remote.Redacted)
	}
	return slog.GroupValue(attrs...)
}

func (a AccessInfo) keys() []string { return slices.Sorted(maps.Keys(a)) }
