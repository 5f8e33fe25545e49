// Package terminput turns what an agent wants to type into the bytes a
// terminal would send, and follows the terminal modes that change those
// bytes (SPEC §8, exec.input).
//
// Encode writes text as is, named keys (Enter is "\r", as a terminal
// sends it; Backspace is the terminal's VERASE; cursor keys follow
// application cursor mode), pastes (bracketed only when the program asked
// for bracketed paste) and end-of-file (the terminal's VEOF).
//
// ModeTracker follows the modes a program sets in its output: DECCKM
// (application cursor keys, ?1), bracketed paste (?2004) and the
// alternate screen (?47, ?1047, ?1049), across chunk boundaries. It is a
// small state machine over CSI sequences, not a terminal emulator: it
// knows nothing of the screen's contents.
package terminput
