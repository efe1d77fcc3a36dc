package worker

import (
	"encoding/json"
	"io"
	"os"
	"sync"
	"time"
)

// Logger receives the SDK's log lines: a message and key/value pairs (ids, statuses, codes,
// counters; never stage input, results or context values).
type Logger interface {
	Debug(msg string, keyvals ...any)
	Info(msg string, keyvals ...any)
	Warn(msg string, keyvals ...any)
	Error(msg string, keyvals ...any)
}

// Level filters a JSON logger's lines.
type Level int

// Levels of NewJSONLogger, least severe first.
const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
	LevelError
	LevelOff
)

type jsonLogger struct {
	mu    sync.Mutex
	w     io.Writer
	level Level
	base  []any
}

// NewJSONLogger writes one JSON object per line to w (default stderr) at level and above; base
// key/value pairs go on every line.
func NewJSONLogger(w io.Writer, level Level, base ...any) Logger {
	if w == nil {
		w = os.Stderr
	}
	return &jsonLogger{w: w, level: level, base: base}
}

// NopLogger discards everything.
func NopLogger() Logger { return &jsonLogger{level: LevelOff} }

func (l *jsonLogger) Debug(msg string, kv ...any) { l.log(LevelDebug, "debug", msg, kv) }
func (l *jsonLogger) Info(msg string, kv ...any)  { l.log(LevelInfo, "info", msg, kv) }
func (l *jsonLogger) Warn(msg string, kv ...any)  { l.log(LevelWarn, "warn", msg, kv) }
func (l *jsonLogger) Error(msg string, kv ...any) { l.log(LevelError, "error", msg, kv) }

func (l *jsonLogger) log(level Level, name, msg string, kv []any) {
	if level < l.level {
		return
	}
	line := map[string]any{"time": time.Now().UTC().Format(time.RFC3339Nano), "level": name, "msg": msg}
	for _, pairs := range [][]any{l.base, kv} {
		for i := 0; i+1 < len(pairs); i += 2 {
			if k, ok := pairs[i].(string); ok {
				if err, isErr := pairs[i+1].(error); isErr {
					line[k] = err.Error()
				} else {
					line[k] = pairs[i+1]
				}
			}
		}
	}
	data, err := json.Marshal(line)
	if err != nil {
		return
	}
	l.mu.Lock()
	_, _ = l.w.Write(append(data, '\n'))
	l.mu.Unlock()
}
