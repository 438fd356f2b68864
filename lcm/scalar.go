package lcm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Int is an integer that decodes from a JSON integer or from a string that
// holds a decimal integer, because Tacker's samples and many VNFMs send
// numbers as strings ("numberOfSteps": "1", "port_no": "5000"). A string
// must hold the integer as JSON would write it: no plus sign, no leading
// zeros, no spaces ("+5000", "05000" and " 5000" are errors; see
// [ParsePort]). It encodes as a JSON number. JSON null leaves it unchanged.
type Int int

// UnmarshalJSON accepts 5000, "5000" and null.
func (i *Int) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("expected an integer, got nothing")
	}
	text, shown := string(b), fmt.Sprint(clipArgs([]any{string(b)})...)
	switch b[0] {
	case 'n':
		return nil
	case '"':
		if err := json.Unmarshal(b, &text); err != nil {
			return err
		}
		if text == "" {
			return fmt.Errorf("expected an integer, got an empty string")
		}
		shown = fmt.Sprintf("the string %q", clipArgs([]any{text})...)
	case 't', 'f', '[', '{':
		return fmt.Errorf("expected an integer, got %s", jsonKindOf(b))
	}
	n, err := parseDecimal(text)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return fmt.Errorf("%s is out of range for an integer", shown)
	case errors.Is(err, errNotCanonical):
		return fmt.Errorf("expected an integer without a sign or leading zeros, got %s", shown)
	case err != nil:
		return fmt.Errorf("expected an integer, got %s", shown)
	}
	*i = Int(n)
	return nil
}

// errNotCanonical is what parseDecimal returns for an integer that
// strconv would take but JSON would not write: "+5", "05", "-05".
var errNotCanonical = errors.New("not a canonical decimal integer")

// parseDecimal parses s as a JSON integer literal: an optional minus sign
// and digits without leading zeros. Unlike strconv.Atoi it refuses "+5" and
// "05" (with errNotCanonical), so that one value has one spelling wherever
// numbers are read from strings.
func parseDecimal(s string) (int, error) {
	digits := strings.TrimPrefix(s, "-")
	n, err := strconv.ParseInt(s, 10, strconv.IntSize)
	switch {
	case err != nil && !errors.Is(err, strconv.ErrRange):
		return 0, err
	case digits == "" || digits[0] < '0' || digits[0] > '9' || len(digits) > 1 && digits[0] == '0':
		return 0, errNotCanonical
	}
	return int(n), err
}

// ParsePort parses a TCP or UDP port written as a decimal string, as in
// "host:5000": 1 to 65535, with no sign, leading zeros or spaces — the same
// spelling [Int] accepts in a string. The error says what is wrong but does
// not repeat s.
func ParsePort(s string) (int, error) {
	n, err := parseDecimal(s)
	switch {
	case errors.Is(err, errNotCanonical):
		return 0, errors.New("must be a port number without a sign or leading zeros")
	case err == nil && n >= 1 && n <= 65535:
		return n, nil
	case err == nil || errors.Is(err, strconv.ErrRange):
		return 0, errors.New("must be a port number from 1 to 65535")
	}
	return 0, errors.New("must be a decimal port number")
}

// Int returns i as an int.
func (i Int) Int() int { return int(i) }

// Bool is a boolean that decodes from JSON true/false or from the strings
// "true", "false", "True" and "False", because Tacker sends some flags as
// Python-style strings ("is_reverse": "True"). It encodes as a JSON
// boolean. JSON null leaves it unchanged.
type Bool bool

// UnmarshalJSON accepts true, false, "true", "false", "True", "False" and
// null.
func (v *Bool) UnmarshalJSON(b []byte) error {
	switch s := string(bytes.TrimSpace(b)); s {
	case "null":
		return nil
	case "true", `"true"`, `"True"`:
		*v = true
	case "false", `"false"`, `"False"`:
		*v = false
	default:
		if len(s) > 0 && s[0] == '"' {
			return fmt.Errorf(`expected true or false (or "true", "false", "True", "False"), got the string %s`, s)
		}
		return fmt.Errorf("expected true or false, got %s", jsonKindOf([]byte(s)))
	}
	return nil
}

// Bool returns v as a bool.
func (v Bool) Bool() bool { return bool(v) }

// jsonKindOf names the kind of the JSON value b, for error messages that
// must not echo the value itself.
func jsonKindOf(b []byte) string {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
