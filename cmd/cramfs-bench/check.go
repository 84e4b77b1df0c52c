package main

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

// checkSame is the correctness guard of a convert pair: the SAM text
// (`samtools view -h --no-PG`) of both BAMs must have the same md5, and
// so must their uncompressed BAM streams (cramfs promises byte-exact
// output).
func (b *bench) checkSame(ctx context.Context, cramfsBAM, samtoolsBAM string) error {
	cs, err := b.samMD5(ctx, cramfsBAM)
	if err != nil {
		return err
	}
	ss, err := b.samMD5(ctx, samtoolsBAM)
	if err != nil {
		return err
	}
	if cs != ss {
		return fmt.Errorf("CORRECTNESS: samtools view --no-PG differs: %s md5 %s, %s md5 %s", cramfsBAM, cs, samtoolsBAM, ss)
	}
	cb, err := inflatedMD5(cramfsBAM)
	if err != nil {
		return err
	}
	sb, err := inflatedMD5(samtoolsBAM)
	if err != nil {
		return err
	}
	if cb != sb {
		return fmt.Errorf("CORRECTNESS: uncompressed BAM streams differ: %s md5 %s, %s md5 %s", cramfsBAM, cb, samtoolsBAM, sb)
	}
	fmt.Fprintf(os.Stderr, "  check: SAM md5 %s and BAM stream md5 %s identical\n", cs, cb)
	return nil
}

// samMD5 streams `samtools view -h --no-PG bam` through md5.
func (b *bench) samMD5(ctx context.Context, bam string) (string, error) {
	c := b.sam("view", "-@", b.th(), "-h", "--no-PG", bam)
	cmd := c.exec(ctx)
	h := md5.New()
	var stderr limitedBuffer
	cmd.Stdout, cmd.Stderr = h, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", c, err, stderr.String())
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// inflatedMD5 is the md5 of the concatenated BGZF members of path.
func inflatedMD5(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	h := md5.New()
	if _, err := io.Copy(h, zr); err != nil {
		return "", fmt.Errorf("%s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
