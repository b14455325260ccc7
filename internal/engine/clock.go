package engine

import "time"

// Clock is where the engine, and the executors it drives, take their time
// from: the wall clock when serving, a virtual one when simulating, so that
// the same scheduling, caching and metrics code runs in both.
type Clock interface {
	Now() time.Time
	// Sleep lets d pass: the wall clock waits, a virtual clock moves on.
	Sleep(d time.Duration)
}

// WallClock is real time.
func WallClock() Clock { return wallClock{} }

type wallClock struct{}

func (wallClock) Now() time.Time                         { return time.Now() }
func (wallClock) Sleep(d time.Duration)                  { time.Sleep(d) }
func (wallClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// waker is a Clock whose time can also be waited for beside other events
// (the wall clock's time.After), so that an engine waiting on a transfer
// still takes submissions and aborts; a Clock without it is slept on.
type waker interface {
	After(d time.Duration) <-chan time.Time
}
