package ostat

import "fmt"

// userHZ is the unit of the times in /proc/PID/stat. procfs converts
// utime+stime with it in CPUTime but leaves cutime and cstime in ticks;
// USER_HZ is 100 on every architecture Go runs Linux on.
const userHZ = 100

func (r *Reader) readProcesses(s *Snapshot) error {
	self := -1
	if !r.opts.Foreign {
		st, err := r.self.Stat()
		if err != nil {
			return fmt.Errorf("read %s: %w", r.path("self/stat"), err)
		}
		s.SelfCPU, self = st.CPUTime(), r.self.PID
	}
	if r.opts.ServerPID > 0 {
		cpu, tree, err := r.serverCPU(self)
		if err != nil {
			return err
		}
		if len(tree) > 0 {
			s.ServerCPU, s.ServerProcs = &cpu, len(tree)
			s.ServerRunDelay = r.runDelays(tree)
		}
	}
	return nil
}

// runDelays reads each process's run-queue wait from /proc/PID/schedstat;
// nil when the kernel keeps none (built without CONFIG_SCHED_INFO).
func (r *Reader) runDelays(pids []int) map[int]float64 {
	var m map[int]float64
	for _, pid := range pids {
		p, err := r.fs.Proc(pid)
		if err != nil {
			continue
		}
		st, err := p.Schedstat()
		if err != nil {
			continue // exited since, or no schedstat
		}
		if m == nil {
			m = make(map[int]float64, len(pids))
		}
		m[pid] = float64(st.WaitingNanoseconds) / 1e9
	}
	return m
}

// serverCPU sums the CPU time of the server's process tree: every live
// process descended from ServerPID, found through the parent PIDs of all
// of /proc, each with its own time (all its threads, live and exited) plus
// its cutime and cstime, the time of the children it has reaped. Counting
// the reaped children of every member, not only the root's, keeps the sum
// continuous when any member exits: its time moves from its own stat line
// to its parent's cutime at the moment the parent waits for it. Time is
// lost only when a member is reaped outside the tree (a double-forking
// daemon left to init), which Between floors at zero.
//
// The walk never enters this process, so the driver's CPU is not counted
// as the server's as well when the server is an ancestor of it. It
// returns the tree's PIDs; a server that has exited gives none.
//
// A process that exits while the stat files are read, after its parent's
// line was read, is in neither: its time would be missing from this
// reading (a window edge taken while the sessions disconnect lost whole
// seconds that way). Such a reading is taken again, up to three times:
// once a process is gone its parent has reaped it, and the parent's
// cutime holds its time.
func (r *Reader) serverCPU(self int) (seconds float64, tree []int, err error) {
	for attempt := 1; ; attempt++ {
		seconds, tree, vanished, err := r.serverCPUOnce(self)
		if err != nil || vanished == 0 || attempt == 3 {
			return seconds, tree, err
		}
	}
}

// serverCPUOnce is one reading of serverCPU; vanished counts the listed
// processes that were gone when their line was read.
func (r *Reader) serverCPUOnce(self int) (seconds float64, tree []int, vanished int, err error) {
	all, err := r.fs.AllProcs()
	if err != nil {
		return 0, nil, 0, fmt.Errorf("list %s: %w", r.opts.ProcRoot, err)
	}
	ticks := make(map[int]float64, len(all))
	children := make(map[int][]int, len(all)/4)
	for _, p := range all {
		if r.beforeStat != nil {
			r.beforeStat(p.PID)
		}
		st, err := p.Stat()
		if err != nil {
			// Exited between the listing and now: reaped, so its time is
			// in its parent's cutime, which may have been read before.
			vanished++
			continue
		}
		ticks[p.PID] = float64(st.UTime+st.STime) + float64(st.CUTime+st.CSTime)
		children[st.PPID] = append(children[st.PPID], p.PID)
	}
	root := r.opts.ServerPID
	if _, ok := ticks[root]; !ok {
		return 0, nil, 0, nil
	}
	// The stat files are not read at one instant, so a parent that exits
	// and has its PID reused by a descendant can make a cycle; seen stops it.
	seen := map[int]bool{root: true, self: true}
	queue := []int{root}
	var sum float64
	for len(queue) > 0 {
		pid := queue[0]
		queue = queue[1:]
		sum += ticks[pid]
		tree = append(tree, pid)
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return sum / userHZ, tree, vanished, nil
}
