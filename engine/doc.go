// Package engine schedules the containers of a source (package
// engine/source; a CRAM file, package engine/cram): it decodes them in
// parallel, encodes their records to BAM and BGZF, keeps the blocks in a
// bounded cache and serves the virtual BAM. Layouts are persisted in a
// cache directory (package engine/layout).
package engine
