package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/ringcast/ringcast/server/internal/core/epoch"
)

// epochField is the field every message names the instance epoch with.
const epochField = "instance_epoch"

// marshalJSON renders a response message (a receipt, a status, an
// outcome) as the one JSON line a command prints. It is Connect JSON —
// the field names curl and the clients see — with three changes, so that
// it reads as `ringcast tail` writes its lines:
//
//   - every field is present, false and 0 included: `"applied":false`,
//     `"duplicate":false` (protobuf JSON leaves a default value out; an
//     unset message, such as the receipt of an outcome not applied, stays
//     out);
//   - 64-bit integers are JSON numbers, `"seq":12`, as tail prints seqs
//     (Connect JSON writes them as strings); the epoch, which does not fit
//     a JSON number exactly, is not one;
//   - beside every instanceEpoch (the decimal string Connect JSON carries)
//     stands "epoch", its text form: 16 lower-case hex digits, as logs,
//     metrics labels, SSE ids and cursors write it (docs/protocol.md).
func marshalJSON(m proto.Message) ([]byte, error) {
	b, err := protojson.MarshalOptions{EmitDefaultValues: true}.Marshal(m)
	if err != nil {
		return nil, err
	}
	out, err := cliObject(nil, b, m.ProtoReflect().Descriptor())
	if err != nil {
		return nil, err
	}
	var c bytes.Buffer // protojson varies its spacing: one compact line
	if err := json.Compact(&c, out); err != nil {
		return nil, err
	}
	return c.Bytes(), nil
}

// cliObject appends the Connect JSON object raw of a message md, changed
// as marshalJSON says.
func cliObject(out, raw []byte, md protoreflect.MessageDescriptor) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("rendering %s: not a JSON object", md.FullName())
	}
	out = append(out, '{')
	first := true
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		if !first {
			out = append(out, ',')
		}
		first = false
		out = strconv.AppendQuote(out, key)
		out = append(out, ':')
		fd := md.Fields().ByJSONName(key)
		if fd == nil {
			out = append(out, v...)
			continue
		}
		if out, err = cliValue(out, v, fd); err != nil {
			return nil, err
		}
		if fd.Name() == epochField && !fd.IsList() {
			e, err := strconv.ParseUint(unquote(v), 10, 64)
			if err != nil {
				return nil, fmt.Errorf("rendering %s: %w", fd.FullName(), err)
			}
			out = append(out, `,"epoch":"`...)
			out = append(epoch.Append(out, e), '"')
		}
	}
	return append(out, '}'), nil
}

// cliValue appends the value v of field fd.
func cliValue(out, v []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	if fd.IsMap() {
		return append(out, v...), nil
	}
	if fd.IsList() {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, err
		}
		out = append(out, '[')
		for i, it := range items {
			if i > 0 {
				out = append(out, ',')
			}
			var err error
			if out, err = cliScalar(out, it, fd); err != nil {
				return nil, err
			}
		}
		return append(out, ']'), nil
	}
	return cliScalar(out, v, fd)
}

// cliScalar appends one value of field fd: a message of ringcast's own
// (the well-known types keep their Connect JSON form: a Timestamp is a
// string, a Struct the object it holds), or a 64-bit integer as a number.
func cliScalar(out, v []byte, fd protoreflect.FieldDescriptor) ([]byte, error) {
	if md := fd.Message(); md != nil {
		if strings.HasPrefix(string(md.FullName()), "google.protobuf.") {
			return append(out, v...), nil
		}
		return cliObject(out, v, md)
	}
	switch fd.Kind() {
	case protoreflect.Int64Kind, protoreflect.Sint64Kind, protoreflect.Sfixed64Kind,
		protoreflect.Uint64Kind, protoreflect.Fixed64Kind:
		if fd.Name() != epochField {
			if s := unquote(v); s != string(v) {
				if isInt(s) {
					return append(out, s...), nil
				}
			}
		}
	}
	return append(out, v...), nil
}

// unquote is the text of a JSON string without its quotes (a 64-bit
// integer in Connect JSON: digits only), or v as it is.
func unquote(v []byte) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		return string(v[1 : len(v)-1])
	}
	return string(v)
}

// isInt reports whether s is a 64-bit integer in decimal.
func isInt(s string) bool {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return true
	}
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil
}
