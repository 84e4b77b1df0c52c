module github.com/cramfs/cramfs/tools

go 1.26.0

require (
	github.com/cramfs/cramfs v0.0.0
	github.com/klauspost/compress v1.20.4
)

replace github.com/cramfs/cramfs => ../
