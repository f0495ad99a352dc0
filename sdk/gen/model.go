package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// api is what the SDKs take from the description: the named object types
// (components first, then the operations' inline bodies, each followed by
// the anonymous objects nested in it) and the operations in document order.
type api struct {
	types      []*object
	ops        []op
	errorCodes []string
}

// op is one operation: its id, method, path template and query parameters.
type op struct {
	id, method, path string
	query            []string
}

// object is a named object type.
type object struct {
	name, doc string
	props     []prop
}

type prop struct {
	name, doc string
	required  bool
	typ       *typ
}

// typ is a property's type. kind is one of string, integer, number,
// boolean, array (items), map (items: the values), ref (the named object
// ref) or any.
type typ struct {
	kind  string
	enum  []string
	items *typ
	ref   string
}

// schema is the subset of a JSON Schema object the SDKs' types need;
// properties keep the document's order.
type schema struct {
	Ref                  string          `json:"$ref"`
	Type                 string          `json:"type"`
	Description          string          `json:"description"`
	Enum                 []string        `json:"enum"`
	Required             []string        `json:"required"`
	Items                *schema         `json:"items"`
	AdditionalProperties json.RawMessage `json:"additionalProperties"`
	Properties           orderedSchemas  `json:"properties"`
}

// orderedSchemas is a JSON object of schemas in document order.
type orderedSchemas struct {
	keys []string
	vals map[string]*schema
}

func (o *orderedSchemas) UnmarshalJSON(b []byte) error {
	keys, err := objectKeys(b)
	if err != nil {
		return err
	}
	o.keys = keys
	return json.Unmarshal(b, &o.vals)
}

// objectKeys lists a JSON object's keys in document order.
func objectKeys(b []byte) ([]string, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not a JSON object")
	}
	var keys []string
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		keys = append(keys, t.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

type document struct {
	Paths      json.RawMessage `json:"paths"`
	Components struct {
		Schemas orderedSchemas `json:"schemas"`
	} `json:"components"`
}

// parameter is an operation's or a path's parameter.
type parameter struct {
	Name string `json:"name"`
	In   string `json:"in"`
}

type operation struct {
	OperationID string      `json:"operationId"`
	Parameters  []parameter `json:"parameters"`
	RequestBody struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema *schema `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

var methods = []string{"get", "put", "post", "patch", "delete"}

// load reads the description.
func load(raw []byte) (*api, error) {
	var doc document
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	a := &api{}
	for _, name := range doc.Components.Schemas.keys {
		if err := a.addObject(name, doc.Components.Schemas.vals[name]); err != nil {
			return nil, err
		}
	}
	paths, err := objectKeys(doc.Paths)
	if err != nil {
		return nil, fmt.Errorf("paths: %w", err)
	}
	var items map[string]map[string]json.RawMessage
	if err := json.Unmarshal(doc.Paths, &items); err != nil {
		return nil, err
	}
	for _, path := range paths {
		// Parameters at the path's level apply to each of its operations.
		var shared []parameter
		if raw, ok := items[path]["parameters"]; ok {
			if err := json.Unmarshal(raw, &shared); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
		}
		for _, m := range methods {
			if raw, ok := items[path][m]; ok {
				if err := a.addOperation(path, m, raw, shared); err != nil {
					return nil, fmt.Errorf("%s %s: %w", m, path, err)
				}
			}
		}
	}
	return a, a.findErrorCodes()
}

func (a *api) addOperation(path, method string, raw json.RawMessage, shared []parameter) error {
	var o operation
	if err := json.Unmarshal(raw, &o); err != nil {
		return err
	}
	if o.OperationID == "" {
		return fmt.Errorf("no operationId")
	}
	p := op{id: o.OperationID, method: strings.ToUpper(method), path: path}
	for _, prm := range append(shared, o.Parameters...) {
		if prm.In == "query" {
			p.query = append(p.query, prm.Name)
		}
	}
	a.ops = append(a.ops, p)
	// Inline object bodies become types named after the operation.
	base := exported(o.OperationID)
	if c, ok := o.RequestBody.Content["application/json"]; ok && inlineObject(c.Schema) {
		if err := a.addObject(base+"Request", c.Schema); err != nil {
			return err
		}
	}
	if r, ok := o.Responses["200"]; ok {
		if c, ok := r.Content["application/json"]; ok && inlineObject(c.Schema) {
			return a.addObject(base+"Response", c.Schema)
		}
	}
	return nil
}

// inlineObject reports whether s is an object with properties of its own.
func inlineObject(s *schema) bool {
	return s != nil && s.Ref == "" && s.Type == "object" && len(s.Properties.keys) > 0
}

// addObject adds the object type name, then the anonymous objects nested
// in its properties, named name+Property.
func (a *api) addObject(name string, s *schema) error {
	if s.Type != "object" {
		return fmt.Errorf("%s: a %q, not an object", name, s.Type)
	}
	o := &object{name: name, doc: s.Description}
	a.types = append(a.types, o)
	required := map[string]bool{}
	for _, r := range s.Required {
		required[r] = true
	}
	for _, pn := range s.Properties.keys {
		ps := s.Properties.vals[pn]
		t, err := a.typeOf(name+exported(pn), ps)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", name, pn, err)
		}
		o.props = append(o.props, prop{name: pn, doc: ps.Description, required: required[pn], typ: t})
	}
	return nil
}

// typeOf maps a property's schema to a type; an anonymous object becomes
// the named type nested.
func (a *api) typeOf(nested string, s *schema) (*typ, error) {
	switch {
	case s.Ref != "":
		return &typ{kind: "ref", ref: strings.TrimPrefix(s.Ref, "#/components/schemas/")}, nil
	case s.Type == "array":
		if s.Items == nil {
			return nil, fmt.Errorf("an array without items")
		}
		it, err := a.typeOf(nested, s.Items)
		return &typ{kind: "array", items: it}, err
	case s.Type == "object" && len(s.Properties.keys) > 0:
		return &typ{kind: "ref", ref: nested}, a.addObject(nested, s)
	case s.Type == "object":
		var vs schema
		if len(s.AdditionalProperties) > 0 && json.Unmarshal(s.AdditionalProperties, &vs) == nil && vs.Type != "" {
			vt, err := a.typeOf(nested, &vs)
			return &typ{kind: "map", items: vt}, err
		}
		return &typ{kind: "map", items: &typ{kind: "any"}}, nil
	case s.Type == "string" || s.Type == "integer" || s.Type == "number" || s.Type == "boolean":
		return &typ{kind: s.Type, enum: s.Enum}, nil
	}
	return nil, fmt.Errorf("unsupported schema type %q", s.Type)
}

// findErrorCodes takes the stable error codes from Error.error.code.
func (a *api) findErrorCodes() error {
	for _, o := range a.types {
		if o.name != "ErrorError" {
			continue
		}
		for _, p := range o.props {
			if p.name == "code" && len(p.typ.enum) > 0 {
				a.errorCodes = p.typ.enum
				return nil
			}
		}
	}
	return fmt.Errorf("no enum of error codes at Error.error.code")
}

// exported turns an identifier such as ttl_seconds or signPortURL into
// TtlSeconds or SignPortURL.
func exported(s string) string {
	var b strings.Builder
	up := true
	for _, r := range s {
		if r == '_' || r == '-' {
			up = true
			continue
		}
		if up {
			b.WriteString(strings.ToUpper(string(r)))
			up = false
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
