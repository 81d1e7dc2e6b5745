package server

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"
)

// client is the official OpenAI Go SDK pointed at a test server, with
// retries off so a failing status shows up at once.
func (ts *testServer) client(opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(ts.URL + "/v1/"),
		option.WithAPIKey("unused"),
		option.WithMaxRetries(0),
	}, opts...)...)
}

// checkShape fails the test when an SDK response value did not decode
// cleanly: a field the SDK marks required is missing, or a field holds a
// value of the wrong type or outside its enum (the SDK keeps going in
// both cases, so a lenient client would not notice, a strict one would).
func checkShape(t testing.TB, what string, v any) {
	t.Helper()
	for _, p := range shapeProblems(reflect.ValueOf(v), what) {
		t.Errorf("%s", p)
	}
}

var fieldType = reflect.TypeFor[respjson.Field]()

func shapeProblems(v reflect.Value, path string) []string {
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	var out []string
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			out = append(out, shapeProblems(v.Index(i), fmt.Sprintf("%s[%d]", path, i))...)
		}
	case reflect.Map:
		for _, k := range v.MapKeys() {
			out = append(out, shapeProblems(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k))...)
		}
	case reflect.Struct:
		meta := v.FieldByName("JSON")
		if !meta.IsValid() || meta.Kind() != reflect.Struct {
			return nil
		}
		typ := v.Type()
		for i := 0; i < typ.NumField(); i++ {
			f := typ.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if !f.IsExported() || name == "" || name == "-" {
				continue
			}
			mf := meta.FieldByName(f.Name)
			if !mf.IsValid() || mf.Type() != fieldType {
				continue
			}
			status := mf.Interface().(respjson.Field)
			raw := status.Raw()
			switch {
			case raw == "" && strings.Contains(f.Tag.Get("api"), "required"):
				out = append(out, fmt.Sprintf("%s.%s: required field missing", path, name))
			case raw != "" && raw != "null" && !status.Valid():
				out = append(out, fmt.Sprintf("%s.%s: value %s does not decode as %s", path, name, raw, f.Type))
			case status.Valid():
				out = append(out, shapeProblems(v.Field(i), path+"."+name)...)
			}
		}
	}
	return out
}
