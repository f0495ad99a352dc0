// Package strictjson decodes a JSON document the way a demanding API must,
// stricter than encoding/json: the bytes must be valid UTF-8 (encoding/json
// would silently turn a stray 0xff into U+FFFD, so a command would run with
// other bytes than sent), every object key must appear once (encoding/json
// keeps the last duplicate, so two parsers could read two different
// requests), and a key must spell its field's json name exactly
// (encoding/json matches case-insensitively, so "Command" would be taken for
// "command"). Unknown fields and trailing data are refused too.
//
// encoding/json/v2 does all of this, but Go 1.26 ships it only behind
// GOEXPERIMENT=jsonv2; this package is the small stand-in, one token pass
// before an ordinary decode.
package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/sandgate/sandgate/core/domain"
)

// ErrInvalid is wrapped by every error of Unmarshal. The messages name a
// field path or an offset, never a value: a value may be a secret.
var ErrInvalid = errors.New("invalid JSON")

// Unmarshal decodes data, one JSON value, into v (a non-nil pointer).
func Unmarshal(data []byte, v any) error {
	if !utf8.Valid(data) {
		return fmt.Errorf("%w: not valid UTF-8 at byte %d", ErrInvalid, invalidAt(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walk(dec, reflect.TypeOf(v), "$"); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("%w: trailing data after the JSON value", ErrInvalid)
	}
	full := json.NewDecoder(bytes.NewReader(data))
	full.DisallowUnknownFields()
	if err := full.Decode(v); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	return nil
}

// invalidAt returns the offset of the first byte that is not valid UTF-8.
func invalidAt(data []byte) int {
	for i := 0; i < len(data); {
		r, n := utf8.DecodeRune(data[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(data)
}

// describe turns encoding/json's error into a message that quotes no input:
// a syntax error by offset, a type error by field.
func describe(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return fmt.Sprintf("malformed JSON at offset %d", syn.Offset)
	case errors.As(err, &typ):
		return fmt.Sprintf("field %s: want a JSON value of type %s", typ.Field, typ.Type)
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of the JSON value"
	default:
		// The remaining errors (an unknown field, a custom unmarshaler's)
		// name a field, not a value.
		return err.Error()
	}
}

var (
	unmarshalerType     = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// walk reads one value from dec, checking every object in it for duplicate
// keys and, where t is a struct, for keys that are not exactly a field's
// json name. t nil (or a type that decodes itself) checks duplicates only.
func walk(dec *json.Decoder, t reflect.Type, at string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	t = target(t)
	delim, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch delim {
	case '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			if err := walk(dec, elem, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	case '{':
		if err := walkObject(dec, t, at); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return fmt.Errorf("%w: %s", ErrInvalid, describe(err))
	}
	return nil
}

// walkObject reads an object's members after its '{'.
func walkObject(dec *json.Decoder, t reflect.Type, at string) error {
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %s", ErrInvalid, describe(err))
		}
		key, _ := tok.(string)
		name := at + "." + domain.Clip(key)
		if seen[key] {
			return fmt.Errorf("%w: %s: duplicate key", ErrInvalid, name)
		}
		seen[key] = true
		var elem reflect.Type
		switch {
		case fields != nil:
			ft, ok := fields[key]
			if !ok {
				return fmt.Errorf("%w: %s: unknown field (names are case-sensitive)", ErrInvalid, name)
			}
			elem = ft
		case t != nil && t.Kind() == reflect.Map:
			elem = t.Elem()
		}
		if err := walk(dec, elem, name); err != nil {
			return err
		}
	}
	return nil
}

// target is the type a value decodes into: t without pointers, nil when the
// type decodes itself (its keys are its own business) or is unknown.
func target(t reflect.Type) reflect.Type {
	for t != nil {
		if t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType) ||
			t.Implements(textUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
			return nil
		}
		if t.Kind() != reflect.Pointer {
			return t
		}
		t = t.Elem()
	}
	return nil
}

// jsonFields maps each json name of struct t to its field's type, with
// embedded structs' fields promoted as encoding/json does (a shallower
// name wins; this package's callers have no ambiguous names).
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	addFields(t, out, 0)
	return out
}

func addFields(t reflect.Type, out map[string]reflect.Type, depth int) {
	var embedded []reflect.Type
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				embedded = append(embedded, ft)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, ok := out[name]; !ok {
			out[name] = f.Type
		}
	}
	if depth < 8 {
		for _, e := range embedded {
			addFields(e, out, depth+1)
		}
	}
}
