package cli

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// finding is one line of trove doctor: what was checked, and whether
// it holds.
type finding struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// failureWindow is how far back trove doctor counts a logged hook
// failure as a problem.
const failureWindow = 24 * time.Hour

func newDoctorCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check what runs unattended (the agents' hooks, the watch service) and the store they write; exit 3 on a problem",
		Long: "Checks that the hooks and the watch service can open the store (an encrypted one through\n" +
			"the key file), that the binary each installed hook entry or service calls is still there,\n" +
			"and that no hook failed in the last day (trove hooks status shows the log). Changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			found := a.doctor(cmd.Context(), time.Now())
			problems := 0
			for _, f := range found {
				if !f.OK {
					problems++
				}
			}
			if a.jsonOut {
				if err := a.printJSON(found); err != nil {
					return err
				}
			} else {
				for _, f := range found {
					mark := "ok     "
					if !f.OK {
						mark = "PROBLEM"
					}
					a.printf("%s  %-8s %s\n", mark, f.Check, strings.ReplaceAll(f.Detail, "\n", "\n                   "))
				}
			}
			if problems > 0 {
				return &exitError{code: exitProblems, err: fmt.Errorf("problems found: %d", problems)}
			}
			return nil
		},
	}
}

// doctor makes every check, at now.
func (a *app) doctor(ctx context.Context, now time.Time) []finding {
	var out []finding
	add := func(check string, err error, detail string) {
		if err != nil {
			out = append(out, finding{check, false, err.Error()})
			return
		}
		out = append(out, finding{check, true, detail})
	}

	detail := a.storeName() + ": the hooks and the watch service can open it"
	if errors.Is(a.checkStoreExists(), fs.ErrNotExist) {
		detail = a.storeName() + ": none yet (the first write makes it)"
	}
	key := a.probeKey(ctx) // once: a key file wrapped with scrypt costs 80 ms to try
	note, err := key.judge(a.storeName(), "hooks", true)
	if note != "" {
		detail += "\n" + note
	}
	add("store", err, detail)

	for ag, p := range settingsFiles() {
		command, err := ag.installedCommand(p)
		switch {
		case err != nil:
			add("hooks", err, "")
		case command == "":
			add("hooks", nil, p+": no trove hooks")
		default:
			if bin := goneBinary(command); bin != "" {
				add("hooks", fmt.Errorf("%s calls %s, which is gone: every hook fails before trove can log why (install them again: trove hooks install %s)", p, bin, ag.name), "")
				continue
			}
			add("hooks", nil, p+": installed, calls "+command)
		}
	}

	n, last, err := recentHookFailures(hookLogPath(), now.Add(-failureWindow))
	switch {
	case err != nil:
		add("hook log", err, "")
	case n > 0:
		add("hook log", fmt.Errorf("hook failures in the last day: %d, the last: %s (trove hooks status shows them)", n, last), "")
	default:
		add("hook log", nil, "no hook failure in the last day")
	}

	path, err := watchService()
	if err != nil {
		add("watch", nil, "no service manager known here: trove watch runs at login")
		return out
	}
	text, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		add("watch", nil, "no service (trove watch --install writes one)")
	case err != nil:
		add("watch", err, "")
	default:
		bin := serviceBinary(string(text))
		_, kerr := key.judge(a.storeName(), "the watch service", false)
		switch {
		case programGone(bin):
			add("watch", fmt.Errorf("%s runs %s, which is gone: the service fails at each start (write it again: trove watch --install --write)", path, bin), "")
		case kerr != nil:
			add("watch", fmt.Errorf("%s: %w", path, kerr), "")
		default:
			add("watch", nil, path+": runs "+bin)
		}
	}
	return out
}

// recentHookFailures counts the failures the hooks' log at path holds
// since since, with the last of them; no log is none.
func recentHookFailures(path string, since time.Time) (n int, last string, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		stamp, _, _ := strings.Cut(sc.Text(), " ")
		if t, err := time.Parse(time.RFC3339, stamp); err == nil && !t.Before(since) {
			n, last = n+1, sc.Text()
		}
	}
	return n, last, sc.Err()
}
