package e2e

import (
	"strings"
	"testing"
)

// exercise sends a mix of good and bad traffic, so every logging path runs.
func exercise(t *testing.T, r *Runtime) {
	t.Helper()
	r.Initialize()
	r.Call("provider/capabilities", nil)
	r.Call("no/such/method", map[string]any{"x": 1})
	r.Call("$/diagnostics/panic", nil)
	r.Send(`{"jsonrpc":"2.0","id":1,"method":`)
	r.Next()
	r.Send(`[]`)
	r.Next()
	r.Request("c", "$/diagnostics/sleep", map[string]int{"ms": 600000})
	r.Notify("$/cancelRequest", map[string]string{"id": "c"})
	r.Response("c")
	r.Call("shutdown", nil)
	r.Notify("exit", nil)
	r.ExitedCleanly()
}

func TestStdoutCarriesOnlyProtocolMessagesAtEveryLevel(t *testing.T) {
	t.Parallel()
	for _, level := range []string{"trace", "debug", "info", "warn", "error"} {
		t.Run(level, func(t *testing.T) {
			t.Parallel()
			// The harness fails the test on any stdout line that is not a
			// JSON-RPC 2.0 message.
			r := Start(t, Env("TASK_X_LOG="+level))
			exercise(t, r)
			logs := r.Stderr()
			switch level {
			case "trace":
				if !strings.Contains(logs, "TRACE") || !strings.Contains(logs, "DEBU") {
					t.Fatalf("trace logging wrote no trace and debug lines:\n%s", logs)
				}
			case "debug":
				if strings.Contains(logs, "TRACE") || !strings.Contains(logs, "DEBU") {
					t.Fatalf("debug logging is wrong:\n%s", logs)
				}
			case "warn", "error":
				if strings.Contains(logs, "INFO") || strings.Contains(logs, "DEBU") {
					t.Fatalf("%s logging wrote lower levels:\n%s", level, logs)
				}
			}
			if level != "warn" && level != "error" && !strings.Contains(logs, "panic") {
				t.Fatalf("the handler panic was not logged:\n%s", logs)
			}
		})
	}
}

func TestTheDefaultLevelIsWarn(t *testing.T) {
	t.Parallel()
	r := Start(t, Env("TASK_X_LOG="))
	exercise(t, r)
	if logs := r.Stderr(); strings.Contains(logs, "INFO") || strings.Contains(logs, "DEBU") {
		t.Fatalf("default logging wrote below warn:\n%s", logs)
	}
}

func TestABadLogLevelIsReportedAndWarnIsUsed(t *testing.T) {
	t.Parallel()
	r := Start(t, Env("TASK_X_LOG=loud"))
	r.Initialize()
	if logs := r.Stderr(); !strings.Contains(logs, "TASK_X_LOG") || !strings.Contains(logs, "loud") {
		t.Fatalf("the bad level was not reported:\n%s", logs)
	}
}

func TestSecretsNeverReachTheLogs(t *testing.T) {
	t.Parallel()
	const secret = "sk-ant-e2e-NEVER-LOG-ME-0123456789"
	r := Start(t, Env("TASK_X_LOG=trace"))
	provider := map[string]any{"kind": "anthropic", "model": "claude-sonnet-4-5", "apiKey": secret}
	r.Call("provider/test", map[string]any{"provider": provider})
	r.Initialize()
	for _, method := range []string{"provider/test", "provider/listModels", "chat/send", "agent/run"} {
		r.Call(method, map[string]any{"provider": provider})
	}
	r.Call("provider/test", map[string]any{"provider": provider, "unknown": secret})
	r.Send(`{"jsonrpc":"2.0","id":5,"method":"provider/test","params":{"provider":{"apiKey":"` + secret + `"`)
	r.Next()
	r.Send(`{"jsonrpc":"2.0","id":{"k":"` + secret + `"},"method":"x"}`)
	r.Next()
	r.Call("shutdown", nil)
	r.Notify("exit", nil)
	r.WaitExit()
	if logs := r.Stderr(); strings.Contains(logs, secret) || strings.Contains(logs, "NEVER-LOG") {
		t.Fatalf("a secret reached stderr:\n%s", logs)
	}
}
