package workflow

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkLogEmit measures how many events a second reach the disk
// durably: the clock stops when the last one is fsynced. "group commit" is
// the Log (one write and one fsync per batch); "fsync per event" is the
// baseline, the same encoding and file with a write and an fsync for each
// event, which is what a log without group commit does. Their ratio is the
// result (docs/benchmarks.md).
func BenchmarkLogEmit(b *testing.B) {
	events := logTestEvents("bench", 0, 1024, false)
	event := func(i int) Event {
		e := events[i%len(events)]
		e.Seq = uint64(i)
		return e
	}
	perSecond := func(b *testing.B) {
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	}

	b.Run("group commit", func(b *testing.B) {
		l, err := OpenLog(b.TempDir(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			l.Emit(event(i))
		}
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		perSecond(b)
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	})

	b.Run("group commit, 4 emitters", func(b *testing.B) {
		l, err := OpenLog(b.TempDir(), "bench")
		if err != nil {
			b.Fatal(err)
		}
		b.SetParallelism(2) // 2 x GOMAXPROCS goroutines: 4 on the reference machine
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				l.Emit(event(i))
			}
		})
		if err := l.Flush(); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		perSecond(b)
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
	})

	b.Run("fsync per event", func(b *testing.B) {
		dir := filepath.Join(b.TempDir(), "runs", "bench")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
		f, err := os.OpenFile(filepath.Join(dir, logFileName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		b.ResetTimer()
		for i := range b.N {
			buf.Reset()
			e := event(i)
			if err := enc.Encode(&e); err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(buf.Bytes()); err != nil {
				b.Fatal(err)
			}
			if err := f.Sync(); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		perSecond(b)
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
	})
}
