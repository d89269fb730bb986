//go:build !linux

package checkpoint

import "os"

func (w *dirWorkspace) readDirFast(string) ([]dirEntry, bool, error) { return nil, false, nil }

func (w *dirWorkspace) statNamesFast(string, []string, []dirEntry) ([]dirEntry, bool, error) {
	return nil, false, nil
}

func (w *dirWorkspace) openFast(string) (*os.File, bool, error) { return nil, false, nil }
