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

// checkSame is the correctness guard of a convert pair: the uncompressed
// BAM streams of both files must have the same md5 (cramfs promises
// byte-exact output, which implies the same SAM). Only when they differ
// does it also compare the SAM text (`samtools view -h --no-PG`), to say
// whether the records or only their encoding differ.
func (b *bench) checkSame(ctx context.Context, cramfsBAM, samtoolsBAM string) error {
	cb, err := inflatedMD5(cramfsBAM)
	if err != nil {
		return err
	}
	sb, err := inflatedMD5(samtoolsBAM)
	if err != nil {
		return err
	}
	if cb == sb {
		fmt.Fprintf(os.Stderr, "  check: BAM stream md5 %s identical\n", cb)
		return nil
	}
	cs, err := b.samMD5(ctx, cramfsBAM)
	if err != nil {
		return err
	}
	ss, err := b.samMD5(ctx, samtoolsBAM)
	if err != nil {
		return err
	}
	same := "the same"
	if cs != ss {
		same = fmt.Sprintf("different (md5 %s and %s)", cs, ss)
	}
	return fmt.Errorf("CORRECTNESS: uncompressed BAM streams differ: %s md5 %s, %s md5 %s; their SAM text is %s",
		cramfsBAM, cb, samtoolsBAM, sb, same)
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
