package launch

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// procStat reads /proc/PID/stat: the process's state letter and its start
// time (clock ticks since boot). Its second field, the command name in
// parentheses, may hold spaces and parentheses: the fields after it start
// after the last ')'.
func procStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	return f[0][0], start, err
}

func processStart(pid int) (uint64, error) {
	_, start, err := procStat(pid)
	return start, err
}

// processAlive: the process exists, is not a zombie (exited, not yet
// reaped: 'Z', or being reaped: 'X'), and started when the record says.
func processAlive(pid int, start uint64) bool {
	state, now, err := procStat(pid)
	if err != nil {
		return false
	}
	return state != 'Z' && state != 'X' && (start == 0 || now == start)
}
