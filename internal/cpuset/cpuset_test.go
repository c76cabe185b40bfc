package cpuset

import "testing"

func TestFormat(t *testing.T) {
	for _, c := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "0"}, {[]int{0, 1}, "0-1"}, {[]int{0, 1, 2, 3, 6}, "0-3,6"}, {[]int{1, 3, 5}, "1,3,5"}, {nil, ""},
	} {
		if got := Format(c.cpus); got != c.want {
			t.Errorf("Format(%v) = %q, want %q", c.cpus, got, c.want)
		}
	}
}

func TestAvailable(t *testing.T) {
	all, err := Available()
	if err != nil || len(all) == 0 {
		t.Fatalf("available CPUs %v, %v", all, err)
	}
	last, err := Last(1)
	if err != nil || len(last) != 1 || last[0] != all[len(all)-1] {
		t.Errorf("Last(1) = %v, %v; available %v", last, err, all)
	}
	if _, err := Last(0); err == nil {
		t.Error("Last(0) accepted")
	}
}
