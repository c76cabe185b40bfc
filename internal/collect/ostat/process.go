package ostat

import "fmt"

// userHZ is the unit of the times in /proc/PID/stat. procfs converts
// utime+stime with it in CPUTime but leaves cutime and cstime in ticks;
// USER_HZ is 100 on every architecture Go runs Linux on.
const userHZ = 100

func (r *Reader) readProcesses(s *Snapshot) error {
	st, err := r.self.Stat()
	if err != nil {
		return fmt.Errorf("read %s: %w", r.path("self/stat"), err)
	}
	s.SelfCPU = st.CPUTime()
	if r.opts.ServerPID > 0 {
		cpu, n, err := r.serverCPU(r.self.PID)
		if err != nil {
			return err
		}
		if n > 0 {
			s.ServerCPU, s.ServerProcs = &cpu, n
		}
	}
	return nil
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
// as the server's as well when the server is an ancestor of it. A server
// that has exited gives n == 0.
func (r *Reader) serverCPU(self int) (seconds float64, n int, err error) {
	all, err := r.fs.AllProcs()
	if err != nil {
		return 0, 0, fmt.Errorf("list %s: %w", r.opts.ProcRoot, err)
	}
	ticks := make(map[int]float64, len(all))
	children := make(map[int][]int, len(all)/4)
	for _, p := range all {
		st, err := p.Stat()
		if err != nil {
			// Exited between the listing and now; if it was in the tree
			// its time is in its parent's cutime already or soon.
			continue
		}
		ticks[p.PID] = float64(st.UTime+st.STime) + float64(st.CUTime+st.CSTime)
		children[st.PPID] = append(children[st.PPID], p.PID)
	}
	root := r.opts.ServerPID
	if _, ok := ticks[root]; !ok {
		return 0, 0, nil
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
		n++
		for _, c := range children[pid] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return sum / userHZ, n, nil
}
