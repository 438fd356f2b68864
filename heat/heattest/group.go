package heattest

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// ErrGroupSize is wrapped by the errors of ScaleOut, ScaleIn and
// RemoveMembers when the change would leave the group outside
// [min_size, max_size]. Nothing changes then.
var ErrGroupSize = errors.New("heattest: group size out of bounds")

// GroupSpec describes an OS::Heat::AutoScalingGroup for Stack.AddGroup.
type GroupSpec struct {
	// MinSize, MaxSize and Desired are min_size, max_size and
	// desired_capacity. MaxSize 0 means unbounded, and the template then
	// has no max_size (real Heat requires one).
	MinSize, MaxSize, Desired int
	// MinSizeParam, when set, names a parameter of the stack holding the
	// group: the template says min_size: {get_param: MinSizeParam}, the
	// parameter holds MinSize (as a string, as Heat reports parameters),
	// and later SetParameter calls change the group's minimum.
	MinSizeParam string
	// MemberType is the resource_type of the members, by default
	// "<group name>.hot.yaml" (a nested template, as in Tacker's HOTs).
	MemberType string
	// Member builds the resources of one member in its stack m. index
	// counts members from 0 and never repeats within the group, even after
	// scale-in. The member is CREATE_IN_PROGRESS while Member runs. Nil
	// leaves member stacks empty.
	Member func(m *Stack, index int)
}

// Group is an OS::Heat::AutoScalingGroup: a resource whose physical id is
// a nested stack holding one resource per member, each of which is in turn
// a nested stack (the member's stack).
type Group struct {
	srv       *Server
	res       *Resource
	spec      GroupSpec
	nested    *Stack
	members   []*Member
	nextIndex int
}

// Member is one member of a Group.
type Member struct {
	// Name is the member's resource name in the group's nested stack: 12
	// random characters from a-z and 2-7, as Heat's short ids.
	Name string
	// Stack is the member's own stack (the physical id of the member
	// resource).
	Stack *Stack
	// Index is the member's creation index in the group, from 0.
	Index int
	// CreatedAt is the creation_time of the member resource.
	CreatedAt time.Time

	res *Resource
}

// Resource returns the member's resource in the group's nested stack.
func (m *Member) Resource() *Resource { return m.res }

// AddGroup adds an OS::Heat::AutoScalingGroup named name whose nested stack
// is named "<stack>-<name>-<short id>", and creates spec.Desired members
// through spec.Member. It panics on an inconsistent spec.
func (st *Stack) AddGroup(name string, spec GroupSpec) *Group {
	if spec.MinSize < 0 || spec.Desired < spec.MinSize || (spec.MaxSize > 0 && (spec.Desired > spec.MaxSize || spec.MinSize > spec.MaxSize)) {
		panic(fmt.Sprintf("heattest: group %s: need 0 <= min_size %d <= desired %d <= max_size %d", name, spec.MinSize, spec.Desired, spec.MaxSize))
	}
	if spec.MemberType == "" {
		spec.MemberType = name + ".hot.yaml"
	}
	s := st.srv
	s.mu.Lock()
	r := st.newResourceLocked(name, "OS::Heat::AutoScalingGroup", kindGroup)
	r.status = statusCreateInProgress
	nested := s.newStackLocked(s.physicalNameLocked(st.name, name), r)
	nested.version = groupTemplateVersion
	nested.status, nested.reason = statusCreateInProgress, "Stack CREATE started"
	r.physicalID, r.nested = nested.id, nested
	g := &Group{srv: s, res: r, spec: spec, nested: nested}
	r.group, nested.group = g, g
	if spec.MinSizeParam != "" {
		st.params[spec.MinSizeParam] = strconv.Itoa(spec.MinSize)
		st.paramTypes[spec.MinSizeParam] = "number"
	}
	s.mu.Unlock()

	for range spec.Desired {
		g.addMember()
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	r.status, r.reason = statusCreateComplete, reasonStateChanged
	nested.status, nested.reason = statusCreateComplete, reasonStackCreated
	return g
}

// addMember creates one member: its resource and stack under the lock, its
// contents through spec.Member without it (the callback uses the builder).
func (g *Group) addMember() *Member {
	s := g.srv
	s.mu.Lock()
	name := s.shortIDLocked()
	for g.nested.byName[name] != nil {
		name = s.shortIDLocked()
	}
	mr := g.nested.newResourceLocked(name, g.spec.MemberType, kindMember)
	mr.status = statusCreateInProgress
	ms := s.newStackLocked(s.physicalNameLocked(g.nested.name, name), mr)
	ms.status, ms.reason = statusCreateInProgress, "Stack CREATE started"
	mr.physicalID, mr.nested = ms.id, ms
	m := &Member{Name: name, Stack: ms, Index: g.nextIndex, CreatedAt: mr.created, res: mr}
	g.nextIndex++
	mr.member = m
	g.members = append(g.members, m)
	s.mu.Unlock()

	if g.spec.Member != nil {
		g.spec.Member(ms, m.Index)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	mr.status, mr.reason = statusCreateComplete, reasonStateChanged
	ms.status, ms.reason = statusCreateComplete, reasonStackCreated
	return m
}

// Name returns the group's resource name.
func (g *Group) Name() string { return g.res.name }

// Resource returns the AutoScalingGroup resource in the parent stack.
func (g *Group) Resource() *Resource { return g.res }

// NestedStack returns the group's nested stack, whose resources are the
// members.
func (g *Group) NestedStack() *Stack { return g.nested }

// MinSize returns the group's effective min_size: the value of
// MinSizeParam in the parent stack when set and numeric, else
// GroupSpec.MinSize.
func (g *Group) MinSize() int {
	g.srv.mu.Lock()
	defer g.srv.mu.Unlock()
	return g.minSizeLocked()
}

func (g *Group) minSizeLocked() int {
	if p := g.spec.MinSizeParam; p != "" {
		if v, err := strconv.Atoi(g.res.stack.params[p]); err == nil {
			return v
		}
	}
	return g.spec.MinSize
}

// MaxSize returns max_size, 0 meaning unbounded.
func (g *Group) MaxSize() int { return g.spec.MaxSize }

// Members returns the current members, oldest first (creation time, then
// name), the order of Heat's default removal policy.
func (g *Group) Members() []*Member {
	g.srv.mu.Lock()
	defer g.srv.mu.Unlock()
	return g.sortedMembersLocked()
}

func (g *Group) sortedMembersLocked() []*Member {
	ms := slices.Clone(g.members)
	slices.SortStableFunc(ms, func(a, b *Member) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.Name, b.Name))
	})
	return ms
}

