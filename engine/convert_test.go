package engine

import (
	"bytes"
	"context"
	"testing"

	"github.com/cramfs/cramfs/internal/bgzftest"
)

// bigSource is a Source of one container of n bytes.
type bigSource struct{ data []byte }

func (s bigSource) Name() string              { return "big" }
func (s bigSource) Header() []byte            { return []byte("BAM\x01") }
func (s bigSource) NumContainers() int        { return 1 }
func (s bigSource) ContainerOffset(int) int64 { return 0 }
func (s bigSource) AppendContainer(_ context.Context, _ int, dst []byte) ([]byte, error) {
	return append(dst, s.data...), nil
}

// pieceWriter keeps what is written and the largest single Write.
type pieceWriter struct {
	bytes.Buffer
	largest int
}

func (w *pieceWriter) Write(p []byte) (int, error) {
	w.largest = max(w.largest, len(p))
	return w.Buffer.Write(p)
}

// TestConvertWritesInPieces checks that a container larger than
// WritePiece reaches the writer in pieces of at most WritePiece bytes (one
// huge write(2) into a file was several times slower) and whole.
func TestConvertWritesInPieces(t *testing.T) {
	data := make([]byte, 5*WritePiece+123)
	for i := range data {
		data[i] = byte(i * 7 / 5)
	}
	src := bigSource{data: data}
	for _, level := range []Level{Stored, 1} {
		var w pieceWriter
		if err := Convert(context.Background(), src, &w, ConvertOptions{Threads: 2, Level: level}); err != nil {
			t.Fatal(err)
		}
		if w.largest > WritePiece {
			t.Errorf("level %d: a single Write of %d bytes, want at most %d", level, w.largest, WritePiece)
		}
		raw, err := bgzftest.DecompressAll(w.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if want := append(src.Header(), data...); !bytes.Equal(raw, want) {
			t.Fatalf("level %d: output holds %d bytes, want the %d of header and container", level, len(raw), len(want))
		}
	}
}
