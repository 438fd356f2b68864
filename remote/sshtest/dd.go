package sshtest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
)

// ddProgram: dd [if=FILE] [bs=N] [skip=N] [count=N]
// [iflag=skip_bytes,count_bytes] [status=none], writing to standard
// output. As GNU coreutils' dd (dd(1), src/dd.c): skip and count count
// blocks of bs bytes (512 by default) unless iflag=skip_bytes or
// count_bytes makes them byte counts; reading stops at the end of the
// input, so a count past it copies what there is. Without status=none it
// prints its records and bytes summary to standard error. Other operands
// (of=, conv=, other flags) are not modelled and fail.
func ddProgram(_ context.Context, p *Process) int {
	c, code, ok := OptionSpec{}.Parse(p, p.Args[1:], false)
	if !ok {
		return code
	}
	in, bs := "-", int64(512)
	var skip, count int64 = 0, -1
	skipBytes, countBytes, quiet := false, false, false
	for _, arg := range c.Operands {
		key, val, ok := strings.Cut(arg, "=")
		if !ok {
			return p.Errorf("unrecognized operand %s", qa(arg))
		}
		num := func() (int64, bool) {
			n, err := strconv.ParseInt(val, 10, 64)
			return n, err == nil && n >= 0
		}
		var n int64
		switch key {
		case "if":
			in = val
			continue
		case "status":
			if val != "none" {
				return p.Errorf("status=%s is not modelled", val)
			}
			quiet = true
			continue
		case "iflag":
			for _, f := range strings.Split(val, ",") {
				switch f {
				case "skip_bytes":
					skipBytes = true
				case "count_bytes":
					countBytes = true
				default:
					return p.Errorf("invalid input flag: %s", qa(f))
				}
			}
			continue
		case "bs", "skip", "count":
			if n, ok = num(); !ok || key == "bs" && n == 0 {
				return p.Errorf("invalid number: %s", qa(val))
			}
		default:
			return p.Errorf("unrecognized operand %s", qa(arg))
		}
		switch key {
		case "bs":
			bs = n
		case "skip":
			skip = n
		case "count":
			count = n
		}
	}
	data, err := readInput(p, in)
	if err != nil {
		return p.Errorf("failed to open %s: %s", qa(in), ErrMessage(err))
	}
	if !skipBytes {
		skip *= bs
	}
	if count >= 0 && !countBytes {
		count *= bs
	}
	data = data[min(skip, int64(len(data))):]
	if count >= 0 {
		data = data[:min(count, int64(len(data)))]
	}
	p.Stdout.Write(data)
	if !quiet {
		n := int64(len(data))
		full, part := n/bs, 0
		if n%bs != 0 {
			part = 1
		}
		fmt.Fprintf(p.Stderr, "%d+%d records in\n%d+%d records out\n%d bytes copied\n", full, part, full, part, n)
	}
	return 0
}
