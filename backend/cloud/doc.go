// Package cloud is a backend.Storage on a gocloud.dev/blob bucket: memblob,
// fileblob, S3, GCS, Azure and any other gocloud driver.
//
// Object stores have no append, no rename and no directories, and some keep
// an object's attributes apart from its data (fileblob), so the layout of a
// logical file is told by object keys alone:
//
//   - A file written whole is one object under its own name.
//   - A file being appended also has numbered segment objects under
//     ".~seg/<name>/.~<20-digit number>". Opening a writer claims the next
//     number with an empty segment; each Sync uploads one segment holding
//     only the bytes written since the last Sync. Segments are created only
//     if absent, so of two writers the one that opened first fails at its
//     next Sync (ErrLocked) instead of merging; it also checks that its
//     previous number still exists, since a later writer's compaction may
//     have freed (and hidden) the number it takes.
//   - A base object in the same directory, ".~<number>c" (a compaction) or
//     ".~<number>w" (a replacement), holds the whole file up to its number
//     and hides the name's own object and every lower number. A WriteFile
//     over a file with segments first claims the next number with an empty
//     segment, then writes its base there.
//   - A tier object ".~<n>t<level><from>" holds the bytes of the numbers
//     (from, n]. A reader follows a chain from the base: at each number
//     reached, the widest tier starting there, else the next segment;
//     whatever a tier holds is skipped, deleted yet or not. A claim (an
//     empty segment) first in a tier's run is not deleted with the rest:
//     the writer whose last number is the tier's start would take that
//     number again and find its own last part in place.
//   - Unlink deletes the name, claims a number above the file's and then
//     deletes all below it; that claim stays, so a writer of the unlinked
//     file fails at its next Sync. A file made again over such leftovers
//     gets an empty write base above them before its name exists, so its
//     numbers never start again below a late segment of an old writer.
//   - A Sync is one segment and one look at the writer's previous one,
//     whatever the file (the first Sync of a new file's creator: the
//     segment alone): it never folds. A new file whose maker says its
//     name is new (WriterOptions.Fresh) is made by the conditional create
//     of its name alone, without a look at its place. Folds are a log-structured merge
//     with fan-out 8: every 8 segments at the end become a tier of level
//     1, every 8 tiers of a level one of the next level, while the merged
//     tier holds at most 4 MiB (no fold rewrites the whole file: that
//     made a Sync of a 64 MiB file cost 2.6-4.4 times one of 1 MiB); each
//     byte is so copied once per level (4 for 4 KiB Syncs), whatever the
//     file's size, and a reader meets at most 7 parts per level below the
//     top and one part per 2-4 MiB above (a 64 MiB file grown by 4 KiB
//     Syncs reads in 37 calls folded at Sync, about 60 in the background). They happen when a writer opens a file that has
//     parts (it owns the file from its claim on), at Compact, which
//     leaves the last two parts, those an open writer looks at, alone, and
//     in the background of a writer that stays open (a Compact every 16
//     Syncs, WithCompactEvery; a Sync 32 past a fold still running waits
//     for it, so folds never fall behind on a fast bucket and their cost
//     lands with the Syncs that made it), so reads stay cheap however long it
//     writes. WithCompactOpen makes a writer fold at Sync instead. A fold writes the
//     same bytes, so a reader that meets one mid-read goes on at the same
//     offset. Close folds nothing unless WithCompactAt asks.
//   - What a fold replaced stays for a grace (WithFoldGrace, 1 s): a later
//     fold sweeps it, lowest first, once the object holding its bytes is
//     that old. A reader on any machine lists and then reads; a part it
//     listed is there when it opens it (or it lists again and goes on at
//     the same offset), and a listing that is no snapshot (fileblob reads
//     a directory in hash order; pages) never sees a fold's deletes
//     without what replaced them. Such a listing may still miss an object
//     made while it ran and see a later one: the numbers beyond the base
//     are contiguous, so the chain stops at a gap, the file is listed
//     again (up to 3 times), and a fold never acts on a torn listing. The
//     chain up to a gap holds every byte synced before the listing began.
//   - Rename is copy then delete (Capabilities.AtomicRename is false).
//   - Directories are implied by names; an empty directory (EnsureDir, or the
//     parent of the last file removed) keeps a hidden marker ".~dir".
//   - An element ending in ".." is stored as ".~<element>~", since fileblob
//     and gofakes3 do not treat "x../" as a directory.
//
// Names starting with backend.ReservedPrefix are never listed. Every write
// is one Bucket.Upload, which is atomic and cancelled when its source fails.
//
// Every bucket call has a deadline (WithTimeout; per chunk for streams),
// and with WithRetry the calls safe to repeat are retried on transient
// failures. Connect checks at open that the bucket exists.
//
// Imports: the standard library, gocloud.dev/blob and gocloud.dev/gcerrors
// (no cloud SDK: the provider packages under backend/open link those),
// backend, backend/driver and backend/retry.
package cloud
