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
// besides. The worker takes the reading of the reference first (the
// records need it at once), then the late task (the QS block, which the
// records need only once decoded), and then, like the build's goroutine,
// the next of the other tasks left, largest first, so that neither idles
// while tasks remain; the build's goroutine goes on with the records once
// the other tasks are done. Without a worker lent, the build's goroutine
// runs them all, as an unsplit decode would.
type splitRunner struct {
	helpers source.Helpers

	// Scratch of one RunBlocks call.
	order   []int        // indices of the tasks but the late one, largest first
	late    int          // the late task, -1 for none
	next    atomic.Int32 // the next of order to take
	early   sync.WaitGroup
	helping sync.WaitGroup // the borrowed worker's goroutine
}

// RunBlocks implements decode.BlockRunner.
func (r *splitRunner) RunBlocks(tasks []decode.BlockTask, late int) {
	if !worthSplitting(tasks) || !r.helpers.TryAcquire() {
		for k := range tasks {
			tasks[k].Decompress()
		}
		return
	}
	r.order, r.late = largestFirst(r.order[:0], tasks, late), late
	r.next.Store(0)
	r.early.Add(len(tasks) - min(late+1, 1))
	r.helping.Add(1)
	go r.helper(tasks)
	r.drain(tasks)
	r.early.Wait()
	if late < 0 {
		// Nothing is left to wait for: the helper, which may not even
		// have started, must be done before the tasks and r are reused.
		r.helping.Wait()
	}
}

// Wait implements decode.BlockRunner.
func (r *splitRunner) Wait() { r.helping.Wait() }

// helper is the borrowed worker's part of RunBlocks: the late task, then
// the others until none is left; then it gives the worker back.
func (r *splitRunner) helper(tasks []decode.BlockTask) {
	defer r.helping.Done()
	defer r.helpers.Release()
	for k := range tasks {
		if tasks[k].Reference() {
			tasks[k].Decompress()
			r.early.Done()
		}
	}
	if r.late >= 0 {
		tasks[r.late].Decompress()
	}
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
		r.early.Done()
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

// largestFirst appends the indices of tasks but late and those of the
// reference (which the helper takes first) to order, the largest task (in
// compressed bytes) first.
func largestFirst(order []int, tasks []decode.BlockTask, late int) []int {
	for k := range tasks {
		if k != late && !tasks[k].Reference() {
			order = append(order, k)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return tasks[b].Size() - tasks[a].Size() })
	return order
}
