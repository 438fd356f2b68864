package kubeadm

import (
	"fmt"

	"github.com/mgmtkit/mgmtkit/lcm"
)

// optProblem is the *lcm.ParamsError of one bad option.
func optProblem(path, format string, args ...any) error {
	return &lcm.ParamsError{Problems: []lcm.Problem{{Path: path, Message: fmt.Sprintf(format, args...)}}}
}

// optProblems collects what is wrong with a step's options, by field
// path, before any remote command runs.
type optProblems []lcm.Problem

func (p *optProblems) addf(path, format string, args ...any) {
	*p = append(*p, lcm.Problem{Path: path, Message: fmt.Sprintf(format, args...)})
}

// err returns the problems as an *lcm.ParamsError, nil if there are none.
func (p optProblems) err() error { return paramsErr(p) }
