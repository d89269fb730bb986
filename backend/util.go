package backend

import (
	"context"
	"errors"
	"io/fs"
	"iter"
)

// RemoveAll removes name and, when it is a directory, everything below it.
// A missing name is not an error.
func RemoveAll(ctx context.Context, s Storage, name string) error {
	info, err := s.Stat(ctx, name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if info.IsDir {
		var children []Info
		for c, err := range s.List(ctx, name) {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					break
				}
				return err
			}
			children = append(children, c)
		}
		for _, c := range children {
			if err := RemoveAll(ctx, s, c.Name); err != nil {
				return err
			}
		}
		if name == "." {
			return nil
		}
	}
	if err := s.Unlink(ctx, name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Walk yields every file and directory below dir, depth first, in name order.
// A missing dir yields nothing.
func Walk(ctx context.Context, s Storage, dir string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		walk(ctx, s, dir, yield)
	}
}

func walk(ctx context.Context, s Storage, dir string, yield func(Info, error) bool) bool {
	for info, err := range s.List(ctx, dir) {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return true
			}
			return yield(Info{}, err)
		}
		if !yield(info, nil) {
			return false
		}
		if info.IsDir && !walk(ctx, s, info.Name, yield) {
			return false
		}
	}
	return true
}
