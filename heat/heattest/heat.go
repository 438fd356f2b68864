package heattest

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// heatTime formats t as Heat's API does (heat.common.timeutils.isotime).
func heatTime(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// nullableTime is heatTime, or JSON null for the zero time.
func nullableTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return heatTime(t)
}

func pathEscape(s string) string { return url.PathEscape(s) }

// explanations are webob's texts for the statuses Heat's fault middleware
// wraps.
var explanations = map[int]string{
	http.StatusBadRequest:          "The server could not comply with the request since it is either malformed or otherwise incorrect.",
	http.StatusUnauthorized:        "This server could not verify that you are authorized to access the document you requested. Either you supplied the wrong credentials (e.g., bad password), or your browser does not understand how to supply the credentials required.",
	http.StatusForbidden:           "Access was denied to this resource.",
	http.StatusNotFound:            "The resource could not be found.",
	http.StatusMethodNotAllowed:    "The method is not allowed for this resource.",
	http.StatusConflict:            "There was a conflict when trying to complete your request.",
	http.StatusInternalServerError: "The server has either erred or is incapable of performing the requested operation.",
	http.StatusBadGateway:          "Bad gateway.",
	http.StatusServiceUnavailable:  "The server is currently unavailable. Please try again at a later time.",
	http.StatusGatewayTimeout:      "The gateway has timed out.",
}

// heatError is the body of a Heat API error:
// {"explanation", "code", "error": {"message", "traceback", "type"}, "title"}.
func heatError(status int, typ, msg string) map[string]any {
	expl, ok := explanations[status]
	if !ok {
		expl = http.StatusText(status)
	}
	return map[string]any{
		"explanation": expl,
		"code":        status,
		"error":       map[string]any{"message": msg, "traceback": nil, "type": typ},
		"title":       http.StatusText(status),
	}
}

// reply is a response computed under the lock and written after it.
type reply struct {
	status int
	body   any
	header map[string]string
}

func notFound(typ, msg string) reply {
	return reply{status: http.StatusNotFound, body: heatError(http.StatusNotFound, typ, msg)}
}

func stackNotFound(name string) reply {
	return notFound("EntityNotFound", "The Stack ("+name+") could not be found.")
}

// serveHeat answers the orchestration API below "/heat"; rest starts with
// "/v1/PROJECT_ID/".
func (s *Server) serveHeat(w http.ResponseWriter, r *http.Request, rest string) {
	s.mu.Lock()
	rep := s.heatLocked(r, rest)
	s.mu.Unlock()
	if rep.status == http.StatusFound {
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(rep.status)
		return
	}
	writeJSON(w, rep.status, rep.body, rep.header)
}

