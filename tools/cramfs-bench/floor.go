package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	cfs "github.com/cramfs/cramfs/fs"
	fusefs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The floor of a FUSE read: go-fuse serving one file whose bytes it holds
// in memory, mounted as cramfs mounts (fs.Mount): read-only with
// default_permissions, requests of up to fs.DefaultMaxRead, the kernel
// read-ahead window fs.DefaultMaxReadAhead (also written to the mount's
// bdi read_ahead_kb, as cramfs does when it may), entry, attribute and
// negative timeouts of fs.DefaultTimeout, no READDIRPLUS, POSIX ACLs on,
// no splice, and files opened with FOPEN_KEEP_CACHE (not direct I/O).
// What cramfs spends beyond it on a read it serves from its cache is the
// cost of its own layers.

// floorEnv names the environment variable under which cramfs-bench, run
// again with the arguments BAM MNT, only mounts BAM (read into memory) at
// MNT as the floor does, until SIGTERM or SIGINT.
const floorEnv = "CRAMFS_BENCH_FLOOR"

// floorMain is cramfs-bench run under floorEnv.
func floorMain(args []string) error {
	if len(args) != 2 {
		return fmt.Errorf("%s: want the arguments BAM MNT, got %q", floorEnv, args)
	}
	data, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	srv, err := mountFloor(args[1], filepath.Base(args[0]), data)
	if err != nil {
		return err
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sigs
		srv.Unmount()
	}()
	srv.Wait()
	return nil
}

// floorCommand runs the floor of bam at mnt: this program again, under
// floorEnv.
func floorCommand(bam, mnt string) (command, error) {
	exe, err := os.Executable()
	if err != nil {
		return command{}, fmt.Errorf("floor: %w", err)
	}
	return command{Path: exe, Args: []string{bam, mnt}, Env: []string{floorEnv + "=1"}}, nil
}

// floorUnmount unmounts a floor mount (cramfs unmount refuses a mount
// that is not cramfs'); -z lets a busy one go once its files close.
func floorUnmount(mnt string) command {
	return command{Path: "fusermount3", Args: []string{"-u", "-z", mnt}}
}

// mountFloor mounts, at mnt, a directory holding one file, name, of data.
func mountFloor(mnt, name string, data []byte) (*fuse.Server, error) {
	to := cfs.DefaultTimeout
	opts := &fusefs.Options{
		EntryTimeout:    &to,
		AttrTimeout:     &to,
		NegativeTimeout: &to,
		NullPermissions: true,
		MountOptions: fuse.MountOptions{
			Options:            []string{"ro", "default_permissions"},
			FsName:             "cramfs-bench-floor",
			Name:               "cramfs-floor",
			MaxWrite:           cfs.DefaultMaxRead,
			MaxReadAhead:       cfs.DefaultMaxReadAhead,
			DisableReadDirPlus: true,
			EnableAcl:          true,
			DisableSplice:      true,
		},
	}
	root := &floorDir{name: name, file: &floorFile{data: data}}
	srv, err := fusefs.Mount(mnt, root, opts)
	if err != nil {
		return nil, fmt.Errorf("mounting the floor at %s: %w", mnt, err)
	}
	// Best effort, as for cramfs: both run as the same user.
	_ = setBDIReadAhead(mnt, cfs.DefaultMaxReadAhead)
	return srv, nil
}

// setBDIReadAhead sets the kernel read-ahead window of the mount at mnt
// (/sys/class/bdi/MAJ:MIN/read_ahead_kb; root only), as fs.Mount does.
func setBDIReadAhead(mnt string, bytes int) error {
	var st syscall.Stat_t
	if err := syscall.Stat(mnt, &st); err != nil {
		return err
	}
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	p := fmt.Sprintf("/sys/class/bdi/%d:%d/read_ahead_kb", major, minor)
	return os.WriteFile(p, []byte(fmt.Sprintf("%d\n", bytes>>10)), 0)
}

// floorDir is the floor's root: one file.
type floorDir struct {
	fusefs.Inode
	name string
	file *floorFile
}

var _ fusefs.NodeOnAdder = (*floorDir)(nil)
var _ fusefs.NodeGetattrer = (*floorDir)(nil)

func (d *floorDir) OnAdd(ctx context.Context) {
	d.AddChild(d.name, d.NewPersistentInode(ctx, d.file, fusefs.StableAttr{Mode: syscall.S_IFREG}), false)
}

func (d *floorDir) Getattr(_ context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFDIR | 0o555
	return 0
}

// floorFile is a read-only file of bytes in memory.
type floorFile struct {
	fusefs.Inode
	data []byte
}

var _ fusefs.NodeOpener = (*floorFile)(nil)
var _ fusefs.NodeReader = (*floorFile)(nil)
var _ fusefs.NodeGetattrer = (*floorFile)(nil)

func (f *floorFile) Getattr(_ context.Context, _ fusefs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	out.Mode = syscall.S_IFREG | 0o444
	out.Size = uint64(len(f.data))
	out.Blocks = (out.Size + 511) / 512
	return 0
}

func (f *floorFile) Open(_ context.Context, flags uint32) (fusefs.FileHandle, uint32, syscall.Errno) {
	if flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		return nil, 0, syscall.EROFS
	}
	return nil, fuse.FOPEN_KEEP_CACHE, 0
}

func (f *floorFile) Read(_ context.Context, _ fusefs.FileHandle, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if off < 0 {
		return nil, syscall.EINVAL
	}
	if off >= int64(len(f.data)) {
		return fuse.ReadResultData(nil), 0
	}
	return fuse.ReadResultData(f.data[off:min(off+int64(len(dest)), int64(len(f.data)))]), 0
}
