package lcm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Int is an integer that decodes from a JSON integer or from a string that
// holds a decimal integer, because Tacker's samples and many VNFMs send
// numbers as strings ("numberOfSteps": "1", "port_no": "5000"). It encodes
// as a JSON number. JSON null leaves it unchanged.
type Int int

// UnmarshalJSON accepts 5000, "5000" and null.
func (i *Int) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return fmt.Errorf("expected an integer, got nothing")
	}
	text, shown := string(b), string(b)
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
		shown = "the string " + strconv.Quote(text)
	case 't', 'f', '[', '{':
		return fmt.Errorf("expected an integer, got %s", jsonKindOf(b))
	}
	n, err := strconv.ParseInt(text, 10, strconv.IntSize)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%s is out of range for an integer", shown)
	}
	if err != nil {
		return fmt.Errorf("expected an integer, got %s", shown)
	}
	*i = Int(n)
	return nil
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
