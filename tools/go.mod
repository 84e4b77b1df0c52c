module github.com/cramfs/cramfs/tools

go 1.26.0

require (
	github.com/cramfs/cramfs v0.0.0
	github.com/hanwen/go-fuse/v2 v2.12.1
	github.com/klauspost/compress v1.20.4
	golang.org/x/sys v0.50.0
)

require github.com/ulikunitz/xz v0.5.17 // indirect

replace github.com/cramfs/cramfs => ../
