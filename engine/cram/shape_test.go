package cram

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/internal/cramtest"
)

// TestFileShapeCoversTheFile: fileShape changes with each part of the
// file structure that decoding a container takes besides its data, and
// covers every field decode has for it (a new field must be added there,
// or here as not needed).
func TestFileShapeCoversTheFile(t *testing.T) {
	// Of File, Name and r are not content, size is compared on its own
	// (version) and maxRefLen follows from Refs.
	fields := map[reflect.Type]string{
		reflect.TypeFor[decode.File]():            "Name r size Def HeaderText Refs ReadGroups Containers HasEOF maxRefLen",
		reflect.TypeFor[decode.FileDefinition]():  "Major Minor FileID",
		reflect.TypeFor[decode.RefSeq]():          "Name Length M5 UR",
		reflect.TypeFor[decode.ContainerHeader](): "Offset HeaderSize Length RefSeqID RefStart AlignmentSpan NumRecords RecordCounter Bases NumBlocks Landmarks",
	}
	for typ, want := range fields {
		var got []string
		for i := range typ.NumField() {
			got = append(got, typ.Field(i).Name)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("decode.%s has fields %v, fileShape knows %s", typ.Name(), got, want)
		}
	}
	p := filepath.Join(t.TempDir(), "x.cram")
	cramtest.CopyCRAM(t, "ce_5b.3.0-noref.cram", p)
	f := mustFile(t, p)
	base := fileShape(f)
	for name, change := range map[string]func(g *decode.File){
		"major":       func(g *decode.File) { g.Def.Major++ },
		"file ID":     func(g *decode.File) { g.Def.FileID[3] ^= 1 },
		"header text": func(g *decode.File) { g.HeaderText = append(slices.Clone(g.HeaderText), ' ') },
		"@SQ name":    func(g *decode.File) { g.Refs = slices.Clone(g.Refs); g.Refs[1].Name += "x" },
		"@SQ M5":      func(g *decode.File) { g.Refs = slices.Clone(g.Refs); g.Refs[0].M5 = "0" },
		"@SQ UR":      func(g *decode.File) { g.Refs = slices.Clone(g.Refs); g.Refs[0].UR += "x" },
		"@SQ length":  func(g *decode.File) { g.Refs = slices.Clone(g.Refs); g.Refs[0].Length++ },
		"@RG":         func(g *decode.File) { g.ReadGroups = append(slices.Clone(g.ReadGroups), "x") },
		"EOF":         func(g *decode.File) { g.HasEOF = !g.HasEOF },
		"records":     func(g *decode.File) { g.Containers = slices.Clone(g.Containers); g.Containers[0].NumRecords++ },
		"landmark": func(g *decode.File) {
			g.Containers = slices.Clone(g.Containers)
			g.Containers[0].Landmarks = []int32{g.Containers[0].Landmarks[0] + 1}
		},
		"record count": func(g *decode.File) { g.Containers = slices.Clone(g.Containers); g.Containers[0].RecordCounter++ },
	} {
		g := *f
		change(&g)
		if fileShape(&g) == base {
			t.Errorf("a change of the %s leaves fileShape as it was", name)
		}
	}
}

// mustFile opens the CRAM at p and returns its file structure.
func mustFile(t *testing.T, p string) *decode.File {
	t.Helper()
	c, err := Open(p, Path(p), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.File()
}
