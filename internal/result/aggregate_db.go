package result

import (
	"sort"
	"strings"
)

// aggregateProfile sums the parts' profiles line by line: every line is
// a sum of counters over the window, so the targets' totals and rates
// add up, and per transaction is the total over all the targets'
// transactions. A line read from the host's devices (source os.device_*)
// is counted once per database host: targets on one host see the same
// devices. Nil when no part has the profile.
func aggregateProfile(parts []*Run, get func(*Run) *Profile) *Profile {
	var a *Profile
	var order []string
	lines := map[string]*ProfileLine{}
	perTx := map[string]bool{}
	hostSeen := map[string]bool{} // host + line, for device lines
	for _, p := range parts {
		pr := get(p)
		if pr == nil {
			continue
		}
		if a == nil {
			a = &Profile{Source: pr.Source, Seconds: pr.Seconds}
		} else if !strings.Contains(a.Source, pr.Source) {
			a.Source += ", " + pr.Source
		}
		a.Seconds = max(a.Seconds, pr.Seconds)
		a.Transactions += pr.Transactions
		if pr.Note != "" && a.Note == "" {
			a.Note = pr.Note
		}
		host := databaseHost(p)
		for _, l := range pr.Lines {
			if strings.HasPrefix(l.Source, "os.device") {
				if hostSeen[host+"\x00"+l.Name] {
					continue
				}
				hostSeen[host+"\x00"+l.Name] = true
			}
			al := lines[l.Name]
			if al == nil {
				al = &ProfileLine{Name: l.Name, Unit: l.Unit, Source: l.Source, Note: l.Note}
				lines[l.Name] = al
				order = append(order, l.Name)
			}
			if l.Total == nil {
				continue // not measured on this target: the others' sum, as far as they go
			}
			if al.Total == nil && al.Source != l.Source {
				al.Source, al.Note = l.Source, l.Note
			}
			al.Total = add(al.Total, l.Total)
			al.PerSecond = add(al.PerSecond, l.PerSecond)
			if l.PerTx != nil {
				perTx[l.Name] = true
			}
		}
	}
	if a == nil {
		return nil
	}
	for _, name := range order {
		l := lines[name]
		if perTx[name] && l.Total != nil && a.Transactions > 0 {
			l.PerTx = ptr(*l.Total / a.Transactions)
		}
		a.Lines = append(a.Lines, *l)
	}
	return a
}

// DatabaseHosts counts the database hosts of a multi-target run's
// targets, as their disclosures name them: fewer than its targets when
// some share a host. 1 for a run of one target.
func (r *Run) DatabaseHosts() int {
	if len(r.Parts) == 0 {
		return 1
	}
	hosts := map[string]bool{}
	for _, p := range r.Parts {
		hosts[databaseHost(p)] = true
	}
	return len(hosts)
}

// databaseHost names the host a part's database ran on, as its
// disclosure says.
func databaseHost(p *Run) string {
	if p.Disclosure != nil && p.Disclosure.Host.Hostname != "" {
		return p.Disclosure.Host.Hostname
	}
	return p.Host.Hostname
}

// aggregateWaits adds the parts' sampled waits: every target's sessions
// were sampled at the same interval over the same window, so samples
// and average active sessions add up, and each event's share is of all
// the targets' DB time.
func aggregateWaits(parts []*Run) *Waits {
	var a *Waits
	events := map[[2]string]*WaitEvent{}
	var order [][2]string
	for _, p := range parts {
		w := p.Waits
		if w == nil {
			continue
		}
		if a == nil {
			a = &Waits{Source: w.Source, IntervalMs: w.IntervalMs}
		}
		a.Samples = max(a.Samples, w.Samples)
		a.ActiveSamples += w.ActiveSamples
		a.AvgActiveSessions += w.AvgActiveSessions
		for _, e := range w.Events {
			k := [2]string{e.Class, e.Event}
			ae := events[k]
			if ae == nil {
				ae = &WaitEvent{Class: e.Class, Event: e.Event}
				events[k] = ae
				order = append(order, k)
			}
			ae.Samples += e.Samples
			ae.AvgActive += e.AvgActive
		}
	}
	if a == nil {
		return nil
	}
	for _, k := range order {
		e := events[k]
		if a.ActiveSamples > 0 {
			e.PctDBTime = 100 * float64(e.Samples) / float64(a.ActiveSamples)
		}
		a.Events = append(a.Events, *e)
	}
	sort.SliceStable(a.Events, func(i, j int) bool { return a.Events[i].Samples > a.Events[j].Samples })
	return a
}

// aggregateTimedWaits adds the parts' timed waits event by event.
func aggregateTimedWaits(parts []*Run) *TimedWaits {
	var a *TimedWaits
	events := map[[2]string]*TimedWait{}
	var order [][2]string
	total := 0.0
	for _, p := range parts {
		w := p.TimedWaits
		if w == nil {
			continue
		}
		if a == nil {
			a = &TimedWaits{Source: w.Source, Note: w.Note}
		}
		for _, e := range w.Events {
			k := [2]string{e.Class, e.Event}
			ae := events[k]
			if ae == nil {
				ae = &TimedWait{Class: e.Class, Event: e.Event}
				events[k] = ae
				order = append(order, k)
			}
			ae.Count += e.Count
			ae.Seconds += e.Seconds
			total += e.Seconds
		}
	}
	if a == nil {
		return nil
	}
	for _, k := range order {
		e := events[k]
		if total > 0 {
			e.PctWaitTime = 100 * e.Seconds / total
		}
		a.Events = append(a.Events, *e)
	}
	sort.SliceStable(a.Events, func(i, j int) bool { return a.Events[i].Seconds > a.Events[j].Seconds })
	return a
}