func (s *Server) heatLocked(r *http.Request, rest string) reply {
	if s.failN > 0 {
		s.failN--
		st := s.failStatus
		return reply{status: st, body: heatError(st, "HTTP"+strings.ReplaceAll(http.StatusText(st), " ", ""), "heattest: injected failure")}
	}
	if s.tokenLocked(r.Header.Get("X-Auth-Token")) == nil {
		return reply{
			status: http.StatusUnauthorized,
			body:   keystoneError(http.StatusUnauthorized, msgAuthRequired),
			header: map[string]string{"WWW-Authenticate": `Keystone uri="` + s.VersionlessIdentityEndpoint() + `"`},
		}
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if len(parts) < 2 || parts[0] != "v1" {
		return notFound("HTTPNotFound", "The resource could not be found.")
	}
	if parts[1] != s.projectID {
		// Heat's tenant check: a token may act only in its own project.
		return reply{status: http.StatusForbidden, body: heatError(http.StatusForbidden, "Forbidden", "You are not authorized to use this action.")}
	}
	parts = parts[2:]
	if len(parts) == 0 || parts[0] != "stacks" {
		return notFound("HTTPNotFound", "The resource could not be found.")
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return reply{
			status: http.StatusMethodNotAllowed,
			body:   heatError(http.StatusMethodNotAllowed, "HTTPMethodNotAllowed", "heattest serves only GET"),
			header: map[string]string{"Allow": "GET, HEAD"},
		}
	}
	parts = parts[1:]
	q := r.URL.Query()
	switch {
	case len(parts) == 0:
		return s.listStacksLocked(q)
	case len(parts) == 1:
		return s.lookupLocked(parts[0], "", r.URL.RawQuery)
	case len(parts) == 2 && isLookupPath(parts[1]):
		return s.lookupLocked(parts[0], parts[1], r.URL.RawQuery)
	}
	st := s.stacks[parts[1]]
	if st == nil || st.name != parts[0] {
		return stackNotFound(parts[0])
	}
	switch {
	case len(parts) == 2:
		return reply{status: http.StatusOK, body: map[string]any{"stack": s.stackJSONLocked(st)}}
	case len(parts) == 3 && parts[2] == "template":
		return reply{status: http.StatusOK, body: st.templateLocked()}
	case len(parts) == 3 && parts[2] == "resources":
		depth, err := strconv.Atoi(q.Get("nested_depth"))
		if q.Get("nested_depth") != "" && (err != nil || depth < 0) {
			return reply{status: http.StatusBadRequest, body: heatError(http.StatusBadRequest, "HTTPBadRequest", "Only integer is acceptable by 'nested_depth'.")}
		}
		detail := strings.EqualFold(q.Get("with_detail"), "true")
		list := []any{}
		s.appendResourcesLocked(&list, st, depth, detail)
		return reply{status: http.StatusOK, body: map[string]any{"resources": list}}
	case len(parts) == 4 && parts[2] == "resources":
		res := st.byName[parts[3]]
		if res == nil {
			return notFound("ResourceNotFound", "The Resource ("+parts[3]+") could not be found in Stack "+st.name+".")
		}
		return reply{status: http.StatusOK, body: map[string]any{"resource": s.resourceJSONLocked(res, true)}}
	}
	return notFound("HTTPNotFound", "The resource could not be found.")
}

// isLookupPath reports whether "/stacks/{name}/{p}" is Heat's lookup with
// a sub-path rather than "/stacks/{name}/{id}".
func isLookupPath(p string) bool {
	switch p {
	case "resources", "events", "template", "environment", "files", "outputs":
		return true
	}
	return false
}

// findStackLocked finds a live stack by id or by name.
func (s *Server) findStackLocked(nameOrID string) *Stack {
	if st := s.stacks[nameOrID]; st != nil {
		return st
	}
	return s.stackNames[nameOrID]
}

// lookupLocked answers GET /stacks/{name_or_id}[/{path}] with a 302 to the
// canonical /stacks/{name}/{id}[/{path}] URL, query kept, as Heat does.
func (s *Server) lookupLocked(nameOrID, path, rawQuery string) reply {
	st := s.findStackLocked(nameOrID)
	if st == nil {
		return stackNotFound(nameOrID)
	}
	loc := s.stackURL(st)
	if path != "" {
		loc += "/" + path
	}
	if rawQuery != "" {
		loc += "?" + rawQuery
	}
	return reply{status: http.StatusFound, header: map[string]string{"Location": loc}}
}

// stackURL is the canonical URL of st.
func (s *Server) stackURL(st *Stack) string {
	return s.OrchestrationEndpoint() + "/stacks/" + pathEscape(st.name) + "/" + st.id
}

func link(href, rel string) map[string]any { return map[string]any{"href": href, "rel": rel} }

// stackJSONLocked formats st as Heat's stack show does.
func (s *Server) stackJSONLocked(st *Stack) map[string]any {
	params := map[string]any{
		"OS::project_id": s.projectID,
		"OS::stack_id":   st.id,
		"OS::stack_name": st.name,
	}
	for k, v := range st.params {
		params[k] = v
	}
	var parent any
	if st.parent != nil {
		parent = st.parent.stack.id
	}
	return map[string]any{
		"capabilities":          []any{},
		"creation_time":         heatTime(st.created),
		"deletion_time":         nil,
		"description":           "",
		"disable_rollback":      true,
		"id":                    st.id,
		"links":                 []any{link(s.stackURL(st), "self")},
		"notification_topics":   []any{},
		"outputs":               []any{},
		"parameters":            params,
		"parent":                parent,
		"stack_name":            st.name,
		"stack_owner":           s.username,
		"stack_status":          st.status,
		"stack_status_reason":   st.reason,
		"stack_user_project_id": s.projectID,
		"tags":                  nil,
		"template_description":  "",
		"timeout_mins":          nil,
		"updated_time":          nullableTime(st.updated),
	}
}

// listStacksLocked answers GET /stacks: top-level stacks, or every stack
// with show_nested=true, in creation order.
func (s *Server) listStacksLocked(q url.Values) reply {
	var stacks []*Stack
	if strings.EqualFold(q.Get("show_nested"), "true") {
		for _, top := range s.topStacks {
			s.collectStacksLocked(&stacks, top)
		}
	} else {
		stacks = s.topStacks
	}
	list := []any{}
	for _, st := range stacks {
		full := s.stackJSONLocked(st)
		item := map[string]any{}
		for _, k := range []string{"creation_time", "deletion_time", "description", "id", "links", "parent", "stack_name", "stack_owner", "stack_status", "stack_status_reason", "stack_user_project_id", "tags", "updated_time"} {
			item[k] = full[k]
		}
		list = append(list, item)
	}
	return reply{status: http.StatusOK, body: map[string]any{"stacks": list}}
}

func (s *Server) collectStacksLocked(out *[]*Stack, st *Stack) {
	*out = append(*out, st)
	for _, r := range st.resources {
		if r.nested != nil {
			s.collectStacksLocked(out, r.nested)
		}
	}
}

// appendResourcesLocked lists st's resources, each followed by those of
// its nested stack down to depth more levels, as Heat's nested_depth does.
func (s *Server) appendResourcesLocked(out *[]any, st *Stack, depth int, detail bool) {
	for _, r := range st.resources {
		*out = append(*out, s.resourceJSONLocked(r, detail))
		if r.nested != nil && depth > 0 {
			s.appendResourcesLocked(out, r.nested, depth-1, detail)
		}
	}
}

// resourceJSONLocked formats r as Heat's resource list (detail false) or
// show (detail true) does.
func (s *Server) resourceJSONLocked(r *Resource, detail bool) map[string]any {
	self := s.stackURL(r.stack) + "/resources/" + pathEscape(r.name)
	links := []any{link(self, "self"), link(s.stackURL(r.stack), "stack")}
	if r.nested != nil {
		links = append(links, link(s.stackURL(r.nested), "nested"))
	}
	m := map[string]any{
		"creation_time":          heatTime(r.created),
		"links":                  links,
		"logical_resource_id":    r.name,
		"physical_resource_id":   r.physicalID,
		"required_by":            r.requiredByLocked(),
		"resource_name":          r.name,
		"resource_status":        r.status,
		"resource_status_reason": r.reason,
		"resource_type":          r.typ,
		"updated_time":           heatTime(r.updatedOrCreated()),
	}
	if p := r.stack.parent; p != nil {
		m["parent_resource"] = p.name
	}
	if detail {
		m["description"] = ""
		m["attributes"] = r.attributesLocked()
	}
	return m
}