// Member returns the current member with that resource name, or nil.
func (g *Group) Member(name string) *Member {
	g.srv.mu.Lock()
	defer g.srv.mu.Unlock()
	for _, m := range g.members {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// ScaleOut adds n members, each created in turn (with its own creation
// time) through GroupSpec.Member, as a scaling policy or a stack update of
// desired_capacity does. The template's desired_capacity follows. The
// group resource, its nested stack and the stacks above become
// UPDATE_COMPLETE, updated Now. It returns the new members, or an error
// wrapping ErrGroupSize (and changes nothing) if max_size would be
// exceeded.
func (g *Group) ScaleOut(n int) ([]*Member, error) {
	s := g.srv
	s.mu.Lock()
	if err := g.checkLocked(n, len(g.members)+n); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	if n == 0 {
		s.mu.Unlock()
		return nil, nil
	}
	g.beginUpdateLocked()
	s.mu.Unlock()

	added := make([]*Member, 0, n)
	for range n {
		added = append(added, g.addMember())
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	s.markUpdatedLocked(g.nested, s.tickLocked())
	return added, nil
}

// ScaleIn removes the n oldest members (creation time, then name: Heat's
// default removal policy) with their stacks, and marks the group updated as
// ScaleOut does. It returns the removed members, or an error wrapping
// ErrGroupSize (and changes nothing) if fewer than min_size would remain.
func (g *Group) ScaleIn(n int) ([]*Member, error) {
	s := g.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := g.checkLocked(n, len(g.members)-n); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	removed := g.sortedMembersLocked()[:n]
	g.removeLocked(removed)
	return removed, nil
}

// RemoveMembers removes the named members, as a scale-in whose
// removal_policies list resources does (Tacker passes the members to
// remove). It returns them in the order given, or an error (and changes
// nothing) if a name is not a current member or fewer than min_size would
// remain (wrapping ErrGroupSize).
func (g *Group) RemoveMembers(names ...string) ([]*Member, error) {
	s := g.srv
	s.mu.Lock()
	defer s.mu.Unlock()
	var removed []*Member
	for _, name := range names {
		i := slices.IndexFunc(g.members, func(m *Member) bool { return m.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("heattest: group %s has no member %q", g.res.name, name)
		}
		if slices.Contains(removed, g.members[i]) {
			return nil, fmt.Errorf("heattest: member %q listed twice", name)
		}
		removed = append(removed, g.members[i])
	}
	if err := g.checkLocked(len(removed), len(g.members)-len(removed)); err != nil {
		return nil, err
	}
	if len(removed) > 0 {
		g.removeLocked(removed)
	}
	return removed, nil
}

// checkLocked validates a change of n members ending at size.
func (g *Group) checkLocked(n, size int) error {
	if n < 0 {
		return fmt.Errorf("heattest: group %s: negative count %d", g.res.name, n)
	}
	if g.res.removed {
		return fmt.Errorf("heattest: group %s was removed", g.res.name)
	}
	if lo := g.minSizeLocked(); size < lo {
		return fmt.Errorf("%w: group %s would have %d members, min_size is %d", ErrGroupSize, g.res.name, size, lo)
	}
	if hi := g.spec.MaxSize; hi > 0 && size > hi {
		return fmt.Errorf("%w: group %s would have %d members, max_size is %d", ErrGroupSize, g.res.name, size, hi)
	}
	return nil
}

// beginUpdateLocked shows the group updating while members are built.
func (g *Group) beginUpdateLocked() {
	g.res.status, g.res.reason = statusUpdateInProgress, "state changed"
	g.nested.status, g.nested.reason = statusUpdateInProgress, "Stack UPDATE started"
}

func (g *Group) removeLocked(ms []*Member) {
	s := g.srv
	for _, m := range ms {
		s.removeResourceLocked(m.res)
	}
	s.markUpdatedLocked(g.nested, s.tickLocked())
}
