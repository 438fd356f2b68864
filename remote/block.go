package remote

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// Block markers: a managed block is the lines between
//
//	# BEGIN mgmtkit NAME
//	# END mgmtkit NAME
const (
	blockBegin = "# BEGIN mgmtkit "
	blockEnd   = "# END mgmtkit "
)

// ReplaceBlock returns content with the managed block called name holding
// exactly lines: an existing block is replaced in place, a missing one is
// appended at the end, and empty lines removes the block with its markers.
// Everything outside the block is kept byte for byte. The result ends with
// a newline if it is not empty.
//
// It fails, rather than guess, when the markers are damaged (a BEGIN
// without its END, or a block that appears twice), and when name or a line
// contains a newline or a line is itself a marker.
func ReplaceBlock(content []byte, name string, lines []string) ([]byte, error) {
	if name == "" || strings.ContainsAny(name, "\r\n") || strings.TrimSpace(name) != name {
		return nil, fmt.Errorf("remote: invalid block name %q", name)
	}
	begin, end := blockBegin+name, blockEnd+name
	for _, l := range lines {
		if strings.ContainsAny(l, "\r\n") {
			return nil, fmt.Errorf("remote: block %s: line %q contains a newline", name, l)
		}
		if strings.HasPrefix(l, blockBegin) || strings.HasPrefix(l, blockEnd) {
			return nil, fmt.Errorf("remote: block %s: line %q looks like a block marker", name, l)
		}
	}
	text := string(content)
	if text != "" && !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	existing := strings.SplitAfter(text, "\n")
	if existing[len(existing)-1] == "" {
		existing = existing[:len(existing)-1]
	}
	start, stop := -1, -1
	for i, l := range existing {
		switch strings.TrimRight(l, "\r\n") {
		case begin:
			if start >= 0 {
				return nil, fmt.Errorf("remote: block %s appears twice", name)
			}
			start = i
		case end:
			if start < 0 || stop >= 0 {
				return nil, fmt.Errorf("remote: block %s has an END marker without its BEGIN", name)
			}
			stop = i
		}
	}
	if start >= 0 && stop < 0 {
		return nil, fmt.Errorf("remote: block %s has a BEGIN marker without its END", name)
	}
	var block []string
	if len(lines) > 0 {
		block = append(block, begin+"\n")
		for _, l := range lines {
			block = append(block, l+"\n")
		}
		block = append(block, end+"\n")
	}
	var out []string
	if start >= 0 {
		out = append(append(append(out, existing[:start]...), block...), existing[stop+1:]...)
	} else {
		out = append(existing, block...)
	}
	return []byte(strings.Join(out, "")), nil
}

// EditBlock makes the managed block called name in the file at path hold
// exactly lines (see [ReplaceBlock]), creating the file if it is missing,
// and writes the file only when its bytes change. Mode and ownership of an
// existing file are kept unless opts sets them. Two EditBlock calls on the
// same file of the same host must not run concurrently.
func EditBlock(ctx context.Context, h Host, path, name string, lines []string, opts FileOptions) (bool, error) {
	old, err := h.ReadFile(ctx, path, opts)
	missing := errors.Is(err, fs.ErrNotExist)
	if err != nil && !missing {
		return false, err
	}
	updated, err := ReplaceBlock(old, name, lines)
	if err != nil {
		return false, fmt.Errorf("%s: %s: %w", h.Name(), path, err)
	}
	switch {
	case missing && len(lines) == 0:
		return false, nil
	case !missing && bytes.Equal(old, updated) && opts.Mode == 0 && opts.Owner == "" && opts.Group == "":
		return false, nil
	}
	// WriteFile also settles mode and ownership when opts sets them.
	return h.WriteFile(ctx, path, bytes.NewReader(updated), opts)
}
