// The smallest worker: its output is its input, byte for byte. The TypeScript and Python SDKs have
// the same example, configured alike, which the SDK bench runs side by side.
//
//	PO_API_KEY          required, the application's API key
//	PO_BASE_URL         default http://127.0.0.1:8080
//	PO_WORKER_BASE_URL  optional, when the worker routes live elsewhere
//	PO_INSTANCE_ID      default {hostname}-{pid}; unique per process
//	PO_HANDLERS         handler names served by the echo handler [echo]
//	PO_CONCURRENCY      default 4
//
// SIGTERM or Ctrl+C drains; a second one exits at once.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	worker "github.com/po-platform/worker-sdk-go"
)

func echo(_ context.Context, s *worker.Stage) (any, error) { return s.Input, nil }

func main() {
	apiKey := os.Getenv("PO_API_KEY")
	if apiKey == "" {
		fmt.Fprintln(os.Stderr, "PO_API_KEY is required: the API key of the application whose stages to run.")
		os.Exit(1)
	}
	base := envOr("PO_BASE_URL", "http://127.0.0.1:8080")
	host, _ := os.Hostname()
	concurrency, err := strconv.Atoi(envOr("PO_CONCURRENCY", "4"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "PO_CONCURRENCY must be a number")
		os.Exit(1)
	}
	w, err := worker.New(worker.Options{
		BaseURL:       base,
		WorkerBaseURL: os.Getenv("PO_WORKER_BASE_URL"),
		APIKey:        apiKey,
		InstanceID:    envOr("PO_INSTANCE_ID", fmt.Sprintf("%s-%d", host, os.Getpid())),
		WorkerName:    "echo-worker",
		Concurrency:   concurrency,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, name := range strings.Split(envOr("PO_HANDLERS", "echo"), ",") {
		if name = strings.TrimSpace(name); name != "" {
			w.Register(name, echo)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	go func() {
		<-ctx.Done()
		stop() // a second signal now takes the default action: exit at once
	}()
	if err := w.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func envOr(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}
