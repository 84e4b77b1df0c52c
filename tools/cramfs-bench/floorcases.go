package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// The floor cases: the CPU the cramfs mount process spends on a read it
// serves from its cache, against the CPU of the floor (floor.go) serving
// the same bytes from memory. The cramfs mount has a --cache-size that
// holds the whole file; each round mounts afresh, reads the file once with
// dd (filling the cache), drops the file's pages from the kernel's page
// cache (posix_fadvise DONTNEED, checked with mincore), and measures the
// server's user+sys CPU (/proc/PID/stat) over a second read. The floor
// runs the same steps.

// Group and measure of the floor rows.
const (
	groupFloor   = "cached read vs go-fuse floor"
	measureCPU   = "server CPU s (user+sys)"
	floorVariant = "2nd read, cache holds the file"
)

// fuseServer is a FUSE server process that shows a BAM at its mount
// point.
type fuseServer interface {
	// commands are the server's command mounting at mnt and the command
	// that unmounts it.
	commands(mnt string) (start, unmount command, err error)
}

// cramfsMount is `cramfs mount` of src (warm index) with a --cache-size.
type cramfsMount struct {
	b          *bench
	src, cache string
}

func (c cramfsMount) commands(mnt string) (command, command, error) {
	return c.b.mountDirCmd(c.src, mnt, c.cache), c.b.cfs("unmount", mnt), nil
}

// floorMount is the floor serving bam.
type floorMount struct{ bam string }

func (f floorMount) commands(mnt string) (command, command, error) {
	c, err := floorCommand(f.bam, mnt)
	return c, floorUnmount(mnt), err
}

// floorBAM is the flavour's BAM as the mount serves it, converted once per
// run into the scratch directory: the floor's bytes.
func (b *bench) floorBAM(f flavour) string {
	return filepath.Join(b.scratch, "floor", f.Stem()+".bam")
}

// floorSetup builds the warm index and converts the floor's BAM, unless
// the other floor case of the run did.
func (b *bench) floorSetup(f flavour) func(ctx context.Context) error {
	warm := b.warmIndex(f)
	return func(ctx context.Context) error {
		if err := warm(ctx); err != nil {
			return err
		}
		bam := b.floorBAM(f)
		if _, err := os.Stat(bam); err == nil {
			return nil
		}
		if err := os.MkdirAll(filepath.Dir(bam), 0o755); err != nil {
			return err
		}
		part := bam + ".part"
		if _, err := timeRun(ctx, b.cfs("convert", "-T", b.data.Ref, "-@", b.th(), "--level", b.lv(), "-o", part, f.CRAM)); err != nil {
			return fmt.Errorf("converting the floor's BAM: %w", err)
		}
		return os.Rename(part, bam)
	}
}

// cacheToHold is a --cache-size that holds a file of size bytes with room
// for the decoders: the file plus a quarter plus 64 MiB.
func cacheToHold(size int64) string {
	return strconv.FormatInt((size+size/4)>>20+64, 10) + "M"
}

// ddRead reads file whole with dd in 1 MiB requests.
func ddRead(file string) command {
	return command{Path: "dd", Args: []string{"if=" + file, "bs=1M", "of=/dev/null"}}
}

// floorCases are the floor rows of f: dd and, per samtools, view -c.
func (b *bench) floorCases(f flavour) []benchCase {
	name := f.Stem() + ".bam"
	setup := b.floorSetup(f)
	dd := benchCase{ID: "floor-dd/" + f.ID, Group: groupFloor, Flavour: f.Name, Variant: floorVariant + ", dd bs=1M", Late: 1, Setup: setup}
	read := func(mnt string) command { return ddRead(filepath.Join(mnt, name)) }
	c := dd.add(side{Label: "cramfs mount, dd", Desc: b.floorDesc(f, read), Run: b.cachedCPU(f, false, read)})
	p := dd.add(side{Label: "go-fuse floor, dd", Desc: floorDesc(read), Run: b.cachedCPU(f, true, read)})
	for _, t := range b.tools {
		dd.Pairs = append(dd.Pairs, pair{Cramfs: c, Baseline: p, Tool: t.Version, Measure: measureCPU})
	}
	view := benchCase{ID: "floor-view/" + f.ID, Group: groupFloor, Flavour: f.Name, Variant: floorVariant + ", view -c", Late: 1,
		Setup: setup, CheckOut: "record count"}
	for _, t := range b.tools {
		read := func(mnt string) command { return b.samWith(t, "view", "-@", b.th(), "-c", filepath.Join(mnt, name)) }
		c := view.add(side{Label: "cramfs mount, view -c", Desc: b.floorDesc(f, read), Run: b.cachedCPU(f, false, read)})
		p := view.add(side{Label: "go-fuse floor, view -c", Desc: floorDesc(read), Run: b.cachedCPU(f, true, read)})
		view.Pairs = append(view.Pairs, pair{Cramfs: c, Baseline: p, Tool: t.Version, Measure: measureCPU})
	}
	return []benchCase{dd, view}
}

