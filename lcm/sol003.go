package lcm

import (
	"encoding/json"
	"log/slog"
)

// The types in this file are the subsets of ETSI NFV-SOL003 v2.6.1 data
// types (as served by Tacker's v1 API) that management drivers read. JSON
// names are SOL003's. They decode leniently with encoding/json: attributes
// they do not model are ignored, and numbers also decode from strings.
//
// additionalParams are kept as raw JSON, to be decoded with DecodeParams
// into the typed parameter structs of the packages that use them. They hold
// credentials in plain text (Tacker's parameter tables put SSH passwords
// there), so never print or log them; the LogValue methods of the types
// that hold them leave them out.

// InstantiationState is VnfInstance.instantiationState.
type InstantiationState string

// The instantiation states of a VNF instance.
const (
	NotInstantiated InstantiationState = "NOT_INSTANTIATED"
	Instantiated    InstantiationState = "INSTANTIATED"
)

// VnfOperationalState is InstantiatedVnfInfo.vnfState.
type VnfOperationalState string

// The operational states of an instantiated VNF.
const (
	VnfStarted VnfOperationalState = "STARTED"
	VnfStopped VnfOperationalState = "STOPPED"
)

// VnfInstance is SOL003's VnfInstance: the VNF as the VNFM stores it.
type VnfInstance struct {
	ID                     string               `json:"id"`
	VnfInstanceName        string               `json:"vnfInstanceName,omitempty"`
	VnfInstanceDescription string               `json:"vnfInstanceDescription,omitempty"`
	VnfdID                 string               `json:"vnfdId"`
	VnfProvider            string               `json:"vnfProvider"`
	VnfProductName         string               `json:"vnfProductName"`
	VnfSoftwareVersion     string               `json:"vnfSoftwareVersion"`
	VnfdVersion            string               `json:"vnfdVersion"`
	VnfPkgID               string               `json:"vnfPkgId,omitempty"`
	VimConnectionInfo      VimConnections       `json:"vimConnectionInfo,omitempty"`
	InstantiationState     InstantiationState   `json:"instantiationState"`
	InstantiatedVnfInfo    *InstantiatedVnfInfo `json:"instantiatedVnfInfo,omitempty"`
	Metadata               map[string]any       `json:"metadata,omitempty"`
	Extensions             map[string]any       `json:"extensions,omitempty"`
}

// LogValue logs the instance's identity and state, without parameters or
// credentials.
func (v VnfInstance) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("id", v.ID),
		slog.String("vnfInstanceName", v.VnfInstanceName),
		slog.String("vnfdId", v.VnfdID),
		slog.String("instantiationState", string(v.InstantiationState)),
	)
}

// InstantiatedVnfInfo is SOL003's InstantiatedVnfInfo, plus Tacker's
// additionalParams: the additionalParams of the InstantiateVnfRequest, which
// scale, heal and terminate hooks read because Tacker keeps no other record
// of the cluster's topology and credentials.
type InstantiatedVnfInfo struct {
	FlavourID                  string              `json:"flavourId"`
	VnfState                   VnfOperationalState `json:"vnfState"`
	ScaleStatus                []ScaleInfo         `json:"scaleStatus,omitempty"`
	MaxScaleLevels             []ScaleInfo         `json:"maxScaleLevels,omitempty"`
	ExtCpInfo                  json.RawMessage     `json:"extCpInfo,omitempty"`
	ExtVirtualLinkInfo         json.RawMessage     `json:"extVirtualLinkInfo,omitempty"`
	ExtManagedVirtualLinkInfo  json.RawMessage     `json:"extManagedVirtualLinkInfo,omitempty"`
	VnfcResourceInfo           []VnfcResourceInfo  `json:"vnfcResourceInfo,omitempty"`
	VnfVirtualLinkResourceInfo json.RawMessage     `json:"vnfVirtualLinkResourceInfo,omitempty"`
	VirtualStorageResourceInfo json.RawMessage     `json:"virtualStorageResourceInfo,omitempty"`
	LocalizationLanguage       string              `json:"localizationLanguage,omitempty"`
	AdditionalParams           json.RawMessage     `json:"additionalParams,omitempty"`
}

// LogValue logs the flavour, state and scale levels, without parameters.
func (v InstantiatedVnfInfo) LogValue() slog.Value {
	levels := make([]slog.Attr, len(v.ScaleStatus))
	for i, s := range v.ScaleStatus {
		levels[i] = slog.Int(s.AspectID, int(s.ScaleLevel))
	}
	return slog.GroupValue(
		slog.String("flavourId", v.FlavourID),
		slog.String("vnfState", string(v.VnfState)),
		slog.Attr{Key: "scaleStatus", Value: slog.GroupValue(levels...)},
	)
}

// ScaleInfo is SOL003's ScaleInfo: the scale level of one aspect.
type ScaleInfo struct {
	AspectID   string `json:"aspectId"`
	VnfdID     string `json:"vnfdId,omitempty"`
	ScaleLevel Int    `json:"scaleLevel"`
}

