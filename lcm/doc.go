// Package lcm is the vocabulary shared by every mgmtkit package and by the
// management drivers built on them: lifecycle hooks, the SOL003 types they
// receive, typed additionalParams decoding and validation, access to the
// VNF package, step results, bounded fan-out over hosts, and progress
// events.
//
// # Hooks
//
// A management driver implements [Driver], one method per [Hook]
// (instantiate_start ... terminate_end); embedding [NopDriver] provides the
// hooks it does not need. A VNFM calls a hook with [Invoke]. Each method
// receives an op ([InstantiateOp], [ScaleOp], [HealOp], [TerminateOp])
// holding the [VnfInstance], the SOL003 request and the [Package], and
// returns a [HookResult]: per-step, per-host results and the VIM
// connections the VNFM must add or remove.
//
// # Steps and fan-out
//
// A step is a plain function that makes one host converge and returns a
// [Result]: [Unchanged], or [Changed] with what it did. [Do] runs a step on
// one host and logs it; [OnHosts] runs it on many, at most [DefaultLimit]
// at a time, fail-fast or best-effort, and returns per-host [Results] plus
// an errors.Join of [*HostError] values. A panic in a step is recovered
// into a [*PanicError].
//
// # Plans
//
// [Plan] runs a hook as a dry run (remote.WithDryRun): hosts run only
// read-only commands and withhold every change, and each step's result on
// each host says whether it would change the host ([Result.Withheld]:
// the first change, which the plan withheld), would not, or cannot be
// told because it met the absence of an earlier withheld change
// ([Result.Undetermined]). [Do] and [OnHosts] make those results from the
// steps' errors, so steps and hooks need not know they run in a plan.
//
// # Events
//
// Progress is reported as log/slog records on the logger carried by the
// context ([WithLogger]); without one, nothing is logged. Every record has
// the attributes [AttrHook], [AttrStep], [AttrHost], [AttrDuration] and
// [AttrChanged], so a VNFM can drive a progress display from its own
// slog.Handler.
//
// # Parameters
//
// Each domain package owns typed structs for its part of additionalParams.
// [DecodeParams] decodes one additionalParams object into several of them
// at once, reports every unknown key, type mismatch, missing required
// value, null list element and oversized string or list (see
// [DefaultMaxString], [DefaultMaxList] and the params:"max=N" tag) with its
// full path, then runs their Validate methods (see [Validator]) — all
// before any remote command runs. [Int] and [Bool] accept the strings
// Tacker sends for numbers and flags.
//
// A driver composes the packages' parts of one JSON object by embedding
// them in its own struct. Every embedded part is validated by its own
// method, even when two of them have Validate and Go's method rules give
// the outer struct none (see [Validatable]).
//
// # Nodes
//
// A [Node] is one VM of a VNF as the VIM reports it: its [Role] (master,
// worker, storage server, load balancer, registry, Ansible server), where
// to reach it (SSH and NIC addresses), its Nova server and the stack that
// holds it. Package heat resolves them from Heat; [CompareNodes] is the
// order hooks visit them in, and a Node is [Named], so [OnHosts] fans out
// over nodes directly.
//
// # Secrets
//
// additionalParams and [AccessInfo] carry credentials in plain text, as
// Tacker stores them. Parameter structs hold passwords as remote.Secret;
// AccessInfo and the LogValue methods of the SOL003 types redact when
// printed or logged; never log raw additionalParams.
//
// # Errors
//
// Errors name what failed and where: the host and step ([HostError]), the
// parameter path ([ParamsError]), the package path ([InvalidPathError]).
//
// lcm keeps no package-level state; its one variable, [Unchanged], is a
// constant in all but name.
package lcm