func (b *bench) floorDesc(f flavour, read func(mnt string) command) string {
	return b.mountDirCmd(filepath.Dir(f.CRAM), "MNT", "FILE+25%+64M").String() + "; " + ddRead("MNT/x.bam").String() +
		"; fadvise DONTNEED; CPU of the mount over: " + read("MNT").String()
}

func floorDesc(read func(mnt string) command) string {
	return "cramfs-bench floor (go-fuse, BAM in memory) at MNT; " + ddRead("MNT/x.bam").String() +
		"; fadvise DONTNEED; CPU of the floor over: " + read("MNT").String()
}

// cachedCPU measures the server's CPU over read(mnt), the second read of
// f's BAM: the cramfs mount of f's directory, or the floor of its BAM.
func (b *bench) cachedCPU(f flavour, floor bool, read func(mnt string) command) func(ctx context.Context) (sample, error) {
	return func(ctx context.Context) (sample, error) {
		st, err := os.Stat(b.floorBAM(f))
		if err != nil {
			return sample{}, err
		}
		var srv fuseServer = cramfsMount{b: b, src: filepath.Dir(f.CRAM), cache: cacheToHold(st.Size())}
		if floor {
			srv = floorMount{bam: b.floorBAM(f)}
		}
		return secondReadCPU(ctx, srv, f.Stem()+".bam", st.Size(), read)
	}
}

// secondReadCPU starts srv at a fresh mount point, reads name there once
// with dd, drops its pages from the page cache, and returns the server's
// user+sys CPU over read(mnt) as Secs, with read's output and the
// server's peak RSS. The file must have size bytes.
func secondReadCPU(ctx context.Context, srv fuseServer, name string, size int64, read func(mnt string) command) (sample, error) {
	mnt, err := os.MkdirTemp("/tmp", "cramfs-bench-mnt-")
	if err != nil {
		return sample{}, err
	}
	defer os.Remove(mnt)
	start, unmount, err := srv.commands(mnt)
	if err != nil {
		return sample{}, err
	}
	m, err := startMount(ctx, unmount, start, mnt)
	defer m.close()
	if err != nil {
		return sample{}, err
	}
	file := filepath.Join(mnt, name)
	st, err := os.Stat(file)
	if err != nil {
		return sample{}, err
	}
	if st.Size() != size {
		return sample{}, fmt.Errorf("%s: %d bytes, want %d (the BAM cramfs convert wrote)", file, st.Size(), size)
	}
	if _, err := timeRun(ctx, ddRead(file)); err != nil {
		return sample{}, fmt.Errorf("first read: %w", err)
	}
	if err := dropPageCache(file); err != nil {
		return sample{}, err
	}
	pid := m.cmd.Process.Pid
	before, err := processCPU(pid)
	if err != nil {
		return sample{}, err
	}
	got, err := timeRun(ctx, read(mnt))
	if err != nil {
		return sample{}, err
	}
	after, err := processCPU(pid)
	if err != nil {
		return sample{}, err
	}
	rss, err := m.stop()
	if err != nil {
		return sample{}, err
	}
	fmt.Fprintf(os.Stderr, "    second read: %.3f s wall\n", got.Secs)
	return sample{Secs: (after - before).Seconds(), RSSKB: rss, Out: got.Out}, nil
}