// VnfcResourceInfo is SOL003's VnfcResourceInfo: one VNFC (a VM) and its
// compute resource. Its ID is what a HealVnfRequest's vnfcInstanceId names.
type VnfcResourceInfo struct {
	ID                 string         `json:"id"`
	VduID              string         `json:"vduId"`
	ComputeResource    ResourceHandle `json:"computeResource"`
	StorageResourceIDs []string       `json:"storageResourceIds,omitempty"`
	VnfcCpInfo         []VnfcCpInfo   `json:"vnfcCpInfo,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
}

// ResourceHandle is SOL003's ResourceHandle: a resource in a VIM. For an
// OpenStack compute resource, ResourceID is the Nova server UUID.
type ResourceHandle struct {
	VimConnectionID      string `json:"vimConnectionId,omitempty"`
	ResourceProviderID   string `json:"resourceProviderId,omitempty"`
	ResourceID           string `json:"resourceId"`
	VimLevelResourceType string `json:"vimLevelResourceType,omitempty"`
}

// VnfcCpInfo is one connection point of a VNFC. Tacker's drivers use CpdID
// to recognise a node's role (for example the storage server's NIC).
type VnfcCpInfo struct {
	ID             string          `json:"id"`
	CpdID          string          `json:"cpdId"`
	VnfExtCpID     string          `json:"vnfExtCpId,omitempty"`
	CpProtocolInfo json.RawMessage `json:"cpProtocolInfo,omitempty"`
	VnfLinkPortID  string          `json:"vnfLinkPortId,omitempty"`
}

// InstantiateVnfRequest is SOL003's InstantiateVnfRequest.
type InstantiateVnfRequest struct {
	FlavourID              string          `json:"flavourId"`
	InstantiationLevelID   string          `json:"instantiationLevelId,omitempty"`
	ExtVirtualLinks        json.RawMessage `json:"extVirtualLinks,omitempty"`
	ExtManagedVirtualLinks json.RawMessage `json:"extManagedVirtualLinks,omitempty"`
	VimConnectionInfo      VimConnections  `json:"vimConnectionInfo,omitempty"`
	LocalizationLanguage   string          `json:"localizationLanguage,omitempty"`
	AdditionalParams       json.RawMessage `json:"additionalParams,omitempty"`
}

// LogValue logs the request without its additionalParams.
func (r InstantiateVnfRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("flavourId", r.FlavourID),
		slog.String("instantiationLevelId", r.InstantiationLevelID),
		slog.Any("vimConnectionInfo", r.VimConnectionInfo),
	)
}

// ScaleType is ScaleVnfRequest.type.
type ScaleType string

// The directions of a scale operation.
const (
	ScaleOut ScaleType = "SCALE_OUT"
	ScaleIn  ScaleType = "SCALE_IN"
)

// ScaleVnfRequest is SOL003's ScaleVnfRequest.
type ScaleVnfRequest struct {
	Type             ScaleType       `json:"type"`
	AspectID         string          `json:"aspectId"`
	NumberOfSteps    Int             `json:"numberOfSteps,omitempty"`
	AdditionalParams json.RawMessage `json:"additionalParams,omitempty"`
}

// Steps returns NumberOfSteps, or 1 (SOL003's default) when it is absent
// or zero.
func (r *ScaleVnfRequest) Steps() int {
	if r.NumberOfSteps == 0 {
		return 1
	}
	return int(r.NumberOfSteps)
}

// LogValue logs the request without its additionalParams.
func (r ScaleVnfRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("type", string(r.Type)),
		slog.String("aspectId", r.AspectID),
		slog.Int("numberOfSteps", int(r.NumberOfSteps)),
	)
}

// HealVnfRequest is the union of SOL003's HealVnfRequest (cause,
// healScript) and SOL002's (vnfcInstanceId), as Tacker accepts it.
type HealVnfRequest struct {
	VnfcInstanceID   []string        `json:"vnfcInstanceId,omitempty"`
	Cause            string          `json:"cause,omitempty"`
	AdditionalParams json.RawMessage `json:"additionalParams,omitempty"`
	HealScript       string          `json:"healScript,omitempty"`
}

// Entire reports whether the request heals the entire VNF (no VNFC named),
// which Tacker's drivers treat as terminate followed by instantiate.
func (r *HealVnfRequest) Entire() bool { return len(r.VnfcInstanceID) == 0 }

// LogValue logs the request without its additionalParams.
func (r HealVnfRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Any("vnfcInstanceId", r.VnfcInstanceID),
		slog.String("cause", r.Cause),
	)
}

// TerminationType is TerminateVnfRequest.terminationType.
type TerminationType string

// The kinds of termination.
const (
	Forceful TerminationType = "FORCEFUL"
	Graceful TerminationType = "GRACEFUL"
)

// TerminateVnfRequest is SOL003's TerminateVnfRequest.
type TerminateVnfRequest struct {
	TerminationType TerminationType `json:"terminationType"`
	// GracefulTerminationTimeout is in seconds.
	GracefulTerminationTimeout Int             `json:"gracefulTerminationTimeout,omitempty"`
	AdditionalParams           json.RawMessage `json:"additionalParams,omitempty"`
}

// LogValue logs the request without its additionalParams.
func (r TerminateVnfRequest) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("terminationType", string(r.TerminationType)),
		slog.Int("gracefulTerminationTimeout", int(r.GracefulTerminationTimeout)),
	)
}
