package service

import (
	"testing"

	"github.com/cramfs/cramfs/internal/clitest"
)

// The helpers this package's tests share with the command's.
var (
	sharedDir       = clitest.SharedDir
	runAsNobody     = clitest.RunAsNobody
	testdata        = clitest.Testdata
	corpusFile      = clitest.CorpusFile
	samtoolsEnv     = clitest.SamtoolsEnv
	requireMount    = clitest.RequireMount
	samtools        = clitest.Samtools
	mustSamtools    = clitest.MustSamtools
	md5Hex          = clitest.MD5Hex
	copyFile        = clitest.CopyFile
	must            = clitest.Must
	readNames       = clitest.ReadNames
	poll            = clitest.Poll
	buildCramfs     = clitest.Binary
	convertAt       = clitest.ConvertAt
	wantMD5         = clitest.WantMD5
	checkOneMessage = clitest.CheckOneMessage
	runCmd          = clitest.Run
	isMounted       = clitest.IsMounted
	startMount      = clitest.StartMount
	startMountAt    = clitest.StartMountAt
	startMountProc  = clitest.StartMountProc
	startMountEnv   = clitest.StartMountEnv
	unmountProc     = clitest.UnmountProc
)

type (
	syncBuffer = clitest.SyncBuffer
	mountProc  = clitest.MountProc
)

// TestMain: see clitest.Main.
func TestMain(m *testing.M) { clitest.Main(m) }
