package cram

import (
	"path/filepath"
	"testing"

	"github.com/cramfs/cramfs/internal/cramtest"
)

// ContainerSpan gives a container's alignment span when its records are on
// one reference, and nothing for unmapped ones; after the CRAM's state was
// dropped it opens the file again to answer.
func TestContainerSpan(t *testing.T) {
	for _, name := range []string{"ce_1000.3.0-noref.cram", "ce_unmap2.3.0-embedref.cram"} {
		t.Run(name, func(t *testing.T) {
			src := t.TempDir()
			p := filepath.Join(src, "x.cram")
			cramtest.CopyCRAM(t, name, p)
			root := cramtest.OpenRoot(t, src)
			c, err := Open(p, atRoot(root, "x.cram"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var spans, none int
			for i, h := range c.File().Containers {
				span, ok := c.ContainerSpan(i)
				want := h.RefSeqID >= 0 && h.AlignmentSpan > 0
				if ok != want || ok && span != h.AlignmentSpan {
					t.Errorf("container %d (ref %d, span %d): ContainerSpan = %d, %v", i, h.RefSeqID, h.AlignmentSpan, span, ok)
				}
				if ok {
					spans++
				} else {
					none++
				}
			}
			t.Logf("%d containers with a span, %d without", spans, none)
			checkCRAM(t, c, true)
		})
	}
}
