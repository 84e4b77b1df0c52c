package engine

import (
	"os"
	"testing"

	"github.com/cramfs/cramfs/engine/cram"
	"github.com/cramfs/cramfs/fs"
)

// evictByOther opens other.cram of root with opt, whose FileStates holds
// one descriptor: that drops c's state, which it checks (the FileStates
// is left empty once other.cram is closed).
func evictByOther(t *testing.T, c *cram.CRAM, root *os.Root, opt cram.Options) {
	t.Helper()
	o, err := cram.Open("other.cram", atRoot(root, "other.cram"), opt)
	if err != nil {
		t.Fatal(err)
	}
	o.Close()
	if entries, _, _ := opt.States.Snapshot(); len(entries) != 0 {
		t.Fatalf("%s: its state was not dropped by a FileStates of one descriptor (%d entries held)", c.Name(), len(entries))
	}
}

// atRoot is the CRAM rel of root as a mount opens it.
func atRoot(root *os.Root, rel string) cram.File { return fs.CRAMRef{Root: root, Rel: rel} }
