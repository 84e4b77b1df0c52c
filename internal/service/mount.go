package service

import (
	"context"
	"os"
	"path/filepath"
	"time"

	cfs "github.com/cramfs/cramfs/fs"
)

// MountOptions configure one mount of a Service.
type MountOptions struct {
	// AllowOther lets other users access the mount (fs.Options).
	AllowOther bool
	// IndexOnMount scans every CRAM of the tree in the background.
	IndexOnMount bool
	// Debug logs every FUSE request.
	Debug bool
	// UID, GID and Umask, when set, replace the source's owners and modes
	// in what the mount shows (fs.Options).
	UID, GID, Umask *uint32
}

// Mount is a running mount of a source tree: the FUSE server, the file
// states it reports, its status socket and its background indexing.
type Mount struct {
	// Constant.
	srv    *cfs.Server
	op     *opener
	status *statusServer // nil when the socket could not be made
	mnt    string
	stop   context.CancelFunc // ends the background indexing
	done   chan struct{}      // closed once unmounted and released
	svc    *Service
}

// Mount mounts the tree src at mnt, serving its CRAMs through s, and
// returns once the mount answers. It fails with an error wrapping
// fs.ErrMount when the mount cannot be set up (fs.Mount says why).
func (s *Service) Mount(src, mnt string, o MountOptions) (*Mount, error) {
	if o.AllowOther {
		if err := cfs.CheckAllowOther(); err != nil {
			return nil, err
		}
	}
	op := newOpener(s.mgr, s.refs, s.copt, s.log)
	op.reports = newFileReports(s.log, absolute(src))
	op.onOpen = s.noteLayout
	sock := statusSocket(s.opts.CacheDir, mnt)
	srv, err := cfs.Mount(src, mnt, op, cfs.Options{AllowOther: o.AllowOther, Logger: s.log, Debug: o.Debug, UID: o.UID, GID: o.GID, Umask: o.Umask,
		RootXattrs: map[string]string{statusXattr: sock}})
	if err != nil {
		op.Close()
		return nil, err
	}
	m := &Mount{srv: srv, op: op, mnt: mnt, done: make(chan struct{}), svc: s}
	base := mountStatus{Src: absolute(src), Mnt: absolute(mnt), PID: os.Getpid(), Started: time.Now(), Threads: s.mgr.Options().Threads,
		Level: s.opts.Level, CacheSize: s.mgr.Options().CacheSize}
	if ss, err := newStatusServer(sock, base, op.reports, s.mgr, s.log, srv); err != nil {
		s.log.Warn("cramfs status will not answer for this mount", "err", err)
	} else {
		m.status = ss
	}
	ctx, stop := context.WithCancel(context.Background())
	m.stop = stop
	if o.IndexOnMount {
		go op.indexAll(ctx, srv.Tree())
	}
	go m.wait()
	return m, nil
}

// wait releases the mount's resources once it is unmounted.
func (m *Mount) wait() {
	m.srv.Wait()
	m.stop()
	if m.status != nil {
		m.status.Close()
	}
	m.op.Close()
	close(m.done)
}

// Done is closed once the mount was unmounted (by Unmount, or by
// `cramfs unmount`/fusermount3 from outside) and its resources released.
func (m *Mount) Done() <-chan struct{} { return m.done }

// Unmount unmounts now, detaching lazily when files are still open (the
// kernel then ends the mount when the last is closed), and waits for Done.
func (m *Mount) Unmount() error {
	if err := m.srv.Unmount(); err != nil {
		if _, err := cfs.UnmountOrDetach(m.mnt); err != nil {
			return err
		}
		m.svc.log.Warn("the mount was busy: detached; this process ends when the last file open on it is closed", "mnt", absolute(m.mnt), "err", err)
	}
	<-m.done
	return nil
}

// absolute is p as an absolute path (p itself if there is none), for
// what the status and the log report.
func absolute(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
