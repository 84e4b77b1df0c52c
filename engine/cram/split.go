package cram

import (
	"runtime"
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
// besides. The early tasks (all but the late one) are taken one at a
// time from one shared list, the reading of the reference first (the
// records need it at once), then the others largest first, so that
// neither goroutine idles while tasks remain; the build's goroutine goes
// on with the records once they are done. The borrowed worker takes the
// reference if it comes before the build's goroutine has, then the late
// task (the QS block, which the records need only once decoded), then
// joins in on the list. Without a worker lent, the build's goroutine
// runs them all, as an unsplit decode would.
type splitRunner struct {
	helpers source.Helpers

	// Scratch of one RunBlocks call.
	order   []int          // the early tasks: the reference first, then largest first
	refs    int            // the reference tasks at the head of order
	late    int            // the late task, -1 for none
	next    atomic.Int32   // the next of order to take
	left    atomic.Int32   // the early tasks not done yet
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
	r.order, r.refs = earlyOrder(r.order[:0], tasks, late)
	r.late = late
	r.next.Store(0)
	r.left.Store(int32(len(r.order)))
	r.helping.Add(1)
	go r.helper(tasks)
	r.drain(tasks)
	// The helper is at most in the middle of one early task: yield
	// rather than block, so that this goroutine, readied by the helper
	// going on with the late task, does not wait for that P.
	for r.left.Load() > 0 {
		runtime.Gosched()
	}
	if late < 0 {
		// Nothing is left to wait for: the helper, which may not even
		// have started, must be done before the tasks and r are reused.
		r.helping.Wait()
	}
}

// Wait implements decode.BlockRunner.
func (r *splitRunner) Wait() { r.helping.Wait() }

// helper is the borrowed worker's part of RunBlocks: the reference if it
// is still to be read, the late task, then the early ones left; then it
// gives the worker back.
func (r *splitRunner) helper(tasks []decode.BlockTask) {
	defer r.helping.Done()
	defer r.helpers.Release()
	for {
		k := r.next.Load()
		if int(k) >= r.refs {
			break
		}
		if r.next.CompareAndSwap(k, k+1) {
			r.run(tasks, int(k))
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
		r.run(tasks, k)
	}
}

// run runs the early task order[k].
func (r *splitRunner) run(tasks []decode.BlockTask, k int) {
	tasks[r.order[k]].Decompress()
	r.left.Add(-1)
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

// earlyOrder appends the indices of tasks but late to order, those of
// the reference first, then the others largest (in compressed bytes)
// first, and returns it with the count of the reference ones.
func earlyOrder(order []int, tasks []decode.BlockTask, late int) ([]int, int) {
	for k := range tasks {
		if tasks[k].Reference() {
			order = append(order, k)
		}
	}
	refs := len(order)
	for k := range tasks {
		if k != late && !tasks[k].Reference() {
			order = append(order, k)
		}
	}
	rest := order[refs:]
	slices.SortStableFunc(rest, func(a, b int) int { return tasks[b].Size() - tasks[a].Size() })
	return order, refs
}
