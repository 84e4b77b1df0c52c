package cram

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cramfs/cramfs/decode"
	"github.com/cramfs/cramfs/engine/source"
)

// minSplitBytes is the least compressed size of a slice's blocks worth
// borrowing a worker for: below it, waking another goroutine costs about
// what it saves.
var minSplitBytes = 64 << 10 // a variable so that tests split the small fixtures

// splitRunner runs the block tasks of a slice (a decode.BlockRunner) on
// the build's goroutine and, when its Helpers lend one, on an idle worker
// besides: the tasks are taken largest first from one shared list, each
// goroutine taking the next one left, so that neither idles while tasks
// remain. Without a worker lent, the build's goroutine runs them all, as
// an unsplit decode would.
type splitRunner struct {
	helpers source.Helpers

	// Scratch of one RunBlocks call.
	order []int        // indices of the tasks, largest first
	next  atomic.Int32 // the next of order to take
	help  sync.WaitGroup
}

// RunBlocks implements decode.BlockRunner.
func (r *splitRunner) RunBlocks(tasks []decode.BlockTask) {
	if !worthSplitting(tasks) || !r.helpers.TryAcquire() {
		for k := range tasks {
			tasks[k].Decompress()
		}
		return
	}
	r.order = largestFirst(r.order[:0], tasks)
	r.next.Store(0)
	r.help.Add(1)
	go r.helper(tasks)
	r.drain(tasks)
	r.help.Wait()
}

// helper is the borrowed worker's part of RunBlocks: it takes tasks
// until none is left, then gives the worker back.
func (r *splitRunner) helper(tasks []decode.BlockTask) {
	defer r.help.Done()
	defer r.helpers.Release()
	r.drain(tasks)
}

// drain runs the tasks left in r.order, taking one at a time.
func (r *splitRunner) drain(tasks []decode.BlockTask) {
	for {
		k := int(r.next.Add(1)) - 1
		if k >= len(r.order) {
			return
		}
		tasks[r.order[k]].Decompress()
	}
}

// worthSplitting reports whether the tasks are worth sharing with another
// goroutine: more than one, and enough bytes.
func worthSplitting(tasks []decode.BlockTask) bool {
	if len(tasks) < 2 {
		return false
	}
	n := 0
	for k := range tasks {
		n += tasks[k].Size()
	}
	return n >= minSplitBytes
}

// largestFirst appends the indices of tasks to order, the largest task
// (in compressed bytes) first.
func largestFirst(order []int, tasks []decode.BlockTask) []int {
	for k := range tasks {
		order = append(order, k)
	}
	slices.SortStableFunc(order, func(a, b int) int { return tasks[b].Size() - tasks[a].Size() })
	return order
}
