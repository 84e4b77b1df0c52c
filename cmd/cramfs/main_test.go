package main

import (
	"bytes"
	"testing"

	"github.com/cramfs/cramfs/internal/clitest"
)

// The helpers the command's tests share with the serving library's.
var (
	sharedDir       = clitest.SharedDir
	runAsNobody     = clitest.RunAsNobody
	nobodyCan       = clitest.NobodyCan
	testdata        = clitest.Testdata
	requireMount    = clitest.RequireMount
	copyFile        = clitest.CopyFile
	poll            = clitest.Poll
	mustSamtools    = clitest.MustSamtools
	must            = clitest.Must
	isMounted       = clitest.IsMounted
	buildCramfs     = clitest.Binary
	convertAt       = clitest.ConvertAt
	wantMD5         = clitest.WantMD5
	checkOneMessage = clitest.CheckOneMessage
	startMount      = clitest.StartMount
	startMountEnv   = clitest.StartMountEnv
	startMountProc  = clitest.StartMountProc
	unmountProc     = clitest.UnmountProc
	md5Hex          = clitest.MD5Hex
	startMountAt    = clitest.StartMountAt
)

const nobody = clitest.Nobody

// runCmd runs the command line in-process and returns its exit code, the
// standard error text and the standard output.
func runCmd(t *testing.T, args ...string) (int, string, []byte) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	rc := run(args, &stdout, &stderr)
	return rc, stderr.String(), stdout.Bytes()
}

// TestMain: see clitest.Main.
func TestMain(m *testing.M) { clitest.Main(m) }
