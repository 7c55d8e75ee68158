package ckpt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Prune removes all but the newest keep periodic checkpoints from root and returns the names it
// removed, oldest first. Signal checkpoints count as periodic: they exist to resume from, and a
// newer save supersedes them. Stage, manual and final checkpoints are always kept, as is the one
// latest names, and so is any directory whose manifest cannot be read: deleting what we cannot
// identify is never safe.
//
// Each removal first renames the directory to a temporary name, so a reader never sees a
// half-deleted checkpoint and a crash mid-delete leaves only debris the next Save clears.
func Prune(root string, keep int) ([]string, error) {
	return PruneContext(context.Background(), root, keep)
}

// PruneContext is Prune that stops between two removals once ctx is done,
// returning what it removed and ctx's error; what it left, the next Prune removes.
func PruneContext(ctx context.Context, root string, keep int) ([]string, error) {
	if keep < 0 {
		return nil, fmt.Errorf("prune %s: keep %d is negative", root, keep)
	}
	if err := tidy(root, ""); err != nil {
		return nil, fmt.Errorf("prune %s: clear leftovers: %w", root, err)
	}
	infos, err := List(root)
	if err != nil {
		return nil, fmt.Errorf("prune %s: %w", root, err)
	}
	var periodic []Info
	for _, in := range infos {
		if in.Err == nil && in.Manifest.Kind.Prunable() {
			periodic = append(periodic, in)
		}
	}
	var removed []string
	var errs []error
	for i, in := range periodic { // List sorted them oldest first
		if i >= len(periodic)-keep || in.Latest {
			continue
		}
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		doomed := filepath.Join(root, tmpPrefix+in.Name+"-prune")
		if err := os.Rename(in.Path, doomed); err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", in.Name, err))
			continue
		}
		removed = append(removed, in.Name)
		if err := os.RemoveAll(doomed); err != nil {
			errs = append(errs, fmt.Errorf("prune %s: %w", in.Name, err))
		}
	}
	if len(removed) > 0 {
		errs = append(errs, syncDir(root))
	}
	if err := errors.Join(errs...); err != nil {
		return removed, fmt.Errorf("prune %s: %w", root, err)
	}
	return removed, nil
}
