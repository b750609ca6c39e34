package actors

import (
	"context"
	"log/slog"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// slogBridge routes protoactor's own logging into zerolog at warn level and above
// (its default handler prints coloured INFO lines).
func slogBridge(log zerolog.Logger) func(*actor.ActorSystem) *slog.Logger {
	return func(*actor.ActorSystem) *slog.Logger {
		return slog.New(zerologHandler{log: log.With().Str("component", "protoactor").Logger()})
	}
}

type zerologHandler struct {
	log   zerolog.Logger
	attrs []slog.Attr
}

func (h zerologHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h zerologHandler) Handle(_ context.Context, r slog.Record) error {
	ev := h.log.Warn()
	if r.Level >= slog.LevelError {
		ev = h.log.Error()
	}
	for _, a := range h.attrs {
		ev = ev.Str(a.Key, a.Value.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		ev = ev.Str(a.Key, a.Value.String())
		return true
	})
	ev.Msg(r.Message)
	return nil
}

func (h zerologHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return zerologHandler{log: h.log, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h zerologHandler) WithGroup(string) slog.Handler { return h }
