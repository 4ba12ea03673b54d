package raw

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// mirrors is the Go mirror of each C struct the package mirrors.
var mirrors = map[string]reflect.Type{
	"cuzk_config":         reflect.TypeOf(Config{}),
	"cuzk_job_request":    reflect.TypeOf(JobRequest{}),
	"cuzk_post_request":   reflect.TypeOf(PostRequest{}),
	"cuzk_update_request": reflect.TypeOf(UpdateRequest{}),
	"cuzk_engine_report":  reflect.TypeOf(EngineReport{}),
	"cuzk_admission":      reflect.TypeOf(Admission{}),
	"cuzk_timeline_event": reflect.TypeOf(TimelineEvent{}),
	"cuzk_log_record":     reflect.TypeOf(LogRecord{}),
}

// notMirrored are the header's structs the package uses only inside itself, through cgo's own
// types: an error's message, returned bytes and a borrowed slice never reach its callers.
var notMirrored = []string{"cuzk_error", "cuzk_bytes", "cuzk_slice"}

func readHeader(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../include/cuzk.h")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var (
	structStart = regexp.MustCompile(`^typedef struct (\w+) \{$`)
	// The last identifier before the ';' (and an array's brackets) of a member line.
	memberName = regexp.MustCompile(`(\w+)(\[\w+\])?;$`)
)

// headerStructs reads the header's struct definitions: each struct's field names, in order.
func headerStructs(h string) map[string][]string {
	out := map[string][]string{}
	var cur string
	for _, line := range strings.Split(h, "\n") {
		line = strings.TrimSpace(line)
		if m := structStart.FindStringSubmatch(line); m != nil {
			cur = m[1]
			out[cur] = nil
			continue
		}
		if cur == "" {
			continue
		}
		if strings.HasPrefix(line, "}") {
			cur = ""
			continue
		}
		if strings.HasPrefix(line, "*") || strings.HasPrefix(line, "/*") || strings.HasPrefix(line, "//") {
			continue
		}
		if m := memberName.FindStringSubmatch(line); m != nil {
			out[cur] = append(out[cur], m[1])
		}
	}
	return out
}

// Every mirror has its C struct's size, and each of its fields the offset and size of the C
// field its `c` tag names, as the C compiler lays them out (reflect's Size and Offset are
// unsafe.Sizeof and unsafe.Offsetof). The list of C fields compared is itself checked against
// the header's text, so a field appended there fails here until it is mirrored, even where
// it would fit in padding and leave the size alone.
func TestMirrorsHaveTheHeadersLayout(t *testing.T) {
	byStruct := map[string][]cField{}
	for _, f := range cFields() {
		byStruct[f.Struct] = append(byStruct[f.Struct], f)
	}
	sizes := cStructSizes()
	for name, typ := range mirrors {
		if got, want := typ.Size(), sizes[name]; got != want || want == 0 {
			t.Errorf("%s: sizeof %d, the Go mirror %s %d", name, want, typ.Name(), got)
		}
		cf := byStruct[name]
		if typ.NumField() != len(cf) {
			t.Errorf("%s: %d C fields, the Go mirror %s %d", name, len(cf), typ.Name(), typ.NumField())
		}
		for i := 0; i < typ.NumField(); i++ {
			gf := typ.Field(i)
			tag := gf.Tag.Get("c")
			j := slices.IndexFunc(cf, func(f cField) bool { return f.Field == tag })
			if j < 0 {
				t.Errorf("%s.%s: its tag %q names no field of %s", typ.Name(), gf.Name, tag, name)
				continue
			}
			if j != i {
				t.Errorf("%s.%s is field %d, %s.%s field %d", typ.Name(), gf.Name, i, name, tag, j)
			}
			if gf.Offset != cf[j].Offset || gf.Type.Size() != cf[j].Size {
				t.Errorf("%s.%s at %d (%d bytes), %s.%s at %d (%d bytes)", typ.Name(), gf.Name, gf.Offset,
					gf.Type.Size(), name, tag, cf[j].Offset, cf[j].Size)
			}
		}
	}

	header := headerStructs(readHeader(t))
	if len(header) == 0 {
		t.Fatal("no struct read from the header")
	}
	for name, fields := range header {
		if slices.Contains(notMirrored, name) {
			continue
		}
		if _, ok := mirrors[name]; !ok {
			t.Errorf("struct %s of the header has no Go mirror (nor is it listed as not mirrored)", name)
			continue
		}
		var listed []string
		for _, f := range byStruct[name] {
			listed = append(listed, f.Field)
		}
		if !slices.Equal(fields, listed) {
			t.Errorf("%s: the header's fields %v, layout_check.go's %v", name, fields, listed)
		}
	}
	for name := range mirrors {
		if _, ok := header[name]; !ok {
			t.Errorf("the mirrored struct %s is not in the header", name)
		}
	}
}

var (
	enumValue   = regexp.MustCompile(`(?m)^\s+(CUZK_\w+) = (\d+),$`)
	defineValue = regexp.MustCompile(`(?m)^#define (CUZK_\w+) (\d+)$`)
)

// Every enum value and numeric define of the header has a Go constant of the same value.
func TestConstantsHaveTheHeadersValues(t *testing.T) {
	consts := map[string]cConst{}
	for _, c := range cConstants() {
		if c.Go != c.Value {
			t.Errorf("%s: the header's %d, the Go constant %d", strings.ToUpper(c.Name), c.Value, c.Go)
		}
		consts[c.Name] = c
	}
	h := readHeader(t)
	found := 0
	for _, re := range []*regexp.Regexp{enumValue, defineValue} {
		for _, m := range re.FindAllStringSubmatch(h, -1) {
			found++
			c, ok := consts[strings.ToLower(m[1])]
			if !ok {
				t.Errorf("%s of the header has no Go constant", m[1])
				continue
			}
			if v, _ := strconv.ParseInt(m[2], 10, 64); v != c.Go {
				t.Errorf("%s: the header's text %d, the Go constant %d", m[1], v, c.Go)
			}
		}
	}
	if found != len(consts) {
		t.Errorf("%d constants read from the header, %d mirrored", found, len(consts))
	}
}
